#include "core/api/decode.h"

#include <limits>

namespace unitrain::api {

const json::Value* Decoder::member(const json::Value& obj, std::string_view key) {
  if (!obj.IsObject()) return nullptr;
  auto it = obj.FindMember(json::Value(rapidjson::StringRef(key.data(), static_cast<rapidjson::SizeType>(key.size()))));
  if (it == obj.MemberEnd() || it->value.IsNull()) return nullptr;
  return &it->value;
}

std::optional<std::string> Decoder::string(const json::Value& obj, std::string_view key, const FieldPath& in) {
  const json::Value* v = member(obj, key);
  if (!v) return std::nullopt;
  if (!v->IsString()) {
    add(FieldError::invalid(in.child(key), FieldValue::of_json(*v), "must be a string"));
    return std::nullopt;
  }
  return std::string(v->GetString(), v->GetStringLength());
}

std::optional<int64_t> Decoder::int64(const json::Value& obj, std::string_view key, const FieldPath& in) {
  const json::Value* v = member(obj, key);
  if (!v) return std::nullopt;
  if (!v->IsInt64()) {
    add(FieldError::invalid(in.child(key), FieldValue::of_json(*v), v->IsNumber() && !v->IsDouble()
                                                               ? "must be a 64-bit integer"
                                                               : "must be an integer"));
    return std::nullopt;
  }
  return v->GetInt64();
}

std::optional<int32_t> Decoder::int32(const json::Value& obj, std::string_view key, const FieldPath& in) {
  const json::Value* v = member(obj, key);
  if (!v) return std::nullopt;
  if (!v->IsInt64() && !v->IsUint64()) {
    add(FieldError::invalid(in.child(key), FieldValue::of_json(*v), "must be an integer"));
    return std::nullopt;
  }
  if (!v->IsInt()) {
    add(FieldError::invalid(in.child(key), FieldValue::of_json(*v), "must be a 32-bit integer"));
    return std::nullopt;
  }
  return v->GetInt();
}

std::optional<bool> Decoder::boolean(const json::Value& obj, std::string_view key, const FieldPath& in) {
  const json::Value* v = member(obj, key);
  if (!v) return std::nullopt;
  if (!v->IsBool()) {
    add(FieldError::invalid(in.child(key), FieldValue::of_json(*v), "must be a boolean"));
    return std::nullopt;
  }
  return v->GetBool();
}

std::optional<TimePoint> Decoder::time(const json::Value& obj, std::string_view key, const FieldPath& in) {
  const json::Value* v = member(obj, key);
  if (!v) return std::nullopt;
  if (!v->IsString()) {
    add(FieldError::invalid(in.child(key), FieldValue::of_json(*v), "must be an RFC 3339 time string"));
    return std::nullopt;
  }
  std::string_view text(v->GetString(), v->GetStringLength());
  auto t = parse_time(text);
  if (!t) {
    add(FieldError::invalid(in.child(key), text, t.error().message));
    return std::nullopt;
  }
  return *t;
}

const json::Value* Decoder::object(const json::Value& obj, std::string_view key, const FieldPath& in) {
  const json::Value* v = member(obj, key);
  if (!v) return nullptr;
  return expect_object(*v, in.child(key)) ? v : nullptr;
}

const json::Value* Decoder::array(const json::Value& obj, std::string_view key, const FieldPath& in) {
  const json::Value* v = member(obj, key);
  if (!v) return nullptr;
  if (!v->IsArray()) {
    add(FieldError::invalid(in.child(key), FieldValue::of_json(*v), "must be an array"));
    return nullptr;
  }
  return v;
}

bool Decoder::expect_object(const json::Value& v, const FieldPath& p) {
  if (v.IsObject()) return true;
  add(FieldError::invalid(p, FieldValue::of_json(v), "must be an object"));
  return false;
}

void put_string(json::Value& obj, std::string_view key, std::string_view value, json::Allocator& a) {
  obj.AddMember(json::str(key, a), json::str(value, a), a);
}

void put_int(json::Value& obj, std::string_view key, int64_t value, json::Allocator& a) {
  obj.AddMember(json::str(key, a), json::Value(value), a);
}

void put_bool(json::Value& obj, std::string_view key, bool value, json::Allocator& a) {
  obj.AddMember(json::str(key, a), json::Value(value), a);
}

void put_time(json::Value& obj, std::string_view key, const std::optional<TimePoint>& t, json::Allocator& a) {
  if (t) {
    obj.AddMember(json::str(key, a), json::str(format_time(*t), a), a);
  } else {
    obj.AddMember(json::str(key, a), json::Value(), a);
  }
}

}  // namespace unitrain::api
