#include "core/gang/gang.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/framework/ascii.h"

namespace unitrain::gang {

namespace {

constexpr std::string_view kVolcanoGroupAnnotation = "scheduling.k8s.io/group-name";
constexpr std::string_view kVolcanoTaskSpecAnnotation = "volcano.sh/task-spec";
constexpr std::string_view kSchedulerPluginsGroupLabel = "scheduling.x-k8s.io/pod-group";

std::string ptr_token(std::string_view key) { return "/" + json::escape_pointer_token(key); }

// Common metadata of both PodGroup kinds.
json::Document base(const PodGroupRequest& r, std::string_view api_version) {
  auto pg = json::Document::object();
  auto& a = pg.alloc();
  pg.root().AddMember("apiVersion", json::str(api_version, a), a);
  pg.root().AddMember("kind", "PodGroup", a);
  json::Value meta(rapidjson::kObjectType);
  meta.AddMember("name", json::str(r.name, a), a);
  meta.AddMember("namespace", json::str(r.ns, a), a);
  if (r.annotations.root().IsObject() && r.annotations.root().MemberCount() > 0)
    meta.AddMember("annotations", json::clone(r.annotations.root(), a), a);
  if (r.owner_reference.root().IsObject()) {
    json::Value owners(rapidjson::kArrayType);
    owners.PushBack(json::clone(r.owner_reference.root(), a), a);
    meta.AddMember("ownerReferences", owners, a);
  }
  pg.root().AddMember("metadata", meta, a);
  pg.root().AddMember("spec", json::Value(rapidjson::kObjectType), a);
  return pg;
}

bool same_resources(const json::Value* a, const json::Value* b) {
  const bool a_empty = !a || a->IsNull() || (a->IsObject() && a->MemberCount() == 0);
  const bool b_empty = !b || b->IsNull() || (b->IsObject() && b->MemberCount() == 0);
  if (a_empty || b_empty) return a_empty == b_empty;
  auto ra = resource_list_from_json(*a, "minResources");
  auto rb = resource_list_from_json(*b, "minResources");
  if (!ra || !rb) return json::equal(*a, *b);
  return *ra == *rb;
}

bool same_member(const json::Value& a, const json::Value& b, std::string_view pointer) {
  const json::Value* x = json::find(a, pointer);
  const json::Value* y = json::find(b, pointer);
  const bool x_unset = !x || x->IsNull();
  const bool y_unset = !y || y->IsNull();
  if (x_unset || y_unset) return x_unset == y_unset;
  return json::equal(*x, *y);
}

// Sets schedulerName per the options; reports whether the template named another scheduler.
bool set_scheduler_name(json::Document& pod, const std::string& scheduler, bool force) {
  auto current = json::get_string(pod.root(), "/spec/schedulerName");
  const bool differs = current && !current->empty() && *current != scheduler;
  if (!current || current->empty() || force) (void)json::set_string(pod, "/spec/schedulerName", scheduler);
  return differs;
}

class Volcano final : public Backend {
 public:
  std::string_view name() const override { return "volcano"; }
  const std::string& scheduler_name() const override { return scheduler_; }
  kube::GroupVersionResource resource() const override { return {"scheduling.volcano.sh", "v1beta1", "podgroups"}; }

  json::Document desired(const PodGroupRequest& r, const json::Value* existing) const override {
    auto pg = base(r, "scheduling.volcano.sh/v1beta1");
    auto& a = pg.alloc();
    auto& spec = pg.root()["spec"];
    spec.AddMember("minMember", r.min_member, a);
    std::string queue = r.queue;
    if (r.default_queue) {
      if (queue.empty() && existing) queue = std::string(json::get_string(*existing, "/spec/queue").value_or(""));
      if (queue.empty()) queue = "default";
    }
    if (!queue.empty()) spec.AddMember("queue", json::str(queue, a), a);
    if (!r.priority_class.empty()) spec.AddMember("priorityClassName", json::str(r.priority_class, a), a);
    if (r.min_resources) spec.AddMember("minResources", json::clone(to_json(*r.min_resources).root(), a), a);
    return pg;
  }

  bool spec_differs(const json::Value& existing, const json::Value& desired) const override {
    for (auto p : {"/spec/minMember", "/spec/queue", "/spec/priorityClassName"})
      if (!same_member(existing, desired, p)) return true;
    return !same_resources(json::find(existing, "/spec/minResources"), json::find(desired, "/spec/minResources"));
  }

  bool admits_pod_creation(const json::Value* existing) const override {
    if (!existing) return false;
    auto phase = json::get_string(*existing, "/status/phase");
    return phase && !phase->empty() && *phase != "Pending";
  }

  PodDecoration decorate_pod(json::Document& pod, std::string_view group, std::string_view rt,
                             const DecorateOptions& o) const override {
    PodDecoration d;
    d.template_scheduler_differs = set_scheduler_name(pod, scheduler_, o.force_scheduler_name);
    (void)json::set_string(pod, "/metadata/annotations" + ptr_token(kVolcanoGroupAnnotation), group);
    if (o.volcano_task_spec)
      (void)json::set_string(pod, "/metadata/annotations" + ptr_token(kVolcanoTaskSpecAnnotation), rt);
    return d;
  }

