// training-operator's UpdateJobStatus as data: the five training-operator kinds (TF, PyTorch,
// MXNet, XGBoost, Paddle) share the walk over replica types and differ only in which type leads,
// when it counts as complete, what a failed replica means and the wording.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/framework/descriptor.h"
#include "core/framework/plugin.h"
#include "core/json/json.h"

namespace unitrain::framework {

// Exit code of the named container's terminated state (state, else lastState), if any.
std::optional<int32_t> container_exit_code(const json::Value& pod, std::string_view container);
// Exit code of the named container's current terminated state only (not a restarted container's
// earlier end): what ExitedWithCode announces.
std::optional<int32_t> terminated_exit_code(const json::Value& pod, std::string_view container);

// Active/succeeded/failed pods of one type, one pod per index: an index with several pods (a
// re-creation racing the cache) counts none of them until one is left. A Running pod being
// deleted counts as failed.
StatusProposal::ReplicaCounts count_replicas(const FrameworkDescriptor& d, const std::string& rt, const Observed& observed);
// The observed pod of (rt, index) when exactly one exists.
const json::Value* pod_at(const FrameworkDescriptor& d, const std::string& rt, int32_t index, const Observed& observed);
// "job-name=..,operator-name=..,replica-type=.." with keys sorted, as FormatLabelSelector prints it.
std::string selector_string(const FrameworkDescriptor& d, std::string_view job_name, std::string_view rt);

// One replica type as a framework's status rules see it.
struct ReplicaState {
  const std::string& type;
  const json::Value& spec;
  int32_t replicas;
  const StatusProposal::ReplicaCounts& counts;
  int32_t expected() const { return replicas - counts.succeeded; }
};

// Succeeded and Failed: "Normal"; Restarting: "Warning"; anything else: "".
std::string training_operator_status_event(std::string_view condition);

// Every callback must be set.
struct ReplicaStatusRules {
  // A leading type decides Running and Succeeded. Chief/Master/Scheduler propose Running before
  // checking completion; worker-only jobs check completion first.
  enum class Lead { None, RunningFirst, CompletionFirst };
  enum class OnFailed { Ignore, Restart, Fail };
  std::function<Lead(const ReplicaState&)> lead;
  std::function<bool(const ReplicaState&)> complete;
  // Called for a type with failed > 0.
  std::function<OnFailed(const ReplicaState&)> on_failed;
  // Message of a Running/Succeeded/Restarting/Failed condition raised for `state`; the reason is
  // always <Kind><type>.
  std::function<std::string(std::string_view condition, const ReplicaState& state)> message;
  // The type of the event the framework's UpdateJobStatus records with a Running, Succeeded,
  // Restarting or Failed condition it raises (reason and message are the condition's), "" for
  // none. Default: training-operator's kinds record Succeeded and Failed (Normal) and Restarting
  // (Warning), never Running.
  std::function<std::string(std::string_view condition)> event_type = training_operator_status_event;
  bool selector = false;                 // PyTorch and Paddle publish replicaStatuses[RT].selector
  bool running_before_terminal = false;  // XGBoost proposes Running first when nothing else was
};

// XGBoostJob's and MXJob's rule for a failed replica: Restarting under restartPolicy ExitCode
// (the core already re-created a retryable pod), else Failed.
ReplicaStatusRules::OnFailed restart_on_exit_code_policy(const ReplicaState& s);

// The condition messages that name the job without its namespace (XGBoostJob, MXJob, PyTorchJob
// and PaddleJob with a Master): "<kind> <name> is running.", "<kind> <name> is successfully
// completed.", "<failure_kind> <name> is restarting|is failed because <n> <RT> replica(s) failed."
// (MXJob writes its failures as "mxjob").
std::function<std::string(std::string_view condition, const ReplicaState& state)> messages_by_name(
    std::string kind, std::string name, std::string failure_kind);

// PyTorchJob's and PaddleJob's rules: Master leads when present, else Worker (completion first);
// a failed replica that leaves replicas > succeeded + active restarts unless its restartPolicy
// is Never. Messages name "<kind> <name>" with a Master and "<kind> <ns>/<name>" without.
ReplicaStatusRules master_worker_status_rules(std::string kind, std::string name, std::string ns, bool has_master);

// Counts every present type (in d.replica_types order) and applies `rules`. The walk stops at
// the first terminal condition, so a job is never proposed both Succeeded and Failed.
StatusProposal replica_status_walk(const FrameworkDescriptor& d, const json::Value& job, const Observed& observed,
                                   const ReplicaStatusRules& rules);

}  // namespace unitrain::framework
