#include "core/controller/child_caches.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace unitrain::controller {

namespace {

const kube::GroupVersionResource kPriorityClasses{"scheduling.k8s.io", "v1", "priorityclasses"};

std::chrono::milliseconds left_until(std::chrono::steady_clock::time_point deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
}

std::string job_key(const kube::GroupVersionResource& r) { return r.group_resource() + "/" + r.version; }

}  // namespace

Result<api::Labels> child_labels(const framework::FrameworkDescriptor& descriptor) {
  auto selector = api::LabelSelector::parse(descriptor.child_label_selector);
  if (!selector)
    return fail(fmt::format("{}: child_label_selector: {}", descriptor.name, selector.error().message));
  api::Labels labels;
  for (const auto& r : selector->requirements()) {
    if (r.op != api::Requirement::Op::Equals || r.values.size() != 1)
      return fail(fmt::format("{}: child_label_selector '{}': only key=value requirements can be put on the objects "
                              "the core creates, not '{}'",
                              descriptor.name, descriptor.child_label_selector, api::to_string(r)));
    labels.emplace(r.key, r.values.front());
  }
  return labels;
}

ChildReaction react(const ChildEvent& e, const framework::FrameworkDescriptor& d, bool reconciles_on_any_child,
                    bool job_cached) {
  ChildReaction r;
  if (e.change != ChildEvent::Change::Updated) {
    const bool labelled =
        api::label_of(e.object, d.replica_type_label).has_value();
    r.observed = labelled && !e.grandchild && (e.kind == ChildKind::Pod || e.kind == ChildKind::Service);
    r.reconcile = labelled || reconciles_on_any_child;
    return r;
  }
  if (!e.previous || api::resource_version_of(*e.previous) == api::resource_version_of(e.object) || !job_cached) return r;
  r.reconcile = true;
  auto at = [](const json::Value& obj, const char* pointer) { return json::find(obj, pointer); };
  if (e.kind == ChildKind::Pod) {
    r.status_first = json::get_string(*e.previous, "/status/phase") != json::get_string(e.object, "/status/phase");
  } else if (e.kind == ChildKind::Owned) {
    const json::Value *before = at(*e.previous, "/status"), *now = at(e.object, "/status");
    r.status_first = !before != !now || (before && !json::equal(*before, *now));
  }
  return r;
}

std::optional<kube::Selection> child_selection(const std::vector<const framework::FrameworkDescriptor*>& modules,
                                               ChildKind kind, const kube::GroupVersionResource& resource) {
  auto interested = [&](const framework::FrameworkDescriptor& d) {
    auto names = [&](const std::vector<kube::GroupVersionResource>& list) {
      return std::find(list.begin(), list.end(), resource) != list.end();
    };
    switch (kind) {
      case ChildKind::Pod:
      case ChildKind::PodGroup: return d.core_children.pods;  // a PodGroup gangs the core's pods
      case ChildKind::Service: return d.core_children.services;
      case ChildKind::Owned: return names(d.owned_resources) || names(d.optional_owned_resources);
    }
    return false;
  };
  std::vector<kube::PartySelector> parties;
  for (const auto* m : modules) {
    if (!interested(*m)) continue;
    if (!child_labels(*m)) {
      parties.push_back({});  // a selector the core cannot stamp selects nothing narrower than everything
    } else if (!m->child_label_selector.empty()) {
      parties.push_back({m->child_label_selector, {}});
    } else if (kind == ChildKind::Pod && (!m->owned_resources.empty() || !m->optional_owned_resources.empty())) {
      parties.push_back({});  // the pods of its owned objects are controlled by those, not by its jobs
    } else {
      parties.push_back({"", {{m->group, m->kind}}});
    }
  }
  if (parties.empty()) return std::nullopt;
  auto united = kube::unite_selectors(parties);
  return united ? std::move(*united) : kube::Selection{};
}

// ---- SharedCaches ------------------------------------------------------------------------------

