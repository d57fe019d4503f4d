#include "core/framework/replica_status.h"

#include <charconv>
#include <map>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "core/framework/ascii.h"
#include "core/framework/job_labels.h"
#include "core/framework/job_spec.h"

namespace unitrain::framework {

namespace {

using json::Value;
using json::string_at;
using ascii::lower;

std::optional<int32_t> parse_index(std::string_view s) {
  int32_t n = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || ptr != s.data() + s.size() || n < 0) return std::nullopt;
  return n;
}

// Pods of one type grouped by their replica-index label.
std::map<int32_t, std::vector<const Value*>> pods_by_index(const FrameworkDescriptor& d, const std::string& rt,
                                                           const Observed& observed) {
  std::map<int32_t, std::vector<const Value*>> by_index;
  const std::string type_key = "/" + json::escape_pointer_token(d.replica_type_label);
  const std::string index_key = "/" + json::escape_pointer_token(job_labels::kReplicaIndex);
  for (const Value* pod : observed.pods) {
    if (pod == nullptr) continue;
    const Value* labels = json::find(*pod, "/metadata/labels");
    if (labels == nullptr || string_at(*labels, type_key) != lower(rt)) continue;
    auto idx = parse_index(string_at(*labels, index_key));
    if (!idx) continue;
    by_index[*idx].push_back(pod);
  }
  return by_index;
}

}  // namespace

namespace {
std::optional<int32_t> exit_code_of(const Value& pod, std::string_view container, bool last_state_too) {
  const Value* statuses = json::find(pod, "/status/containerStatuses");
  if (!statuses || !statuses->IsArray()) return std::nullopt;
  for (const auto& s : statuses->GetArray()) {
    if (json::get_string(s, "/name") != container) continue;
    if (auto code = json::get_int(s, "/state/terminated/exitCode")) return static_cast<int32_t>(*code);
    if (!last_state_too) continue;
    if (auto code = json::get_int(s, "/lastState/terminated/exitCode")) return static_cast<int32_t>(*code);
  }
  return std::nullopt;
}
}  // namespace

std::optional<int32_t> container_exit_code(const Value& pod, std::string_view container) {
  return exit_code_of(pod, container, true);
}

std::optional<int32_t> terminated_exit_code(const Value& pod, std::string_view container) {
  return exit_code_of(pod, container, false);
}

StatusProposal::ReplicaCounts count_replicas(const FrameworkDescriptor& d, const std::string& rt, const Observed& observed) {
  StatusProposal::ReplicaCounts counts;
  for (const auto& [idx, pods] : pods_by_index(d, rt, observed)) {
    if (pods.size() != 1) continue;
    const Value& pod = *pods.front();
    const std::string phase = string_at(pod, "/status/phase");
    if (phase == "Running") {
      if (json::find(pod, "/metadata/deletionTimestamp") != nullptr) ++counts.failed;
      else ++counts.active;
    } else if (phase == "Succeeded") {
      ++counts.succeeded;
    } else if (phase == "Failed") {
      ++counts.failed;
    }
  }
  return counts;
}

const Value* pod_at(const FrameworkDescriptor& d, const std::string& rt, int32_t index, const Observed& observed) {
  auto by_index = pods_by_index(d, rt, observed);
  auto it = by_index.find(index);
  return it != by_index.end() && it->second.size() == 1 ? it->second.front() : nullptr;
}

std::string selector_string(const FrameworkDescriptor& d, std::string_view job_name, std::string_view rt) {
  return fmt::format("{}={},{}={},{}={}", job_labels::kJobName, job_name, job_labels::kOperatorName, d.controller_name, d.replica_type_label,
                     lower(rt));
}

std::string training_operator_status_event(std::string_view condition) {
  if (condition == "Succeeded" || condition == "Failed") return "Normal";
  if (condition == "Restarting") return "Warning";
  return {};
}

ReplicaStatusRules::OnFailed restart_on_exit_code_policy(const ReplicaState& s) {
  return string_at(s.spec, "/restartPolicy") == "ExitCode" ? ReplicaStatusRules::OnFailed::Restart
                                                           : ReplicaStatusRules::OnFailed::Fail;
}

