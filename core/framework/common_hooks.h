// Hooks shared by the training-operator-style frameworks (PyTorch, TF, XGBoost, Paddle, MXNet):
// replica-spec defaults, webhook validation of names and containers, one headless Service per
// replica and per-type pod counting. Each piece is parameterised by the FrameworkDescriptor so
// that a module depends on core/ only, never on another framework.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/api/field_errors.h"
#include "core/base/result.h"
#include "core/framework/descriptor.h"
#include "core/framework/plugin.h"
#include "core/json/json.h"

namespace unitrain::framework::common {

// The descriptor every kubeflow.org/v1 training-operator kind shares: name
// "kubeflow.org/<kind lower>", aliases "<kind lower>" and the metrics framework ("pytorch"),
// plural "<kind lower>s", controller "<kind lower>-controller" (children selected by its
// operator-name label), managedBy training-operator.
FrameworkDescriptor kubeflow_v1_descriptor(std::string_view kind, std::string_view replica_specs_field,
                                           std::vector<std::string> replica_types, std::string_view container,
                                           std::string_view port_name, int32_t port, std::string_view metrics_framework);

std::string lower(std::string_view s);
bool iequals(std::string_view a, std::string_view b);

// Object member lookup by key; null when `obj` is not an object or lacks the key.
const json::Value* member(const json::Value* obj, std::string_view key);
json::Value* member(json::Value* obj, std::string_view key);
std::string string_at(const json::Value& root, std::string_view pointer);

// .spec.<replica_specs_field> when it is an object, else null.
const json::Value* replica_specs(const FrameworkDescriptor& d, const json::Value& job);
const json::Value* replica_spec(const FrameworkDescriptor& d, const json::Value& job, std::string_view rt);
// Replicas of one spec; a missing field counts 1, as upstream's defaulting makes it.
int32_t replicas_of(const json::Value* spec);
// Sum over every key of the replica map.
int32_t total_replicas(const FrameworkDescriptor& d, const json::Value& job);
const json::Value* containers_of_spec(const json::Value* spec);
// The container named d.default_container in a replica spec, or null.
const json::Value* default_container(const FrameworkDescriptor& d, const json::Value* spec);
// containerPort of the port called `port_name` on the default container of `spec`.
std::optional<int32_t> named_port(const FrameworkDescriptor& d, const json::Value* spec, std::string_view port_name);

// Appends {d.default_port_name, d.default_port} to the default container (else the first one)
// unless a port of that name exists there already.
void ensure_default_port(const FrameworkDescriptor& d, json::Value& containers, json::Allocator& a);

// §2.2 common pattern: cleanPodPolicy nil -> None; replica keys in `recased` re-cased to their
// canonical spelling (a key already canonical wins over a variant); replicas nil -> 1;
// restartPolicy "" -> `restart_policy`; default port on every replica template.
void set_replica_defaults(const FrameworkDescriptor& d, json::Document& job, std::string_view restart_policy,
                          const std::vector<std::string>& recased);

// spec.elasticPolicy (PyTorch, Paddle): only max -> min=max; only min -> max=min; neither -> both
// = Worker replicas. No-op without an elasticPolicy object.
void set_elastic_replica_defaults(const FrameworkDescriptor& d, json::Document& job);

// metadata.name must be a DNS-1035 label.
void validate_name(const json::Value& job, api::FieldErrorList& errs);
// [1.9] spec.runPolicy.managedBy: supported values and, on update, immutability.
void validate_managed_by(const json::Value* old_job, const json::Value& job, api::FieldErrorList& errs);

struct ReplicaSpecRules {
  bool restrict_types = true;        // RT not in d.replica_types -> NotSupported (TF: false)
  bool quote_default_name = false;   // Paddle words the default-container error with quotes
};
// The replica map is required; per RT: containers present, images set, the default container exists.
void validate_replica_specs(const FrameworkDescriptor& d, const json::Value& job, const ReplicaSpecRules& rules,
                            api::FieldErrorList& errs);

// Every index of every present type, in d.replica_types order.
std::vector<PodSlot> pod_slots(const FrameworkDescriptor& d, const json::Value& job);

// One headless Service per slot, ports = every port of the default container (§3.4); none while
// the job is suspended.
Result<std::vector<DesiredObject>> replica_services(const FrameworkDescriptor& d, const json::Value& job);

// Active/succeeded/failed pods of one type, one pod per index (duplicates not counted, §3.3).
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

// A framework's UpdateJobStatus (training-operator-v1.md §4) as data: the five training-operator
// kinds share the walk and differ only in which type leads, when it counts as complete, what a
// failed replica means and the wording. Every callback must be set.
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
  bool selector = false;                 // PyTorch and Paddle publish replicaStatuses[RT].selector
  bool running_before_terminal = false;  // XGBoost proposes Running first when nothing else was
};

// XGBoostJob's and MXJob's rule for a failed replica: Restarting under restartPolicy ExitCode
// (the core already re-created a retryable pod), else Failed.
ReplicaStatusRules::OnFailed restart_on_exit_code_policy(const ReplicaState& s);

// PyTorchJob's and PaddleJob's rules: Master leads when present, else Worker (completion first);
// a failed replica that leaves replicas > succeeded + active restarts unless its restartPolicy
// is Never. Messages name "<kind> <name>" with a Master and "<kind> <ns>/<name>" without.
ReplicaStatusRules master_worker_status_rules(std::string kind, std::string name, std::string ns, bool has_master);

// Counts every present type (in d.replica_types order) and applies `rules`. The walk stops at
// the first terminal condition, so a job is never proposed both Succeeded and Failed.
StatusProposal replica_status_walk(const FrameworkDescriptor& d, const json::Value& job, const Observed& observed,
                                   const ReplicaStatusRules& rules);

struct EnvVar {
  EnvVar(std::string n, std::string v = {}, std::string f = {})
      : name(std::move(n)), value(std::move(v)), field_path(std::move(f)) {}
  std::string name;
  std::string value;       // empty: written without "value", like Go's omitempty
  std::string field_path;  // non-empty: valueFrom.fieldRef.fieldPath instead of a value
};
// Appends `env` after the user env of every container, or only of the one named `only` when set.
Status append_env(json::Document& pod, const std::vector<EnvVar>& env, std::optional<std::string_view> only = std::nullopt);
// Sets the training.kubeflow.org/job-role=master label.
Status set_master_role(json::Document& pod);

}  // namespace unitrain::framework::common
