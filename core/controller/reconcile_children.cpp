// The steps of a reconcile pass that create, update and delete the job's children: the PodGroup
// (gang scheduling), the framework's desired objects and the slot pods. The pipeline that calls
// them is in reconcile_pass.cpp.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/api/meta.h"
#include "core/api/quantity.h"
#include "core/controller/pod_builder.h"
#include "core/controller/reconcile_pass.h"

namespace unitrain::controller {

namespace {

using framework::CoreEvent;
using kube::ApiError;

}  // namespace

// --- gang -----------------------------------------------------------------------------------------

kube::ApiResult<ReconcilePass::GangAdmission> ReconcilePass::sync_pod_group() {
  const gang::Backend* backend = deps_.gang;
  if (!backend) return GangAdmission::Admitted;
  gang::PodGroupRequest request;
  request.ns = ns_;
  request.name = name_;
  if (const json::Value* annotations = json::find(cached(), "/metadata/annotations"))
    request.annotations = json::Document::copy_of(*annotations);
  {
    auto owner = json::Document::object();
    owner.root() = api::make_owner_reference(cached()).to_json(owner.alloc());
    request.owner_reference = std::move(owner);
  }
  const auto& scheduling = run_policy().scheduling_policy;
  const auto capabilities = deps_.plugin.capabilities();
  if (capabilities.gang) {
    // The framework's own rules (mpi-operator's queue, priority class and minResources).
    auto policy = capabilities.gang->pod_group(
        job_.root(), [this](std::string_view class_name) { return deps_.children.priority_class_value(class_name); });
    if (!policy) return fail(internal_error(policy.error().message));
    request.min_member = policy->min_member;
    request.queue = policy->queue;
    request.default_queue = false;
    request.priority_class = policy->priority_class;
    request.schedule_timeout_seconds = policy->schedule_timeout_seconds;
    if (policy->min_resources) {
      auto list = gang::resource_list_from_json(policy->min_resources->root(), "minResources");
      if (!list) return fail(internal_error(list.error().message));
      request.min_resources = std::move(*list);
    }
    return apply_pod_group(std::move(request));
  }
  std::vector<gang::ReplicaResources> replicas;
  int32_t total = 0;
  for (const auto& type : descriptor_.replica_types) {
    const json::Value* spec = replica_spec(descriptor_, job_.root(), type);
    if (!spec) continue;
    const int32_t n = replicas_of(descriptor_, job_.root(), type);
    total += n;
    const int32_t priority =
        deps_.children.priority_class_value(json::get_string(*spec, "/template/spec/priorityClassName").value_or(""));
    replicas.push_back({type, n, priority, json::find(*spec, "/template/spec")});
  }
  request.min_member = scheduling && scheduling->min_available ? *scheduling->min_available : total;
  if (scheduling) {
    request.queue = scheduling->queue;
    request.priority_class = scheduling->priority_class;
    request.schedule_timeout_seconds = scheduling->schedule_timeout_seconds;
  }
  if (scheduling && scheduling->min_resources) {
    gang::ResourceList list;
    for (const auto& [resource, value] : *scheduling->min_resources) {
      auto q = api::Quantity::parse(value);
      if (!q) return fail(internal_error(fmt::format("spec.runPolicy.schedulingPolicy.minResources.{}: {}", resource, q.error().message)));
      list.insert_or_assign(resource, *q);
    }
    request.min_resources = std::move(list);
  } else {
    auto computed = gang::min_resources(replicas, request.min_member);
    if (!computed) return fail(internal_error(computed.error().message));
    request.min_resources = std::move(*computed);
  }
  return apply_pod_group(std::move(request));
}

kube::ApiResult<ReconcilePass::GangAdmission> ReconcilePass::apply_pod_group(gang::PodGroupRequest request) {
  const gang::Backend* backend = deps_.gang;
  kube::ObjectPtr existing = deps_.children.pod_group(ns_, name_);
  if (existing && !api::is_controlled_by(existing->root(), uid_))
    return fail(foreign_object("PodGroup", backend->resource(), name_));
  json::Document desired = backend->desired(request, existing ? &existing->root() : nullptr);
  if (!existing) {
    label_for_caches(desired);
    auto r = deps_.client.create(backend->resource(), ns_, desired.root(), nothing_read_back());
    if (!r && !r.error().is(ApiError::Reason::AlreadyExists)) {
      writes_.child_event(framework::ChildEvent::CreateFailed, {"PodGroup", name_, {}, r.error().message});
      return fail(r.error());
    }
    if (r) {
      log_.note("created podgroups", name_);
      writes_.child_event(framework::ChildEvent::Created, {"PodGroup", name_});
    } else {
      // Not in the label-selected cache: ours (created before it had our labels, or just now)
      // or someone else's.
      auto live = deps_.client.get(backend->resource(), ns_, name_);
      if (!live && !live.error().is(ApiError::Reason::NotFound)) return fail(live.error());
      if (live && !api::is_controlled_by(live->root(), uid_)) return fail(foreign_object("PodGroup", backend->resource(), name_));
      if (live)
        if (auto e = label_into_caches(backend->resource(), live->root())) return fail(*e);
    }
  } else if (backend->spec_differs(existing->root(), desired.root())) {
    json::Document updated = *existing;
    auto& a = updated.alloc();
    updated.root().RemoveMember("spec");
    updated.root().AddMember("spec", json::clone(desired.root()["spec"], a), a);
    auto r = deps_.client.update(backend->resource(), ns_, updated.root(), written_only());
    if (!r) return fail(r.error());
    log_.note("updated podgroups", name_);
  }
  const bool admitted =
      !deps_.behaviour.gang_holds_pod_creation || backend->admits_pod_creation(existing ? &existing->root() : nullptr);
  return admitted ? GangAdmission::Admitted : GangAdmission::Held;
}

std::optional<ApiError> ReconcilePass::delete_pod_group() {
  if (!deps_.gang || !deps_.children.pod_group(ns_, name_)) return std::nullopt;
  writes_.child_event(framework::ChildEvent::PodGroupDeleting, {"PodGroup", name_});
  if (auto e = writes_.delete_object(deps_.gang->resource(), name_, "")) {
    writes_.child_event(framework::ChildEvent::DeleteFailed, {"PodGroup", name_, {}, e->message});
    return e;
  }
  writes_.child_event(framework::ChildEvent::Deleted, {"PodGroup", name_});
  return std::nullopt;
}

// --- desired objects ------------------------------------------------------------------------------

std::optional<ApiError> ReconcilePass::apply_desired_objects(DesiredPhase phase) {
  // Everything the framework wants besides slot pods: get-or-create, update when the compared
  // fields drift. Asked for once per pass: what a framework wants after its pods is decided on
  // what it observed at the start, as the rest is.
  if (!desired_) {
    auto desired = deps_.plugin.desired_objects(job_.root(), observed_);
    if (!desired) return internal_error(desired.error().message);
    desired_ = std::move(*desired);
  }
  std::vector<const framework::DesiredObject*> wants;
  for (const auto& want : *desired_)
    if (want.after_pods == (phase == DesiredPhase::AfterPods)) wants.push_back(&want);
  kube::ObjectPtr holder;
  auto plain_create = [&](const framework::DesiredObject& want) { return !want.use_existing && !known_object(want, holder); };
  for (size_t i = 0; i < wants.size();) {
    if (!plain_create(*wants[i])) {
      if (auto e = create_or_update(*wants[i], known_object(*wants[i], holder))) return e;
      ++i;
      continue;
    }
    // A run of creates of one resource (a replica type's Services) goes out as one exchange; the
    // next object waits for it, and is not written after a failure in it.
    std::vector<kube::ApiResult<ChildCreate>> run;
    size_t end = i;
    for (; end < wants.size() && wants[end]->resource == wants[i]->resource && plain_create(*wants[end]); ++end)
      run.push_back(plan_desired_create(*wants[end]));
    if (auto e = create_children(wants[i]->resource, run)) return e;
    i = end;
  }
  return std::nullopt;
}

const json::Value* ReconcilePass::known_object(const framework::DesiredObject& want, kube::ObjectPtr& holder) const {
  const std::string_view obj_name = api::name_of(want.object.root());
  if (const json::Value* observed = observed_child(want.resource, obj_name)) return observed;
  // Not among the job's children: absent, or not controlled by the job (someone else's).
  const kube::Informer* informer = deps_.children.informer_for(want.resource);
  if (informer && (holder = informer->cache().get(ns_ + "/" + std::string(obj_name)))) return &holder->root();
  return nullptr;
}

kube::ApiResult<ReconcilePass::ChildCreate> ReconcilePass::plan_desired_create(const framework::DesiredObject& want) const {
  ChildCreate create{want.object, std::string(api::name_of(want.object.root())),
                     std::string(api::kind_of(want.object.root())), {}, {}, &want};
  json::Document& obj = create.object;
  (void)json::set_string(obj, "/metadata/namespace", ns_);
  if (want.owned_by_job)
    if (auto s = api::set_owner_reference(obj, api::make_owner_reference(cached())); !s) return fail(internal_error(s.error().message));
  label_for_caches(obj);
  // A replica's Service is guarded like its pod: until the informer has seen it, the next
  // pass must not create it again (training-operator's CreateNewService raises the services
  // expectation before the POST). Without the replica-type label no informer event could
  // lower it, so such objects are not expected.
  if (want.resource == kServices) {
    const std::string type = writes_.replica_type_of(obj.root());
    if (!type.empty()) create.expectation = Expectations::services_key(ns_, name_, type);
  }
  return create;
}

std::optional<ApiError> ReconcilePass::create_children(const kube::GroupVersionResource& resource,
                                                       std::vector<kube::ApiResult<ChildCreate>>& planned) {
  std::vector<json::Document> objects;
  std::vector<size_t> item_of;  // the planned item each object is
  objects.reserve(planned.size());
  for (size_t i = 0; i < planned.size(); ++i) {
    if (!planned[i]) continue;
    if (!planned[i]->expectation.empty()) deps_.expectations.expect_creations(planned[i]->expectation, 1);
    objects.push_back(std::move(planned[i]->object));
    item_of.push_back(i);
  }
  // Nothing of the responses is read: the informer's ADD is what the expectation waits for.
  auto outcomes = objects.empty() ? std::vector<kube::CreateOutcome>()
                                  : deps_.client.create_all(resource, objects, nothing_read_back());
  std::vector<std::optional<ApiError>> errors(planned.size());
  for (size_t i = 0; i < planned.size(); ++i)
    if (!planned[i]) errors[i] = planned[i].error();
  for (size_t k = 0; k < item_of.size(); ++k) errors[item_of[k]] = settle_create(resource, *planned[item_of[k]], std::move(outcomes[k]));
  for (auto& e : errors)
    if (e) return std::move(e);
  return std::nullopt;
}

std::optional<ApiError> ReconcilePass::settle_create(const kube::GroupVersionResource& resource, const ChildCreate& create,
                                                     kube::CreateOutcome outcome) {
  auto created = [&]() -> std::optional<ApiError> {
    log_.note("created " + resource.resource, create.name);
    writes_.child_event(framework::ChildEvent::Created, {create.kind, create.name, create.replica_type});
    return std::nullopt;
  };
  auto lower = [&] {
    if (!create.expectation.empty()) deps_.expectations.creation_observed(create.expectation);  // no ADD will come for it
  };
  const auto& r = outcome.result;
  if (r) return created();
  if (!r.error().is(ApiError::Reason::AlreadyExists)) {
    lower();
    log_.notef("failed to create " + resource.resource, "{}: {}", create.name, r.error().message);
    writes_.child_event(framework::ChildEvent::CreateFailed, {create.kind, create.name, create.replica_type, r.error().message});
    return r.error();
  }
  // Not in our cache, yet there: ours, created by a pass the cache has not caught up with, or
  // someone else's, which the job must not take.
  auto live = deps_.client.get(resource, ns_, create.name);
  const bool ours = live && api::is_controlled_by(live->root(), uid_);
  // Sent again after its exchange broke off unanswered: the first copy was stored. That is this
  // create's own write (its informer ADD lowers the expectation it raised), not a conflict.
  if (ours && outcome.resent) return created();
  lower();
  if (!live) return live.error().is(ApiError::Reason::NotFound) ? std::nullopt : std::optional<ApiError>(live.error());
  if (ours) return create.want ? label_into_caches(resource, live->root()) : std::nullopt;
  if (create.want && create.want->use_existing) return std::nullopt;
  return foreign_object(create.kind, resource, create.name);
}

std::optional<ApiError> ReconcilePass::create_or_update(const framework::DesiredObject& want, const json::Value* existing) {
  const std::string obj_name(api::name_of(want.object.root()));
  if (!existing) {
    if (want.use_existing) {
      // The cache holds only objects with our labels: one the job may use as it is (a
      // ServiceAccount the pod template names) is looked up rather than created in vain.
      auto live = deps_.client.get(want.resource, ns_, obj_name);
      if (live) return api::is_controlled_by(live->root(), uid_) ? label_into_caches(want.resource, live->root()) : std::nullopt;
      if (!live.error().is(ApiError::Reason::NotFound)) return live.error();
    }
    std::vector<kube::ApiResult<ChildCreate>> one;
    one.push_back(plan_desired_create(want));
    return create_children(want.resource, one);
  }
  if (!api::is_controlled_by(*existing, uid_)) {
    if (want.use_existing) return std::nullopt;
    return foreign_object(api::kind_of(want.object.root()), want.resource, obj_name);
  }
  if (want.update != framework::DesiredObject::Update::WhenDiffers) return std::nullopt;
  auto differs = [&](const json::Value& have_root) {
    for (const auto& pointer : want.compared) {
      const json::Value* have = json::find(have_root, pointer);
      const json::Value* need = json::find(want.object.root(), pointer);
      if (!have != !need || (have && !json::equal(*have, *need))) return true;
    }
    return false;
  };
  if (!differs(*existing)) return std::nullopt;
  // The cache may hold a projection; read the live object so nothing else is overwritten.
  auto live = deps_.client.get(want.resource, ns_, obj_name);
  if (!live) return live.error();
  // The cache lags behind our own last update: the live object already has what we want, and a
  // PUT would rewrite it unchanged.
  if (!differs(live->root())) return std::nullopt;
  json::Document updated = std::move(*live);
  if (auto e = clear_status_first(want, updated)) return e;
  for (const auto& pointer : want.compared) {
    if (const json::Value* need = json::find(want.object.root(), pointer)) {
      if (auto s = json::set(updated, pointer, json::clone(*need, updated.alloc())); !s) return internal_error(s.error().message);
    } else {
      json::remove(updated, pointer);
    }
  }
  auto r = deps_.client.update(want.resource, ns_, updated.root(), written_only());
  if (!r) return r.error();
  log_.note("updated " + want.resource.resource, obj_name);
  return std::nullopt;
}

const json::Value* ReconcilePass::observed_child(const kube::GroupVersionResource& resource, std::string_view name) const {
  const std::vector<const json::Value*>* children = nullptr;
  if (resource == kServices) children = &observed_.services;
  else if (resource == kPods) children = &observed_.pods;
  else if (auto it = observed_.owned.find(resource.group_resource()); it != observed_.owned.end()) children = &it->second;
  if (!children) return nullptr;
  auto found = std::find_if(children->begin(), children->end(), [&](const json::Value* child) { return api::name_of(*child) == name; });
  return found == children->end() ? nullptr : *found;
}

std::optional<ApiError> ReconcilePass::clear_status_first(const framework::DesiredObject& want, json::Document& live) {
  return clear_status_fields(deps_.client, want.resource, ns_, want.status_cleared_first, live);
}

std::optional<ApiError> ReconcilePass::prune_undesired() {
  // What the framework no longer wants goes (after apply_desired_objects asked for it).
  if (!desired_) return std::nullopt;
  std::map<std::string, std::set<std::string>> wanted;  // resource.group -> names
  for (const auto& want : *desired_) wanted[want.resource.group_resource()].insert(std::string(api::name_of(want.object.root())));
  auto pruned = deps_.plugin.pruned_resources();
  // Per-replica services (training-operator style) follow their replicas: scale-down and
  // suspension remove them.
  if (deps_.behaviour.delete_services_with_pods && std::find(pruned.begin(), pruned.end(), kServices) == pruned.end())
    pruned.push_back(kServices);
  for (const auto& resource : pruned) {
    const std::string group_resource = resource.group_resource();
    const std::vector<const json::Value*>* have = nullptr;
    if (resource == kServices) have = &observed_.services;
    else if (auto it = observed_.owned.find(group_resource); it != observed_.owned.end()) have = &it->second;
    if (!have) continue;
    for (const auto* obj : *have) {
      const std::string obj_name(api::name_of(*obj));
      if (wanted[group_resource].count(obj_name) || terminating(*obj)) continue;
      if (resource == kServices && writes_.service_deleted(obj_name)) continue;
      const std::string expectation = resource == kServices ? writes_.services_key(*obj) : "";
      const std::string kind = resource == kServices ? "Service" : std::string(api::kind_of(*obj));
      if (auto e = writes_.delete_object(resource, obj_name, expectation)) {
        writes_.child_event(framework::ChildEvent::DeleteFailed, {kind, obj_name, {}, e->message});
        return e;
      }
      writes_.child_event(framework::ChildEvent::Deleted, {kind, obj_name});
    }
  }
  return std::nullopt;
}

// --- slot pods ------------------------------------------------------------------------------------

std::optional<ApiError> ReconcilePass::sync_slot_pods(const SlotPlan& plan) {
  // Restarts: the re-creation count is already on the job (record_restarts).
  for (const auto* failed : plan.with_outcome(FailedSlotPod::Outcome::Restart)) {
    if (auto e = writes_.delete_object(kPods, api::name_of(*failed->pod), writes_.pods_key(*failed->pod))) {
      writes_.child_event(framework::ChildEvent::DeleteFailed, {"Pod", api::name_of(*failed->pod), failed->replica_type, e->message});
      return e;
    }
    writes_.child_event(framework::ChildEvent::Deleted, {"Pod", api::name_of(*failed->pod), failed->replica_type});
    auto wording = words(CoreEvent::ReplicaRestarting, failed->replica_type);
    writes_.event(wording);
    if (!draft_.status().has_condition(api::condition_type::kRestarting)) count_when_written(&JobCounters::restarted);
    draft_.set_condition(api::condition_type::kRestarting, wording, now_);
  }
  // Scale-down: the spec the user wrote no longer names these pods.
  for (const auto* pod : plan.surplus) {
    if (auto e = writes_.delete_object(kPods, api::name_of(*pod), writes_.pods_key(*pod))) {
      writes_.child_event(framework::ChildEvent::DeleteFailed, {"Pod", api::name_of(*pod), {}, e->message});
      return e;
    }
    writes_.child_event(framework::ChildEvent::Deleted, {"Pod", api::name_of(*pod), writes_.replica_type_of(*pod)});
  }
  // The missing pods, in slot order, as one pipelined exchange on this thread: a pool thread per
  // create would cost a wake-up and a connection's round trip each.
  std::vector<kube::ApiResult<ChildCreate>> creates;
  creates.reserve(plan.missing.size());
  for (const auto& slot : plan.missing) creates.push_back(plan_slot_pod(slot));
  return create_children(kPods, creates);
}

kube::ApiResult<ReconcilePass::ChildCreate> ReconcilePass::plan_slot_pod(const framework::PodSlot& slot) {
  auto built = build_pod(descriptor_, job_.root(), slot.replica_type, slot.index);
  if (!built) return fail(internal_error(built.error().message));
  if (!slot.name.empty()) (void)json::set_string(built->pod, "/metadata/name", slot.name);
  (void)json::set_string(built->pod, "/metadata/namespace", ns_);
  const std::string pod_name(api::name_of(built->pod.root()));
  if (built->template_restart_policy_overridden)
    writes_.child_event(framework::ChildEvent::TemplateRestartPolicy, {"Pod", pod_name, slot.replica_type});
  if (auto st = deps_.plugin.decorate_pod(job_.root(), slot, built->pod); !st) return fail(internal_error(st.error().message));
  if (deps_.gang) {
    auto decoration = deps_.gang->decorate_pod(built->pod, name_, lower(slot.replica_type), {});
    if (decoration.template_scheduler_differs)
      writes_.child_event(framework::ChildEvent::TemplateSchedulerName, {"Pod", pod_name, slot.replica_type});
  }
  return ChildCreate{std::move(built->pod), pod_name, "Pod", slot.replica_type,
                     Expectations::pods_key(ns_, name_, lower(slot.replica_type)), nullptr};
}

void ReconcilePass::label_for_caches(json::Document& obj) const {
  for (const auto& [key, value] : deps_.children.child_labels()) {
    const std::string pointer = "/metadata/labels/" + json::escape_pointer_token(key);
    if (!json::find(obj.root(), pointer)) (void)json::set_string(obj, pointer, value);
  }
}

std::optional<ApiError> ReconcilePass::label_into_caches(const kube::GroupVersionResource& resource,
                                                         const json::Value& live) {
  auto patch = json::Document::object();
  bool missing = false;
  for (const auto& [key, value] : deps_.children.child_labels()) {
    const std::string pointer = "/metadata/labels/" + json::escape_pointer_token(key);
    if (json::get_string(live, pointer) == value) continue;
    (void)json::set_string(patch, pointer, value);
    missing = true;
  }
  if (!missing) return std::nullopt;
  kube::PatchOptions opts;
  opts.response_fields = kube::written_fields();
  auto r = deps_.client.patch(resource, ns_, api::name_of(live), kube::PatchType::Merge, patch.dump(), opts);
  if (!r && !r.error().is(ApiError::Reason::NotFound)) return r.error();
  return std::nullopt;
}

ApiError ReconcilePass::foreign_object(std::string_view kind, const kube::GroupVersionResource& resource,
                                       std::string_view name) const {
  const auto wording = deps_.plugin.foreign_object_wording(job_.root(), {kind, resource.resource, name});
  writes_.event("Warning", wording.reason, wording.message);
  ApiError e;
  e.reason = ApiError::Reason::AlreadyExists;
  e.message = wording.message;
  return e;
}

}  // namespace unitrain::controller
