// The pipeline itself and the steps that decide a job's lifecycle (finished, suspended, failed).
// The steps that create and delete the job's children live in reconcile_children.cpp.
#include "core/controller/reconcile_pass.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/api/field_errors.h"
#include "core/api/meta.h"
#include "core/controller/abnormal_pods.h"
#include "core/controller/pod_builder.h"
#include "core/controller/restart_policy.h"
#include "core/framework/ownership.h"

namespace unitrain::controller {

namespace {

using framework::CoreEvent;
using kube::ApiError;

api::RunPolicy run_policy_of(const json::Value& job) {
  const json::Value* rp = json::find(job, "/spec/runPolicy");
  if (!rp) return {};
  auto decoded = api::RunPolicy::from_json(*rp, api::FieldPath("spec").child("runPolicy"));
  // An undecodable runPolicy sets no limits; validation reports it.
  return decoded ? std::move(*decoded) : api::RunPolicy{};
}

// training-operator's finished-job step: what was still active when the job succeeded counts
// as succeeded.
void fold_active_into_succeeded(api::JobStatus& status) {
  for (auto& [_, replica] : status.replica_statuses) {
    replica.succeeded += replica.active;
    replica.active = 0;
  }
}

// The framework's proposal onto `status`: replica counts, conditions (training-operator's rules)
// and the completion time.
void apply_proposal(const framework::StatusProposal& proposal, api::JobStatus& status, api::TimePoint now) {
  for (const auto& [type, counts] : proposal.replica_statuses) {
    auto& replica = status.replica_statuses[type];
    replica.active = counts.active;
    replica.succeeded = counts.succeeded;
    replica.failed = counts.failed;
    if (counts.selector) replica.selector = *counts.selector;
  }
  for (const auto& c : proposal.conditions) status.update_condition(c.type, c.status, c.reason, c.message, now);
  if (proposal.set_completion_time && !status.completion_time) {
    if (proposal.completion_time)
      if (auto t = api::parse_time(*proposal.completion_time)) status.completion_time = *t;
    if (!status.completion_time) status.completion_time = now;
  }
}

// Some pods of the job existed, by the status the server has: the job's replica counts.
bool pods_existed(const api::JobStatus& status) {
  for (const auto& [_, replica] : status.replica_statuses)
    if (replica.active + replica.succeeded + replica.failed > 0) return true;
  return false;
}

}  // namespace

kube::ApiResult<std::optional<std::string>> stale_on_server(kube::Client& client, const kube::GroupVersionResource& resource,
                                                            std::string_view ns, std::string_view name, std::string_view uid) {
  auto live = client.get(resource, ns, name);
  if (!live) {
    if (live.error().is(ApiError::Reason::NotFound)) return std::optional<std::string>("the job is gone on the server");
    return fail(live.error());
  }
  if (const auto live_uid = api::uid_of(live->root()); live_uid != uid)
    return std::optional<std::string>(fmt::format("a new job of that name (uid {}) replaced it on the server", live_uid));
  if (terminating(live->root())) return std::optional<std::string>("the job is being deleted on the server");
  return std::optional<std::string>();
}

kube::ApiResult<std::optional<std::string>> confirm_job_live(const PassDependencies& deps, std::string_view ns,
                                                             std::string_view name, std::string_view uid, bool recreating,
                                                             PassLog& log) {
  const std::string job_key = Expectations::job_key(ns, name);
  if (!recreating && !deps.expectations.vanished(job_key)) return std::optional<std::string>();
  auto stale = stale_on_server(deps.client, deps.plugin.descriptor().resource(), ns, name, uid);
  if (!stale) return fail(stale.error());
  if (deps.job_confirmed) deps.job_confirmed(fmt::format("{}/{}", ns, name), *stale);
  if (*stale) {
    log.note("created no children", **stale);
    return stale;
  }
  deps.expectations.clear_vanished(job_key);
  log.note("confirmed", "the job is live on the server, its missing children are created again");
  return stale;
}

ReconcilePass::ReconcilePass(const PassDependencies& dependencies, kube::ObjectPtr cached, api::TimePoint now,
                             PassLog& log)
    : deps_(dependencies),
      descriptor_(dependencies.plugin.descriptor()),
      cached_(std::move(cached)),
      job_(*cached_),
      ns_(api::namespace_of(cached_->root())),
      name_(api::name_of(cached_->root())),
      uid_(api::uid_of(cached_->root())),
      key_(ns_ + "/" + name_),
      job_expectation_(Expectations::job_key(ns_, name_)),
      now_(now),
      log_(log),
      writes_(dependencies.client, dependencies.expectations, dependencies.events, dependencies.write_pool,
              dependencies.plugin, dependencies.behaviour.delete_services_with_pods, cached_->root(), log) {}

ReconcileResult ReconcilePass::run() {
  auto failed_with = [](ApiError e) { return ReconcileResult{std::move(e), std::nullopt}; };
  if (!managed_here()) {
    log_.notef("skipped", "spec.runPolicy.managedBy is {}",
               json::get_string(cached(), "/spec/runPolicy/managedBy").value_or("unset"));
    return {};
  }
  if (terminating(cached())) {
    log_.note("skipped", "the job is being deleted");
    return {};
  }
  if (!own_last_write_seen()) {
    log_.notef("waiting for", "the cache to show this controller's last write to the job (it shows resourceVersion {})",
               api::resource_version_of(cached()));
    return {};
  }
  auto pinned = pin_owner();
  if (!pinned) return failed_with(pinned.error());
  if (*pinned) return {};
  if (auto e = load()) return failed_with(*e);
  record_created();
  if (auto validation = deps_.plugin.validate(nullptr, job_.root()); !validation.ok()) {
    log_.note("invalid", api::aggregate(validation.errors));
    if (auto e = fail_invalid_spec(validation)) return failed_with(*e);
    return {};
  }
  if (!expectations_satisfied()) return {};
  if (draft_.status().is_finished()) {
    // A finished job gets no children again: a mark that some vanished has nothing to guard.
    deps_.expectations.clear_vanished(job_expectation_);
    // The finished-job step reads the children only to delete some (with cleanPodPolicy None,
    // the default, the pass over a finished job decodes none of them).
    if (deletes_pods_when_finished()) observed_ = deps_.children.observe(ns_, uid_);
    return finish();
  }
  observed_ = deps_.children.observe(ns_, uid_);
  if (run_policy().suspend.value_or(false)) return suspend();
  resume();
  for (const auto& trouble : abnormal_pods(observed_.pods)) {
    writes_.child_event(framework::ChildEvent::AbnormalPod, {"Pod", trouble.pod, {}, trouble.message, trouble.reason});
    announces_every_pass_ = true;
  }

  const SlotPlan plan = plan_slot_pods();
  announce_terminated_containers();
  // Before any write to the job or its children: a pass over a job that is gone on the server
  // ends here.
  auto stale = confirm_job_live(deps_, ns_, name_, uid_, !plan.missing.empty() && pods_existed(draft_.persisted()), log_);
  if (!stale) return failed_with(stale.error());
  if (*stale) return {};
  auto restarts = record_restarts(plan);
  if (!restarts) return failed_with(restarts.error());
  const json::Value& job_on_server = *restarts ? (*restarts)->root() : cached();

  RunLimitsVerdict limits;
  if (deps_.behaviour.enforces_run_limits) {
    const int64_t recreated = RecreatedPods::of(job_on_server).count;
    limits = check_run_limits(run_policy(), backoff_restarts(descriptor_, job_.root(), observed_.pods, recreated),
                              draft_.status().start_time, now_);
  }
  if (auto failure = terminal_failure(plan, limits)) {
    if (auto e = write_failure(*failure, job_on_server)) return failed_with(*e);
    return clean_up_finished();
  }

  // A framework whose PodGroup never holds pod creation (mpi-operator) creates its own objects
  // first and the PodGroup after them, as its reference does; otherwise nothing is created
  // until the gang admits the job.
  if (!deps_.behaviour.gang_holds_pod_creation)
    if (auto e = apply_desired_objects(DesiredPhase::BeforePods)) return failed_with(*e);
  auto admission = sync_pod_group();
  if (!admission) return failed_with(admission.error());
  if (*admission == GangAdmission::Held) {
    log_.note("waiting for", "the PodGroup to be admitted before creating pods");
    draft_.status().last_reconcile_time = now_;
    if (auto e = write_status(job_on_server)) return failed_with(*e);
    return {std::nullopt, limits.deadline_in};
  }
  if (deps_.behaviour.gang_holds_pod_creation)
    if (auto e = apply_desired_objects(DesiredPhase::BeforePods)) return failed_with(*e);
  if (auto e = sync_slot_pods(plan)) return failed_with(*e);
  if (auto e = apply_desired_objects(DesiredPhase::AfterPods)) return failed_with(*e);
  if (auto e = prune_undesired()) return failed_with(*e);
  if (auto e = propose_status()) return failed_with(*e);
  if (auto e = write_status(job_on_server)) return failed_with(*e);
  return {std::nullopt, limits.deadline_in, settled_version()};
}

// --- admission ----------------------------------------------------------------------------------

bool ReconcilePass::managed_here() const {
  // managedBy (or the module that took the job before): another controller's job gets no
  // writes at all.
  return manages_job(descriptor_, deps_.owns_unset_managed_by, cached());
}

kube::ApiResult<bool> ReconcilePass::pin_owner() {
  if (!deps_.pin_owner || descriptor_.managed_by.empty() || framework::declared_owner(cached())) return false;
  // Conditional on the resourceVersion the decision was made on: a concurrent change (another
  // module pinning first) fails with a conflict instead of being overwritten.
  json::Document patch = json::Document::object();
  (void)json::set_string(patch, "/metadata/resourceVersion", api::resource_version_of(cached()));
  (void)json::set_string(patch, "/metadata/annotations/" + json::escape_pointer_token(framework::kOwnerAnnotation),
                         descriptor_.managed_by.front());
  auto patched = deps_.client.patch(descriptor_.resource(), ns_, name_, kube::PatchType::Merge, patch.dump());
  if (!patched) {
    if (patched.error().is(ApiError::Reason::NotFound)) return true;
    return fail(patched.error());
  }
  deps_.expectations.expect_version(job_expectation_, api::resource_version_of(patched->root()));
  return true;
}

bool ReconcilePass::own_last_write_seen() {
  // Our own last write to the job is not in the cache yet: this pass would decide on a state
  // we already replaced (the pods cache may be ahead, showing the pod our restart deleted while
  // the job still shows the old restart count). The informer's update of our write requeues.
  return deps_.expectations.version_seen(job_expectation_, api::resource_version_of(cached()));
}

bool ReconcilePass::expectations_satisfied() const {
  // Act only once the cache has seen our own creates and deletes.
  for (const auto& type : descriptor_.replica_types) {
    const std::string rt = lower(type);
    for (const std::string& key : {Expectations::pods_key(ns_, name_, rt), Expectations::services_key(ns_, name_, rt)}) {
      if (deps_.expectations.satisfied(key)) continue;
      const auto pending = deps_.expectations.pending(key);
      log_.notef("waiting for", "expectation {} ({} creations, {} deletions not yet seen)", key, pending.adds,
                 pending.deletes);
      return false;
    }
  }
  return true;
}

// --- lifecycle steps ----------------------------------------------------------------------------

std::optional<ApiError> ReconcilePass::load() {
  deps_.plugin.set_defaults(job_);
  run_policy_ = run_policy_of(job_.root());
  if (const json::Value* st = json::find(cached(), "/status")) {
    auto decoded = api::JobStatus::from_json(*st);
    if (!decoded) return internal_error(fmt::format("{} {}: {}", descriptor_.kind, key_, api::aggregate(decoded.error())));
    draft_ = StatusDraft(std::move(*decoded));
  }
  return std::nullopt;
}

void ReconcilePass::record_created() {
  if (draft_.status().has_condition(api::condition_type::kCreated) || !draft_.status().conditions.empty()) return;
  auto wording = words(CoreEvent::Created);
  draft_.set_condition(api::condition_type::kCreated, wording, now_);
  announce_when_written(wording);
  count_when_written(&JobCounters::created);
}

std::optional<ApiError> ReconcilePass::fail_invalid_spec(const framework::Validation& validation) {
  auto wording = words(CoreEvent::ValidationFailed);
  wording.message = api::invalid_message(descriptor_.group, descriptor_.kind, name_, validation.errors);
  if (!draft_.status().is_failed()) {
    draft_.set_condition(api::condition_type::kFailed, wording, now_);
    announce_when_written(wording);
    count_when_written(&JobCounters::failed);
  }
  return write_status(cached());
}

ReconcileResult ReconcilePass::finish() {
  // The final counts are written before any pod goes. A job this controller found Succeeded
  // has them already (propose_status folds them into the Succeeded write); a Succeeded status
  // written without them (another writer, an earlier version of the operator) gets them here.
  if (draft_.status().is_succeeded()) fold_active_into_succeeded(draft_.status());
  if (auto e = write_status(cached())) return {std::move(*e), std::nullopt};
  return clean_up_finished();
}

ReconcileResult ReconcilePass::clean_up_finished() {
  // Runs only on a finished status the server has: the one the cache showed, or the Failed one
  // this pass just wrote.
  ReconcileResult result;
  const std::string policy = run_policy().clean_pod_policy.value_or("None");
  std::vector<const json::Value*> victims;
  if (deletes_pods_when_finished()) {
    for (const auto* pod : observed_.pods) {
      const std::string_view phase = json::get_string(*pod, "/status/phase").value_or("");
      if (failed_by_run_limits() || policy == "All" || (policy == "Running" && (phase == "Running" || phase == "Pending")))
        victims.push_back(pod);
    }
  }
  if (auto e = writes_.delete_pods(victims, observed_.services)) return {std::move(*e), std::nullopt};
  if (auto e = delete_pod_group()) return {std::move(*e), std::nullopt};

  const auto& status = draft_.status();
  const auto ttl = run_policy().ttl_seconds_after_finished;
  if (!deps_.behaviour.ttl_deletes_job || !ttl || !status.completion_time) return result;
  const auto expiry = *status.completion_time + std::chrono::seconds(*ttl);
  if (now_ < expiry) {
    result.requeue_after = std::chrono::duration_cast<kube::Clock::Duration>(expiry - now_);
    return result;
  }
  kube::DeleteOptions opts;
  opts.response_fields = kube::written_fields();
  auto r = deps_.client.remove(descriptor_.resource(), ns_, name_, opts);
  if (!r) {
    // NotFound: a pass that ran before the cache saw our own delete; counted once already.
    if (r.error().is(ApiError::Reason::NotFound)) return result;
    writes_.child_event(framework::ChildEvent::JobDeleteFailed, {descriptor_.kind, name_, {}, r.error().message});
    return {r.error(), std::nullopt};
  }
  log_.note("deleted the job", "its ttlSecondsAfterFinished passed");
  writes_.child_event(framework::ChildEvent::JobDeleted, {descriptor_.kind, name_});
  deps_.count(ns_, &JobCounters::deleted);
  return result;
}

ReconcileResult ReconcilePass::suspend() {
  // Suspended is written first; pods, services and the PodGroup go after.
  auto& status = draft_.status();
  for (auto& [_, replica] : status.replica_statuses) replica.active = 0;
  if (!deps_.behaviour.status_while_suspended && status.is_running())
    draft_.set_condition(api::condition_type::kRunning, words(CoreEvent::SuspendedNotRunning), now_, "False");
  if (!status.is_suspended()) {
    auto wording = words(CoreEvent::Suspended);
    draft_.set_condition(api::condition_type::kSuspended, wording, now_);
    announce_when_written(wording);
  }
  // mpi-operator's status of a suspended job: Running=False after Suspended, both replica entries.
  if (deps_.behaviour.status_while_suspended)
    if (auto e = propose_status()) return {std::move(*e), std::nullopt};
  if (auto e = write_status(cached())) return {std::move(*e), std::nullopt};
  // The framework's objects are kept (in their usual order) before the pods go: a launcher is
  // suspended before its workers are deleted, so that losing them is no failure of its own.
  if (auto e = apply_desired_objects(DesiredPhase::BeforePods)) return {std::move(*e), std::nullopt};
  if (auto e = apply_desired_objects(DesiredPhase::AfterPods)) return {std::move(*e), std::nullopt};
  if (auto e = writes_.delete_pods(observed_.pods, observed_.services)) return {std::move(*e), std::nullopt};
  if (auto e = delete_pod_group()) return {std::move(*e), std::nullopt};
  if (auto e = prune_undesired()) return {std::move(*e), std::nullopt};
  return {};
}

void ReconcilePass::resume() {
  auto& status = draft_.status();
  if (status.is_suspended()) {
    auto wording = words(CoreEvent::Resumed);
    draft_.set_condition(api::condition_type::kSuspended, wording, now_, "False");
    announce_when_written(wording);
    status.start_time = now_;
  }
  if (!status.start_time) status.start_time = now_;
}

SlotPlan ReconcilePass::plan_slot_pods() const {
  return plan_slots(descriptor_, job_.root(), deps_.plugin.pod_slots(job_.root()), observed_.pods);
}

void ReconcilePass::announce_terminated_containers() {
  // Every pass, for every pod whose default container has terminated (training-operator's
  // ReconcilePods); a running pod's earlier terminations (lastState) are not announced.
  for (const auto* pod : observed_.pods) {
    if (auto code = terminated_exit_code(*pod, descriptor_.default_container)) {
      writes_.child_event(framework::ChildEvent::ExitedWithCode,
                          {"Pod", api::name_of(*pod), writes_.replica_type_of(*pod), std::to_string(*code)});
      announces_every_pass_ = true;
    }
  }
}

kube::ApiResult<std::optional<json::Document>> ReconcilePass::record_restarts(const SlotPlan& plan) {
  // The count of re-created pods is written before any failed pod is deleted: were the delete
  // first and the write lost, the job would run past its backoffLimit.
  // A job failing in this pass restarts nothing; a pod counted before (its delete failed) is not
  // counted again.
  if (!plan.with_outcome(FailedSlotPod::Outcome::FailJob).empty()) return std::optional<json::Document>();
  const RecreatedPods before = RecreatedPods::of(cached());
  const RecreatedPods after = before.after(plan.restart_uids());
  if (after.count == before.count) return std::optional<json::Document>();
  auto patched = deps_.client.patch(descriptor_.resource(), ns_, name_, kube::PatchType::Merge, after.merge_patch());
  if (!patched) return fail(patched.error());
  deps_.expectations.expect_version(job_expectation_, api::resource_version_of(patched->root()));
  return std::optional<json::Document>(std::move(*patched));
}

std::optional<ReconcilePass::TerminalFailure> ReconcilePass::terminal_failure(const SlotPlan& plan,
                                                                             const RunLimitsVerdict& limits) const {
  // A permanent exit code decides before the limits, as it did when it was found first.
  const auto permanent = plan.with_outcome(FailedSlotPod::Outcome::FailJob);
  if (!permanent.empty()) {
    TerminalFailure failure{words(CoreEvent::ReplicaFailed, permanent.front()->replica_type), {}};
    for (const auto* pod : permanent) failure.events.push_back(words(CoreEvent::ReplicaFailed, pod->replica_type));
    return failure;
  }
  if (limits.exceeded) {
    auto wording = words(*limits.exceeded);
    return TerminalFailure{wording, {wording}};
  }
  return std::nullopt;
}

std::optional<ApiError> ReconcilePass::write_failure(const TerminalFailure& failure, const json::Value& job_on_server) {
  auto& status = draft_.status();
  if (!status.completion_time) status.completion_time = now_;
  draft_.set_condition(api::condition_type::kFailed, failure.condition, now_);
  for (const auto& wording : failure.events) announce_when_written(wording);
  count_when_written(&JobCounters::failed);
  return write_status(job_on_server);
}

std::optional<ApiError> ReconcilePass::propose_status() {
  // The hook sees the conditions this pass raised so far, as upstream's UpdateJobStatus gets
  // the status ReconcilePods just changed (TFJob keeps a fresh Restarting instead of failing).
  if (auto st = api::set_job_status(job_, draft_.status()); !st) return internal_error(st.error().message);
  const framework::StatusProposal proposal = deps_.plugin.compute_status(job_.root(), observed_);
  auto& status = draft_.status();
  const bool was_succeeded = status.is_succeeded(), was_failed = status.is_failed();
  const bool was_restarting = status.has_condition(api::condition_type::kRestarting);
  apply_proposal(proposal, status, now_);
  for (const auto& e : proposal.events) announce_when_written({e.reason, e.message, e.type});
  if (!was_succeeded && status.is_succeeded()) {
    // The finished-job step of the next pass would fold the counts in a second write of its own
    // (the status it reads is this one, whatever the pods do meanwhile): the Succeeded write
    // carries them at once.
    fold_active_into_succeeded(status);
    count_when_written(&JobCounters::successful);
  }
  if (!was_failed && status.is_failed()) count_when_written(&JobCounters::failed);
  if (!was_restarting && status.has_condition(api::condition_type::kRestarting)) count_when_written(&JobCounters::restarted);
  return std::nullopt;
}

// --- helpers ------------------------------------------------------------------------------------

std::optional<ApiError> ReconcilePass::write_status(const json::Value& job_on_server) {
  if (!draft_.changed()) return std::nullopt;
  json::Document obj = json::Document::copy_of(job_on_server);
  if (auto st = api::set_job_status(obj, draft_.status()); !st) return internal_error(st.error().message);
  note_status_decisions();
  auto r = deps_.client.update_status(descriptor_.resource(), ns_, obj.root(), written_only());
  if (!r) {
    log_.notef("failed to write the status", "{}", r.error().message);
    return r.error();
  }
  written_version_ = api::resource_version_of(r->root());
  deps_.expectations.expect_version(job_expectation_, written_version_);
  log_.notef("wrote the status", "resourceVersion {}", written_version_);
  draft_.written();
  return std::nullopt;
}

std::optional<std::string> ReconcilePass::settled_version() {
  // Only a pass whose last act was its status write: the echo is then exactly what it ended on.
  if (written_version_.empty()) return std::nullopt;
  if (draft_.status().is_finished()) {
    // The pass over a finished job runs the finished-job step alone (no per-pod events).
    if (!finished_step_is_empty()) return std::nullopt;
  } else if (announces_every_pass_ || !status_settled()) {
    return std::nullopt;
  }
  log_.note("settled", "the echo of this status write needs no pass");
  return written_version_;
}

bool ReconcilePass::status_settled() {
  // The framework's rules applied once more to the status as written, with the same children:
  // a rule that reads the job's own conditions (TFJob's Restarting, MPIJob's Running) may still
  // move it, and then the echo gets its pass.
  if (auto st = api::set_job_status(job_, draft_.status()); !st) return false;
  api::JobStatus again = draft_.status();
  apply_proposal(deps_.plugin.compute_status(job_.root(), observed_), again, now_);
  return again == draft_.status();
}

bool ReconcilePass::finished_step_is_empty() const {
  // What finish() and clean_up_finished() would do on the status this pass wrote.
  api::JobStatus folded = draft_.status();
  if (folded.is_succeeded()) fold_active_into_succeeded(folded);
  if (!(folded == draft_.status())) return false;
  if (deletes_pods_when_finished()) return false;
  if (deps_.gang && deps_.children.pod_group(ns_, name_)) return false;
  return !(deps_.behaviour.ttl_deletes_job && run_policy().ttl_seconds_after_finished);
}

bool ReconcilePass::deletes_pods_when_finished() const {
  return failed_by_run_limits() || run_policy().clean_pod_policy.value_or("None") != "None";
}

bool ReconcilePass::failed_by_run_limits() const {
  if (!deps_.behaviour.enforces_run_limits) return false;
  const api::JobCondition* failed = draft_.status().condition(api::condition_type::kFailed);
  if (!failed || failed->status != "True") return false;
  for (auto why : {CoreEvent::BackoffLimitExceeded, CoreEvent::DeadlineExceeded}) {
    const auto wording = words(why);
    if (failed->reason == wording.reason && failed->message == wording.message) return true;
  }
  return false;
}

framework::CoreWording ReconcilePass::words(CoreEvent e, std::string_view replica_type) const {
  return deps_.plugin.wording(e, job_.root(), replica_type);
}

void ReconcilePass::announce_when_written(const framework::CoreWording& wording) {
  if (wording.event_type.empty()) return;
  draft_.announce_when_written([this, wording] { writes_.event(wording); });
}

void ReconcilePass::note_status_decisions() {
  if (!log_.enabled()) return;
  for (const auto& c : draft_.status().conditions) {
    const auto& persisted = draft_.persisted().conditions;
    if (std::find(persisted.begin(), persisted.end(), c) != persisted.end()) continue;
    log_.notef("set condition", "{}={} ({}: {})", c.type, c.status, c.reason, c.message);
  }
  for (const auto& [type, replica] : draft_.status().replica_statuses) {
    const auto& before = draft_.persisted().replica_statuses;
    if (auto it = before.find(type); it != before.end() && it->second == replica) continue;
    log_.notef("set replica status", "{} active={} succeeded={} failed={}", type, replica.active, replica.succeeded,
               replica.failed);
  }
}

void ReconcilePass::count_when_written(uint64_t JobCounters::*counter) {
  draft_.announce_when_written([this, counter] { deps_.count(ns_, counter); });
}

}  // namespace unitrain::controller
