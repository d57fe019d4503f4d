// Kubernetes resource.Quantity ("1Gi", "500m", "1.5", "1e3"), with the parse rules, exact
// arithmetic and canonical String() output of k8s.io/apimachinery/pkg/api/resource.
//
// The value is held exactly as a signed count of nano-units in 128 bits. Parsing follows
// Kubernetes: precision finer than 1n is rounded up (away from zero), and binary (Ki..Ei) amounts
// above 2^63-1 units are capped there. Kubernetes keeps larger decimal amounts in arbitrary
// precision; we keep them exactly up to 10^27 units and reject larger ones. The format (DecimalSI, BinarySI, DecimalExponent) comes from the
// suffix and decides how the value prints, so "1k" and "1Ki" keep their style.
//
// Arithmetic stays exact up to 10^27 units; beyond that the operators saturate at that bound
// (the checked_* functions report it instead). Kubernetes switches to arbitrary precision there;
// no resource amount comes near it.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/result.h"
#include "core/json/json.h"

namespace unitrain::api {

class Quantity {
 public:
  enum class Format { DecimalSI, BinarySI, DecimalExponent };

  Quantity() = default;  // zero, DecimalSI

  // Errors name the input: `quantity "1x": unable to parse quantity's suffix`.
  static Result<Quantity> parse(std::string_view text);
  // A JSON string ("1Gi") or number (1, 0.5): the API server accepts both for quantities.
  static Result<Quantity> from_json(const json::Value& v);
  static Quantity from_int(int64_t value, Format format = Format::DecimalSI);
  static Quantity from_milli(int64_t milli, Format format = Format::DecimalSI);

  // Canonical form, exactly as Quantity.String() prints it ("0.1" -> "100m", 1024 -> "1Ki").
  std::string to_string() const;
  Format format() const { return format_; }
  bool is_zero() const { return nanos_ == 0; }
  int sign() const { return nanos_ < 0 ? -1 : nanos_ > 0 ? 1 : 0; }

  // Rounded up (away from zero) like Value() and MilliValue(); saturated at the int64 range.
  int64_t value() const;
  int64_t milli_value() const;

  // Results keep the left operand's format, unless it is zero (then the right one's), as Add
  // and Sub do in Kubernetes.
  static Result<Quantity> checked_add(const Quantity& a, const Quantity& b);
  static Result<Quantity> checked_sub(const Quantity& a, const Quantity& b);
  static Result<Quantity> checked_mul(const Quantity& a, int64_t factor);

  friend Quantity operator+(const Quantity& a, const Quantity& b);
  friend Quantity operator-(const Quantity& a, const Quantity& b);
  friend Quantity operator*(const Quantity& a, int64_t factor);
  Quantity& operator+=(const Quantity& b) { return *this = *this + b; }
  Quantity& operator-=(const Quantity& b) { return *this = *this - b; }

  // By value only: "1k" == "1000" and "1Ki" == "1024".
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) { return a.nanos_ <=> b.nanos_; }
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.nanos_ == b.nanos_; }

 private:
  Quantity(__int128 nanos, Format format) : nanos_(nanos), format_(format) {}

  __int128 nanos_ = 0;
  Format format_ = Format::DecimalSI;
};

}  // namespace unitrain::api
