#include "localcluster/controllers/disruption_controller.h"

#include <cmath>
#include <map>
#include <set>
#include <variant>

#include <fmt/format.h>

#include "core/api/time.h"
#include "localcluster/controllers/controller_base.h"
#include "localcluster/disruption.h"

namespace unitrain::localcluster::controllers {

namespace {

using json::Value;

// How long an eviction's entry in disruptedPods keeps its pod out of currentHealthy
// (the disruption controller's DeletionTimeout).
constexpr auto kDisruptedPodTimeout = std::chrono::minutes(2);

bool pod_is_ready(const Value& pod) {
  const Value* c = find_condition(pod, "/status/conditions", "Ready");
  return c && str_at(*c, "/status") == "True";
}

std::string controller_ref(const Value& obj, std::string& kind) {
  if (const Value* refs = json::find(obj, "/metadata/ownerReferences"); refs && refs->IsArray())
    for (const auto& r : refs->GetArray())
      if (json::get_bool(r, "/controller").value_or(false)) {
        kind = std::string(str_at(r, "/kind"));
        return std::string(str_at(r, "/uid"));
      }
  return {};
}

// intstr.GetScaledValueFromIntOrPercent with rounding up, as the disruption controller calls it.
std::optional<int64_t> scaled(const Value& v, int64_t total) {
  if (v.IsInt64()) return v.GetInt64();
  if (!v.IsString()) return std::nullopt;
  std::string_view s = json::view(v);
  if (s.empty() || s.back() != '%') return std::nullopt;
  int64_t pct = 0;
  for (char c : s.substr(0, s.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    pct = pct * 10 + (c - '0');
  }
  return static_cast<int64_t>(std::ceil(static_cast<double>(pct) * static_cast<double>(total) / 100.0));
}

}  // namespace

struct DisruptionController::Impl {
  Store& store;
  EventLoop loop;
  std::optional<ResourceInfo> pods_r, pdbs_r, rs_r, deploy_r, sts_r;
  using ByName = std::map<std::string, json::Document>;
  std::map<std::string, ByName> pods, pdbs;             // ns -> name -> object
  std::map<std::string, json::Document> workloads;      // uid -> ReplicaSet, Deployment or StatefulSet
  std::set<std::string> dirty;                          // namespaces
  std::map<std::string, api::TimePoint> rechecks;       // ns -> when a disruptedPods entry expires

  explicit Impl(Store& s) : store(s), loop(s, "disruption-controller") {}

  void on(std::map<std::string, ByName>& cache, EventType type, const Value& obj) {
    std::string ns(str_at(obj, "/metadata/namespace")), name(str_at(obj, "/metadata/name"));
    if (type == EventType::Deleted)
      cache[ns].erase(name);
    else
      cache[ns][name] = json::Document::copy_of(obj);
    dirty.insert(ns);
  }

  void on_workload(EventType type, const Value& obj) {
    std::string uid(str_at(obj, "/metadata/uid"));
    if (type == EventType::Deleted) {
      if (uid.empty())
        for (auto it = workloads.begin(); it != workloads.end(); ++it)
          if (str_at(it->second.root(), "/metadata/name") == str_at(obj, "/metadata/name") &&
              str_at(it->second.root(), "/metadata/namespace") == str_at(obj, "/metadata/namespace") &&
              str_at(it->second.root(), "/kind") == str_at(obj, "/kind")) {
            uid = it->first;
            break;
          }
      workloads.erase(uid);
    } else {
      workloads[uid] = json::Document::copy_of(obj);
    }
    dirty.insert(std::string(str_at(obj, "/metadata/namespace")));
  }

