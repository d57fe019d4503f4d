#include "core/api/quantity.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <vector>

#include <fmt/format.h>

namespace unitrain::api {

namespace {

using i128 = __int128;
using u128 = unsigned __int128;

constexpr i128 kNano = 1'000'000'000;
// Kubernetes caps parsed magnitudes at 2^63-1 units.
constexpr u128 kParseCapNanos = static_cast<u128>(std::numeric_limits<int64_t>::max()) * 1'000'000'000u;
// Arithmetic bound: 10^36 nanos (10^27 units), far inside 128 bits so printing can scale by 100.
constexpr i128 kLimitNanos = static_cast<i128>(1'000'000'000'000'000'000) * static_cast<i128>(1'000'000'000'000'000'000);

constexpr std::string_view kFormatError =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

// Just enough unsigned big-integer arithmetic to evaluate "digits x 2^p x 10^k" exactly.
class BigUint {
 public:
  void mul_small(uint32_t m) {
    uint64_t carry = 0;
    for (auto& limb : limbs_) {
      uint64_t v = static_cast<uint64_t>(limb) * m + carry;
      limb = static_cast<uint32_t>(v);
      carry = v >> 32;
    }
    if (carry) limbs_.push_back(static_cast<uint32_t>(carry));
  }
  void add_small(uint32_t a) {
    uint64_t carry = a;
    for (auto& limb : limbs_) {
      if (!carry) break;
      uint64_t v = static_cast<uint64_t>(limb) + carry;
      limb = static_cast<uint32_t>(v);
      carry = v >> 32;
    }
    if (carry) limbs_.push_back(static_cast<uint32_t>(carry));
  }
  uint32_t div_small(uint32_t d) {
    uint64_t rem = 0;
    for (size_t i = limbs_.size(); i-- > 0;) {
      uint64_t cur = (rem << 32) | limbs_[i];
      limbs_[i] = static_cast<uint32_t>(cur / d);
      rem = cur % d;
    }
    while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
    return static_cast<uint32_t>(rem);
  }
  bool is_zero() const { return limbs_.empty(); }
  // nullopt when the value needs more than 128 bits.
  std::optional<u128> to_u128() const {
    if (limbs_.size() > 4) return std::nullopt;
    u128 v = 0;
    for (size_t i = limbs_.size(); i-- > 0;) v = (v << 32) | limbs_[i];
    return v;
  }
  bool greater_than(u128 bound) const {
    auto v = to_u128();
    return !v || *v > bound;
  }

