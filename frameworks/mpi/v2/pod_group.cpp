#include "frameworks/mpi/v2/pod_group.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/gang/gang.h"
#include "frameworks/mpi/v2/job_view.h"

namespace unitrain::frameworks::mpi::v2 {

namespace {

constexpr std::string_view kVolcanoQueueAnnotation = "scheduling.volcano.sh/queue-name";

struct ReplicaShare {
  std::string_view type;
  int32_t pods = 0;
  int32_t priority = 0;
  const json::Value* pod_spec = nullptr;
};

std::string template_priority_class(const json::Value* replica) {
  return replica == nullptr ? std::string() : json::string_at(*replica, "/template/spec/priorityClassName");
}

}  // namespace

Result<framework::PodGroupPolicy> pod_group_policy(const json::Value& job,
                                                   const std::function<int32_t(std::string_view)>& priority_of) {
  framework::PodGroupPolicy p;
  const JobView j = view(job);
  const json::Value* scheduling = json::find(job, "/spec/runPolicy/schedulingPolicy");
  auto policy_string = [&](std::string_view key) {
    return scheduling == nullptr ? std::string() : json::string_at(*scheduling, "/" + std::string(key));
  };
  const auto min_available = scheduling ? json::get_int(*scheduling, "/minAvailable") : std::nullopt;
  p.min_member = min_available ? static_cast<int32_t>(*min_available) : j.workers + 1;

  p.queue = policy_string("queue");
  if (p.queue.empty())
    p.queue = json::string_at(job, "/metadata/annotations/" + json::escape_pointer_token(kVolcanoQueueAnnotation));
  p.priority_class = policy_string("priorityClass");
  if (p.priority_class.empty()) p.priority_class = template_priority_class(j.launcher);
  if (p.priority_class.empty()) p.priority_class = template_priority_class(j.worker);
  const auto timeout = scheduling ? json::get_int(*scheduling, "/scheduleTimeoutSeconds") : std::nullopt;
  p.schedule_timeout_seconds = static_cast<int32_t>(timeout.value_or(0));

  if (const json::Value* given = scheduling ? json::find(*scheduling, "/minResources") : nullptr;
      given != nullptr && !given->IsNull()) {
    p.min_resources = json::Document::copy_of(*given);
    return p;
  }
  if (p.min_member == 0) return p;

  std::vector<ReplicaShare> shares;
  for (auto [type, spec] : {std::pair{kLauncher, j.launcher}, std::pair{kWorker, j.worker}}) {
    if (spec == nullptr) continue;
    ReplicaShare share{type, static_cast<int32_t>(json::get_int(*spec, "/replicas").value_or(type == kLauncher ? 1 : 0)),
                       priority_of(template_priority_class(spec)), json::find(*spec, "/template/spec")};
    shares.push_back(share);
  }
  if (shares.empty()) {
    p.min_resources = json::Document::object();
    return p;
  }
  std::stable_sort(shares.begin(), shares.end(), [](const ReplicaShare& a, const ReplicaShare& b) { return a.priority > b.priority; });
  const int32_t pods = shares[0].pods + (shares.size() > 1 ? shares[1].pods : 0);
  if (shares.size() > 1 && pods > p.min_member) {
    // The pods beyond minMember come off the lower-priority type; on a tie, off the workers.
    ReplicaShare& trimmed = shares[0].priority == shares[1].priority
                                ? (shares[0].type == kWorker ? shares[0] : shares[1])
                                : shares[1];
    trimmed.pods = p.min_member - 1;
  }
  gang::ResourceList total;
  for (const auto& share : shares) {
    if (share.pod_spec == nullptr) continue;
    auto per_pod = gang::pod_requests(*share.pod_spec, gang::MissingRequests::LimitsPerResource);
    if (!per_pod) return fail(fmt::format("spec.mpiReplicaSpecs[{}].template.spec.{}", share.type, per_pod.error().message));
    for (const auto& [name, q] : *per_pod) {
      const api::Quantity scaled = q * share.pods;
      auto [it, inserted] = total.try_emplace(name, scaled);
      if (!inserted) it->second += scaled;
    }
  }
  p.min_resources = gang::to_json(total);
  return p;
}

}  // namespace unitrain::frameworks::mpi::v2