  // The replicas the pods' controllers want (each controller once), or the reason there is none.
  std::variant<int64_t, std::string> expected_scale(const std::vector<const Value*>& selected) {
    std::map<std::string, int64_t> scale;  // controller uid -> replicas
    for (const Value* p : selected) {
      std::string kind;
      std::string uid = controller_ref(*p, kind);
      if (uid.empty()) continue;  // unmanaged pods are left out, as upstream does
      auto it = workloads.find(uid);
      if ((kind != "ReplicaSet" && kind != "StatefulSet") || it == workloads.end())
        return fmt::format("found no controllers for pod \"{}\"", str_at(*p, "/metadata/name"));
      const Value* owner = &it->second.root();
      std::string owner_kind;
      if (std::string up = controller_ref(*owner, owner_kind); kind == "ReplicaSet" && owner_kind == "Deployment") {
        auto d = workloads.find(up);
        if (d == workloads.end()) return fmt::format("found no controllers for pod \"{}\"", str_at(*p, "/metadata/name"));
        uid = up;
        owner = &d->second.root();
      }
      scale[uid] = json::get_int(*owner, "/spec/replicas").value_or(1);
    }
    int64_t total = 0;
    for (const auto& [u, n] : scale) total += n;
    return total;
  }

  void sync(const std::string& ns, const json::Document& pdb_doc) {
    const Value& pdb = pdb_doc.root();
    auto now = api::Clock::now();
    std::string now_text = api::format_time(now);
    std::vector<const Value*> selected;
    for (const auto& [name, p] : pods[ns])
      if (budget_covers(pdb, p.root())) selected.push_back(&p.root());

    auto before = json::find(pdb, "/status") && json::find(pdb, "/status")->IsObject()
                      ? json::Document::copy_of(*json::find(pdb, "/status"))
                      : json::Document::object();
    auto st = json::Document::copy_of(before.root());
    int64_t generation = json::get_int(pdb, "/metadata/generation").value_or(1);

    // disruptedPods: entries of pods still here, not being deleted and younger than the timeout.
    auto disrupted = json::Document::object();
    std::optional<api::TimePoint> recheck;
    if (const Value* d = json::find(pdb, "/status/disruptedPods"); d && d->IsObject())
      for (auto m = d->MemberBegin(); m != d->MemberEnd(); ++m) {
        auto pod = pods[ns].find(std::string(json::view(m->name)));
        if (pod == pods[ns].end() || json::find(pod->second.root(), "/metadata/deletionTimestamp")) continue;
        if (!m->value.IsString()) continue;
        auto at = api::parse_time(json::view(m->value));
        if (!at || *at + kDisruptedPodTimeout <= now) continue;
        if (!recheck || *at + kDisruptedPodTimeout < *recheck) recheck = *at + kDisruptedPodTimeout;
        disrupted.root().AddMember(Value(m->name, disrupted.alloc()), Value(m->value, disrupted.alloc()), disrupted.alloc());
      }

    int64_t expected = 0, desired = 0;
    std::optional<std::string> failure;
    const Value* max_unavailable = json::find(pdb, "/spec/maxUnavailable");
    const Value* min_available = json::find(pdb, "/spec/minAvailable");
    auto from_scale = [&]() -> bool {
      auto s = expected_scale(selected);
      if (auto* err = std::get_if<std::string>(&s)) {
        failure = *err;
        return false;
      }
      expected = std::get<int64_t>(s);
      return true;
    };
    if (max_unavailable) {
      if (from_scale()) {
        auto mu = scaled(*max_unavailable, expected);
        if (!mu) failure = "invalid maxUnavailable";
        else desired = std::max<int64_t>(expected - *mu, 0);
      }
    } else if (min_available && min_available->IsInt64()) {
      desired = min_available->GetInt64();
      expected = static_cast<int64_t>(selected.size());
    } else if (min_available) {
      if (from_scale()) {
        auto ma = scaled(*min_available, expected);
        if (!ma) failure = "invalid minAvailable";
        else desired = *ma;
      }
    }

    int64_t healthy = 0;
    for (const Value* p : selected) {
      if (json::find(*p, "/metadata/deletionTimestamp")) continue;
      if (json::find(disrupted.root(), "/" + json::escape_pointer_token(str_at(*p, "/metadata/name")))) continue;
      if (pod_is_ready(*p)) ++healthy;
    }
    int64_t allowed = healthy - desired;
    if (expected <= 0 || allowed <= 0) allowed = 0;

    (void)json::set_int(st, "/currentHealthy", healthy);
    (void)json::set_int(st, "/desiredHealthy", desired);
    (void)json::set_int(st, "/expectedPods", expected);
    (void)json::set_int(st, "/observedGeneration", generation);
    if (disrupted.root().ObjectEmpty())
      json::remove(st, "/disruptedPods");
    else
      (void)json::set(st, "/disruptedPods", json::clone(disrupted.root(), st.alloc()));
    if (failure) {
      // failSafe: nothing may be disrupted while the budget cannot be computed.
      (void)json::set_int(st, "/disruptionsAllowed", 0);
      Value* conds = json::find(st.root(), "/conditions");
      if (!conds || !conds->IsArray()) {
        (void)json::set(st, "/conditions", Value(rapidjson::kArrayType));
        conds = json::find(st.root(), "/conditions");
      }
      auto& a = st.alloc();
      Value c(rapidjson::kObjectType);
      std::string transition = now_text;
      for (auto it = conds->Begin(); it != conds->End();) {
        if (str_at(*it, "/type") == "DisruptionAllowed") {
          if (str_at(*it, "/status") == "False") transition = std::string(str_at(*it, "/lastTransitionTime"));
          it = conds->Erase(it);
        } else {
          ++it;
        }
      }
      c.AddMember("type", "DisruptionAllowed", a);
      c.AddMember("status", "False", a);
      c.AddMember("observedGeneration", generation, a);
      c.AddMember("lastTransitionTime", json::str(transition, a), a);
      c.AddMember("reason", "SyncFailed", a);
      c.AddMember("message", json::str(*failure, a), a);
      conds->PushBack(c, a);
    } else {
      (void)json::set_int(st, "/disruptionsAllowed", allowed);
      set_disruption_allowed_condition(st, generation, now_text);
    }
    if (recheck && (!rechecks.count(ns) || *recheck < rechecks[ns])) {
      rechecks[ns] = *recheck;
      auto delay = *recheck - api::Clock::now();
      loop.after(std::chrono::duration_cast<Clock::duration>(delay) + std::chrono::milliseconds(50), [this, ns] {
        rechecks.erase(ns);
        dirty.insert(ns);
      });
    }
    if (json::equal(before.root(), st.root())) return;
    // Written with the budget's resourceVersion: an eviction in between wins, and its event
    // brings the budget back here.
    auto updated = json::Document::copy_of(pdb);
    (void)json::set(updated, "/status", json::clone(st.root(), updated.alloc()));
    (void)store.update(*pdbs_r, ns, str_at(pdb, "/metadata/name"), std::move(updated), "status");
  }