std::function<std::string(std::string_view, const ReplicaState&)> messages_by_name(std::string kind, std::string name,
                                                                                  std::string failure_kind) {
  return [kind = std::move(kind), name = std::move(name), failure_kind = std::move(failure_kind)](
             std::string_view type, const ReplicaState& s) {
    if (type == "Running") return fmt::format("{} {} is running.", kind, name);
    if (type == "Succeeded") return fmt::format("{} {} is successfully completed.", kind, name);
    const std::string_view verb = type == "Restarting" ? "is restarting" : "is failed";
    return fmt::format("{} {} {} because {} {} replica(s) failed.", failure_kind, name, verb, s.counts.failed, s.type);
  };
}

ReplicaStatusRules master_worker_status_rules(std::string kind, std::string name, std::string ns, bool has_master) {
  using Rules = ReplicaStatusRules;
  Rules rules;
  rules.lead = [has_master](const ReplicaState& s) {
    if (has_master) return s.type == "Master" ? Rules::Lead::RunningFirst : Rules::Lead::None;
    return s.type == "Worker" ? Rules::Lead::CompletionFirst : Rules::Lead::None;
  };
  rules.complete = [](const ReplicaState& s) { return s.expected() == 0; };
  rules.on_failed = [](const ReplicaState& s) {
    if (s.replicas <= s.counts.succeeded + s.counts.active) return Rules::OnFailed::Ignore;
    return string_at(s.spec, "/restartPolicy") != "Never" ? Rules::OnFailed::Restart : Rules::OnFailed::Fail;
  };
  if (has_master) {
    rules.message = messages_by_name(kind, std::move(name), kind);
  } else {
    rules.message = [kind = std::move(kind), name = std::move(name), ns = std::move(ns)](std::string_view type,
                                                                                        const ReplicaState& s) {
      if (type == "Running") return fmt::format("{} {}/{} is running.", kind, ns, name);
      if (type == "Succeeded") return fmt::format("{} {}/{} successfully completed.", kind, ns, name);
      const std::string_view verb = type == "Restarting" ? "is restarting" : "is failed";
      return fmt::format("{} {} {} because {} {} replica(s) failed.", kind, name, verb, s.counts.failed, s.type);
    };
  }
  rules.selector = true;
  return rules;
}

StatusProposal replica_status_walk(const FrameworkDescriptor& d, const Value& job, const Observed& observed,
                                   const ReplicaStatusRules& rules) {
  using Lead = ReplicaStatusRules::Lead;
  StatusProposal p;
  const std::string name = string_at(job, "/metadata/name");
  for (const std::string& rt : d.replica_types) {
    if (replica_spec(d, job, rt) == nullptr) continue;
    auto& counts = p.replica_statuses[rt];
    counts = count_replicas(d, rt, observed);
    if (rules.selector) counts.selector = selector_string(d, name, rt);
  }
  auto propose = [&](std::string_view type, const ReplicaState& s) {
    p.conditions.push_back({std::string(type), "True", d.kind + std::string(type), rules.message(type, s)});
    if (std::string event = rules.event_type ? rules.event_type(type) : std::string(); !event.empty())
      p.events.push_back({std::move(event), p.conditions.back().reason, p.conditions.back().message});
  };
  auto announce_running = [&](const ReplicaState& s) {
    if (rules.running_before_terminal && p.conditions.empty()) propose("Running", s);
  };
  for (const std::string& rt : d.replica_types) {
    const Value* spec = replica_spec(d, job, rt);
    if (spec == nullptr) continue;
    const ReplicaState s{rt, *spec, replicas_of(spec), p.replica_statuses[rt]};
    const Lead lead = rules.lead(s);
    if (lead == Lead::RunningFirst && s.counts.active > 0) propose("Running", s);
    if (lead != Lead::None && rules.complete(s)) {
      announce_running(s);
      propose("Succeeded", s);
      p.set_completion_time = true;
      return p;
    }
    if (lead == Lead::CompletionFirst && s.counts.active > 0) propose("Running", s);
    if (s.counts.failed == 0) continue;
    switch (rules.on_failed(s)) {
      case ReplicaStatusRules::OnFailed::Ignore:
        break;
      case ReplicaStatusRules::OnFailed::Restart:
        announce_running(s);
        propose("Restarting", s);
        break;
      case ReplicaStatusRules::OnFailed::Fail:
        announce_running(s);
        propose("Failed", s);
        p.set_completion_time = true;
        return p;
    }
  }
  return p;
}

}  // namespace unitrain::framework
