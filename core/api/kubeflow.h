// The Kubeflow common types (kubeflow.org/v1 common_types.go; MPIJob v2beta1 has the same shapes):
// ReplicaSpec, RunPolicy, SchedulingPolicy, JobCondition, ReplicaStatus, JobStatus.
//
// These are the typed structs the controller decides on (the rest of a job stays JSON). Decoding
// reports every wrongly typed field with its path ("spec.runPolicy.backoffLimit: Invalid value:
// "x": must be an integer") and, like Go's decoder, ignores unknown fields and reads null as
// unset. Encoding follows the upstream JSON tags: member order of the Go structs, optional
// fields omitted exactly where `omitempty` omits them, maps in key order; so a status written
// here has the same shape upstream writes.
//
// Enumerated fields (restartPolicy, cleanPodPolicy, condition type and status) stay strings:
// upstream decodes any string, and the validators must report the value the user wrote.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/field_errors.h"
#include "core/api/time.h"
#include "core/base/result.h"
#include "core/json/json.h"

namespace unitrain::api {

namespace restart_policy {
inline constexpr std::string_view kAlways = "Always";
inline constexpr std::string_view kOnFailure = "OnFailure";
inline constexpr std::string_view kNever = "Never";
inline constexpr std::string_view kExitCode = "ExitCode";
}  // namespace restart_policy

namespace clean_pod_policy {
inline constexpr std::string_view kNone = "None";
inline constexpr std::string_view kRunning = "Running";
inline constexpr std::string_view kAll = "All";
}  // namespace clean_pod_policy

namespace condition_type {
inline constexpr std::string_view kCreated = "Created";
inline constexpr std::string_view kRunning = "Running";
inline constexpr std::string_view kRestarting = "Restarting";
inline constexpr std::string_view kSucceeded = "Succeeded";
inline constexpr std::string_view kSuspended = "Suspended";
inline constexpr std::string_view kFailed = "Failed";
}  // namespace condition_type

namespace condition_status {
inline constexpr std::string_view kTrue = "True";
inline constexpr std::string_view kFalse = "False";
inline constexpr std::string_view kUnknown = "Unknown";
}  // namespace condition_status

struct ReplicaSpec {
  std::optional<int32_t> replicas;
  json::Document pod_template;  // "template", kept whole (null when absent)
  std::string restart_policy;   // "" when unset

  static Result<ReplicaSpec, FieldErrorList> from_json(const json::Value& v, const FieldPath& path);
  // An absent template encodes as Go's empty PodTemplateSpec, as upstream would write it.
  json::Value to_json(json::Allocator& a) const;
  friend bool operator==(const ReplicaSpec&, const ReplicaSpec&) = default;
};

// spec.<kind>ReplicaSpecs: replica type → spec, in key order (Go encodes maps sorted).
using ReplicaSpecs = std::map<std::string, ReplicaSpec, std::less<>>;
Result<ReplicaSpecs, FieldErrorList> replica_specs_from_json(const json::Value& v, const FieldPath& path);
json::Value replica_specs_to_json(const ReplicaSpecs& specs, json::Allocator& a);

struct SchedulingPolicy {
  std::optional<int32_t> min_available;
  std::string queue;
  // Resource name → quantity text as written (a JSON number is kept as its decimal text).
  std::optional<std::map<std::string, std::string, std::less<>>> min_resources;
  std::string priority_class;
  std::optional<int32_t> schedule_timeout_seconds;

  static Result<SchedulingPolicy, FieldErrorList> from_json(const json::Value& v, const FieldPath& path);
  json::Value to_json(json::Allocator& a) const;
  friend bool operator==(const SchedulingPolicy&, const SchedulingPolicy&) = default;
};

struct RunPolicy {
  std::optional<std::string> clean_pod_policy;
  std::optional<int32_t> ttl_seconds_after_finished;
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int32_t> backoff_limit;
  std::optional<SchedulingPolicy> scheduling_policy;
  std::optional<bool> suspend;
  std::optional<std::string> managed_by;

