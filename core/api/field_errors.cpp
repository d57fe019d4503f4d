#include "core/api/field_errors.h"

#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace unitrain::api {

// Each builds the new path in one allocation of its final size (a copy, then appends, would
// allocate twice once the path outgrows the short-string buffer).
FieldPath FieldPath::child(std::string_view name) const {
  FieldPath p;
  p.s_.reserve(s_.size() + 1 + name.size());
  p.s_ += s_;
  if (!s_.empty()) p.s_ += '.';
  p.s_ += name;
  return p;
}

FieldPath FieldPath::index(std::size_t i) const {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, i).ptr;
  FieldPath p;
  p.s_.reserve(s_.size() + 2 + static_cast<std::size_t>(end - digits));
  p.s_ += s_;
  p.s_ += '[';
  p.s_.append(digits, end);
  p.s_ += ']';
  return p;
}

FieldPath FieldPath::key(std::string_view k) const {
  FieldPath p;
  p.s_.reserve(s_.size() + 2 + k.size());
  p.s_ += s_;
  p.s_ += '[';
  p.s_ += k;
  p.s_ += ']';
  return p;
}

namespace {

// Go's %v for a float64 is %g with the shortest digits, which switches to the exponent form
// when the decimal exponent is < -4 or >= 6 (1000000.0 prints "1e+06").
std::string go_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto sci = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string s(buf, sci.ptr);
  const auto e = s.find('e');
  const int exp = std::stoi(s.substr(e + 1));
  if (exp < -4 || exp >= 6) return s;
  auto fixed = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::fixed);
  return std::string(buf, fixed.ptr);
}

}  // namespace

std::string go_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\a': out += "\\a"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\v': out += "\\v"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}

FieldValue::FieldValue(std::string_view s) : text_(go_quote(s)), omitted_(false) {}
FieldValue::FieldValue(int64_t n) : text_(std::to_string(n)), omitted_(false) {}
FieldValue::FieldValue(bool b) : text_(b ? "true" : "false"), omitted_(false) {}
FieldValue::FieldValue(double d) : text_(go_float(d)), omitted_(false) {}

FieldValue FieldValue::null() { return FieldValue(std::string_view("null")); }

FieldValue FieldValue::rendered(std::string text) {
  FieldValue f;
  f.text_ = std::move(text);
  f.omitted_ = false;
  return f;
}

FieldValue FieldValue::of_json(const json::Value& v) {
  if (v.IsString()) return FieldValue(std::string_view(v.GetString(), v.GetStringLength()));
  if (v.IsNull()) return null();
  if (v.IsBool()) return FieldValue(v.GetBool());
  if (v.IsInt64()) return FieldValue(v.GetInt64());
  if (v.IsUint64()) {
    FieldValue f;
    f.text_ = std::to_string(v.GetUint64());
    f.omitted_ = false;
    return f;
  }
  if (v.IsNumber()) return FieldValue(v.GetDouble());
  FieldValue f;
  f.text_ = json::dump(v);
  f.omitted_ = false;
  return f;
}

std::string_view to_string(FieldErrorType t) {
  switch (t) {
    case FieldErrorType::NotFound: return "Not found";
    case FieldErrorType::Required: return "Required value";
    case FieldErrorType::Duplicate: return "Duplicate value";
    case FieldErrorType::Invalid: return "Invalid value";
    case FieldErrorType::NotSupported: return "Unsupported value";
    case FieldErrorType::Forbidden: return "Forbidden";
    case FieldErrorType::TooLong: return "Too long";
    case FieldErrorType::TooMany: return "Too many";
    case FieldErrorType::Internal: return "Internal error";
  }
  return "Invalid value";
}

std::string_view cause_type(FieldErrorType t) {
  switch (t) {
    case FieldErrorType::NotFound: return "FieldValueNotFound";
    case FieldErrorType::Required: return "FieldValueRequired";
    case FieldErrorType::Duplicate: return "FieldValueDuplicate";
    case FieldErrorType::Invalid: return "FieldValueInvalid";
    case FieldErrorType::NotSupported: return "FieldValueNotSupported";
    case FieldErrorType::Forbidden: return "FieldValueForbidden";
    case FieldErrorType::TooLong: return "FieldValueTooLong";
    case FieldErrorType::TooMany: return "FieldValueTooMany";
    case FieldErrorType::Internal: return "InternalError";
  }
  return "FieldValueInvalid";
}

std::optional<FieldErrorType> field_error_type_of_cause(std::string_view cause) {
  for (auto t : {FieldErrorType::NotFound, FieldErrorType::Required, FieldErrorType::Duplicate, FieldErrorType::Invalid,
                 FieldErrorType::NotSupported, FieldErrorType::Forbidden, FieldErrorType::TooLong, FieldErrorType::TooMany,
                 FieldErrorType::Internal}) {
    if (cause_type(t) == cause) return t;
  }
  return std::nullopt;
}

