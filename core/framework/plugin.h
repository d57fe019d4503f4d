// The contract between the job-controller core and one framework module.
//
// The core owns the reconcile pipeline (docs/framework-authors.md lists its steps); a framework
// supplies pure hooks that turn a job into desired objects and observed children into a status
// proposal. Hooks never call the API server: everything they need arrives as arguments, and
// everything they want arrives back at the core as values, so each hook is unit-testable against
// JSON fixtures and the core alone decides when to write.
//
// Optional behaviour is discovered through `capabilities()` (plain pointers, no dynamic_cast),
// the way Kueue's jobframework discovers optional interfaces of a GenericJob. A module loaded at
// run time reaches the same contract through the C ABI of core/framework/abi/unitrain_plugin.h.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/api/field_errors.h"
#include "core/base/result.h"
#include "core/framework/descriptor.h"
#include "core/framework/module_endpoint.h"
#include "core/json/json.h"

namespace unitrain::framework {

// A framework-specific setting the operator exposes as `--<name>` (e.g.
// "pytorch-init-container-image"). Values reach the factory in PluginConfig.
struct OptionSpec {
  std::string name;
  std::string default_value;
  std::string help;
};

struct PluginConfig {
  std::map<std::string, std::string, std::less<>> options;  // every OptionSpec, defaulted
  std::string gang_scheduler_name;                           // "" (none), "volcano", or a name
  std::string cluster_domain;                                // CUSTOM_CLUSTER_DOMAIN / --cluster-domain
  // Where the operator's HTTPS endpoints are reached and whose certificate they serve:
  // --webhook-service-name, --webhook-namespace, --webhook-secret-name.
  std::string service_name;
  std::string service_namespace;
  std::string certificate_secret;

