#include "localcluster/disruption.h"

#include <vector>

#include "core/api/labels.h"
#include "localcluster/object_meta.h"

namespace unitrain::localcluster {

namespace {

using json::Value;

std::string_view text_at(const Value& v, std::string_view pointer) {
  auto s = json::get_string(v, pointer);
  return s ? *s : std::string_view();
}

bool pod_ready(const Value& pod) {
  if (const Value* conds = json::find(pod, "/status/conditions"); conds && conds->IsArray())
    for (const auto& c : conds->GetArray())
      if (text_at(c, "/type") == "Ready") return text_at(c, "/status") == "True";
  return false;
}

StatusError budget_violated(std::string cause, int retry_after_seconds) {
  auto e = errors::status(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.");
  e.details = json::Document::object();
  auto& a = e.details.alloc();
  Value causes(rapidjson::kArrayType), c(rapidjson::kObjectType);
  c.AddMember("reason", "DisruptionBudget", a);
  c.AddMember("message", json::str(cause, a), a);
  causes.PushBack(c, a);
  e.details.root().AddMember("causes", causes, a);
  if (retry_after_seconds > 0) e.details.root().AddMember("retryAfterSeconds", retry_after_seconds, a);
  return e;
}

json::Document success_status() {
  auto d = json::Document::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201})");
  return std::move(*d);
}

}  // namespace

bool budget_covers(const Value& pdb, const Value& pod) {
  if (text_at(pdb, "/metadata/namespace") != text_at(pod, "/metadata/namespace")) return false;
  const Value* sel = json::find(pdb, "/spec/selector");
  if (sel == nullptr || !sel->IsObject()) return false;
  auto selector = api::LabelSelector::from_json(*sel);
  if (!selector) return false;
  const Value* labels = json::find(pod, "/metadata/labels");
  return selector->matches(labels ? *labels : null_value());
}

void set_disruption_allowed_condition(json::Document& status, int64_t observed_generation, const std::string& now) {
  bool allowed = json::get_int(status.root(), "/disruptionsAllowed").value_or(0) > 0;
  std::string_view want = allowed ? "True" : "False";
  std::string_view reason = allowed ? "SufficientPods" : "InsufficientPods";
  Value* conds = json::find(status.root(), "/conditions");
  if (conds == nullptr || !conds->IsArray()) {
    (void)json::set(status, "/conditions", Value(rapidjson::kArrayType));
    conds = json::find(status.root(), "/conditions");
  }
  auto& a = status.alloc();
  Value* cond = nullptr;
  for (auto& c : conds->GetArray())
    if (text_at(c, "/type") == "DisruptionAllowed") cond = &c;
  std::string transition = now;
  if (cond != nullptr && text_at(*cond, "/status") == want) transition = std::string(text_at(*cond, "/lastTransitionTime"));
  Value c(rapidjson::kObjectType);
  c.AddMember("type", "DisruptionAllowed", a);
  c.AddMember("status", json::str(want, a), a);
  c.AddMember("observedGeneration", observed_generation, a);
  c.AddMember("lastTransitionTime", json::str(transition, a), a);
  c.AddMember("reason", json::str(reason, a), a);
  c.AddMember("message", "", a);
  if (cond != nullptr)
    *cond = std::move(c);
  else
    conds->PushBack(c, a);
}

