#include "core/framework/pod_decoration.h"

#include <fmt/format.h>

#include "core/framework/job_labels.h"
#include "core/framework/json_members.h"
#include "core/framework/replica_defaults.h"

namespace unitrain::framework {

using json::Value;

Value env_var_json(const EnvVar& e, json::Allocator& a) {
  Value item(rapidjson::kObjectType);
  item.AddMember("name", json::str(e.name, a), a);
  if (!e.field_path.empty()) {
    Value field_ref(rapidjson::kObjectType);
    field_ref.AddMember("fieldPath", json::str(e.field_path, a), a);
    Value from(rapidjson::kObjectType);
    from.AddMember("fieldRef", field_ref, a);
    item.AddMember("valueFrom", from, a);
  } else if (!e.value.empty()) {
    item.AddMember("value", json::str(e.value, a), a);
  }
  return item;
}

Value volume_mount(std::string_view name, std::string_view mount_path, json::Allocator& a) {
  Value m(rapidjson::kObjectType);
  m.AddMember("name", json::str(name, a), a);
  m.AddMember("mountPath", json::str(mount_path, a), a);
  return m;
}

Value config_map_volume(std::string_view volume_name, std::string_view config_map,
                        std::initializer_list<ConfigMapFile> files, json::Allocator& a) {
  Value items(rapidjson::kArrayType);
  for (const ConfigMapFile& f : files) {
    Value item(rapidjson::kObjectType);
    item.AddMember("key", json::str(f.key, a), a);
    item.AddMember("path", json::str(f.key, a), a);
    item.AddMember("mode", Value(f.mode), a);
    items.PushBack(item, a);
  }
  Value cm(rapidjson::kObjectType);
  cm.AddMember("name", json::str(config_map, a), a);
  cm.AddMember("items", items, a);
  Value v(rapidjson::kObjectType);
  v.AddMember("name", json::str(volume_name, a), a);
  v.AddMember("configMap", cm, a);
  return v;
}

namespace {

Status no_containers(const json::Document& pod) {
  return fail(fmt::format("pod {}: spec.containers is missing", json::string_at(pod.root(), "/metadata/name")));
}

}  // namespace

Status append_env(json::Document& pod, const std::vector<EnvVar>& env, std::optional<std::string_view> only) {
  auto& a = pod.alloc();
  Value* containers = json::find(pod.root(), "/spec/containers");
  if (containers == nullptr || !containers->IsArray()) return no_containers(pod);
  for (auto& c : containers->GetArray()) {
    if (!c.IsObject()) continue;
    if (only && json::string_at(c, "/name") != *only) continue;
    Value& list = json_members::ensure_array(c, "env", a);
    for (const EnvVar& e : env) list.PushBack(env_var_json(e, a), a);
  }
  return {};
}

Status set_master_role(json::Document& pod) {
  return json::set_string(pod, "/metadata/labels/" + json::escape_pointer_token(job_labels::kJobRole), "master");
}

Status decorate_replica_pod(const FrameworkDescriptor& d, json::Document& pod, bool master_role,
                            const std::vector<EnvVar>& env, std::optional<std::string_view> only) {
  if (master_role) {
    if (auto s = set_master_role(pod); !s) return s;
  }
  Value* containers = json::find(pod.root(), "/spec/containers");
  if (containers == nullptr || !containers->IsArray()) return no_containers(pod);
  ensure_default_port(d, *containers, pod.alloc());
  if (env.empty()) return {};
  return append_env(pod, env, only);
}

}  // namespace unitrain::framework