 private:
  std::vector<uint32_t> limbs_;
};

std::string i128_to_string(i128 v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  u128 u = negative ? static_cast<u128>(-(v + 1)) + 1 : static_cast<u128>(v);
  std::string digits;
  while (u > 0) {
    digits += static_cast<char>('0' + static_cast<int>(u % 10));
    u /= 10;
  }
  if (negative) digits += '-';
  std::reverse(digits.begin(), digits.end());
  return digits;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

struct Suffix {
  int base = 10;        // 10 or 2
  int64_t exponent = 0;  // power of `base`
  Quantity::Format format = Quantity::Format::DecimalSI;
};

std::optional<Suffix> interpret_suffix(std::string_view s) {
  using F = Quantity::Format;
  static constexpr std::pair<std::string_view, int> kDecimal[] = {
      {"", 0}, {"n", -9}, {"u", -6}, {"m", -3}, {"k", 3}, {"M", 6}, {"G", 9}, {"T", 12}, {"P", 15}, {"E", 18}};
  static constexpr std::pair<std::string_view, int> kBinary[] = {
      {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  for (const auto& [name, exp] : kDecimal)
    if (s == name) return Suffix{10, exp, F::DecimalSI};
  for (const auto& [name, exp] : kBinary)
    if (s == name) return Suffix{2, exp, F::BinarySI};
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    std::string_view digits = s.substr(1);
    if (digits[0] == '+') digits.remove_prefix(1);
    int32_t exp = 0;  // 32 bits, as Kubernetes parses it
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), exp);
    if (ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
    return Suffix{10, exp, F::DecimalExponent};
  }
  return std::nullopt;
}

// Rounds n / d away from zero and saturates to int64.
int64_t scaled_away_from_zero(i128 n, i128 d) {
  i128 q = n / d;
  if (n % d != 0) q += n < 0 ? -1 : 1;
  if (q > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (q < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(q);
}

Quantity::Format result_format(const Quantity& a, const Quantity& b) {
  return a.is_zero() ? b.format() : a.format();
}

}  // namespace

Result<Quantity> Quantity::parse(std::string_view text) {
  auto error = [&](std::string_view why) { return fail(fmt::format("quantity \"{}\": {}", text, why)); };
  if (text.empty()) return error(kFormatError);

  size_t pos = 0;
  bool negative = false;
  if (text[pos] == '+' || text[pos] == '-') negative = text[pos++] == '-';
  const size_t num_start = pos;
  while (pos < text.size() && is_digit(text[pos])) ++pos;
  std::string_view num = text.substr(num_start, pos - num_start);
  std::string_view denom;
  if (pos < text.size() && text[pos] == '.') {
    const size_t denom_start = ++pos;
    while (pos < text.size() && is_digit(text[pos])) ++pos;
    denom = text.substr(denom_start, pos - denom_start);
  }
  if (num.empty() && denom.empty()) return error(kFormatError);

  // The suffix has the shape [eEinumkKMGTP]*[-+]?[0-9]*; anything else is a format error.
  const std::string_view suffix_text = text.substr(pos);
  {
    size_t i = 0;
    while (i < suffix_text.size() && std::string_view("eEinumkKMGTP").find(suffix_text[i]) != std::string_view::npos) ++i;
    if (i < suffix_text.size() && (suffix_text[i] == '+' || suffix_text[i] == '-')) ++i;
    while (i < suffix_text.size() && is_digit(suffix_text[i])) ++i;
    if (i != suffix_text.size()) return error(kFormatError);
  }
  auto suffix = interpret_suffix(suffix_text);
  if (!suffix) return error("unable to parse quantity's suffix");

  // Significant digits with their decimal scale: value = digits x 10^scale x suffix.
  std::string digits = std::string(num) + std::string(denom);
  int64_t scale = -static_cast<int64_t>(denom.size());
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  while (!digits.empty() && digits.back() == '0') {
    digits.pop_back();
    ++scale;
  }
  if (digits.empty()) return Quantity(0, suffix->format);
  // Digits beyond 60 significant ones can only matter below 1n (they round up) or above the
  // cap (which they exceed anyway); `sticky` remembers that something non-zero was dropped.
  bool sticky = false;
  constexpr size_t kMaxDigits = 60;
  if (digits.size() > kMaxDigits) {
    scale += static_cast<int64_t>(digits.size() - kMaxDigits);
    digits.resize(kMaxDigits);
    sticky = true;
  }
  BigUint big;
  for (char c : digits) {
    big.mul_small(10);
    big.add_small(static_cast<uint32_t>(c - '0'));
  }
  if (suffix->base == 2) {
    for (int64_t left = suffix->exponent; left > 0; left -= 30)
      big.mul_small(1u << static_cast<unsigned>(std::min<int64_t>(left, 30)));
  }
  const int64_t shift = scale + (suffix->base == 10 ? suffix->exponent : 0) + 9;  // to nano-units
  // Kubernetes caps binary amounts at 2^63-1 units and keeps decimal ones in arbitrary precision;
  // we hold decimal ones exactly up to 10^27 units and reject larger ones.
  const u128 bound = suffix->format == Format::BinarySI ? kParseCapNanos : static_cast<u128>(kLimitNanos);
  bool too_big = big.greater_than(bound);
  if (shift >= 0) {
    for (int64_t i = 0; i < shift && !too_big; ++i) {
      big.mul_small(10);
      too_big = big.greater_than(bound);
    }
  } else {
    for (int64_t i = 0; i < -shift && !big.is_zero(); ++i) {
      if (big.div_small(10) != 0) sticky = true;
    }
    too_big = big.greater_than(bound);
  }
  if (too_big && suffix->format != Format::BinarySI) return error("magnitude beyond 10^27 units is not supported");
  u128 magnitude = too_big ? bound : *big.to_u128();
  // Kubernetes rounds any non-zero remainder up to the next nano-unit.
  if (!too_big && sticky) magnitude += 1;
  if (magnitude > bound) magnitude = bound;

  Format format = suffix->format;
  // A binary amount below one unit cannot print in binary form without rounding.
  if (format == Format::BinarySI && magnitude < static_cast<u128>(kNano)) format = Format::DecimalSI;
  const i128 nanos = static_cast<i128>(magnitude);
  return Quantity(negative ? -nanos : nanos, format);
}

Result<Quantity> Quantity::from_json(const json::Value& v) {
  if (v.IsString()) {
    // Like UnmarshalJSON, surrounding whitespace inside the JSON string is ignored.
    std::string_view s(v.GetString(), v.GetStringLength());
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
    return parse(s);
  }
  if (v.IsNumber()) return parse(json::dump(v));
  return fail(fmt::format("quantity: expected a string or number, got {}", json::dump(v)));
}

Quantity Quantity::from_int(int64_t value, Format format) { return Quantity(static_cast<i128>(value) * kNano, format); }

Quantity Quantity::from_milli(int64_t milli, Format format) {
  return Quantity(static_cast<i128>(milli) * 1'000'000, format);
}

int64_t Quantity::value() const { return scaled_away_from_zero(nanos_, kNano); }
int64_t Quantity::milli_value() const { return scaled_away_from_zero(nanos_, 1'000'000); }

std::string Quantity::to_string() const {
  if (nanos_ == 0) return "0";
  Format format = format_;
  if (format == Format::BinarySI && (nanos_ % kNano != 0 || (nanos_ > -1024 * kNano && nanos_ < 1024 * kNano)))
    format = Format::DecimalSI;

  if (format == Format::BinarySI) {
    static constexpr std::string_view kSuffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    i128 units = nanos_ / kNano;
    size_t exp = 0;
    while (exp + 1 < std::size(kSuffixes) && units % 1024 == 0) {
      units /= 1024;
      ++exp;
    }
    return i128_to_string(units) + std::string(kSuffixes[exp]);
  }

  // Mantissa without trailing zeros, then the exponent lowered to a multiple of 3.
  i128 mantissa = nanos_;
  int exp = -9;
  while (mantissa % 10 == 0) {
    mantissa /= 10;
    ++exp;
  }
  const int lower = ((exp % 3) + 3) % 3;
  for (int i = 0; i < lower; ++i) mantissa *= 10;
  exp -= lower;

  std::string out = i128_to_string(mantissa);
  if (format == Format::DecimalSI && exp <= 18) {
    static constexpr std::string_view kSuffixes[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
    out += kSuffixes[(exp + 9) / 3];
  } else if (exp != 0) {
    // DecimalExponent, and DecimalSI beyond "E" (only reachable by arithmetic).
    out += fmt::format("e{}", exp);
  }
  return out;
}

Result<Quantity> Quantity::checked_add(const Quantity& a, const Quantity& b) {
  const i128 sum = a.nanos_ + b.nanos_;  // both within 10^36: cannot overflow 128 bits
  if (sum > kLimitNanos || sum < -kLimitNanos)
    return fail(fmt::format("quantity {} + {}: result out of range", a.to_string(), b.to_string()));
  return Quantity(sum, result_format(a, b));
}

Result<Quantity> Quantity::checked_sub(const Quantity& a, const Quantity& b) {
  const i128 diff = a.nanos_ - b.nanos_;
  if (diff > kLimitNanos || diff < -kLimitNanos)
    return fail(fmt::format("quantity {} - {}: result out of range", a.to_string(), b.to_string()));
  return Quantity(diff, result_format(a, b));
}

Result<Quantity> Quantity::checked_mul(const Quantity& a, int64_t factor) {
  i128 product = 0;
  if (__builtin_mul_overflow(a.nanos_, static_cast<i128>(factor), &product) || product > kLimitNanos ||
      product < -kLimitNanos)
    return fail(fmt::format("quantity {} * {}: result out of range", a.to_string(), factor));
  return Quantity(product, a.format_);
}

namespace {

Quantity saturate(Result<Quantity> r, bool negative, Quantity::Format format) {
  if (r) return *r;
  // Only reachable beyond 10^27 units; clamp rather than wrap.
  Quantity bound = Quantity::from_int(1'000'000'000'000'000'000, format) * 1'000'000'000;
  return negative ? Quantity() - bound : bound;
}

}  // namespace

Quantity operator+(const Quantity& a, const Quantity& b) {
  return saturate(Quantity::checked_add(a, b), a.sign() < 0, result_format(a, b));
}

Quantity operator-(const Quantity& a, const Quantity& b) {
  return saturate(Quantity::checked_sub(a, b), a.sign() < 0 || (a.is_zero() && b.sign() > 0), result_format(a, b));
}

Quantity operator*(const Quantity& a, int64_t factor) {
  return saturate(Quantity::checked_mul(a, factor), (a.sign() < 0) != (factor < 0), a.format());
}

}  // namespace unitrain::api
