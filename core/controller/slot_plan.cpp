#include "core/controller/slot_plan.h"

#include <map>
#include <set>

#include "core/api/meta.h"
#include "core/controller/pod_builder.h"
#include "core/controller/restart_policy.h"

namespace unitrain::controller {

std::vector<const FailedSlotPod*> SlotPlan::with_outcome(FailedSlotPod::Outcome outcome) const {
  std::vector<const FailedSlotPod*> out;
  for (const auto& f : failed)
    if (f.outcome == outcome) out.push_back(&f);
  return out;
}

std::vector<std::string> SlotPlan::restart_uids() const {
  std::vector<std::string> uids;
  for (const auto* f : with_outcome(FailedSlotPod::Outcome::Restart)) uids.emplace_back(api::uid_of(*f->pod));
  return uids;
}

std::string slot_pod_name(std::string_view job_name, const framework::PodSlot& slot) {
  return slot.name.empty() ? replica_name(job_name, slot.replica_type, slot.index) : slot.name;
}

SlotPlan plan_slots(const framework::FrameworkDescriptor& descriptor, const json::Value& job,
                    const std::vector<framework::PodSlot>& slots, const std::vector<const json::Value*>& pods) {
  const std::string job_name(api::name_of(job));
  std::set<std::string> wanted;
  for (const auto& s : slots) wanted.insert(slot_pod_name(job_name, s));

  SlotPlan plan;
  std::map<std::string, const json::Value*, std::less<>> by_name;
  for (const auto* pod : pods) {
    std::string pod_name(api::name_of(*pod));
    if (!wanted.count(pod_name)) {
      if (!terminating(*pod)) plan.surplus.push_back(pod);
      continue;
    }
    by_name[std::move(pod_name)] = pod;
  }
  for (const auto& s : slots) {
    auto it = by_name.find(slot_pod_name(job_name, s));
    if (it == by_name.end()) {
      plan.missing.push_back(s);
      continue;
    }
    const json::Value& pod = *it->second;
    if (terminating(pod) || json::get_string(pod, "/status/phase") != "Failed") continue;
    const json::Value* spec = replica_spec(descriptor, job, s.replica_type);
    const std::string_view policy = spec ? json::get_string(*spec, "/restartPolicy").value_or("") : "";
    FailedSlotPod failed{&pod, s.replica_type, container_exit_code(pod, descriptor.default_container)};
    if (retryable(policy, failed.exit_code)) failed.outcome = FailedSlotPod::Outcome::Restart;
    else if (policy == "ExitCode") failed.outcome = FailedSlotPod::Outcome::FailJob;
    plan.failed.push_back(std::move(failed));
  }
  return plan;
}

}  // namespace unitrain::controller
