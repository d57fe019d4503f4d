#include "core/controller/job_controller.h"

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "core/api/meta.h"
#include "core/controller/child_caches.h"
#include "core/controller/pod_builder.h"
#include "core/controller/reconcile_pass.h"
#include "core/controller/workload_pass.h"
#include "core/controller/write_pool.h"
#include "core/framework/ownership.h"

namespace unitrain::controller {

JobController::JobController(kube::Client& client, kube::Clock& clock, EventSink& events,
                             std::unique_ptr<framework::FrameworkPlugin> plugin, JobControllerOptions options,
                             SharedCaches& caches)
    : JobController(client, clock, events, std::move(plugin), std::move(options), &caches) {}

JobController::JobController(kube::Client& client, kube::Clock& clock, EventSink& events,
                             std::unique_ptr<framework::FrameworkPlugin> plugin, JobControllerOptions options)
    : JobController(client, clock, events, std::move(plugin), std::move(options), nullptr) {}

JobController::JobController(kube::Client& client, kube::Clock& clock, EventSink& events,
                             std::unique_ptr<framework::FrameworkPlugin> plugin, JobControllerOptions options,
                             SharedCaches* caches)
    : client_(client),
      clock_(clock),
      events_(events),
      plugin_(std::move(plugin)),
      behaviour_(framework::pipeline_behaviour(*plugin_)),
      options_(std::move(options)),
      expectations_(clock),
      queue_(clock, nullptr, options_.settle),
      log_(log::Fields{{log::key::kController, descriptor().controller_name}, {log::key::kFramework, descriptor().name}}) {
  if (caches == nullptr) {
    own_caches_ = std::make_unique<SharedCaches>(client_, clock_, std::vector{&descriptor()}, options_.namespaces,
                                                 options_.gang.get());
    caches = own_caches_.get();
  }
  init(*caches);
}

void JobController::init(SharedCaches& caches) {
  children_ = caches.attach(descriptor(), *this);
  // A framework that writes its pods in index order gets no pool: one write at a time.
  if (options_.max_parallel_writes > 1 && !behaviour_.ordered_pod_writes)
    write_pool_ = std::make_unique<WritePool>(options_.max_parallel_writes);
  kube::EventHandlers job_handlers;
  job_handlers.on_add = [this](const json::Value& obj) { queue_.add(kube::object_key(obj)); };
  job_handlers.on_update = [this](const json::Value& old_obj, const json::Value& obj) {
    const std::string_view version = api::resource_version_of(obj);
    if (api::resource_version_of(old_obj) == version) return;
    std::string key = kube::object_key(obj);
    if (!job_update_held(key, version)) queue_.add(key);
  };
  job_handlers.previous_fields = kube::resource_version_fields();
  job_handlers.on_delete = [this](const json::Value& obj, bool) {
    const std::string key = kube::object_key(obj);
    {
      std::lock_guard lock(echoes_mu_);
      echoes_.erase(key);
    }
    expectations_.forget_prefix(key + "/");
    queue_.add(key);
  };
  children_->jobs().add_handlers(std::move(job_handlers));
}

JobController::~JobController() { stop(); }

void JobController::child_event(const ChildEvent& e) {
  const bool is_update = e.change == ChildEvent::Change::Updated;
  const ChildReaction r = react(e, descriptor(), behaviour_.reconciles_on_any_child, is_update && job_cached(e));
  const bool ours = r.observed && observe_child(e);
  if (e.change == ChildEvent::Change::Deleted && !ours) note_vanished(e);
  if (!r.reconcile) return;
  const std::string key = std::string(api::namespace_of(e.object)) + "/" + e.job.name;
  if (r.status_first) queue_.add_first(key);
  else queue_.add(key);
}

bool JobController::job_update_held(const std::string& key, std::string_view resource_version) {
  {
    std::lock_guard lock(echoes_mu_);
    auto it = echoes_.find(key);
    if (it == echoes_.end()) return false;
    if (it->second.passing) {
      it->second.updates.emplace_back(resource_version);
      return true;
    }
    if (it->second.settled != resource_version) return false;
    echoes_.erase(it);
  }
  std::lock_guard lock(stats_mu_);
  ++stats_.settled_echoes;
  return true;
}

void JobController::pass_started(const std::string& key) {
  std::lock_guard lock(echoes_mu_);
  echoes_.insert_or_assign(key, JobEcho{.passing = true, .updates = {}, .settled = {}});
}

void JobController::pass_ended(const std::string& key, const ReconcileResult& result) {
  bool requeue = false, echoed = false;
  {
    std::lock_guard lock(echoes_mu_);
    auto it = echoes_.find(key);
    if (it == echoes_.end()) return;  // the job was deleted meanwhile: its delete queued it
    for (const auto& version : it->second.updates) {
      if (result.settled_version && version == *result.settled_version) echoed = true;
      else requeue = true;
    }
    if (result.settled_version && !echoed) it->second = JobEcho{.passing = false, .updates = {}, .settled = *result.settled_version};
    else echoes_.erase(it);
  }
  if (requeue) queue_.add(key);
  if (echoed) {
    std::lock_guard lock(stats_mu_);
    ++stats_.settled_echoes;
  }
}

bool JobController::job_cached(const ChildEvent& e) const {
  return children_->jobs().cache().holds(std::string(api::namespace_of(e.object)) + "/" + e.job.name, e.job.uid);
}

bool JobController::observe_child(const ChildEvent& e) {
  // Pods and replica Services carry expectations, keyed by the replica type they serve.
  auto type = api::label_of(e.object, descriptor().replica_type_label);
  if (!type) return false;
  const std::string ns(api::namespace_of(e.object));
  const std::string key = e.kind == ChildKind::Pod ? Expectations::pods_key(ns, e.job.name, *type)
                                                   : Expectations::services_key(ns, e.job.name, *type);
  if (e.change == ChildEvent::Change::Added) return expectations_.creation_observed(key);
  return expectations_.deletion_observed(key);
}

void JobController::note_vanished(const ChildEvent& e) {
  // A grandchild goes with its parent (a finished MPI launcher Job's pod), and the PodGroup only
  // at the end of a job: neither is a child the next pass would create again. A job not cached
  // under that uid gets no pass to guard.
  if (e.grandchild || e.kind == ChildKind::PodGroup || !job_cached(e)) return;
  expectations_.children_vanished(Expectations::job_key(api::namespace_of(e.object), e.job.name));
}

void JobController::count(const std::string& ns, uint64_t JobCounters::*counter) {
  std::lock_guard lock(stats_mu_);
  ++(counters_[ns].*counter);
}

std::map<std::string, JobCounters> JobController::counters() const {
  std::lock_guard lock(stats_mu_);
  return counters_;
}

JobController::ReconcileStats JobController::reconcile_stats() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

namespace {
// A random UUID (version 4) naming one reconcile pass in its log lines, as controller-runtime's
// reconcileID does.
std::string reconcile_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const uint64_t hi = (rng() & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
  const uint64_t lo = (rng() & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff, hi & 0xffff, lo >> 48,
                     lo & 0xffffffffffffULL);
}
}  // namespace

bool manages_job(const framework::FrameworkDescriptor& descriptor, bool owns_unset_managed_by, const json::Value& job) {
  // managedBy, else the module that took the job before (its pin).
  if (auto owner = framework::declared_owner(job))
    return std::find(descriptor.managed_by.begin(), descriptor.managed_by.end(), *owner) != descriptor.managed_by.end();
  return owns_unset_managed_by;
}

bool JobController::manages(const json::Value& job) const {
  return manages_job(descriptor(), options_.owns_unset_managed_by.value_or(descriptor().owns_unset_managed_by), job);
}

std::vector<kube::ObjectPtr> JobController::managed_jobs() const {
  std::vector<kube::ObjectPtr> out;
  for (auto& job : children_->jobs().cache().list())
    if (manages(job->root())) out.push_back(std::move(job));
  return out;
}

void JobController::job_confirmed(const std::string& key, const std::optional<std::string>& stale) {
  {
    std::lock_guard lock(stats_mu_);
    ++stats_.job_confirmations;
    if (stale) ++stats_.stale_jobs;
  }
  if (stale)
    log_.log(log::Level::info,
             fmt::format("{} {}: created none of its children again: {} (the cache still shows it)", descriptor().kind,
                         key, *stale),
             {{log::key::kJob, key}});
}

void JobController::log_reconcile_error(const std::string& key, const kube::ApiError& error) {
  const log::Fields job{{log::key::kJob, key}};
  if (log::enabled(log::Level::debug))
    log_.log(log::Level::debug, fmt::format("reconcile failed, retrying with backoff: {}", error.to_string()), job);
  // A conflict is the next pass's business, not a fault; a request cancelled by the process's
  // stop is no fault either.
  if (error.is(kube::ApiError::Reason::Conflict) || error.is(kube::ApiError::Reason::Cancelled)) return;
  auto report = error_log_.occur(fmt::format("{}:{}", static_cast<int>(error.reason), error.code), clock_.steady_now());
  if (!report) return;
  log_.log(log::Level::warn,
           fmt::format("reconcile of {} {} failed, retrying with backoff: {}{}", descriptor().kind, key,
                       error.to_string(),
                       report->repeats > 0 ? fmt::format(" ({} more jobs failed with the same reason in the last {}s)",
                                                         report->repeats,
                                                         std::chrono::duration_cast<std::chrono::seconds>(report->since).count())
                                           : std::string()),
           job);
}

ReconcileResult JobController::reconcile(const std::string& key) {
  const auto started = clock_.steady_now();
  ReconcileResult result;
  PassLog pass_log(log::enabled(log::Level::debug));
  std::string resource_version;
  if (kube::ObjectPtr cached = children_->jobs().cache().get(key)) {
    // Only the debug line reads it.
    if (pass_log.enabled()) resource_version = std::string(api::resource_version_of(cached->root()));
    const PassDependencies dependencies{
        .client = client_,
        .expectations = expectations_,
        .events = events_,
        .plugin = *plugin_,
        .children = *children_,
        .gang = options_.gang.get(),
        .owns_unset_managed_by = options_.owns_unset_managed_by.value_or(descriptor().owns_unset_managed_by),
        .behaviour = behaviour_,
        .pin_owner = options_.pin_owner,
        .write_pool = write_pool_.get(),
        .count = [this](const std::string& ns, uint64_t JobCounters::*counter) { count(ns, counter); },
        .job_confirmed = [this](const std::string& job, const std::optional<std::string>& stale) {
          job_confirmed(job, stale);
        },
    };
    if (const auto* planner = plugin_->capabilities().workloads)
      result = WorkloadPass(dependencies, *planner, std::move(cached), clock_.now(), pass_log).run();
    else
      result = ReconcilePass(dependencies, std::move(cached), clock_.now(), pass_log).run();
  } else {
    expectations_.forget_prefix(key + "/");
    pass_log.note("forgot", "the job is gone");
  }
  if (pass_log.enabled()) {
    std::string summary = pass_log.summary();
    if (result.requeue_after)
      summary += fmt::format("{}requeued in {}s", summary.empty() ? "" : "; ",
                             std::chrono::duration_cast<std::chrono::seconds>(*result.requeue_after).count());
    if (result.error) summary += fmt::format("{}error: {}", summary.empty() ? "" : "; ", result.error->to_string());
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.steady_now() - started);
    log_.log(log::Level::debug,
             fmt::format("reconciled {} {} in {} ms: {}", descriptor().kind, key, took.count(),
                         summary.empty() ? "nothing to do" : summary),
             {{log::key::kJob, key}, {log::key::kReconcileID, reconcile_id()}, {log::key::kResourceVersion, resource_version}});
  }
  std::lock_guard lock(stats_mu_);
  ++stats_.total;
  if (result.error) ++stats_.errors;
  if (result.requeue_after) ++stats_.requeue_after;
  stats_.duration.observe(std::chrono::duration<double>(clock_.steady_now() - started).count());
  return result;
}

