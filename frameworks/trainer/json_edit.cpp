#include "frameworks/trainer/json_edit.h"

#include "core/framework/json_members.h"

namespace unitrain::frameworks::trainer {

namespace jm = framework::json_members;

json::Document new_object(std::string_view api_version, std::string_view kind, std::string_view ns, std::string_view name) {
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  d.root().AddMember("apiVersion", json::str(api_version, a), a);
  d.root().AddMember("kind", json::str(kind, a), a);
  json::Value meta(rapidjson::kObjectType);
  meta.AddMember("name", json::str(name, a), a);
  meta.AddMember("namespace", json::str(ns, a), a);
  d.root().AddMember("metadata", std::move(meta), a);
  return d;
}

void upsert_by(json::Value& list, std::string_view key, json::Value item, json::Allocator& a) {
  if (!list.IsArray()) list.SetArray();
  const json::Value* wanted = jm::member(&item, key);
  if (wanted != nullptr) {
    for (auto& existing : list.GetArray()) {
      const json::Value* k = jm::member(&existing, key);
      if (k != nullptr && *k == *wanted) {
        existing = std::move(item);
        return;
      }
    }
  }
  list.PushBack(std::move(item), a);
}

json::Value env_value(std::string_view name, std::string_view value, json::Allocator& a) {
  json::Value e(rapidjson::kObjectType);
  e.AddMember("name", json::str(name, a), a);
  e.AddMember("value", json::str(value, a), a);
  return e;
}

json::Value env_field_ref(std::string_view name, std::string_view path, json::Allocator& a) {
  json::Value field_ref(rapidjson::kObjectType);
  field_ref.AddMember("fieldPath", json::str(path, a), a);
  json::Value value_from(rapidjson::kObjectType);
  value_from.AddMember("fieldRef", std::move(field_ref), a);
  json::Value e(rapidjson::kObjectType);
  e.AddMember("name", json::str(name, a), a);
  e.AddMember("valueFrom", std::move(value_from), a);
  return e;
}

void upsert_env(json::Value& container, const json::Value* env, json::Allocator& a) {
  if (env == nullptr || !env->IsArray() || env->Empty()) return;
  json::Value& list = jm::ensure_array(container, "env", a);
  for (const auto& e : env->GetArray()) upsert_by(list, "name", json::clone(e, a), a);
}

json::Value& pod_template(json::Value& rjob, json::Allocator& a) {
  json::Value& job_template = jm::ensure_object(rjob, "template", a);
  json::Value& job_spec = jm::ensure_object(job_template, "spec", a);
  return jm::ensure_object(job_spec, "template", a);
}

namespace {
template <class V>
V* find_in(V& rjob, std::string_view list, std::string_view name) {
  V* containers = jm::member(jm::member(jm::member(jm::member(jm::member(&rjob, "template"), "spec"), "template"), "spec"), list);
  if (containers == nullptr || !containers->IsArray()) return nullptr;
  for (auto& c : containers->GetArray()) {
    const json::Value* n = jm::member(&c, "name");
    if (n != nullptr && n->IsString() && json::view(*n) == name) return &c;
  }
  return nullptr;
}
}  // namespace

json::Value* find_container(json::Value& rjob, std::string_view list, std::string_view name) {
  return find_in(rjob, list, name);
}
const json::Value* find_container(const json::Value& rjob, std::string_view list, std::string_view name) {
  return find_in(rjob, list, name);
}

}  // namespace unitrain::frameworks::trainer