  std::string option(std::string_view name) const {
    auto it = options.find(name);
    return it == options.end() ? std::string() : it->second;
  }
};

struct Validation {
  api::FieldErrorList errors;  // in the order the reference operator reports them
  std::vector<std::string> warnings;
  bool ok() const { return errors.empty(); }
};

// One pod the core will keep in existence: replica type, index, and the pod it creates when the
// slot is empty. The core fills name, namespace, owner reference and the common labels first.
struct PodSlot {
  std::string replica_type;  // canonical: "Worker"
  int32_t index = 0;
  // The pod's name when it is not "<job>-<rt>-<index>" (MPI v1 names its launcher "<job>-launcher").
  std::string name{};
};

// An object the framework wants besides pods: Service, ConfigMap, Secret, Role, HPA, a launcher
// batch/v1 Job... The core gets-or-creates it with a controller owner reference to the job.
struct DesiredObject {
  kube::GroupVersionResource resource;
  json::Document object;  // complete, without ownerReferences (the core adds them)
  enum class Update {
    Never,            // create when missing, never touch again
    WhenDiffers,      // update when any of `compared` (JSON Pointers) differs
  } update = Update::Never;
  std::vector<std::string> compared;  // e.g. {"/data"}, {"/spec/selector", "/spec/publishNotReadyAddresses"}
  // An existing object of this name that the job does not control is used as it is instead of
  // being an ErrResourceExists conflict (a ServiceAccount the pod template names).
  bool use_existing = false;
  // The core makes the job the object's controller owner when it creates it; false creates it
  // unowned, so it outlives the job (a JobSet's PersistentVolumeClaim under `whenDeleted: Retain`).
  bool owned_by_job = true;
  // Created or updated once the slot pods exist, not before them (mpi-operator's launcher Job
  // comes after its workers, and is unsuspended only once they are back).
  bool after_pods = false;
  // Fields (JSON Pointers under /status) removed through the status subresource before an update
  // of the object: a batch/v1 Job's pod template may change only while status.startTime is unset.
  std::vector<std::string> status_cleared_first{};
};

// An object a workload plan reads that the job does not own (a TrainJob's runtime): the core
// reads it from the API server when the plan asks (WorkloadPlan::fetch) and plans again.
struct ObjectFetch {
  kube::GroupVersionResource resource;
  std::string namespace_name;  // "" for a cluster-scoped object
  std::string name;
};
struct FetchedObject {
  ObjectFetch ref;
  std::optional<json::Document> object;  // unset when the read failed
  std::string error;                     // the API server's message then ("... not found")
};

// The children of one job, as the informer caches see them (projections; see core/kube).
struct Observed {
  std::vector<const json::Value*> pods;
  std::vector<const json::Value*> services;
  // Other owned kinds, keyed by "resource.group" (descriptor.owned_resources), and the pods
  // those objects control under "pods/<resource.group>" (an MPI launcher Job's pods are
  // owned["pods/jobs.batch"]).
  std::map<std::string, std::vector<const json::Value*>, std::less<>> owned;
  // Keeps the cached objects the pointers above refer to alive for the whole pass.
  std::vector<std::shared_ptr<const void>> keep_alive;
  // What a workload plan asked the core to read (WorkloadPlan::fetch), in the order it asked.
  std::vector<FetchedObject> fetched{};
};

// What a framework proposes for status; the core applies the condition rules (terminal states
// are final, Running/Restarting exclusivity, transition times) and writes only on change.
struct StatusProposal {
  struct ReplicaCounts {
    int32_t active = 0, succeeded = 0, failed = 0;
    std::optional<std::string> selector;
  };
  struct Condition {
    std::string type;    // Running | Restarting | Succeeded | Failed
    std::string status = "True";
    std::string reason;  // "PyTorchJobRunning"
    std::string message;
  };
  // An event the reference operator records while it computes the status (PyTorchJobSucceeded,
  // MPIJobRunning, ...); the core records it once the status carrying the pass's decisions is
  // written.
  struct Event {
    std::string type;  // Normal | Warning
    std::string reason;
    std::string message;
  };
  std::map<std::string, ReplicaCounts> replica_statuses;  // by replica type
  std::vector<Condition> conditions;                       // applied in order
  // Recorded, in order, once the status this proposal changed is written (a pass that writes
  // nothing records none): the events of the transitions the hook saw.
  std::vector<Event> events;
  bool set_completion_time = false;
  std::optional<std::string> completion_time;              // RFC 3339; else "now" when set
};

// --- optional capabilities ---------------------------------------------------------------------

// The PodGroup a framework asks for, where its reference operator's rules differ from
// training-operator's (which the core applies without this capability).
struct PodGroupPolicy {
  int32_t min_member = 0;
  std::string queue;           // Volcano; "" leaves the field out
  std::string priority_class;  // Volcano; "" leaves the field out
  // A ResourceList ({"cpu":"2","memory":"1Gi"}); unset leaves the field out.
  std::optional<json::Document> min_resources;
  std::optional<int32_t> schedule_timeout_seconds;  // scheduler-plugins
};

// How the framework contributes to its PodGroup (minMember and minResources rules differ).
class GangContribution {
 public:
  virtual ~GangContribution() = default;
  // `priority_of` gives the value of a PriorityClass by name (0 when unknown). Errors name the
  // field (a quantity that does not parse).
  virtual Result<PodGroupPolicy> pod_group(const json::Value& job,
                                           const std::function<int32_t(std::string_view)>& priority_of) const = 0;
};

// A kind that is deprecated: the warning goes back on every create, update and delete
// admission, so the kind's validating webhook covers DELETE too.
class DeprecationNotice {
 public:
  virtual ~DeprecationNotice() = default;
  virtual std::string warning() const = 0;
};

// Where a kind's reference operator runs jobs unlike training-operator's common job controller,
// whose ways the core follows for a module without this capability. A module overrides only
// the answers where it departs (mpi-operator v2 departs in all of them). Asked once, when the
// controller and the webhooks are built; the answers are constants of the kind.
class PipelineDepartures {
 public:
  virtual ~PipelineDepartures() = default;
  // The core deletes a finished job once ttlSecondsAfterFinished has passed (mpi-operator v2
  // hands the TTL to its launcher Job).
  virtual bool ttl_deletes_job() const { return true; }
  // The core fails the job on backoffLimit and activeDeadlineSeconds (mpi-operator v2 hands both
  // to its launcher Job).
  virtual bool enforces_run_limits() const { return true; }
  // Pods wait until Volcano admits the PodGroup (mpi-operator creates them at once).
  virtual bool gang_holds_pod_creation() const { return true; }
  // Deleting a slot pod deletes the Service of the same name, and Services are pruned with
  // desired_objects() (training-operator's per-replica Services; mpi-operator's one Service is not).
  virtual bool delete_services_with_pods() const { return true; }
  // The validating webhook checks the defaulted object (mpi-operator: SetDefaults, then
  // ValidateMPIJob); training-operator's webhooks check the raw one.
  virtual bool validates_defaulted() const { return false; }
  // Every create and delete of a job's children triggers a reconcile (mpi-operator); otherwise
  // only those of objects carrying the replica-type label do (a ConfigMap's or a PodGroup's
  // trigger nothing). Updates trigger either way.
  virtual bool reconciles_on_any_child() const { return false; }
  // The status is computed on suspended passes too (mpi-operator: the hook proposes
  // Running=False after the core's Suspended, and the replica counts); training-operator's
  // suspend writes only Suspended and, for a running job, Running=False.
  virtual bool status_while_suspended() const { return false; }
  // Workers are deleted one at a time in index order, so a watcher sees them in that order
  // (mpi-operator); training-operator's kinds delete in parallel. Creates are in index order for
  // every kind (one pipelined exchange, which the server answers in order).
  virtual bool ordered_pod_writes() const { return false; }
};

// The admission checks of the module's companion kinds (Registration::companions): `kind` is the
// companion's ("TrainingRuntime"), `old_object` null on create.
class CompanionValidator {
 public:
  virtual ~CompanionValidator() = default;
  virtual Validation validate_companion(std::string_view kind, const json::Value* old_object,
                                        const json::Value& object) const = 0;
};

// A child a workload plan deletes (WorkloadPlanner).
struct ChildDeletion {
  kube::GroupVersionResource resource;
  std::string name;
  std::string propagation_policy = "Foreground";  // Background | Foreground | Orphan
};

// Everything one reconcile pass of a workload-planning kind does, decided from the job and its
// observed children alone; the core carries it out in this order: the status (written only when
// it differs from the job's, before anything acts on it, so a failed write changes nothing and the
// next pass decides again), its events, the job's own deletion, child deletions, updates,
// creations, and the requeue.
struct WorkloadPlan {
  // The job's whole .status as it should be; unset leaves the status alone.
  std::optional<json::Document> status;
  std::vector<StatusProposal::Event> events;  // recorded once `status` is written (or now, when unset)
  bool delete_job = false;                    // delete the job itself (foreground): its TTL ran out
  std::vector<ChildDeletion> deletions;       // NotFound counts as done
  // Objects as they should now be, each built from the observed one (its resourceVersion kept):
  // replaced as they are, after `status_cleared_first` is removed through the status subresource.
  std::vector<DesiredObject> updates;
  // Created when missing (the core adds the controller owner reference unless owned_by_job is
  // false); one the job already controls is left as it is, another owner's is a conflict
  // (foreign_object_wording). Consecutive creations of one resource are sent together, in their
  // order, as one pipelined exchange (Client::create_all), every one of them tried; each run of them starts once the one
  // before it is done, and a run with a failure ends the pass before the next (a JobSet's
  // Service, then its PersistentVolumeClaims, then its Jobs, as upstream stops at a failed step).
  std::vector<DesiredObject> creations;
  std::optional<int64_t> requeue_after_ms;  // act again then (a TTL to honour)
  // Objects the plan needs read first. When non-empty and the plan was made without
  // Observed::fetched, the core reads them (one GET each) and plans once more with them; nothing
  // else of this plan is carried out.
  std::vector<ObjectFetch> fetch{};
};

// A kind whose children are whole workloads run by their own controllers (JobSet's batch Jobs)
// and whose status has a shape of its own: the core runs no pod pipeline for it (no pod slots,
// training-operator conditions, run policy or gang), and carries out what `plan` decides on each
// pass instead. The job it gets is defaulted; `now` is the pass's clock, in RFC 3339.
class WorkloadPlanner {
 public:
  virtual ~WorkloadPlanner() = default;
  virtual WorkloadPlan plan(const json::Value& job, const Observed& observed, std::string_view now) const = 0;
};

struct Capabilities {
  const GangContribution* gang = nullptr;
  const DeprecationNotice* deprecation = nullptr;
  const PipelineDepartures* departures = nullptr;
  const WorkloadPlanner* workloads = nullptr;
  const CompanionValidator* companions = nullptr;
  const ModuleEndpoint* endpoint = nullptr;  // module_endpoint.h
};

// Conditions and events the core itself raises; their reasons and messages differ between the
// reference operators, so the framework words them (the defaults are training-operator's).
enum class CoreEvent {
  Created,              // Created=True
  Suspended,            // Suspended=True
  SuspendedNotRunning,  // Running=False while suspended
  Resumed,              // Suspended=False
  BackoffLimitExceeded, // Failed=True
  DeadlineExceeded,     // Failed=True
  ReplicaRestarting,    // Restarting=True after a failed pod was deleted for re-creation
  ReplicaFailed,        // Failed=True after a non-retryable exit code
  ValidationFailed,     // Failed=True for an invalid spec (message: the aggregated field errors)
};

struct CoreWording {
  std::string reason;
  std::string message;
  // The type of the event the reference operator records with it (Normal, Warning), or "" when
  // it records none.
  std::string event_type = {};
};

// training-operator's reasons ("<Kind>Created", "<Kind>Failed", ...), messages ("<Kind> <name>
// is created.", "Job <name> has failed because it has reached the specified backoff limit", ...)
// and events: every condition the core raises is announced by an event except Created and the
// Running=False of a suspension.
CoreWording training_operator_wording(CoreEvent e, std::string_view kind, const json::Value& job,
                                      std::string_view replica_type);

// The events the core records about a job's children and its own clean-up. Each reference
// operator records a different set (mpi-operator v2 none of these but its create failures), so
// the framework words them; an empty event_type records nothing.
enum class ChildEvent {
  Created,                // the core created an object for the job (a pod, a Service, a ConfigMap, ...)
  CreateFailed,           // that create failed; detail: the error
  Deleted,                // the core deleted an object of the job (clean-up, restart, scale-down, suspend)
  DeleteFailed,           // detail: the error
  ExitedWithCode,         // a slot pod's default container has terminated (every pass); detail: the code
  TemplateRestartPolicy,  // a replica's pod template sets restartPolicy, which the replica's overrides
  TemplateSchedulerName,  // a replica's pod template names a scheduler other than the gang scheduler
  PodGroupDeleting,       // a finished, failed or suspended job's PodGroup is about to be deleted
  AbnormalPod,            // an active pod's trouble (every pass); reason: the pod's, detail: the message
  JobDeleted,             // ttlSecondsAfterFinished deleted the job
  JobDeleteFailed,        // detail: the error
};
struct ChildSubject {
  std::string_view kind;               // "Pod", "Service", "PodGroup", "ConfigMap", "Job"
  std::string_view name;
  std::string_view replica_type = {};  // canonical ("Worker"), for slot pods
  std::string_view detail = {};
  std::string_view reason = {};        // AbnormalPod: the container state's or condition's reason
};
// training-operator's common job controller (pod, service and PodGroup control, TTL):
// SuccessfulCreatePod "Created pod: <name>", FailedCreatePod "Error creating: <error>",
// SuccessfulDeletePod "Deleted pod: <name>", the same for services, ExitedWithCode "Pod:
// <ns>.<name> exited with code <n>", an abnormal pod's Warning under its own reason,
// JobTerminated before SuccessfulDeletePodGroup,
// SuccessfulDeleteJob "Deleted job: <name>"; no event for other kinds.
CoreWording training_operator_child_event(ChildEvent e, const json::Value& job, const ChildSubject& subject);
// PyTorchJob's, PaddleJob's and MXJob's DeleteJob record a deletion by ttlSecondsAfterFinished
// with the pod reasons (SuccessfulDeletePod "Deleted job: <name>", FailedDeletePod); every other
// child event as training_operator_child_event.
CoreWording job_deletion_worded_as_pod(ChildEvent e, const json::Value& job, const ChildSubject& subject);

// An object the job needs exists under the name the job gives it, but the job does not control
// it (it belongs to another owner, or to none). The core leaves it alone: it records a Warning
// event worded by the framework, fails the pass with the same message (retried with backoff) and
// acts again once the object is gone.
struct ForeignObject {
  std::string_view kind;      // "Pod", "ConfigMap", "PodGroup"
  std::string_view resource;  // "pods", "configmaps", "podgroups"
  std::string_view name;
};

// training-operator's common job controller: a pod or a replica's Service fails its create with
// the API server's AlreadyExists (`FailedCreatePod` / `FailedCreateService`, "Error creating:
// pods "<name>" already exists"); any other kind gets `ErrResourceExists`, "Resource "<name>"
// of Kind "<Kind>" already exists and is not managed by <job kind>".
CoreWording training_operator_foreign_object_wording(std::string_view job_kind, const ForeignObject& object);

// --- the plugin --------------------------------------------------------------------------------

class FrameworkPlugin {
 public:
  virtual ~FrameworkPlugin() = default;