  static Result<RunPolicy, FieldErrorList> from_json(const json::Value& v, const FieldPath& path);
  json::Value to_json(json::Allocator& a) const;
  friend bool operator==(const RunPolicy&, const RunPolicy&) = default;
};

struct JobCondition {
  std::string type;
  std::string status;
  std::string reason;
  std::string message;
  // metav1.Time values (not pointers upstream): unset encodes as null.
  std::optional<TimePoint> last_update_time;
  std::optional<TimePoint> last_transition_time;

  static Result<JobCondition, FieldErrorList> from_json(const json::Value& v, const FieldPath& path);
  json::Value to_json(json::Allocator& a) const;
  friend bool operator==(const JobCondition&, const JobCondition&) = default;
};

struct ReplicaStatus {
  int32_t active = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
  json::Document label_selector;  // deprecated metav1.LabelSelector, kept whole (null when unset)
  std::string selector;

  static Result<ReplicaStatus, FieldErrorList> from_json(const json::Value& v, const FieldPath& path);
  json::Value to_json(json::Allocator& a) const;
  friend bool operator==(const ReplicaStatus&, const ReplicaStatus&) = default;
};

// Which controller's condition rules set_condition follows; they differ in two details.
enum class ConditionRules {
  // training-operator (pkg/util/status.go): nothing changes once Failed is True; Succeeded and
  // Failed flip an existing Running to False.
  TrainingOperator,
  // mpi-operator (v2beta1, and MPIJob v1 inside training-operator): no terminal freeze;
  // Succeeded and Failed flip existing Running and Failed entries to False.
  MPIOperator,
};

struct JobStatus {
  std::vector<JobCondition> conditions;
  std::map<std::string, ReplicaStatus, std::less<>> replica_statuses;
  std::optional<TimePoint> start_time;
  std::optional<TimePoint> completion_time;
  std::optional<TimePoint> last_reconcile_time;

  // A missing or null status decodes as the empty status.
  static Result<JobStatus, FieldErrorList> from_json(const json::Value& v, const FieldPath& path = FieldPath("status"));
  json::Value to_json(json::Allocator& a) const;
  json::Document to_document() const;

  // The condition of that type (any status), or nullptr.
  const JobCondition* condition(std::string_view type) const;
  // A condition of that type with status True exists.
  bool has_condition(std::string_view type) const;
  bool is_succeeded() const { return has_condition(condition_type::kSucceeded); }
  bool is_failed() const { return has_condition(condition_type::kFailed); }
  bool is_finished() const { return is_succeeded() || is_failed(); }
  bool is_running() const { return has_condition(condition_type::kRunning); }
  bool is_suspended() const { return has_condition(condition_type::kSuspended); }

  // Sets condition `type` with status True (training-operator rules).
  bool set_condition(std::string_view type, std::string_view reason, std::string_view message, TimePoint now);
  // The upstream setCondition: no change when the same type already has this status and
  // reason; a same-status update keeps lastTransitionTime; otherwise the old entry of that type
  // is removed and the new one appended last. Running and Restarting exclude each other;
  // Succeeded/Failed flip Running (and, with MPIOperator rules, Failed) to False in place.
  // Times are stored in whole seconds, as they travel. Returns whether anything changed.
  bool update_condition(std::string_view type, std::string_view status, std::string_view reason,
                        std::string_view message, TimePoint now, ConditionRules rules = ConditionRules::TrainingOperator);

  friend bool operator==(const JobStatus&, const JobStatus&) = default;
};

// ---- Whole-object conveniences ------------------------------------------------------------------
// The job's status (missing → empty), errors under "status".
Result<JobStatus, FieldErrorList> job_status_of(const json::Value& job);
// Replaces the job's "status" member, leaving every other field (and member order) as it was.
Status set_job_status(json::Document& job, const JobStatus& status);
// The job's spec.runPolicy (missing → all unset), errors under "spec.runPolicy".
Result<RunPolicy, FieldErrorList> run_policy_of(const json::Value& job);

}  // namespace unitrain::api
