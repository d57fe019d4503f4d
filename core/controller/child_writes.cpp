#include "core/controller/child_writes.h"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "core/api/meta.h"
#include "core/controller/child_caches.h"
#include "core/controller/pod_builder.h"

namespace unitrain::controller {

std::optional<kube::ApiError> clear_status_fields(kube::Client& client, const kube::GroupVersionResource& resource,
                                                  std::string_view ns, const std::vector<std::string>& pointers,
                                                  json::Document& live) {
  json::Document cleared = json::Document::copy_of(live.root());
  bool changed = false;
  for (const auto& pointer : pointers) {
    if (json::find(cleared.root(), pointer) == nullptr) continue;
    json::remove(cleared, pointer);
    changed = true;
  }
  if (!changed) return std::nullopt;
  auto r = client.update_status(resource, ns, cleared.root());
  if (!r) return r.error();
  live = std::move(*r);
  return std::nullopt;
}

ChildWrites::ChildWrites(kube::Client& client, Expectations& expectations, EventSink& events, WritePool* pool,
                         const framework::FrameworkPlugin& plugin, bool delete_services_with_pods,
                         const json::Value& job, PassLog& log)
    : client_(client),
      expectations_(expectations),
      events_(events),
      pool_(pool),
      plugin_(plugin),
      descriptor_(plugin.descriptor()),
      delete_services_with_pods_(delete_services_with_pods),
      log_(log),
      job_(job),
      ns_(api::namespace_of(job)),
      name_(api::name_of(job)) {}

void ChildWrites::event(std::string_view type, std::string_view reason, std::string message) const {
  events_.event(job_, type, reason, std::move(message));
}

void ChildWrites::event(const framework::CoreWording& wording) const {
  if (!wording.event_type.empty()) events_.event(job_, wording.event_type, wording.reason, wording.message);
}

void ChildWrites::child_event(framework::ChildEvent e, const framework::ChildSubject& subject) const {
  event(plugin_.child_event(e, job_, subject));
}

std::string ChildWrites::replica_type_of(const json::Value& child) const {
  return std::string(
      json::get_string(child, "/metadata/labels/" + json::escape_pointer_token(descriptor_.replica_type_label)).value_or(""));
}

std::string ChildWrites::pods_key(const json::Value& child) const {
  return Expectations::pods_key(ns_, name_, replica_type_of(child));
}

std::string ChildWrites::services_key(const json::Value& child) const {
  return Expectations::services_key(ns_, name_, replica_type_of(child));
}

std::optional<kube::ApiError> ChildWrites::delete_object(const kube::GroupVersionResource& resource, std::string_view name,
                                                         std::string_view expectation_key) {
  if (!expectation_key.empty()) expectations_.expect_deletions(expectation_key, 1);
  kube::DeleteOptions options;
  options.propagation_policy = "Background";
  options.response_fields = kube::written_fields();
  auto r = client_.remove(resource, ns_, name, options);
  if (!r) {
    // Gone already (NotFound) or not deleted: either way no watch event will lower it.
    if (!expectation_key.empty()) expectations_.deletion_observed(expectation_key);
    if (!r.error().is(kube::ApiError::Reason::NotFound)) {
      log_.notef("failed to delete " + resource.resource, "{}: {}", name, r.error().message);
      return r.error();
    }
  }
  log_.note("deleted", resource.resource, name);
  if (resource == kServices) {
    std::lock_guard lock(deleted_mu_);
    deleted_services_.emplace(name);
  }
  return std::nullopt;
}

bool ChildWrites::service_deleted(std::string_view name) const {
  std::lock_guard lock(deleted_mu_);
  return deleted_services_.count(name) > 0;
}

std::optional<kube::ApiError> ChildWrites::delete_pods(const std::vector<const json::Value*>& pods,
                                                       const std::vector<const json::Value*>& services) {
  std::vector<const json::Value*> victims;
  for (const auto* pod : pods)
    if (!terminating(*pod)) victims.push_back(pod);
  // In slot order (replica type, then index), as the reference operators walk their replicas;
  // without a write pool a watcher sees the deletes in that order.
  auto slot_of = [&](const json::Value* pod) {
    const std::string type = replica_type_of(*pod);
    const auto known = std::find_if(descriptor_.replica_types.begin(), descriptor_.replica_types.end(),
                                    [&](const std::string& t) { return lower(t) == type; });
    const std::string index(
        json::get_string(*pod, "/metadata/labels/" + json::escape_pointer_token(framework::job_labels::kReplicaIndex)).value_or(""));
    const bool numeric = !index.empty() && index.size() < 10 && std::all_of(index.begin(), index.end(), ::isdigit);
    return std::tuple(known - descriptor_.replica_types.begin(), numeric ? std::stol(index) : -1L, api::name_of(*pod));
  };
  std::stable_sort(victims.begin(), victims.end(),
                   [&](const json::Value* a, const json::Value* b) { return slot_of(a) < slot_of(b); });
  return run_bounded(pool_, victims, [&](const json::Value* pod) -> std::optional<kube::ApiError> {
    using framework::ChildEvent;
    const std::string pod_name(api::name_of(*pod));
    if (auto e = delete_object(kPods, pod_name, pods_key(*pod))) {
      child_event(ChildEvent::DeleteFailed, {"Pod", pod_name, {}, e->message});
      return e;
    }
    child_event(ChildEvent::Deleted, {"Pod", pod_name});
    if (!delete_services_with_pods_ || service_deleted(pod_name)) return std::nullopt;
    auto service = std::find_if(services.begin(), services.end(), [&](const json::Value* s) { return api::name_of(*s) == pod_name; });
    if (service == services.end()) return std::nullopt;
    if (auto e = delete_object(kServices, pod_name, services_key(*pod))) {
      child_event(ChildEvent::DeleteFailed, {"Service", pod_name, {}, e->message});
      return e;
    }
    child_event(ChildEvent::Deleted, {"Service", pod_name});
    return std::nullopt;
  });
}

}  // namespace unitrain::controller