  virtual const FrameworkDescriptor& descriptor() const = 0;
  virtual Capabilities capabilities() const { return {}; }

  // In-memory defaults (never written back to spec, as upstream).
  virtual void set_defaults(json::Document& job) const = 0;
  // `old_job` is null on create. Runs on the raw object in webhooks and on the defaulted one in
  // the reconciler, as each reference operator does.
  virtual Validation validate(const json::Value* old_job, const json::Value& job) const = 0;

  // The pod slots the core keeps (e.g. every Master and Worker index; for MPI v2 only workers).
  virtual std::vector<PodSlot> pod_slots(const json::Value& job) const = 0;
  // Framework additions to a pod the core has prepared from the replica template: env, ports,
  // volumes, init containers, hostname, extra labels. Pure and deterministic.
  virtual Status decorate_pod(const json::Value& job, const PodSlot& slot, json::Document& pod) const = 0;

  // Services, ConfigMaps, Secrets, RBAC, launcher objects: everything but slot pods.
  // `observed` lets a hook keep what exists (an SSH key is generated only when its Secret is missing).
  virtual Result<std::vector<DesiredObject>> desired_objects(const json::Value& job, const Observed& observed) const = 0;

  virtual StatusProposal compute_status(const json::Value& job, const Observed& observed) const = 0;

