// One reconcile pass over one job: the core pipeline (docs/framework-authors.md), one way, top
// to bottom:
//
//   admit (managedBy, deletion, our own last write seen) → load → validate → expectations →
//   observe → finished?  write the final counts, then clean up (cleanPodPolicy, PodGroup, TTL)
//           → suspended? write Suspended, then delete pods and PodGroup
//           → resume → plan the slot pods → record restarts → terminal failure?
//                 (backoffLimit, activeDeadlineSeconds, a permanent ExitCode failure)
//                 write Failed, then clean up as a finished job
//           → gang → desired objects → slot pods → status
//
// Each step is a member function returning a small value. A decision that ends, pauses or
// restarts part of the job is written to the job before anything acts on it: a failed write
// leaves the pods alone, and the next pass reaches the same decision from what the server has.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/api/kubeflow.h"
#include "core/api/time.h"
#include "core/controller/child_caches.h"
#include "core/controller/child_writes.h"
#include "core/controller/expectations.h"
#include "core/controller/job_controller.h"
#include "core/controller/pass_log.h"
#include "core/controller/run_limits.h"
#include "core/controller/slot_plan.h"
#include "core/controller/status_draft.h"
#include "core/controller/write_pool.h"
#include "core/framework/plugin.h"
#include "core/gang/gang.h"
#include "core/kube/client.h"

namespace unitrain::controller {

// A pass reads back at most the identity and new resourceVersion of what it writes: the rest of
// a response is never decoded.
inline kube::WriteOptions written_only() { return {kube::written_fields()}; }
// A create reads nothing back (the informer's ADD is what the pass waits for): its response is
// not decoded at all.
inline kube::WriteOptions nothing_read_back() { return {kube::nothing_read()}; }

// What a pass uses of its controller.
struct PassDependencies {
  kube::Client& client;
  Expectations& expectations;
  EventSink& events;
  framework::FrameworkPlugin& plugin;
  const ChildCaches& children;
  const gang::Backend* gang;  // null: no gang scheduling
  bool owns_unset_managed_by;
  framework::PipelineBehaviour behaviour;  // the plugin's PipelineDepartures, resolved once
  bool pin_owner;             // JobControllerOptions::pin_owner
  WritePool* write_pool;      // null: writes one at a time
  std::function<void(const std::string& ns, uint64_t JobCounters::*counter)> count;
  // The pass read the job "<ns>/<name>" from the server before creating children again
  // (confirm_job_live); `stale` says why the cached job is not the live one, nullopt when it is.
  std::function<void(const std::string& key, const std::optional<std::string>& stale)> job_confirmed;
};

// Reads the job from the server (one GET) and says why the job the cache holds as `uid` is not
// the live one: gone, being deleted, or replaced by a new job of that name; nullopt when it is.
kube::ApiResult<std::optional<std::string>> stale_on_server(kube::Client& client, const kube::GroupVersionResource& resource,
                                                            std::string_view ns, std::string_view name, std::string_view uid);

// Whether the cached job must be confirmed on the server before a pass creates children for it,
// and does so: children of it vanished without a delete of this controller
// (Expectations::children_vanished), or `recreating` (the pass is about to create children the
// job's status says existed). The informer caches are not one consistent snapshot: after an
// API-server restart each re-lists on its own, and the garbage collector's deletes of a deleted
// job's children can arrive while the jobs cache still holds the job; creating them again would
// schedule pods for a job that is gone. Nothing is read on the path of a new job's first creates.
// nullopt: create; else why not (the pass ends there, writing nothing).
kube::ApiResult<std::optional<std::string>> confirm_job_live(const PassDependencies& deps, std::string_view ns,
                                                             std::string_view name, std::string_view uid, bool recreating,
                                                             PassLog& log);

class ReconcilePass {
 public:
  // `log` collects the pass's decisions (for the controller's debug line).
  ReconcilePass(const PassDependencies& dependencies, kube::ObjectPtr cached, api::TimePoint now, PassLog& log);
  ReconcilePass(const ReconcilePass&) = delete;
  ReconcilePass& operator=(const ReconcilePass&) = delete;

  ReconcileResult run();

 private:
  // A decision that ends the job as Failed, and the events that announce it once written.
  struct TerminalFailure {
    framework::CoreWording condition;
    std::vector<framework::CoreWording> events;  // a failed replica's: one per failed pod
  };
  enum class GangAdmission { Admitted, Held };
  // Which of the framework's desired objects a step writes (DesiredObject::after_pods).
  enum class DesiredPhase { BeforePods, AfterPods };
  // One create the pass decided on (a slot pod, or a desired object it found absent): what it
  // sends and how its answer is settled.
  struct ChildCreate {
    json::Document object;     // named, in the job's namespace
    std::string name;
    std::string kind;          // "Pod", "Service", ...
    std::string replica_type;  // canonical, for a slot pod's events
    std::string expectation;   // the pods / services key the informer's ADD lowers; "" for none
    const framework::DesiredObject* want = nullptr;  // null for a slot pod
  };

  // --- admission ------------------------------------------------------------------------------
  bool managed_here() const;
  // Records this module in the job's owner annotation (pin_owner, no owner named yet). True when
  // it was written now, or the job is gone: the pass ends here (our update requeues the job).
  kube::ApiResult<bool> pin_owner();
  bool own_last_write_seen();
  bool expectations_satisfied() const;

