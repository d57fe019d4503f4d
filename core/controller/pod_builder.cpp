#include "core/controller/pod_builder.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/api/meta.h"

namespace unitrain::controller {

namespace {

void put_label(json::Value& labels, std::string_view key, std::string_view value, json::Allocator& a) {
  auto it = labels.FindMember(json::Value(rapidjson::StringRef(key.data(), key.size())));
  if (it != labels.MemberEnd()) it->value = json::str(value, a);
  else labels.AddMember(json::str(key, a), json::str(value, a), a);
}

}  // namespace

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string replica_name(std::string_view job, std::string_view replica_type, int32_t index) {
  std::string name = fmt::format("{}-{}-{}", job, lower(replica_type), index);
  std::replace(name.begin(), name.end(), '/', '-');
  return name;
}

json::Document job_selector_labels(const framework::FrameworkDescriptor& descriptor, std::string_view job) {
  auto labels = json::Document::object();
  auto& a = labels.alloc();
  put_label(labels.root(), kOperatorNameLabel, descriptor.controller_name, a);
  std::string job_label(job);
  std::replace(job_label.begin(), job_label.end(), '/', '-');
  put_label(labels.root(), kJobNameLabel, job_label, a);
  return labels;
}

json::Document replica_labels(const framework::FrameworkDescriptor& descriptor, std::string_view job,
                              std::string_view replica_type, int32_t index) {
  auto labels = job_selector_labels(descriptor, job);
  put_label(labels.root(), descriptor.replica_type_label, lower(replica_type), labels.alloc());
  if (index >= 0) put_label(labels.root(), kReplicaIndexLabel, std::to_string(index), labels.alloc());
  return labels;
}

std::string selector_string(const json::Value& labels) {
  std::map<std::string_view, std::string_view> sorted;
  if (labels.IsObject())
    for (const auto& m : labels.GetObject())
      if (m.value.IsString())
        sorted.emplace(std::string_view(m.name.GetString(), m.name.GetStringLength()),
                       std::string_view(m.value.GetString(), m.value.GetStringLength()));
  std::string out;
  for (const auto& [k, v] : sorted) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}={}", k, v);
  }
  return out;
}

const json::Value* replica_spec(const framework::FrameworkDescriptor& descriptor, const json::Value& job,
                                std::string_view replica_type) {
  return json::find(job, "/spec/" + json::escape_pointer_token(descriptor.replica_specs_field) + "/" +
                             json::escape_pointer_token(replica_type));
}

int32_t replicas_of(const framework::FrameworkDescriptor& descriptor, const json::Value& job, std::string_view replica_type) {
  const json::Value* spec = replica_spec(descriptor, job, replica_type);
  if (!spec) return 0;
  auto n = json::get_int(*spec, "/replicas");
  return n ? static_cast<int32_t>(*n) : 1;
}

Result<BuiltPod> build_pod(const framework::FrameworkDescriptor& descriptor, const json::Value& job,
                           std::string_view replica_type, int32_t index) {
  const json::Value* spec = replica_spec(descriptor, job, replica_type);
  if (!spec || !spec->IsObject())
    return fail(fmt::format("spec.{}[{}]: replica spec missing", descriptor.replica_specs_field, replica_type));
  const std::string job_name(json::get_string(job, "/metadata/name").value_or(""));
  const std::string ns(json::get_string(job, "/metadata/namespace").value_or(""));

  BuiltPod built;
  auto& pod = built.pod;
  pod = json::Document::object();
  auto& a = pod.alloc();
  pod.root().AddMember("apiVersion", "v1", a);
  pod.root().AddMember("kind", "Pod", a);

  json::Value meta(rapidjson::kObjectType);
  if (const json::Value* tmeta = json::find(*spec, "/template/metadata"); tmeta && tmeta->IsObject())
    meta.CopyFrom(*tmeta, a);
  // The template's name/namespace/ownership never reach the pod.
  for (auto key : {"name", "generateName", "namespace", "ownerReferences", "uid", "resourceVersion"})
    meta.RemoveMember(key);
  meta.AddMember("name", json::str(replica_name(job_name, replica_type, index), a), a);
  meta.AddMember("namespace", json::str(ns, a), a);
  if (!meta.HasMember("labels") || !meta["labels"].IsObject()) {
    meta.RemoveMember("labels");
    meta.AddMember("labels", json::Value(rapidjson::kObjectType), a);
  }
  auto common = replica_labels(descriptor, job_name, replica_type, index);
  for (const auto& m : common.root().GetObject())
    put_label(meta["labels"], std::string_view(m.name.GetString(), m.name.GetStringLength()),
              std::string_view(m.value.GetString(), m.value.GetStringLength()), a);
  json::Value owners(rapidjson::kArrayType);
  // The descriptor names the kind, whatever version the job object was read as.
  api::OwnerReference ref = api::make_owner_reference(job);
  ref.api_version = descriptor.api_version();
  ref.kind = descriptor.kind;
  owners.PushBack(ref.to_json(a), a);
  meta.AddMember("ownerReferences", owners, a);
  pod.root().AddMember("metadata", meta, a);

  json::Value pod_spec(rapidjson::kObjectType);
  if (const json::Value* tspec = json::find(*spec, "/template/spec"); tspec && tspec->IsObject())
    pod_spec.CopyFrom(*tspec, a);
  const std::string restart = pod_restart_policy(json::get_string(*spec, "/restartPolicy").value_or(""));
  if (!restart.empty()) {
    built.template_restart_policy_overridden = pod_spec.HasMember("restartPolicy");
    pod_spec.RemoveMember("restartPolicy");
    pod_spec.AddMember("restartPolicy", json::str(restart, a), a);
  }
  pod.root().AddMember("spec", pod_spec, a);
  return built;
}

}  // namespace unitrain::controller
