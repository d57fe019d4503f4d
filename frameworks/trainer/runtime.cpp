#include "frameworks/trainer/runtime.h"

#include <fmt/format.h>

#include "core/framework/json_members.h"
#include "frameworks/trainer/names.h"

namespace unitrain::frameworks::trainer {

namespace jm = framework::json_members;
using json::string_at;

RuntimeRef runtime_ref(const json::Value& trainjob) {
  return {string_at(trainjob, "/spec/runtimeRef/name"), string_at(trainjob, "/spec/runtimeRef/apiGroup"),
          string_at(trainjob, "/spec/runtimeRef/kind")};
}

std::string gk_key(const RuntimeRef& ref) {
  return ref.api_group.empty() ? ref.kind : ref.kind + "." + ref.api_group;
}

bool supported(const RuntimeRef& ref) {
  return ref.api_group == kGroup && (ref.kind == kTrainingRuntime || ref.kind == kClusterTrainingRuntime);
}

bool namespaced(const RuntimeRef& ref) { return ref.kind == kTrainingRuntime; }

std::string runtime_fetch_error(const RuntimeRef& ref, std::string_view error) {
  if (namespaced(ref)) return fmt::format("TrainingRuntime specified in TrainJob is not found: {}", error);
  return fmt::format("not found ClusterTrainingRuntime specified in TrainJob: {}", error);
}

std::string snapshot_name(const json::Value& trainjob) {
  return string_at(trainjob, "/metadata/name") + std::string(kSnapshotSuffix);
}

json::Document snapshot_configmap(const json::Value& trainjob, const json::Value& runtime) {
  json::Document copy = json::Document::object();
  auto& ra = copy.alloc();
  for (const char* key : {"apiVersion", "kind", "metadata", "spec"}) {
    if (const json::Value* v = jm::member(&runtime, key)) copy.root().AddMember(json::str(key, ra), json::clone(*v, ra), ra);
  }
  json::remove(copy, "/metadata/managedFields");

  json::Document cm = json::Document::object();
  auto& a = cm.alloc();
  cm.root().AddMember("apiVersion", "v1", a);
  cm.root().AddMember("kind", "ConfigMap", a);
  json::Value meta(rapidjson::kObjectType);
  meta.AddMember("name", json::str(snapshot_name(trainjob), a), a);
  meta.AddMember("namespace", json::str(string_at(trainjob, "/metadata/namespace"), a), a);
  cm.root().AddMember("metadata", std::move(meta), a);
  json::Value data(rapidjson::kObjectType);
  data.AddMember(json::str(kSnapshotKey, a), json::str(json::to_yaml(copy.root()), a), a);
  cm.root().AddMember("data", std::move(data), a);
  return cm;
}

Result<json::Document> runtime_from_snapshot(const json::Value& trainjob, const json::Value& configmap) {
  const std::string uid = string_at(trainjob, "/metadata/uid");
  bool owned = false;
  if (const json::Value* refs = json::find(configmap, "/metadata/ownerReferences"); refs && refs->IsArray()) {
    for (const auto& r : refs->GetArray()) {
      if (json::get_bool(r, "/controller").value_or(false) && string_at(r, "/uid") == uid) owned = true;
    }
  }
  if (!owned) return fail("invalid runtime snapshot: a snapshot configmap exists but is owned by another object");
  const json::Value* text = json::find(configmap, "/data/" + std::string(kSnapshotKey));
  if (text == nullptr || !text->IsString()) {
    return fail("invalid runtime snapshot: snapshot ConfigMap missing \"runtime\" data key");
  }
  auto docs = json::parse_yaml(json::view(*text));
  if (!docs) return fail("invalid runtime snapshot: unable to unmarshal the snapshot: " + docs.error().message);
  if (docs->size() != 1 || !(*docs)[0].root().IsObject()) {
    return fail("invalid runtime snapshot: unable to unmarshal the snapshot: not one runtime object");
  }
  json::Document runtime = std::move((*docs)[0]);
  const RuntimeRef ref = runtime_ref(trainjob);
  const std::string name = string_at(runtime.root(), "/metadata/name");
  const std::string api_version = string_at(runtime.root(), "/apiVersion");
  const std::string group = api_version.substr(0, api_version.find('/'));
  const std::string kind = string_at(runtime.root(), "/kind");
  if (name != ref.name || (!ref.api_group.empty() && group != ref.api_group) || (!ref.kind.empty() && kind != ref.kind)) {
    return fail(fmt::format(
        "invalid runtime snapshot: the snapshot refers to the wrong runtime: expecting a runtime with name, api group "
        "and kind of \"{}\", \"{}\", \"{}\" but found runtime with name, api group and kind of \"{}\", \"{}\", \"{}\"",
        ref.name, ref.api_group.empty() ? "<any>" : ref.api_group, ref.kind.empty() ? "<any>" : ref.kind, name, group,
        kind));
  }
  return runtime;
}

}  // namespace unitrain::frameworks::trainer