  // Resources whose objects owned by the job the core deletes when desired_objects() stops
  // returning them (per resource, so it also covers "none of this kind wanted any more": the
  // PyTorch HPA of a suspended job). Services are pruned as well unless PipelineDepartures says
  // delete_services_with_pods is false (per-replica services follow scale-down and suspension).
  // Default: none.
  virtual std::vector<kube::GroupVersionResource> pruned_resources() const { return {}; }

  // Reasons and messages of the conditions and events the core raises (default: training-operator's).
  virtual CoreWording wording(CoreEvent e, const json::Value& job, std::string_view replica_type) const {
    return training_operator_wording(e, descriptor().kind, job, replica_type);
  }
  // The event (if any) for what the core did to the job's children (default: training-operator's).
  virtual CoreWording child_event(ChildEvent e, const json::Value& job, const ChildSubject& subject) const {
    return training_operator_child_event(e, job, subject);
  }
  // The Warning event (reason, message) for an object the job does not control found under the
  // job's name for it; the message is also the pass's error (default: training-operator's).
  virtual CoreWording foreign_object_wording(const json::Value& job, const ForeignObject& object) const {
    (void)job;
    return training_operator_foreign_object_wording(descriptor().kind, object);
  }
};

// The answers of a plugin's PipelineDepartures, or training-operator's when it has none: what
// the core reads.
struct PipelineBehaviour {
  bool ttl_deletes_job = true;
  bool enforces_run_limits = true;
  bool gang_holds_pod_creation = true;
  bool delete_services_with_pods = true;
  bool validates_defaulted = false;
  bool reconciles_on_any_child = false;
  bool status_while_suspended = false;
  bool ordered_pod_writes = false;
};
PipelineBehaviour pipeline_behaviour(const FrameworkPlugin& plugin);

// Builds a plugin with the configuration the operator's flags give; the error says why it
// cannot (a module loaded at run time refusing its options). A function object: such a module
// stays loaded through the factory and the plugins it makes.
using PluginFactory = std::function<Result<std::unique_ptr<FrameworkPlugin>>(const PluginConfig&)>;

}  // namespace unitrain::framework
