#include "core/framework/json_members.h"

namespace unitrain::framework::json_members {

namespace {

rapidjson::GenericStringRef<char> ref(std::string_view s) {
  return rapidjson::StringRef(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

json::Value& ensure(json::Value& obj, std::string_view key, rapidjson::Type type, json::Allocator& a) {
  auto it = obj.FindMember(ref(key));
  if (it != obj.MemberEnd() && it->value.GetType() == type) return it->value;
  if (it != obj.MemberEnd()) {
    it->value = json::Value(type);
    return it->value;
  }
  obj.AddMember(json::str(key, a), json::Value(type), a);
  return obj.FindMember(ref(key))->value;
}

}  // namespace

const json::Value* member(const json::Value* obj, std::string_view key) {
  if (obj == nullptr || !obj->IsObject()) return nullptr;
  auto it = obj->FindMember(ref(key));
  return it == obj->MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
}

json::Value* member(json::Value* obj, std::string_view key) {
  if (obj == nullptr || !obj->IsObject()) return nullptr;
  auto it = obj->FindMember(ref(key));
  return it == obj->MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
}

json::Value& ensure_array(json::Value& obj, std::string_view key, json::Allocator& a) {
  return ensure(obj, key, rapidjson::kArrayType, a);
}

json::Value& ensure_object(json::Value& obj, std::string_view key, json::Allocator& a) {
  return ensure(obj, key, rapidjson::kObjectType, a);
}

void put(json::Value& obj, std::string_view key, json::Value value, json::Allocator& a) {
  auto it = obj.FindMember(ref(key));
  if (it != obj.MemberEnd()) {
    it->value = std::move(value);
  } else {
    obj.AddMember(json::str(key, a), value, a);
  }
}

void put(json::Value& obj, std::string_view key, std::string_view value, json::Allocator& a) {
  put(obj, key, json::str(value, a), a);
}

}  // namespace unitrain::framework::json_members
