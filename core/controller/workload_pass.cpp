#include "core/controller/workload_pass.h"

#include <chrono>

#include <fmt/format.h>

#include "core/api/meta.h"
#include "core/controller/child_caches.h"

namespace unitrain::controller {

namespace {

using kube::ApiError;

bool terminating_object(const json::Value& obj) { return json::find(obj, "/metadata/deletionTimestamp") != nullptr; }

}  // namespace

WorkloadPass::WorkloadPass(const PassDependencies& dependencies, const framework::WorkloadPlanner& planner,
                           kube::ObjectPtr cached, api::TimePoint now, PassLog& log)
    : deps_(dependencies),
      planner_(planner),
      descriptor_(dependencies.plugin.descriptor()),
      cached_(std::move(cached)),
      ns_(api::namespace_of(cached_->root())),
      name_(api::name_of(cached_->root())),
      uid_(api::uid_of(cached_->root())),
      now_(now),
      log_(log),
      writes_(dependencies.client, dependencies.expectations, dependencies.events, dependencies.write_pool,
              dependencies.plugin, false, cached_->root(), log) {}

ReconcileResult WorkloadPass::run() {
  auto failed_with = [](ApiError e) { return ReconcileResult{std::move(e), std::nullopt}; };
  if (terminating_object(cached())) {
    log_.note("skipped", "the job is being deleted");
    return {};
  }
  // A plan decided on a job older than our own last status write would undo it (a restart
  // counted twice): the informer's update of our write requeues the job.
  if (!deps_.expectations.version_seen(Expectations::job_key(ns_, name_), api::resource_version_of(cached()))) {
    log_.note("waiting for", "the cache to show this controller's last write to the job");
    return {};
  }
  json::Document job = json::Document::copy_of(cached());
  deps_.plugin.set_defaults(job);
  framework::Observed observed = deps_.children.observe(ns_, uid_);
  const std::string now = api::format_time(now_);
  framework::WorkloadPlan plan = planner_.plan(job.root(), observed, now);
  if (!plan.fetch.empty()) {
    // One round of reads: the plan made with them is carried out whatever it asks next.
    for (auto& ref : plan.fetch) {
      auto r = deps_.client.get(ref.resource, ref.namespace_name, ref.name);
      framework::FetchedObject fetched{.ref = std::move(ref), .object = std::nullopt, .error = {}};
      if (r) fetched.object = std::move(*r);
      else if (r.error().is(ApiError::Reason::NotFound)) fetched.error = r.error().message;
      else return failed_with(r.error());
      observed.fetched.push_back(std::move(fetched));
    }
    log_.notef("read", "{} object(s) the plan asked for", observed.fetched.size());
    plan = planner_.plan(job.root(), observed, now);
  }

  // Before any write: children of the job vanished (its own restarts delete them too), so the
  // job may be gone on the server with the cache behind.
  if (!plan.creations.empty()) {
    auto stale = confirm_job_live(deps_, ns_, name_, uid_, false, log_);
    if (!stale) return failed_with(stale.error());
    if (*stale) return {};
  }
  if (auto e = write_status(plan)) return failed_with(*e);
  for (const auto& event : plan.events) writes_.event(event.type, event.reason, event.message);
  if (plan.delete_job) {
    if (auto e = delete_job()) return failed_with(*e);
    return {};
  }
  // Every deletion and update is tried, then the creations (run by run); the first failure fails
  // the pass (retried with backoff), as upstream joins the errors of its parallel writes.
  std::optional<ApiError> first_error;
  auto keep = [&](std::optional<ApiError> e) {
    if (e && !first_error) first_error = std::move(e);
  };
  for (const auto& deletion : plan.deletions) keep(delete_child(deletion));
  for (const auto& update : plan.updates) keep(update_child(update));
  keep(create_children(plan.creations));
  if (first_error) return failed_with(*first_error);
  ReconcileResult result;
  if (plan.requeue_after_ms) result.requeue_after = std::chrono::milliseconds(std::max<int64_t>(*plan.requeue_after_ms, 0));
  return result;
}

std::optional<ApiError> WorkloadPass::write_status(const framework::WorkloadPlan& plan) {
  if (!plan.status) return std::nullopt;
  const json::Value* have = json::find(cached(), "/status");
  if (have != nullptr && json::equal(*have, plan.status->root())) return std::nullopt;
  json::Document updated = json::Document::copy_of(cached());
  if (auto s = json::set(updated, "/status", json::clone(plan.status->root(), updated.alloc())); !s)
    return internal_error(s.error().message);
  auto r = deps_.client.update_status(descriptor_.resource(), ns_, updated.root(), written_only());
  if (!r) return r.error();
  deps_.expectations.expect_version(Expectations::job_key(ns_, name_), api::resource_version_of(r->root()));
  log_.note("wrote", "status");
  return std::nullopt;
}

std::optional<ApiError> WorkloadPass::delete_job() {
  kube::DeleteOptions options;
  options.propagation_policy = "Foreground";
  options.precondition_uid = uid_;
  auto r = deps_.client.remove(descriptor_.resource(), ns_, name_, options);
  if (!r && !r.error().is(ApiError::Reason::NotFound)) {
    writes_.child_event(framework::ChildEvent::JobDeleteFailed, {descriptor_.kind, name_, {}, r.error().message});
    return r.error();
  }
  log_.note("deleted", "the job");
  writes_.child_event(framework::ChildEvent::JobDeleted, {descriptor_.kind, name_});
  return std::nullopt;
}

std::optional<ApiError> WorkloadPass::delete_child(const framework::ChildDeletion& deletion) {
  kube::DeleteOptions options;
  options.propagation_policy = deletion.propagation_policy;
  options.response_fields = kube::written_fields();
  auto r = deps_.client.remove(deletion.resource, ns_, deletion.name, options);
  if (!r && !r.error().is(ApiError::Reason::NotFound)) {
    writes_.child_event(framework::ChildEvent::DeleteFailed, {deletion.resource.resource, deletion.name, {}, r.error().message});
    return r.error();
  }
  log_.note("deleted " + deletion.resource.resource, deletion.name);
  if (r) writes_.child_event(framework::ChildEvent::Deleted, {deletion.resource.resource, deletion.name});
  return std::nullopt;
}

std::optional<ApiError> WorkloadPass::update_child(const framework::DesiredObject& want) {
  json::Document live = want.object;
  if (auto e = clear_status_fields(deps_.client, want.resource, ns_, want.status_cleared_first, live)) return e;
  if (!want.status_cleared_first.empty()) {
    // The update goes on from the resourceVersion the status write returned.
    json::Document updated = want.object;
    (void)json::set_string(updated, "/metadata/resourceVersion", api::resource_version_of(live.root()));
    live = std::move(updated);
  }
  auto r = deps_.client.update(want.resource, ns_, live.root(), written_only());
  if (!r) return r.error();
  log_.note("updated " + want.resource.resource, std::string(api::name_of(want.object.root())));
  return std::nullopt;
}

std::optional<ApiError> WorkloadPass::create_children(const std::vector<framework::DesiredObject>& creations) {
  // A run of one resource goes out as one pipelined exchange (Client::create_all) on this
  // thread, every creation of it tried; the next run waits for this one, and does not start
  // after a failure in it.
  for (std::size_t begin = 0; begin < creations.size();) {
    std::size_t end = begin + 1;
    while (end < creations.size() && creations[end].resource == creations[begin].resource) ++end;
    std::vector<json::Document> objects;
    std::vector<std::optional<ApiError>> errors(end - begin);
    std::vector<std::size_t> sent;  // the creation each object is
    for (std::size_t i = begin; i < end; ++i) {
      auto obj = prepared(creations[i]);
      if (!obj) {
        errors[i - begin] = obj.error();
        continue;
      }
      objects.push_back(std::move(*obj));
      sent.push_back(i);
    }
    auto outcomes = objects.empty() ? std::vector<kube::CreateOutcome>()
                                    : deps_.client.create_all(creations[begin].resource, objects, nothing_read_back());
    for (std::size_t k = 0; k < sent.size(); ++k) errors[sent[k] - begin] = settle_child(creations[sent[k]], std::move(outcomes[k]));
    for (auto& e : errors)
      if (e) return std::move(e);
    begin = end;
  }
  return std::nullopt;
}

kube::ApiResult<json::Document> WorkloadPass::prepared(const framework::DesiredObject& want) const {
  json::Document obj = want.object;
  (void)json::set_string(obj, "/metadata/namespace", ns_);
  if (want.owned_by_job)
    if (auto s = api::set_owner_reference(obj, api::make_owner_reference(cached())); !s) return fail(internal_error(s.error().message));
  if (auto labels = child_labels(descriptor_); labels)
    for (const auto& [key, value] : *labels) (void)api::set_label(obj, key, value);
  return obj;
}

std::optional<ApiError> WorkloadPass::settle_child(const framework::DesiredObject& want, kube::CreateOutcome outcome) {
  const std::string obj_name(api::name_of(want.object.root()));
  const std::string kind(api::kind_of(want.object.root()));
  auto created = [&]() -> std::optional<ApiError> {
    log_.note("created " + want.resource.resource, obj_name);
    writes_.child_event(framework::ChildEvent::Created, {kind, obj_name});
    return std::nullopt;
  };
  const auto& r = outcome.result;
  if (!r && r.error().is(ApiError::Reason::AlreadyExists)) {
    // Whoever's it is, it is used as it is.
    if (want.use_existing) return std::nullopt;
    // Created by a pass the cache has not caught up with, by this create's own first copy (it
    // was resent after its exchange broke off unanswered), or someone else's.
    auto live = deps_.client.get(want.resource, ns_, obj_name);
    if (!live) return live.error().is(ApiError::Reason::NotFound) ? std::nullopt : std::optional<ApiError>(live.error());
    if (api::is_controlled_by(live->root(), uid_)) return outcome.resent ? created() : std::nullopt;
    const auto wording = deps_.plugin.foreign_object_wording(cached(), {kind, want.resource.resource, obj_name});
    writes_.event("Warning", wording.reason, wording.message);
    ApiError e;
    e.reason = ApiError::Reason::AlreadyExists;
    e.message = wording.message;
    return e;
  }
  if (!r) {
    log_.notef("failed to create " + want.resource.resource, "{}: {}", obj_name, r.error().message);
    writes_.child_event(framework::ChildEvent::CreateFailed, {kind, obj_name, {}, r.error().message});
    return r.error();
  }
  return created();
}

}  // namespace unitrain::controller
