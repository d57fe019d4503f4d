// The merge patch that releases finalizers nothing sets any more (core/controller/finalizer_release.h).
#include <catch2/catch.hpp>

#include "core/controller/finalizer_release.h"
#include "tests/support/json.h"

using namespace unitrain;

TEST_CASE("finalizer_release_patch: the list without the released finalizers, null when none is left") {
  auto obj = testing::doc(R"({"metadata":{"finalizers":["a/x","b/y"]}})");
  CHECK(controller::finalizer_release_patch(obj.root(), {"a/x"}) == R"({"metadata":{"finalizers":["b/y"]}})");
  CHECK(controller::finalizer_release_patch(obj.root(), {"a/x", "b/y"}) == R"({"metadata":{"finalizers":null}})");
  CHECK(controller::finalizer_release_patch(obj.root(), {"c/z"}).empty());
  CHECK(controller::finalizer_release_patch(testing::doc(R"({"metadata":{}})").root(), {"a/x"}).empty());
}
