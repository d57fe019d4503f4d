#include "core/controller/job_controller.h"

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "core/api/meta.h"
#include "core/controller/child_caches.h"
#include "core/controller/pod_builder.h"
#include "core/controller/reconcile_pass.h"
#include "core/controller/write_pool.h"

namespace unitrain::controller {

JobController::JobController(kube::Client& client, kube::Clock& clock, EventSink& events,
                             std::unique_ptr<framework::FrameworkPlugin> plugin, JobControllerOptions options)
    : client_(client),
      clock_(clock),
      events_(events),
      plugin_(std::move(plugin)),
      behaviour_(framework::pipeline_behaviour(*plugin_)),
      options_(std::move(options)),
      expectations_(clock),
      queue_(clock),
      log_(log::Fields{{log::key::kController, descriptor().controller_name}, {log::key::kFramework, descriptor().name}}) {
  kube::InformerOptions job_options;
  job_options.resource = descriptor().resource();
  job_options.namespaces = options_.namespaces;
  job_options.indexers.emplace(kube::kControllerUidIndex, kube::index_by_controller_uid);
  jobs_ = std::make_unique<kube::Informer>(client_, clock_, std::move(job_options));
  children_ = std::make_unique<ChildCaches>(client_, clock_, descriptor(), options_.namespaces, options_.gang.get());
  if (options_.max_parallel_writes > 1) write_pool_ = std::make_unique<WritePool>(options_.max_parallel_writes);

  kube::EventHandlers job_handlers;
  job_handlers.on_add = [this](const json::Value& obj) { queue_.add(kube::object_key(obj)); };
  job_handlers.on_update = [this](const json::Value& old_obj, const json::Value& obj) {
    if (api::resource_version_of(old_obj) != api::resource_version_of(obj)) queue_.add(kube::object_key(obj));
  };
  job_handlers.on_delete = [this](const json::Value& obj, bool) {
    const std::string key = kube::object_key(obj);
    expectations_.forget_prefix(key + "/");
    queue_.add(key);
  };
  jobs_->add_handlers(std::move(job_handlers));
  children_->add_handlers([this](ChildKind kind) { return child_handlers(kind); });
}

JobController::~JobController() { stop(); }

kube::EventHandlers JobController::child_handlers(ChildKind kind) {
  kube::EventHandlers h;
  h.on_add = [this, kind](const json::Value& obj) {
    observe_child(kind, obj, true);
    enqueue_owner(obj);
  };
  h.on_update = [this](const json::Value& old_obj, const json::Value& obj) {
    if (api::resource_version_of(old_obj) != api::resource_version_of(obj)) enqueue_owner(obj);
  };
  h.on_delete = [this, kind](const json::Value& obj, bool) {
    observe_child(kind, obj, false);
    enqueue_owner(obj);
  };
  return h;
}

void JobController::observe_child(ChildKind kind, const json::Value& obj, bool created) {
  // Only pods and replica Services carry expectations, keyed by the replica type they serve.
  if (kind != ChildKind::Pod && kind != ChildKind::Service) return;
  auto owner = api::controller_of(obj);
  if (!owner || owner->kind != descriptor().kind) return;
  auto type = json::get_string(obj, "/metadata/labels/" + json::escape_pointer_token(descriptor().replica_type_label));
  if (!type) return;
  const std::string ns(api::namespace_of(obj));
  const std::string key = kind == ChildKind::Pod ? Expectations::pods_key(ns, owner->name, *type)
                                                 : Expectations::services_key(ns, owner->name, *type);
  if (created) expectations_.creation_observed(key);
  else expectations_.deletion_observed(key);
}

void JobController::enqueue_owner(const json::Value& obj) {
  auto owner = api::controller_of(obj);
  if (!owner) return;
  const std::string ns(api::namespace_of(obj));
  auto is_job = [&](const api::OwnerReference& ref) {
    return ref.kind == descriptor().kind && ref.api_version == descriptor().api_version();
  };
  if (is_job(*owner)) {
    queue_.add(ns + "/" + owner->name);
    return;
  }
  // A grandchild (the pods of an MPI launcher batch Job): hop through the owned object.
  if (auto grand = children_->controller_of_owned(ns, *owner); grand && is_job(*grand)) queue_.add(ns + "/" + grand->name);
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
  if (auto managed = json::get_string(job, "/spec/runPolicy/managedBy")) {
    return std::find(descriptor.managed_by.begin(), descriptor.managed_by.end(), *managed) != descriptor.managed_by.end();
  }
  return owns_unset_managed_by;
}

bool JobController::manages(const json::Value& job) const {
  return manages_job(descriptor(), options_.owns_unset_managed_by.value_or(descriptor().owns_unset_managed_by), job);
}

std::vector<kube::ObjectPtr> JobController::managed_jobs() const {
  std::vector<kube::ObjectPtr> out;
  for (auto& job : jobs_->cache().list())
    if (manages(job->root())) out.push_back(std::move(job));
  return out;
}

void JobController::log_reconcile_error(const std::string& key, const kube::ApiError& error) {
  const log::Fields job{{log::key::kJob, key}};
  if (log::enabled(log::Level::debug))
    log_.log(log::Level::debug, fmt::format("reconcile failed, retrying with backoff: {}", error.to_string()), job);
  // A conflict is the next pass's business, not a fault.
  if (error.is(kube::ApiError::Reason::Conflict)) return;
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
  if (kube::ObjectPtr cached = jobs_->cache().get(key)) {
    resource_version = std::string(api::resource_version_of(cached->root()));
    const PassDependencies dependencies{
        .client = client_,
        .expectations = expectations_,
        .events = events_,
        .plugin = *plugin_,
        .children = *children_,
        .gang = options_.gang.get(),
        .owns_unset_managed_by = options_.owns_unset_managed_by.value_or(descriptor().owns_unset_managed_by),
        .behaviour = behaviour_,
        .write_pool = write_pool_.get(),
        .count = [this](const std::string& ns, uint64_t JobCounters::*counter) { count(ns, counter); },
    };
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
    ReconcileResult r;
    ++active_workers_;
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
    queue_.done(*key);
  }
}

void JobController::start_caches() {
  if (caches_started_.exchange(true)) return;
  children_->start();
  jobs_->start();
}

void JobController::start() {
  start_caches();
  if (workers_started_.exchange(true)) return;
  for (int i = 0; i < std::max(1, options_.workers); ++i) workers_.emplace_back([this] { worker_loop(); });
}

bool JobController::wait_for_sync(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  return jobs_->wait_for_sync(timeout) && children_->wait_for_sync(deadline);
}

void JobController::stop() {
  // Without workers nobody would take the queued keys: a follower just drops them, and so does a
  // leader whose caches never synced (its workers leave without taking a key).
  if (workers_started_.exchange(false) && wait_for_sync(std::chrono::milliseconds(0))) {
    queue_.shut_down_with_drain(std::chrono::seconds(30));
  } else {
    queue_.shut_down();
  }
  for (auto& t : workers_) t.join();
  workers_.clear();
  if (!caches_started_.exchange(false)) return;
  jobs_->stop();
  children_->stop();
}

}  // namespace unitrain::controller