 private:
  std::string scheduler_ = "volcano";
};

class SchedulerPlugins final : public Backend {
 public:
  explicit SchedulerPlugins(std::string scheduler) : scheduler_(std::move(scheduler)) {}
  std::string_view name() const override { return "scheduler-plugins"; }
  const std::string& scheduler_name() const override { return scheduler_; }
  kube::GroupVersionResource resource() const override { return {"scheduling.x-k8s.io", "v1alpha1", "podgroups"}; }

  json::Document desired(const PodGroupRequest& r, const json::Value*) const override {
    auto pg = base(r, "scheduling.x-k8s.io/v1alpha1");
    auto& a = pg.alloc();
    auto& spec = pg.root()["spec"];
    spec.AddMember("minMember", r.min_member, a);
    // A ResourceList value with omitempty: an empty list is left out.
    if (r.min_resources && !r.min_resources->empty())
      spec.AddMember("minResources", json::clone(to_json(*r.min_resources).root(), a), a);
    if (r.schedule_timeout_seconds) spec.AddMember("scheduleTimeoutSeconds", *r.schedule_timeout_seconds, a);
    return pg;
  }

  bool spec_differs(const json::Value& existing, const json::Value& desired) const override {
    for (auto p : {"/spec/minMember", "/spec/scheduleTimeoutSeconds"})
      if (!same_member(existing, desired, p)) return true;
    return !same_resources(json::find(existing, "/spec/minResources"), json::find(desired, "/spec/minResources"));
  }

  bool admits_pod_creation(const json::Value*) const override { return true; }

  PodDecoration decorate_pod(json::Document& pod, std::string_view group, std::string_view,
                             const DecorateOptions& o) const override {
    PodDecoration d;
    d.template_scheduler_differs = set_scheduler_name(pod, scheduler_, o.force_scheduler_name);
    (void)json::set_string(pod, "/metadata/labels" + ptr_token(kSchedulerPluginsGroupLabel), group);
    return d;
  }

 private:
  std::string scheduler_;
};

}  // namespace

std::unique_ptr<Backend> make_backend(std::string_view gang_scheduler_name) {
  if (gang_scheduler_name.empty()) return nullptr;
  if (framework::ascii::iequals(gang_scheduler_name, "volcano")) return std::make_unique<Volcano>();
  return std::make_unique<SchedulerPlugins>(std::string(gang_scheduler_name));
}

json::Document to_json(const ResourceList& resources) {
  auto out = json::Document::object();
  for (const auto& [name, quantity] : resources)
    out.root().AddMember(json::str(name, out.alloc()), json::str(quantity.to_string(), out.alloc()), out.alloc());
  return out;
}

Result<ResourceList> resource_list_from_json(const json::Value& v, std::string_view field) {
  ResourceList out;
  if (v.IsNull()) return out;
  if (!v.IsObject()) return fail(fmt::format("{}: must be an object of quantities", field));
  for (const auto& m : v.GetObject()) {
    std::string_view key(m.name.GetString(), m.name.GetStringLength());
    auto q = api::Quantity::from_json(m.value);
    if (!q) return fail(fmt::format("{}.{}: {}", field, key, q.error().message));
    out.insert_or_assign(std::string(key), *q);
  }
  return out;
}

Result<ResourceList> pod_requests(const json::Value& pod_spec, MissingRequests rule) {
  ResourceList sum;
  const json::Value* containers = json::find(pod_spec, "/containers");
  if (!containers || !containers->IsArray()) return sum;
  auto add = [&](const ResourceList& list) {
    for (const auto& [name, q] : list) {
      auto [it, inserted] = sum.try_emplace(name, q);
      if (!inserted) it->second += q;
    }
  };
  for (rapidjson::SizeType i = 0; i < containers->Size(); ++i) {
    const json::Value& c = (*containers)[i];
    auto read = [&](const char* which) -> Result<ResourceList> {
      const json::Value* v = json::find(c, fmt::format("/resources/{}", which));
      if (!v || v->IsNull()) return ResourceList{};
      return resource_list_from_json(*v, fmt::format("containers[{}].resources.{}", i, which));
    };
    const json::Value* requested = json::find(c, "/resources/requests");
    auto requests = read("requests");
    if (!requests) return fail(requests.error().message);
    if (rule == MissingRequests::LimitsWhenNone && requested && !requested->IsNull()) {
      add(*requests);
      continue;
    }
    auto limits = read("limits");
    if (!limits) return fail(limits.error().message);
    for (const auto& [name, q] : *limits) requests->try_emplace(name, q);
    add(*requests);
  }
  return sum;
}

Result<ResourceList> min_resources(std::vector<ReplicaResources> replicas, int32_t min_member) {
  std::stable_sort(replicas.begin(), replicas.end(),
                   [](const ReplicaResources& a, const ReplicaResources& b) { return a.priority > b.priority; });
  ResourceList total;
  int32_t remaining = min_member;
  for (const auto& r : replicas) {
    if (remaining <= 0) break;
    const int32_t count = std::min(r.replicas, remaining);
    remaining -= count;
    if (!r.pod_spec || count <= 0) continue;
    auto per_pod = pod_requests(*r.pod_spec);
    if (!per_pod) return fail(fmt::format("{}: {}", r.replica_type, per_pod.error().message));
    for (const auto& [name, q] : *per_pod) {
      const api::Quantity scaled = q * count;
      auto [it, inserted] = total.try_emplace(name, scaled);
      if (!inserted) it->second += scaled;
    }
  }
  return total;
}

}  // namespace unitrain::gang