FieldError FieldError::not_found(const FieldPath& p, FieldValue v) {
  return {FieldErrorType::NotFound, p.str(), std::move(v), {}};
}
FieldError FieldError::required(const FieldPath& p, std::string detail) {
  return {FieldErrorType::Required, p.str(), {}, std::move(detail)};
}
FieldError FieldError::duplicate(const FieldPath& p, FieldValue v) {
  return {FieldErrorType::Duplicate, p.str(), std::move(v), {}};
}
FieldError FieldError::invalid(const FieldPath& p, FieldValue v, std::string detail) {
  return {FieldErrorType::Invalid, p.str(), std::move(v), std::move(detail)};
}
FieldError FieldError::not_supported(const FieldPath& p, FieldValue v, const std::vector<std::string>& valid) {
  std::string detail;
  if (!valid.empty()) {
    detail = "supported values: ";
    for (std::size_t i = 0; i < valid.size(); ++i) {
      if (i > 0) detail += ", ";
      detail += go_quote(valid[i]);
    }
  }
  return {FieldErrorType::NotSupported, p.str(), std::move(v), std::move(detail)};
}
FieldError FieldError::forbidden(const FieldPath& p, std::string detail) {
  return {FieldErrorType::Forbidden, p.str(), {}, std::move(detail)};
}
FieldError FieldError::too_long(const FieldPath& p, FieldValue v, int64_t max_length) {
  std::string detail = max_length >= 0 ? fmt::format("may not be longer than {}", max_length) : "value is too long";
  return {FieldErrorType::TooLong, p.str(), std::move(v), std::move(detail)};
}
FieldError FieldError::too_many(const FieldPath& p, int64_t actual, int64_t max_items) {
  std::string detail = max_items >= 0 ? fmt::format("must have at most {} items", max_items) : "has too many items";
  return {FieldErrorType::TooMany, p.str(), actual >= 0 ? FieldValue(actual) : FieldValue(), std::move(detail)};
}
FieldError FieldError::internal(const FieldPath& p, std::string detail) {
  return {FieldErrorType::Internal, p.str(), {}, std::move(detail)};
}

std::string FieldError::body() const {
  std::string s(api::to_string(type));
  // These types never print the value, whatever was recorded (as upstream ErrorBody does).
  const bool value_hidden = type == FieldErrorType::Required || type == FieldErrorType::Forbidden ||
                            type == FieldErrorType::TooLong || type == FieldErrorType::Internal;
  if (!value_hidden && !value.omitted()) {
    s += ": ";
    s += value.text();
  }
  if (!detail.empty()) {
    s += ": ";
    s += detail;
  }
  return s;
}

std::string FieldError::to_string() const { return field + ": " + body(); }

std::string aggregate(const FieldErrorList& errors) {
  std::set<std::string> seen;
  std::vector<std::string> msgs;
  for (const auto& e : errors) {
    std::string m = e.to_string();
    if (seen.insert(m).second) msgs.push_back(std::move(m));
  }
  if (msgs.empty()) return {};
  if (msgs.size() == 1) return msgs[0];
  std::string out = "[";
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    if (i > 0) out += ", ";
    out += msgs[i];
  }
  out += ']';
  return out;
}

std::string invalid_message(std::string_view group, std::string_view kind, std::string_view name,
                            const FieldErrorList& errors) {
  std::string gk(kind);
  if (!group.empty()) {
    gk += '.';
    gk += group;
  }
  std::string msg = fmt::format("{} {} is invalid", gk, go_quote(name));
  if (!errors.empty()) msg += ": " + aggregate(errors);
  return msg;
}

json::Document causes_json(const FieldErrorList& errors) {
  json::Document doc = json::Document::array();
  auto& a = doc.alloc();
  for (const auto& e : errors) {
    json::Value c(rapidjson::kObjectType);
    c.AddMember("reason", json::str(cause_type(e.type), a), a);
    c.AddMember("message", json::str(e.body(), a), a);
    c.AddMember("field", json::str(e.field, a), a);
    doc.root().PushBack(c, a);
  }
  return doc;
}

json::Document invalid_status(std::string_view group, std::string_view kind, std::string_view name,
                              const FieldErrorList& errors) {
  json::Document doc = json::Document::object();
  auto& a = doc.alloc();
  auto& r = doc.root();
  r.AddMember("kind", "Status", a);
  r.AddMember("apiVersion", "v1", a);
  r.AddMember("metadata", json::Value(rapidjson::kObjectType), a);
  r.AddMember("status", "Failure", a);
  r.AddMember("message", json::str(invalid_message(group, kind, name, errors), a), a);
  r.AddMember("reason", "Invalid", a);
  json::Value details(rapidjson::kObjectType);
  details.AddMember("name", json::str(name, a), a);
  if (!group.empty()) details.AddMember("group", json::str(group, a), a);
  details.AddMember("kind", json::str(kind, a), a);
  if (!errors.empty()) {
    json::Document causes = causes_json(errors);
    details.AddMember("causes", json::clone(causes.root(), a), a);
  }
  r.AddMember("details", details, a);
  r.AddMember("code", 422, a);
  return doc;
}

}  // namespace unitrain::api