  void after_batch() {
    std::set<std::string> batch;
    batch.swap(dirty);
    for (const auto& ns : batch) {
      auto it = pdbs.find(ns);
      if (it == pdbs.end()) continue;
      std::vector<json::Document> budgets;
      for (const auto& [name, d] : it->second) budgets.push_back(json::Document::copy_of(d.root()));
      for (const auto& b : budgets) sync(ns, b);
    }
  }
};

DisruptionController::DisruptionController(Store& store) : impl_(std::make_unique<Impl>(store)) {
  Impl& c = *impl_;
  c.pods_r = resource(store, "", "v1", "pods");
  c.pdbs_r = resource(store, "policy", "v1", "poddisruptionbudgets");
  c.rs_r = resource(store, "apps", "v1", "replicasets");
  c.deploy_r = resource(store, "apps", "v1", "deployments");
  c.sts_r = resource(store, "apps", "v1", "statefulsets");
  if (!c.pods_r || !c.pdbs_r || !c.rs_r || !c.deploy_r || !c.sts_r) return;
  c.loop.watch(*c.pdbs_r, "", [&c](EventType t, const Value& o) { c.on(c.pdbs, t, o); });
  c.loop.watch(*c.pods_r, "", [&c](EventType t, const Value& o) { c.on(c.pods, t, o); });
  for (const auto* r : {&c.rs_r, &c.deploy_r, &c.sts_r})
    c.loop.watch(**r, "", [&c](EventType t, const Value& o) { c.on_workload(t, o); });
  c.loop.set_after_batch([&c] { c.after_batch(); });
  c.loop.start();
}

DisruptionController::~DisruptionController() { impl_->loop.stop(); }

}  // namespace unitrain::localcluster::controllers