void JobController::worker_loop() {
  // A pass before the child caches are synced would see a running job's pods as missing and
  // create them again (an operator restart over running jobs).
  while (!wait_for_sync(std::chrono::seconds(1)))
    if (!workers_started_) return;
  while (auto key = queue_.get()) {
    if (!workers_started_) {
      // Stopping: the keys still queued are left to the next leader, whose informers list every
      // job again (controller-runtime's workers likewise end with their context).
      queue_.done(*key);
      break;
    }
    ReconcileResult r;
    ++active_workers_;
    pass_started(*key);
    try {
      r = reconcile(*key);
    } catch (const std::exception& e) {  // thread boundary: a bug in one job must not stop the worker
      r.error = internal_error(fmt::format("reconcile {}: {}", *key, e.what()));
    }
    --active_workers_;
    if (r.error) {
      // controller-runtime's "Reconciler error": the job is retried with backoff.
      log_reconcile_error(*key, *r.error);
      queue_.add_rate_limited(*key);
    } else {
      queue_.forget(*key);
      if (r.requeue_after) queue_.add_after(*key, *r.requeue_after);
    }
    pass_ended(*key, r);
    queue_.done(*key);
  }
}

void JobController::start_caches() {
  if (caches_started_.exchange(true)) return;
  if (own_caches_) own_caches_->start();
}

void JobController::start() {
  start_caches();
  if (workers_started_.exchange(true)) return;
  for (int i = 0; i < std::max(1, options_.workers); ++i) workers_.emplace_back([this] { worker_loop(); });
}

bool JobController::wait_for_sync(std::chrono::milliseconds timeout) const {
  return children_->wait_for_sync(std::chrono::steady_clock::now() + timeout);
}

void JobController::stop() {
  // The workers finish the pass in hand and take no more keys. No drain: a backlog at
  // --kube-api-qps can take longer than the whole graceful stop, and the process's stop also
  // cancels the API requests such a drain would make (cmd/training-operator/clients.cpp).
  workers_started_ = false;
  queue_.shut_down();
  for (auto& t : workers_) t.join();
  workers_.clear();
  if (caches_started_.exchange(false) && own_caches_) own_caches_->stop();
}

}  // namespace unitrain::controller