SharedCaches::SharedCaches(kube::Client& client, kube::Clock& clock,
                           const std::vector<const framework::FrameworkDescriptor*>& modules,
                           std::vector<std::string> namespaces, const gang::Backend* gang)
    : client_(client), clock_(clock), namespaces_(std::move(namespaces)) {
  for (const auto* m : modules) {
    const std::string key = job_key(m->resource());
    if (!jobs_.count(key)) jobs_[key] = &make(m->resource(), {}, kube::job_fields(), false);
  }
  // An informer of the core's kinds only when some module creates or reads them.
  if (auto selection = child_selection(modules, ChildKind::Pod, kPods))
    pods_ = &make(kPods, std::move(*selection), kube::pod_fields(), true);
  if (auto selection = child_selection(modules, ChildKind::Service, kServices))
    services_ = &make(kServices, std::move(*selection), kube::service_fields(), true);
  for (const auto* m : modules) {
    for (const auto& resource : m->owned_resources) {
      if (resource == kPods || resource == kServices || owned_.count(resource.group_resource())) continue;
      owned_[resource.group_resource()] =
          &make(resource, child_selection(modules, ChildKind::Owned, resource).value_or(kube::Selection{}), kube::owned_fields(), true);
    }
  }
  for (const auto* m : modules) {
    for (const auto& resource : m->optional_owned_resources) {
      if (resource == kPods || resource == kServices || owned_.count(resource.group_resource())) continue;
      kube::Informer* informer =
          &make(resource, child_selection(modules, ChildKind::Owned, resource).value_or(kube::Selection{}), kube::owned_fields(), true);
      owned_[resource.group_resource()] = informer;
      auto optional = std::make_unique<OptionalOwned>();
      optional->informer = informer;
      optional->resource = resource;
      optional->warning = m->unserved_owned_warning;
      optional_owned_.push_back(std::move(optional));
    }
  }
  if (gang) {
    if (auto selection = child_selection(modules, ChildKind::PodGroup, gang->resource()))
      pod_groups_ = &make(gang->resource(), std::move(*selection), kube::owned_fields(), true);
  }
  if (pod_groups_ && namespaces_.empty()) priority_classes_ = &make(kPriorityClasses, {}, kube::priority_class_fields(), false);

  if (pods_) watch_children(*pods_, ChildKind::Pod);
  if (services_) watch_children(*services_, ChildKind::Service);
  for (auto& [_, informer] : owned_) watch_children(*informer, ChildKind::Owned);
  if (pod_groups_) watch_children(*pod_groups_, ChildKind::PodGroup);
}

SharedCaches::~SharedCaches() { stop(); }

kube::Informer& SharedCaches::make(const kube::GroupVersionResource& resource, kube::Selection selection,
                                   std::shared_ptr<const json::FieldMask> fields, bool indexed) {
  kube::InformerOptions o;
  o.resource = resource;
  o.namespaces = namespaces_;
  o.label_selector = std::move(selection.label_selector);
  o.keep = std::move(selection.keep);
  o.fields = std::move(fields);
  o.indexers.clear();
  if (indexed) {
    o.indexers.emplace(kube::kControllerUidIndex, kube::index_by_controller_uid);
    o.index_fields = kube::builtin_index_fields();
  }
  all_.push_back(std::make_unique<kube::Informer>(client_, clock_, std::move(o)));
  return *all_.back();
}

std::shared_ptr<const json::FieldMask> previous_fields(ChildKind kind) {
  auto parse = [](std::string_view text) {
    // Constants: the unit tests read a previous version through each.
    return std::make_shared<const json::FieldMask>(json::FieldMask::parse(text).value());
  };
  static const auto pods = parse("metadata{namespace,resourceVersion,ownerReferences},status{phase}");
  static const auto with_status = parse("metadata{namespace,resourceVersion,ownerReferences},status");
  static const auto others = parse("metadata{namespace,resourceVersion,ownerReferences}");
  switch (kind) {
    case ChildKind::Pod: return pods;
    case ChildKind::Owned: return with_status;
    case ChildKind::Service:
    case ChildKind::PodGroup: return others;
  }
  return nullptr;
}

