#include "core/controller/run_limits.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/controller/pod_builder.h"
#include "core/controller/restart_policy.h"

namespace unitrain::controller {

namespace {

std::optional<std::string_view> annotation(const json::Value& job, std::string_view key) {
  return json::get_string(job, "/metadata/annotations/" + json::escape_pointer_token(key));
}

int64_t restart_counts(const json::Value& pod) {
  int64_t sum = 0;
  for (auto pointer : {"/status/containerStatuses", "/status/initContainerStatuses"}) {
    const json::Value* statuses = json::find(pod, pointer);
    if (!statuses || !statuses->IsArray()) continue;
    for (const auto& s : statuses->GetArray()) sum += json::get_int(s, "/restartCount").value_or(0);
  }
  return sum;
}

}  // namespace

RecreatedPods RecreatedPods::of(const json::Value& job) {
  RecreatedPods record;
  if (auto count = annotation(job, kCountAnnotation)) {
    try {
      record.count = std::stoll(std::string(*count));
    } catch (...) {  // a hand-edited annotation: start counting again rather than fail the job
      record.count = 0;
    }
  }
  if (auto counted = annotation(job, kCountedAnnotation)) {
    std::string_view rest = *counted;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string_view uid = rest.substr(0, comma);
      if (!uid.empty()) record.counted_uids.emplace(uid);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  return record;
}

RecreatedPods RecreatedPods::after(const std::vector<std::string>& failed_uids) const {
  RecreatedPods next;
  next.count = count;
  for (const auto& uid : failed_uids) {
    if (!counted_uids.count(uid)) ++next.count;
    next.counted_uids.insert(uid);
  }
  return next;
}

std::string RecreatedPods::merge_patch() const {
  std::string counted;
  for (const auto& uid : counted_uids) counted += (counted.empty() ? "" : ",") + uid;
  return fmt::format(R"({{"metadata":{{"annotations":{{"{}":"{}","{}":"{}"}}}}}})", kCountAnnotation, count,
                     kCountedAnnotation, counted);
}

int64_t backoff_restarts(const framework::FrameworkDescriptor& descriptor, const json::Value& job,
                         const std::vector<const json::Value*>& pods, int64_t recreated) {
  int64_t restarts = recreated;
  const std::string type_pointer = "/metadata/labels/" + json::escape_pointer_token(descriptor.replica_type_label);
  for (const auto* pod : pods) {
    if (json::get_string(*pod, "/status/phase") != "Running") continue;
    const std::string_view type_label = json::get_string(*pod, type_pointer).value_or("");
    auto type = std::find_if(descriptor.replica_types.begin(), descriptor.replica_types.end(),
                             [&](const std::string& t) { return lower(t) == type_label; });
    if (type == descriptor.replica_types.end()) continue;
    const json::Value* spec = replica_spec(descriptor, job, *type);
    const std::string_view policy = spec ? json::get_string(*spec, "/restartPolicy").value_or("") : "";
    if (retryable(policy, container_exit_code(*pod, descriptor.default_container))) restarts += restart_counts(*pod);
  }
  return restarts;
}

RunLimitsVerdict check_run_limits(const api::RunPolicy& run_policy, int64_t restarts,
                                  std::optional<api::TimePoint> start_time, api::TimePoint now) {
  RunLimitsVerdict verdict;
  if (const auto limit = run_policy.backoff_limit) {
    if ((*limit == 0 && restarts > 0) || (*limit > 0 && restarts >= *limit)) {
      verdict.exceeded = framework::CoreEvent::BackoffLimitExceeded;
      return verdict;
    }
  }
  if (run_policy.active_deadline_seconds && start_time) {
    const auto deadline = *start_time + std::chrono::seconds(*run_policy.active_deadline_seconds);
    if (now >= deadline) verdict.exceeded = framework::CoreEvent::DeadlineExceeded;
    else verdict.deadline_in = std::chrono::duration_cast<kube::Clock::Duration>(deadline - now);
  }
  return verdict;
}

}  // namespace unitrain::controller
