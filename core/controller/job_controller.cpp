#include "core/controller/job_controller.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

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
      queue_(clock) {
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

ReconcileResult JobController::reconcile(const std::string& key) {
  const auto started = clock_.steady_now();
  ReconcileResult result;
  if (kube::ObjectPtr cached = jobs_->cache().get(key)) {
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
    result = ReconcilePass(dependencies, std::move(cached), clock_.now()).run();
  } else {
    expectations_.forget_prefix(key + "/");
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
    try {
      r = reconcile(*key);
    } catch (const std::exception& e) {  // thread boundary: a bug in one job must not stop the worker
      r.error = internal_error(fmt::format("reconcile {}: {}", *key, e.what()));
    }
    if (r.error) {
      // controller-runtime's "Reconciler error": the job is retried with backoff.
      spdlog::warn("{} {}: {} (retrying with backoff)", descriptor().kind, *key, r.error->to_string());
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
