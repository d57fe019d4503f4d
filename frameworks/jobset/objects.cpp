// The Jobs and the Service a JobSet owns, and its SHA-1 job key.
#include <array>
#include <cstdint>

#include <fmt/format.h>
#include <openssl/evp.h>

#include "core/framework/json_members.h"
#include "frameworks/jobset/jobset.h"

namespace unitrain::frameworks::jobset {

namespace {

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
  // Exclusive placement's annotations travel from the JobSet or the replicated Job.
  for (std::string_view key : {keys::kExclusiveTopology, keys::kNodeSelectorStrategy}) {
    const std::string pointer = "/" + json::escape_pointer_token(key);
    auto value = json::get_string(js, "/metadata/annotations" + pointer);
    if (!value) value = json::get_string(rjob, "/template/metadata/annotations" + pointer);
    if (value) put_entry(root["metadata"], "annotations", key, *value, a);
  }
  put(job_spec, "suspend", Value(json::get_bool(js, "/spec/suspend").value_or(false)), a);
  if (dns_hostnames) put(ensure_object(pod_template, "spec", a), "subdomain", subdomain, a);
  return job;
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