void SharedCaches::watch_children(kube::Informer& informer, ChildKind kind) {
  using Change = ChildEvent::Change;
  kube::EventHandlers h;
  h.previous_fields = previous_fields(kind);
  h.on_add = [this, kind](const json::Value& obj) { dispatch(kind, Change::Added, nullptr, obj); };
  h.on_update = [this, kind](const json::Value& old_obj, const json::Value& obj) {
    dispatch(kind, Change::Updated, &old_obj, obj);
  };
  h.on_delete = [this, kind](const json::Value& obj, bool) { dispatch(kind, Change::Deleted, nullptr, obj); };
  informer.add_handlers(std::move(h));
}

ChildEventSink* SharedCaches::sink_for(const api::OwnerReference& owner) const {
  for (const auto& r : routes_)
    if (r.kind == owner.kind && r.api_version == owner.api_version) return r.sink;
  return nullptr;
}

void SharedCaches::dispatch(ChildKind kind, ChildEvent::Change change, const json::Value* previous,
                            const json::Value& object) {
  // Each version's owner references are read once (an update's twice: now and before).
  auto deliver = [&](std::optional<api::OwnerReference> owner, const json::Value& owned_by) {
    if (!owner) return;
    if (ChildEventSink* sink = sink_for(*owner)) {
      sink->child_event(ChildEvent{change, kind, object, previous, std::move(*owner), false});
      return;
    }
    // A grandchild: hop through the owned object to its job.
    auto job = controller_of_owned(std::string(api::namespace_of(owned_by)), *owner);
    if (!job) return;
    if (ChildEventSink* sink = sink_for(*job)) sink->child_event(ChildEvent{change, kind, object, previous, std::move(*job), true});
  };
  auto now = api::controller_of(object);
  auto before = previous ? api::controller_of(*previous) : std::nullopt;
  // A controller reference that changed: the previous owner hears of it too.
  const bool owner_changed = before && (!now || now->uid != before->uid);
  deliver(std::move(now), object);
  if (owner_changed) deliver(std::move(before), *previous);
}

std::optional<api::OwnerReference> SharedCaches::controller_of_owned(const std::string& ns,
                                                                     const api::OwnerReference& owner) const {
  for (const auto& [_, informer] : owned_) {
    kube::ObjectPtr parent = informer->cache().get(ns + "/" + owner.name);
    if (!parent || api::uid_of(parent->root()) != owner.uid) continue;
    return api::controller_of(parent->root());
  }
  return std::nullopt;
}

std::unique_ptr<ChildCaches> SharedCaches::attach(const framework::FrameworkDescriptor& descriptor, ChildEventSink& sink) {
  routes_.push_back(Route{descriptor.api_version(), descriptor.kind, &sink});
  std::vector<std::string> owned;
  for (const auto& resource : descriptor.owned_resources)
    if (owned_.count(resource.group_resource())) owned.push_back(resource.group_resource());
  for (const auto& resource : descriptor.optional_owned_resources)
    if (owned_.count(resource.group_resource())) owned.push_back(resource.group_resource());
  auto labels = child_labels(descriptor);
  if (!labels) spdlog::error("{} (the module's objects are watched unfiltered)", labels.error().message);
  return std::make_unique<ChildCaches>(PassKey<SharedCaches>{}, *this, *jobs_.at(job_key(descriptor.resource())),
                                       std::move(owned), labels ? std::move(*labels) : api::Labels{},
                                       descriptor.core_children);
}

void SharedCaches::start() {
  if (started_) return;
  started_ = true;
  for (auto& optional : optional_owned_) {
    const auto& resource = optional->resource;
    kube::ListOptions one;
    one.limit = 1;
    auto listed = client_.list(resource, namespaces_.empty() ? std::string_view() : std::string_view(namespaces_.front()), one);
    optional->served = listed.has_value();
    if (!listed)
      spdlog::warn("{} ({} not watched: {})", optional->warning.empty() ? "an optional owned kind is not served" : optional->warning,
                   resource.group_resource(), listed.error().message);
  }
  for (auto& informer : all_)
    if (awaited(informer.get())) informer->start();
}

const kube::Informer* SharedCaches::children_informer(const kube::GroupVersionResource& resource) const {
  if (resource == kPods) return pods_;
  if (resource == kServices) return services_;
  auto it = owned_.find(resource.group_resource());
  return it == owned_.end() ? nullptr : it->second;
}

