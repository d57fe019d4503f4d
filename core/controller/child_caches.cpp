#include "core/controller/child_caches.h"

#include <fmt/format.h>

#include "core/controller/pod_builder.h"

namespace unitrain::controller {

namespace {

const kube::GroupVersionResource kPriorityClasses{"scheduling.k8s.io", "v1", "priorityclasses"};

std::chrono::milliseconds left_until(std::chrono::steady_clock::time_point deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
}

}  // namespace

ChildCaches::ChildCaches(kube::Client& client, kube::Clock& clock, const framework::FrameworkDescriptor& descriptor,
                         const std::vector<std::string>& namespaces, const gang::Backend* gang) {
  auto make = [&](kube::GroupVersionResource resource, std::string selector, kube::Projection projection) {
    kube::InformerOptions o;
    o.resource = std::move(resource);
    o.namespaces = namespaces;
    o.label_selector = std::move(selector);
    o.projection = std::move(projection);
    o.indexers.emplace(kube::kControllerUidIndex, kube::index_by_controller_uid);
    return std::make_unique<kube::Informer>(client, clock, std::move(o));
  };
  pods_ = make(kPods, fmt::format("{}={}", kOperatorNameLabel, descriptor.controller_name), kube::project_pod);
  services_ = make(kServices, "", kube::project_service);
  for (const auto& resource : descriptor.owned_resources) {
    if (resource == kPods || resource == kServices) continue;
    owned_.emplace(resource.group_resource(), make(resource, "", nullptr));
  }
  if (gang) pod_groups_ = make(gang->resource(), "", nullptr);
  if (gang && namespaces.empty()) priority_classes_ = make(kPriorityClasses, "", nullptr);
}

void ChildCaches::add_handlers(const std::function<kube::EventHandlers(ChildKind)>& handlers_for) {
  pods_->add_handlers(handlers_for(ChildKind::Pod));
  services_->add_handlers(handlers_for(ChildKind::Service));
  for (auto& [_, informer] : owned_) informer->add_handlers(handlers_for(ChildKind::Owned));
  if (pod_groups_) pod_groups_->add_handlers(handlers_for(ChildKind::PodGroup));
}

void ChildCaches::start() {
  pods_->start();
  services_->start();
  for (auto& [_, informer] : owned_) informer->start();
  if (pod_groups_) pod_groups_->start();
  if (priority_classes_) priority_classes_->start();
}

void ChildCaches::stop() {
  pods_->stop();
  services_->stop();
  for (auto& [_, informer] : owned_) informer->stop();
  if (pod_groups_) pod_groups_->stop();
  if (priority_classes_) priority_classes_->stop();
}

bool ChildCaches::wait_for_sync(std::chrono::steady_clock::time_point deadline) const {
  if (!pods_->wait_for_sync(left_until(deadline)) || !services_->wait_for_sync(left_until(deadline))) return false;
  for (const auto& [_, informer] : owned_)
    if (!informer->wait_for_sync(left_until(deadline))) return false;
  if (priority_classes_ && !priority_classes_->wait_for_sync(left_until(deadline))) return false;
  return !pod_groups_ || pod_groups_->wait_for_sync(left_until(deadline));
}

framework::Observed ChildCaches::observe(const std::string& ns, const std::string& uid) const {
  framework::Observed o;
  auto collect = [&](const kube::Informer& informer, std::vector<const json::Value*>& out) {
    for (auto& obj : informer.cache().by_index(kube::kControllerUidIndex, uid)) {
      if (api::namespace_of(obj->root()) != ns) continue;
      out.push_back(&obj->root());
      o.keep_alive.push_back(std::move(obj));
    }
  };
  collect(*pods_, o.pods);
  collect(*services_, o.services);
  for (const auto& [group_resource, informer] : owned_) {
    auto& list = o.owned[group_resource];
    collect(*informer, list);
    // Pods of owned objects (the MPI launcher Job's pods) are the framework's to see as well.
    for (const auto* owned_obj : std::vector<const json::Value*>(list)) {
      const std::string owned_uid(api::uid_of(*owned_obj));
      auto& grandchildren = o.owned["pods/" + group_resource];
      for (auto& pod : pods_->cache().by_index(kube::kControllerUidIndex, owned_uid)) {
        grandchildren.push_back(&pod->root());
        o.keep_alive.push_back(std::move(pod));
      }
    }
  }
  return o;
}

const kube::Informer* ChildCaches::informer_for(const kube::GroupVersionResource& resource) const {
  if (resource == kPods) return pods_.get();
  if (resource == kServices) return services_.get();
  auto it = owned_.find(resource.group_resource());
  return it == owned_.end() ? nullptr : it->second.get();
}

kube::ObjectPtr ChildCaches::pod_group(const std::string& ns, const std::string& name) const {
  return pod_groups_ ? pod_groups_->cache().get(ns + "/" + name) : nullptr;
}

int32_t ChildCaches::priority_class_value(std::string_view class_name) const {
  if (class_name.empty() || !priority_classes_) return 0;
  kube::ObjectPtr priority_class = priority_classes_->cache().get(std::string(class_name));
  return priority_class ? static_cast<int32_t>(json::get_int(priority_class->root(), "/value").value_or(0)) : 0;
}

std::optional<api::OwnerReference> ChildCaches::controller_of_owned(const std::string& ns,
                                                                    const api::OwnerReference& owner) const {
  for (const auto& [_, informer] : owned_) {
    kube::ObjectPtr parent = informer->cache().get(ns + "/" + owner.name);
    if (!parent || api::uid_of(parent->root()) != owner.uid) continue;
    return api::controller_of(parent->root());
  }
  return std::nullopt;
}

}  // namespace unitrain::controller