StoreResult<json::Document> evict_pod(Store& store, const ResourceInfo& pods, std::string_view ns,
                                      std::string_view name, const Value& eviction, bool dry_run) {
  if (text_at(eviction, "/metadata/name") != name)
    return fail(errors::bad_request("name in URL does not match name in Eviction object"));
  DeleteRequest del;
  del.dry_run = dry_run || [&] {
    if (const Value* d = json::find(eviction, "/deleteOptions/dryRun"); d && d->IsArray())
      for (const auto& v : d->GetArray())
        if (v.IsString() && json::view(v) == "All") return true;
    return false;
  }();
  if (auto g = json::get_int(eviction, "/deleteOptions/gracePeriodSeconds")) del.grace_period_seconds = *g;
  if (auto p = json::get_string(eviction, "/deleteOptions/propagationPolicy")) del.propagation_policy = std::string(*p);
  if (auto u = json::get_string(eviction, "/deleteOptions/preconditions/uid")) del.precondition_uid = std::string(*u);
  if (auto rv = json::get_string(eviction, "/deleteOptions/preconditions/resourceVersion"))
    del.precondition_resource_version = std::string(*rv);

  auto pod = store.get(pods, ns, name);
  if (!pod) return fail(std::move(pod).error());
  auto remove_pod = [&]() -> StoreResult<json::Document> {
    auto out = store.remove(pods, ns, name, del);
    if (!out) return fail(std::move(out).error());
    return success_status();
  };
  // A pod that is not running (or already going) disrupts nothing more by its eviction.
  auto phase = text_at(pod->root(), "/status/phase");
  if (phase == "Succeeded" || phase == "Failed" || phase == "Pending" ||
      json::find(pod->root(), "/metadata/deletionTimestamp") != nullptr) {
    if (!del.precondition_resource_version)
      del.precondition_resource_version = std::string(text_at(pod->root(), "/metadata/resourceVersion"));
    return remove_pod();
  }
  auto budgets_r = store.find_resource("policy", "v1", "poddisruptionbudgets");
  if (!budgets_r) return remove_pod();
  StatusError last_conflict;
  for (int attempt = 0; attempt <= kPatchConflictRetries; ++attempt) {
    ListRequest req;
    auto listed = store.list(*budgets_r, ns, req);
    if (!listed) return fail(std::move(listed).error());
    auto list = json::Document::parse(*listed);
    if (!list) return fail(errors::internal(list.error().message));
    std::vector<const Value*> covering;
    if (const Value* items = json::find(list->root(), "/items"); items && items->IsArray())
      for (const auto& b : items->GetArray())
        if (budget_covers(b, pod->root())) covering.push_back(&b);
    if (covering.empty()) return remove_pod();
    if (covering.size() > 1)
      return fail(errors::status(500, "InternalError",
                                 "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
                                 "not support."));
    const Value& pdb = *covering.front();
    std::string pdb_name(text_at(pdb, "/metadata/name"));
    int64_t current = json::get_int(pdb, "/status/currentHealthy").value_or(0);
    int64_t desired = json::get_int(pdb, "/status/desiredHealthy").value_or(0);
    if (!pod_ready(pod->root())) {
      if (text_at(pdb, "/spec/unhealthyPodEvictionPolicy") == "AlwaysAllow" || (current >= desired && desired > 0)) {
        del.precondition_resource_version = std::string(text_at(pod->root(), "/metadata/resourceVersion"));
        return remove_pod();
      }
    }
    if (json::get_int(pdb, "/status/observedGeneration").value_or(0) < json::get_int(pdb, "/metadata/generation").value_or(1))
      return fail(budget_violated("The disruption budget " + pdb_name + " is still being processed by the server.", 10));
    int64_t allowed = json::get_int(pdb, "/status/disruptionsAllowed").value_or(0);
    if (allowed < 0)
      return fail(errors::forbidden(*budgets_r, pdb_name, "pdb disruptions allowed is negative"));
    if (allowed == 0)
      return fail(budget_violated("The disruption budget " + pdb_name + " needs " + std::to_string(desired) +
                                      " healthy pods and has " + std::to_string(current) + " currently",
                                  0));
    if (del.dry_run) return success_status();
    auto updated = json::Document::copy_of(pdb);
    auto status = json::Document::copy_of(*json::find(pdb, "/status"));
    (void)json::set_int(status, "/disruptionsAllowed", allowed - 1);
    if (allowed - 1 == 0)
      set_disruption_allowed_condition(status, json::get_int(status.root(), "/observedGeneration").value_or(0),
                                       now_rfc3339());
    (void)json::set_string(status, "/disruptedPods/" + json::escape_pointer_token(name), now_rfc3339());
    (void)json::set(updated, "/status", json::clone(status.root(), updated.alloc()));
    (void)json::set_string(updated, "/apiVersion", "policy/v1");
    (void)json::set_string(updated, "/kind", "PodDisruptionBudget");
    auto written = store.update(*budgets_r, ns, pdb_name, std::move(updated), "status");
    if (!written) {
      if (written.error().code != 409) return fail(std::move(written).error());
      last_conflict = std::move(written).error();  // another eviction or the controller came first
      continue;
    }
    return remove_pod();
  }
  return fail(std::move(last_conflict));
}

}  // namespace unitrain::localcluster