bool SharedCaches::awaited(const kube::Informer* informer) const {
  for (const auto& optional : optional_owned_)
    if (optional->informer == informer) return optional->served;
  return true;
}

void SharedCaches::stop() {
  for (auto& informer : all_) informer->stop();
}

bool SharedCaches::wait_for_sync(std::chrono::steady_clock::time_point deadline) const {
  for (const auto& informer : all_)
    if (awaited(informer.get()) && !informer->wait_for_sync(left_until(deadline))) return false;
  return true;
}

// ---- ChildCaches -------------------------------------------------------------------------------

framework::Observed ChildCaches::observe(const std::string& ns, const std::string& uid) const {
  framework::Observed o;
  // Read once: the pass holds what it observed to its end and finds an observed child there
  // by name (ReconcilePass::create_or_update). A job's children are read seconds after their
  // last events, thousands of other objects later, so remembering them would only push out
  // of the stores' memos the documents of the latest events, which the next update of each
  // object reads as its previous version.
  constexpr auto kOnce = kube::Indexer::Reading::Once;
  auto collect = [&](const kube::Informer& informer, std::vector<const json::Value*>& out) {
    for (auto& obj : informer.cache().by_index(kube::kControllerUidIndex, uid, kOnce)) {
      if (api::namespace_of(obj->root()) != ns) continue;
      out.push_back(&obj->root());
      o.keep_alive.push_back(std::move(obj));
    }
  };
  const kube::Informer* pods = informer_for(kPods);
  if (pods) collect(*pods, o.pods);
  if (const kube::Informer* services = informer_for(kServices)) collect(*services, o.services);
  for (const auto& group_resource : owned_) {
    auto& list = o.owned[group_resource];
    collect(*caches_.owned_.at(group_resource), list);
    // Pods of owned objects (the MPI launcher Job's pods) are the framework's to see as well.
    if (!pods) continue;
    for (const auto* owned_obj : std::vector<const json::Value*>(list)) {
      const std::string owned_uid(api::uid_of(*owned_obj));
      auto& grandchildren = o.owned["pods/" + group_resource];
      for (auto& pod : pods->cache().by_index(kube::kControllerUidIndex, owned_uid, kOnce)) {
        grandchildren.push_back(&pod->root());
        o.keep_alive.push_back(std::move(pod));
      }
    }
  }
  return o;
}

const kube::Informer* ChildCaches::informer_for(const kube::GroupVersionResource& resource) const {
  if (resource == kPods) return core_children_.pods ? caches_.pods_ : nullptr;
  if (resource == kServices) return core_children_.services ? caches_.services_ : nullptr;
  const std::string group_resource = resource.group_resource();
  if (std::find(owned_.begin(), owned_.end(), group_resource) == owned_.end()) return nullptr;
  return caches_.owned_.at(group_resource);
}

kube::ObjectPtr ChildCaches::pod_group(const std::string& ns, const std::string& name) const {
  return caches_.pod_groups_ ? caches_.pod_groups_->cache().get(ns + "/" + name) : nullptr;
}

int32_t ChildCaches::priority_class_value(std::string_view class_name) const {
  if (class_name.empty() || !caches_.priority_classes_) return 0;
  kube::ObjectPtr priority_class = caches_.priority_classes_->cache().get(std::string(class_name));
  return priority_class ? static_cast<int32_t>(json::get_int(priority_class->root(), "/value").value_or(0)) : 0;
}

bool ChildCaches::wait_for_sync(std::chrono::steady_clock::time_point deadline) const {
  if (!jobs_->wait_for_sync(left_until(deadline))) return false;
  for (const kube::Informer* informer : std::initializer_list<const kube::Informer*>{
           informer_for(kPods), informer_for(kServices), caches_.pod_groups_, caches_.priority_classes_})
    if (informer && !informer->wait_for_sync(left_until(deadline))) return false;
  for (const auto& group_resource : owned_) {
    const kube::Informer* informer = caches_.owned_.at(group_resource);
    if (caches_.awaited(informer) && !informer->wait_for_sync(left_until(deadline))) return false;
  }
  return true;
}

}  // namespace unitrain::controller
