// The Jobs and the Service a JobSet owns, and its SHA-1 job key.
#include <array>
#include <cstdint>

#include <fmt/format.h>
#include <openssl/evp.h>

#include "core/framework/json_members.h"
#include "frameworks/jobset/jobset.h"

namespace unitrain::frameworks::jobset {

namespace {

using framework::json_members::ensure_array;
using framework::json_members::ensure_object;
using framework::json_members::member;
using framework::json_members::put;
using json::Value;

// Adds `key: value` to the map `obj[field]` (labels or annotations), creating it when needed.
void put_entry(Value& obj, std::string_view field, std::string_view key, std::string_view value, json::Allocator& a) {
  put(ensure_object(obj, field, a), key, value, a);
}

}  // namespace

int32_t replicas_of(const Value& rjob) { return static_cast<int32_t>(json::get_int(rjob, "/replicas").value_or(1)); }

std::string sha1_hex(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  EVP_Digest(text.data(), text.size(), digest.data(), &size, EVP_sha1(), nullptr);
  std::string out;
  for (unsigned int i = 0; i < size; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

json::Document child_job(const Value& js, std::size_t rjob_position, int32_t job_index) {
  const Value& rjobs = *json::find(js, "/spec/replicatedJobs");
  const Value& rjob = rjobs[static_cast<rapidjson::SizeType>(rjob_position)];
  const std::string js_name = json::string_at(js, "/metadata/name");
  const std::string ns = json::string_at(js, "/metadata/namespace");
  const std::string rjob_name = json::string_at(rjob, "/name");
  const std::string group = std::string(json::get_string(rjob, "/groupName").value_or("default"));
  const std::string job_name = fmt::format("{}-{}-{}", js_name, rjob_name, job_index);

  int64_t global_replicas = 0, earlier_replicas = 0, group_replicas = 0, earlier_in_group = 0;
  for (rapidjson::SizeType i = 0; i < rjobs.Size(); ++i) {
    const int32_t n = replicas_of(rjobs[i]);
    global_replicas += n;
    if (i < rjob_position) earlier_replicas += n;
    if (json::get_string(rjobs[i], "/groupName").value_or("default") == group) {
      group_replicas += n;
      if (i < rjob_position) earlier_in_group += n;
    }
  }
  const bool dns_hostnames = json::get_bool(js, "/spec/network/enableDNSHostnames").value_or(false);
  std::string subdomain(json::get_string(js, "/spec/network/subdomain").value_or(""));
  if (subdomain.empty()) subdomain = js_name;

  std::vector<std::pair<std::string, std::string>> stamped = {
      {std::string(keys::kJobSetName), js_name},
      {std::string(keys::kJobSetUid), json::string_at(js, "/metadata/uid")},
      {std::string(keys::kReplicatedJobName), rjob_name},
      {std::string(keys::kRestartAttempt), std::to_string(json::get_int(js, "/status/restarts").value_or(0))},
      {std::string(keys::kReplicatedJobReplicas), std::to_string(replicas_of(rjob))},
      {std::string(keys::kGlobalReplicas), std::to_string(global_replicas)},
      {std::string(keys::kJobIndex), std::to_string(job_index)},
      {std::string(keys::kJobKey), sha1_hex(ns + "/" + job_name)},
      {std::string(keys::kJobGlobalIndex), std::to_string(earlier_replicas + job_index)},
      {std::string(keys::kGroupName), group},
      {std::string(keys::kGroupReplicas), std::to_string(group_replicas)},
      {std::string(keys::kJobGroupIndex), std::to_string(earlier_in_group + job_index)},
  };
  if (const Value* coordinator = json::find(js, "/spec/coordinator"); coordinator != nullptr && coordinator->IsObject())
    stamped.emplace_back(std::string(keys::kCoordinator),
                         fmt::format("{}-{}-{}-{}.{}", js_name, json::string_at(*coordinator, "/replicatedJob"),
                                     json::get_int(*coordinator, "/jobIndex").value_or(0),
                                     json::get_int(*coordinator, "/podIndex").value_or(0), subdomain));

  json::Document job = json::Document::object();
  auto& a = job.alloc();
  Value& root = job.root();
  root.AddMember("apiVersion", "batch/v1", a);
  root.AddMember("kind", "Job", a);
  Value metadata(rapidjson::kObjectType);
  metadata.AddMember("name", json::str(job_name, a), a);
  metadata.AddMember("namespace", json::str(ns, a), a);
  if (const Value* labels = member(json::find(rjob, "/template/metadata"), "labels"))
    metadata.AddMember("labels", json::clone(*labels, a), a);
  if (const Value* annotations = member(json::find(rjob, "/template/metadata"), "annotations"))
    metadata.AddMember("annotations", json::clone(*annotations, a), a);
  root.AddMember("metadata", metadata, a);
  const Value* spec = json::find(rjob, "/template/spec");
  root.AddMember("spec", spec != nullptr && spec->IsObject() ? json::clone(*spec, a) : Value(rapidjson::kObjectType), a);
  Value& job_spec = root["spec"];
  Value& pod_template = ensure_object(job_spec, "template", a);
  ensure_object(pod_template, "metadata", a);
  for (const auto& [key, value] : stamped) {
    for (std::string_view field : {"labels", "annotations"}) {
      put_entry(root["metadata"], field, key, value, a);
      put_entry(pod_template["metadata"], field, key, value, a);
    }
  }
  // Exclusive placement's annotations (on the Job and its pods) come from the JobSet, then from
  // the replicated Job, which wins; the node-selector strategy only along with the topology key
  // of the same object.
  for (const Value* source : {member(member(&js, "metadata"), "annotations"), json::find(rjob, "/template/metadata/annotations")}) {
    const Value* topology = member(source, keys::kExclusiveTopology);
    if (topology == nullptr || !topology->IsString()) continue;
    const Value* strategy = member(source, keys::kNodeSelectorStrategy);
    for (Value* meta : {&root["metadata"], &pod_template["metadata"]}) {
      put_entry(*meta, "annotations", keys::kExclusiveTopology, json::view(*topology), a);
      if (strategy != nullptr && strategy->IsString())
        put_entry(*meta, "annotations", keys::kNodeSelectorStrategy, json::view(*strategy), a);
    }
  }
  Value& pod_spec = ensure_object(pod_template, "spec", a);
  if (dns_hostnames) put(pod_spec, "subdomain", subdomain, a);
  // The node-selector strategy: the nodes were labelled and tainted for this Job beforehand.
  const Value* job_annotations = member(&root["metadata"], "annotations");
  if (member(job_annotations, keys::kExclusiveTopology) != nullptr && member(job_annotations, keys::kNodeSelectorStrategy) != nullptr) {
    put(ensure_object(pod_spec, "nodeSelector", a), keys::kNamespacedJob, fmt::format("{}_{}", ns, job_name), a);
    Value toleration(rapidjson::kObjectType);
    toleration.AddMember("key", json::str(keys::kNoScheduleTaint, a), a);
    toleration.AddMember("operator", "Exists", a);
    toleration.AddMember("effect", "NoSchedule", a);
    ensure_array(pod_spec, "tolerations", a).PushBack(toleration, a);
  }
  // A claim of volumeClaimPolicies becomes a pod volume where a container mounts it.
  for (const std::string& claim : claim_template_names(js)) {
    if (!mounts_volume(pod_spec, claim)) continue;
    Value volume(rapidjson::kObjectType);
    volume.AddMember("name", json::str(claim, a), a);
    Value source(rapidjson::kObjectType);
    source.AddMember("claimName", json::str(claim_name(js_name, claim), a), a);
    volume.AddMember("persistentVolumeClaim", source, a);
    ensure_array(pod_spec, "volumes", a).PushBack(volume, a);
  }
  // Last: a member added to the Job's spec may move its pod template.
  put(job_spec, "suspend", Value(json::get_bool(js, "/spec/suspend").value_or(false)), a);
  return job;
}

std::string claim_name(std::string_view jobset_name, std::string_view template_name) {
  return fmt::format("{}-{}", template_name, jobset_name);
}

std::vector<std::string> claim_template_names(const Value& js) {
  std::vector<std::string> out;
  const Value* policies = json::find(js, "/spec/volumeClaimPolicies");
  if (policies == nullptr || !policies->IsArray()) return out;
  for (const auto& policy : policies->GetArray()) {
    const Value* templates = member(&policy, "templates");
    if (templates == nullptr || !templates->IsArray()) continue;
    for (const auto& t : templates->GetArray()) out.push_back(json::string_at(t, "/metadata/name"));
  }
  return out;
}

bool mounts_volume(const Value& pod_spec, std::string_view volume) {
  for (std::string_view field : {"containers", "initContainers"}) {
    const Value* containers = member(&pod_spec, field);
    if (containers == nullptr || !containers->IsArray()) continue;
    for (const auto& c : containers->GetArray()) {
      const Value* mounts = member(&c, "volumeMounts");
      if (mounts == nullptr || !mounts->IsArray()) continue;
      for (const auto& m : mounts->GetArray())
        if (json::string_at(m, "/name") == volume) return true;
    }
  }
  return false;
}

std::vector<VolumeClaim> volume_claims(const Value& js) {
  std::vector<VolumeClaim> out;
  const Value* policies = json::find(js, "/spec/volumeClaimPolicies");
  if (policies == nullptr || !policies->IsArray()) return out;
  const std::string js_name = json::string_at(js, "/metadata/name");
  const std::string ns = json::string_at(js, "/metadata/namespace");
  for (const auto& policy : policies->GetArray()) {
    // The defaulting webhook sets Delete; a policy without one (not defaulted) is not owned.
    const bool owned = json::string_at(policy, "/retentionPolicy/whenDeleted") == "Delete";
    const Value* templates = member(&policy, "templates");
    if (templates == nullptr || !templates->IsArray()) continue;
    for (const auto& t : templates->GetArray()) {
      json::Document claim = json::Document::object();
      auto& a = claim.alloc();
      Value& root = claim.root();
      root.AddMember("apiVersion", "v1", a);
      root.AddMember("kind", "PersistentVolumeClaim", a);
      Value metadata(rapidjson::kObjectType);
      metadata.AddMember("name", json::str(claim_name(js_name, json::string_at(t, "/metadata/name")), a), a);
      metadata.AddMember("namespace", json::str(ns, a), a);
      const Value* labels = json::find(t, "/metadata/labels");
      metadata.AddMember("labels", labels != nullptr && labels->IsObject() ? json::clone(*labels, a) : Value(rapidjson::kObjectType), a);
      put(metadata["labels"], keys::kJobSetName, js_name, a);
      if (const Value* annotations = json::find(t, "/metadata/annotations"); annotations != nullptr && annotations->IsObject())
        metadata.AddMember("annotations", json::clone(*annotations, a), a);
      root.AddMember("metadata", metadata, a);
      const Value* spec = member(&t, "spec");
      root.AddMember("spec", spec != nullptr && spec->IsObject() ? json::clone(*spec, a) : Value(rapidjson::kObjectType), a);
      out.push_back({std::move(claim), owned});
    }
  }
  return out;
}

json::Document headless_service(const Value& js) {
  const std::string js_name = json::string_at(js, "/metadata/name");
  std::string subdomain(json::get_string(js, "/spec/network/subdomain").value_or(""));
  if (subdomain.empty()) subdomain = js_name;
  json::Document svc = json::Document::object();
  auto& a = svc.alloc();
  Value& root = svc.root();
  root.AddMember("apiVersion", "v1", a);
  root.AddMember("kind", "Service", a);
  Value metadata(rapidjson::kObjectType);
  metadata.AddMember("name", json::str(subdomain, a), a);
  metadata.AddMember("namespace", json::str(json::string_at(js, "/metadata/namespace"), a), a);
  root.AddMember("metadata", metadata, a);
  Value spec(rapidjson::kObjectType);
  spec.AddMember("clusterIP", "None", a);
  Value selector(rapidjson::kObjectType);
  selector.AddMember(json::str(keys::kJobSetName, a), json::str(js_name, a), a);
  spec.AddMember("selector", selector, a);
  spec.AddMember("publishNotReadyAddresses", json::get_bool(js, "/spec/network/publishNotReadyAddresses").value_or(true), a);
  root.AddMember("spec", spec, a);
  return svc;
}

}  // namespace unitrain::frameworks::jobset
