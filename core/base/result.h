// Result<T, E>: the value-or-error type every fallible call in Unitrain returns.
//
// std::expected is C++23; we target C++20, so this is the small subset we need with the same
// spelling where it overlaps (has_value, value, error, operator*, operator->, value_or).
// Exceptions are reserved for documented boundaries (main(), thread entry points); a caller that
// can handle a failure gets it as a value.
#pragma once

#include <cassert>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace unitrain {

// The generic error: a message that names the field, file, position or cause.
struct Error {
  std::string message;

  Error() = default;
  explicit Error(std::string msg) : message(std::move(msg)) {}

  // Adds context in front, the way a call stack reads top-down: "kubeconfig /x: users[0]: ...".
  Error& prefix(std::string_view context) {
    message.insert(0, std::string(context) + ": ");
    return *this;
  }
  friend bool operator==(const Error&, const Error&) = default;
};

template <class E>
struct Failure {
  E error;
};

template <class E>
Failure<std::decay_t<E>> fail(E&& e) {
  return {std::forward<E>(e)};
}
inline Failure<Error> fail(std::string message) { return {Error(std::move(message))}; }
inline Failure<Error> fail(const char* message) { return {Error(message)}; }

template <class T, class E = Error>
class [[nodiscard]] Result {
 public:
  using value_type = T;
  using error_type = E;

  template <class U = T>
    requires std::is_constructible_v<T, U&&> && (!std::is_same_v<std::decay_t<U>, Result>) &&
             (!std::is_same_v<std::decay_t<U>, Failure<E>>)
  Result(U&& value) : v_(std::in_place_index<0>, std::forward<U>(value)) {}  // NOLINT: implicit like expected
  template <class G>
    requires std::is_constructible_v<E, G&&>
  Result(Failure<G> f) : v_(std::in_place_index<1>, std::move(f.error)) {}  // NOLINT

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & { assert(has_value()); return std::get<0>(v_); }
  const T& value() const& { assert(has_value()); return std::get<0>(v_); }
  T&& value() && { assert(has_value()); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  E& error() & { assert(!has_value()); return std::get<1>(v_); }
  const E& error() const& { assert(!has_value()); return std::get<1>(v_); }
  E&& error() && { assert(!has_value()); return std::get<1>(std::move(v_)); }

  template <class U>
  T value_or(U&& fallback) const& {
    return has_value() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, E> v_;
};

template <class E>
class [[nodiscard]] Result<void, E> {
 public:
  using value_type = void;
  using error_type = E;

  Result() = default;
  template <class G>
    requires std::is_constructible_v<E, G&&>
  Result(Failure<G> f) : error_(std::move(f.error)), ok_(false) {}  // NOLINT

  bool has_value() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  void value() const { assert(ok_); }
  E& error() & { assert(!ok_); return error_; }
  const E& error() const& { assert(!ok_); return error_; }
  E&& error() && { assert(!ok_); return std::move(error_); }

 private:
  E error_{};
  bool ok_ = true;
};

using Status = Result<void, Error>;

}  // namespace unitrain
