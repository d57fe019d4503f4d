// PassKey<Owner>: only Owner can make one, so a class whose constructor takes it can be built by
// std::make_unique inside Owner's factory and by nobody else.
#include <catch2/catch.hpp>

#include <memory>
#include <type_traits>

#include "core/base/passkey.h"

namespace {

using unitrain::PassKey;

class Made {
 public:
  static std::unique_ptr<Made> create(int value) { return std::make_unique<Made>(PassKey<Made>{}, value); }
  Made(PassKey<Made>, int value) : value_(value) {}
  int value() const { return value_; }

 private:
  int value_;
};

// Outside Made, neither a key nor (therefore) a Made can be built; a key Made handed out can be copied.
static_assert(!std::is_default_constructible_v<PassKey<Made>>);
static_assert(std::is_copy_constructible_v<PassKey<Made>>);
static_assert(!std::is_constructible_v<Made, int>);
template <class T>
concept BracesMakeKey = requires { T{}; };
static_assert(!BracesMakeKey<PassKey<Made>>);

}  // namespace

TEST_CASE("a PassKey constructor is reachable through its owner's factory") {
  auto made = Made::create(7);
  REQUIRE(made != nullptr);
  CHECK(made->value() == 7);
}