  // --- steps, in pipeline order ---------------------------------------------------------------
  std::optional<kube::ApiError> load();
  void record_created();
  std::optional<kube::ApiError> fail_invalid_spec(const framework::Validation& validation);
  ReconcileResult finish();
  ReconcileResult clean_up_finished();
  ReconcileResult suspend();
  void resume();
  SlotPlan plan_slot_pods() const;
  void announce_terminated_containers();
  kube::ApiResult<std::optional<json::Document>> record_restarts(const SlotPlan& plan);
  std::optional<TerminalFailure> terminal_failure(const SlotPlan& plan, const RunLimitsVerdict& limits) const;
  std::optional<kube::ApiError> write_failure(const TerminalFailure& failure, const json::Value& job_on_server);
  kube::ApiResult<GangAdmission> sync_pod_group();
  kube::ApiResult<GangAdmission> apply_pod_group(gang::PodGroupRequest request);
  std::optional<kube::ApiError> apply_desired_objects(DesiredPhase phase);
  std::optional<kube::ApiError> sync_slot_pods(const SlotPlan& plan);
  std::optional<kube::ApiError> propose_status();

  // --- helpers --------------------------------------------------------------------------------
  // Writes the draft onto `job_on_server` (the cached job, or the job as this pass's own earlier
  // write returned it) when it differs from what the server has.
  std::optional<kube::ApiError> write_status(const json::Value& job_on_server);
  kube::ApiResult<ChildCreate> plan_slot_pod(const framework::PodSlot& slot);
  kube::ApiResult<ChildCreate> plan_desired_create(const framework::DesiredObject& want) const;
  // Creates `planned` (all of `resource`; a failed plan is that item's error) in their order as
  // one pipelined exchange (Client::create_all) on this thread: each raises its expectation
  // before the exchange and is settled in turn after it. Every item is tried; the error is the
  // first failing item's.
  std::optional<kube::ApiError> create_children(const kube::GroupVersionResource& resource,
                                                std::vector<kube::ApiResult<ChildCreate>>& planned);
  // The answer to one create: events, log, and the expectation lowered when no ADD will come. A
  // create answered AlreadyExists is looked up: ours or someone else's.
  std::optional<kube::ApiError> settle_create(const kube::GroupVersionResource& resource, const ChildCreate& create,
                                              kube::CreateOutcome outcome);
  // `existing`: the object of the wanted name the caches hold (known_object), null when none.
  std::optional<kube::ApiError> create_or_update(const framework::DesiredObject& want, const json::Value* existing);
  // The object named like `want` that the caches hold: among the job's children, or (not
  // controlled by the job) in the informer's cache, which `holder` then keeps alive. Null: none.
  const json::Value* known_object(const framework::DesiredObject& want, kube::ObjectPtr& holder) const;
  // The child of kind `resource` named `name` this pass observed (the job controls it); null
  // when it observed none.
  const json::Value* observed_child(const kube::GroupVersionResource& resource, std::string_view name) const;
  // Removes want.status_cleared_first from `live` through the status subresource; `live` becomes
  // what that write returned.
  std::optional<kube::ApiError> clear_status_first(const framework::DesiredObject& want, json::Document& live);
  std::optional<kube::ApiError> prune_undesired();
  std::optional<kube::ApiError> delete_pod_group();
  // The caches select a job's children by the module's child labels: an object the pass creates
  // gets them, and one of ours found without them (made before the module had them) gets them
  // added, so the caches see it from then on.
  void label_for_caches(json::Document& obj) const;
  std::optional<kube::ApiError> label_into_caches(const kube::GroupVersionResource& resource, const json::Value& live);
  // The Warning event and the pass's error for an object under our name that the job does not control.
  kube::ApiError foreign_object(std::string_view kind, const kube::GroupVersionResource& resource, std::string_view name) const;
  // The resourceVersion this pass's status write made, when a pass over exactly that job, with
  // the children it observed, would change and announce nothing (ReconcileResult::settled_version).
  std::optional<std::string> settled_version();
  // The framework's status rules, applied to the status as written, leave it as it is.
  bool status_settled();
  // On the finished status as written, the finished-job step would write and delete nothing.
  bool finished_step_is_empty() const;
  // Failed by backoffLimit or activeDeadlineSeconds: every pod goes, whatever cleanPodPolicy says.
  bool failed_by_run_limits() const;
  // Whether cleaning up the finished job may delete pods (cleanPodPolicy is not None, or run
  // limits failed it); else it reads none of the job's children.
  bool deletes_pods_when_finished() const;
  framework::CoreWording words(framework::CoreEvent e, std::string_view replica_type = {}) const;
  // Records the wording's event (if it has one) once the status carrying the decision is written.
  void announce_when_written(const framework::CoreWording& wording);
  // The decisions the pass writes with the status: the conditions it sets.
  void note_status_decisions();
  void count_when_written(uint64_t JobCounters::*counter);
  const json::Value& cached() const { return cached_->root(); }
  const api::RunPolicy& run_policy() const { return run_policy_; }

  const PassDependencies& deps_;
  const framework::FrameworkDescriptor& descriptor_;
  kube::ObjectPtr cached_;  // as the informer has it
  json::Document job_;      // defaulted copy the hooks see
  std::string ns_, name_, uid_, key_;
  std::string job_expectation_;  // Expectations::job_key, looked up several times a pass
  api::TimePoint now_;
  api::RunPolicy run_policy_;
  StatusDraft draft_{api::JobStatus{}};
  framework::Observed observed_;
  std::optional<std::vector<framework::DesiredObject>> desired_;  // asked for once per pass
  PassLog& log_;
  ChildWrites writes_;
  std::string written_version_;        // of this pass's status write, "" before one
  bool announces_every_pass_ = false;  // events a pass repeats while the pods stay as they are
};

}  // namespace unitrain::controller
