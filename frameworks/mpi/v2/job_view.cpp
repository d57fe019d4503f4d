#include "frameworks/mpi/v2/job_view.h"

#include <algorithm>

#include "core/framework/job_labels.h"
#include "core/framework/json_members.h"

namespace unitrain::frameworks::mpi::v2 {

using framework::Observed;
using framework::json_members::member;
using json::string_at;
using json::Value;
namespace job_labels = framework::job_labels;

std::string label_of(const Value& obj, std::string_view key) {
  return string_at(obj, "/metadata/labels/" + json::escape_pointer_token(key));
}

const Value* replica_spec(const Value& job, std::string_view rt) {
  return member(json::find(job, "/spec/mpiReplicaSpecs"), rt);
}

JobView view(const Value& job) {
  JobView v;
  v.name = string_at(job, "/metadata/name");
  v.ns = string_at(job, "/metadata/namespace");
  v.uid = string_at(job, "/metadata/uid");
  v.slots = static_cast<int32_t>(json::get_int(job, "/spec/slotsPerWorker").value_or(1));
  v.launcher_as_worker = json::get_bool(job, "/spec/runLauncherAsWorker").value_or(false);
  v.suspended = json::get_bool(job, "/spec/runPolicy/suspend").value_or(false);
  if (auto s = string_at(job, "/spec/mpiImplementation"); !s.empty()) v.implementation = s;
  if (auto s = string_at(job, "/spec/sshAuthMountPath"); !s.empty()) v.ssh_path = s;
  if (auto s = string_at(job, "/spec/launcherCreationPolicy"); !s.empty()) v.creation_policy = s;
  v.launcher = replica_spec(job, kLauncher);
  v.worker = replica_spec(job, kWorker);
  if (v.worker != nullptr) v.workers = static_cast<int32_t>(json::get_int(*v.worker, "/replicas").value_or(0));
  return v;
}

std::string service_domain(const JobView& j, const std::string& cluster_domain) {
  std::string d = j.name + "." + j.ns + ".svc";
  if (!cluster_domain.empty()) d += "." + cluster_domain;
  return d;
}

const Value* launcher_job(const JobView& j, const Observed& observed) {
  auto it = observed.owned.find("jobs.batch");
  if (it == observed.owned.end()) return nullptr;
  for (const Value* job : it->second) {
    if (job != nullptr && string_at(*job, "/metadata/name") == j.name + "-launcher") return job;
  }
  return nullptr;
}

const Value* condition(const Value* obj, std::string_view type) {
  if (obj == nullptr) return nullptr;
  const Value* conds = json::find(*obj, "/status/conditions");
  if (conds == nullptr || !conds->IsArray()) return nullptr;
  for (const auto& c : conds->GetArray()) {
    if (string_at(c, "/type") == type && string_at(c, "/status") == "True") return &c;
  }
  return nullptr;
}
bool job_complete(const Value* job) { return condition(job, "Complete") != nullptr; }
bool job_failed(const Value* job) { return condition(job, "Failed") != nullptr; }

std::vector<const Value*> worker_pods(const JobView& j, const Observed& observed) {
  std::vector<const Value*> out;
  for (const Value* pod : observed.pods) {
    if (pod == nullptr || label_of(*pod, job_labels::kJobRole) != "worker") continue;
    if (auto owner = label_of(*pod, job_labels::kJobName); !owner.empty() && owner != j.name) continue;
    out.push_back(pod);
  }
  std::sort(out.begin(), out.end(), [](const Value* a, const Value* b) {
    return string_at(*a, "/metadata/name") < string_at(*b, "/metadata/name");
  });
  return out;
}

std::vector<const Value*> launcher_pods(const JobView& j, const Value* launcher, const Observed& observed) {
  std::vector<const Value*> out;
  if (launcher == nullptr) return out;
  const std::string uid = string_at(*launcher, "/metadata/uid");
  auto owned = observed.owned.find("pods/jobs.batch");
  const std::vector<const Value*>& candidates = owned != observed.owned.end() ? owned->second : observed.pods;
  for (const Value* pod : candidates) {
    if (pod == nullptr || label_of(*pod, job_labels::kJobRole) != "launcher") continue;
    if (auto owner = label_of(*pod, job_labels::kJobName); !owner.empty() && owner != j.name) continue;
    if (!uid.empty()) {
      bool controlled = false;
      if (const Value* refs = json::find(*pod, "/metadata/ownerReferences"); refs != nullptr && refs->IsArray()) {
        for (const auto& r : refs->GetArray()) {
          if (string_at(r, "/uid") == uid && json::get_bool(r, "/controller").value_or(false)) controlled = true;
        }
      }
      if (!controlled) continue;
    }
    out.push_back(pod);
  }
  return out;
}

bool pod_ready(const Value& pod) { return condition(&pod, "Ready") != nullptr; }

}  // namespace unitrain::frameworks::mpi::v2
