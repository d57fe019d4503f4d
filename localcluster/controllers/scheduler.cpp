#include "localcluster/controllers/scheduler.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "core/api/quantity.h"
#include "localcluster/controllers/controller_base.h"
#include "localcluster/controllers/event_recorder.h"
#include "localcluster/controllers/scheduler_accounting.h"

namespace unitrain::localcluster::controllers {

namespace {

using json::Value;

constexpr std::string_view kVolcanoGroupAnnotation = "scheduling.k8s.io/group-name";
constexpr std::string_view kPluginsGroupLabel = "scheduling.x-k8s.io/pod-group";

using Res = Resources;

int64_t milli(const Value& list, std::string_view key) {
  const Value* q = json::find(list, "/" + json::escape_pointer_token(key));
  if (!q) return 0;
  auto parsed = api::Quantity::from_json(*q);
  return parsed ? parsed->milli_value() : 0;
}

Res res_of(const Value* list) {
  Res r;
  if (!list || !list->IsObject()) return r;
  r.cpu = milli(*list, "cpu");
  r.mem = milli(*list, "memory");
  r.gpu = milli(*list, "nvidia.com/gpu");
  return r;
}

// A container's effective requests: requests, falling back per resource to limits (the API
// server's defaulting).
Res container_requests(const Value& c) {
  Res req = res_of(json::find(c, "/resources/requests"));
  Res lim = res_of(json::find(c, "/resources/limits"));
  if (!json::find(c, "/resources/requests/cpu")) req.cpu = lim.cpu;
  if (!json::find(c, "/resources/requests/memory")) req.mem = lim.mem;
  if (!json::find(c, "/resources/requests/nvidia.com~1gpu")) req.gpu = lim.gpu;
  return req;
}

// max(sum of containers, largest init container) per resource, plus overhead: what kube counts.
Res pod_requests(const Value& pod) {
  Res sum;
  if (const Value* cs = json::find(pod, "/spec/containers"); cs && cs->IsArray())
    for (const auto& c : cs->GetArray()) sum += container_requests(c);
  if (const Value* cs = json::find(pod, "/spec/initContainers"); cs && cs->IsArray()) {
    for (const auto& c : cs->GetArray()) {
      Res r = container_requests(c);
      sum.cpu = std::max(sum.cpu, r.cpu);
      sum.mem = std::max(sum.mem, r.mem);
      sum.gpu = std::max(sum.gpu, r.gpu);
    }
  }
  sum += res_of(json::find(pod, "/spec/overhead"));
  sum.pods = 1;
  return sum;
}

enum class GroupKind { None, Volcano, Plugins };

using PodInfo = TrackedPod;

struct NodeInfo {
  std::string name;
  Res alloc;
  bool ready = false;
  bool unschedulable = false;
  bool operator==(const NodeInfo&) const = default;
};

struct GroupInfo {
  GroupKind kind = GroupKind::None;
  std::string ns, name;
  int64_t min_member = 1;
  Res min_resources;
  std::string phase;
  std::string status_sig;  // what we last saw/wrote, to write only on change
};

}  // namespace

struct Scheduler::Impl {
  Store& store;
  SchedulerOptions opt;
  EventLoop loop;
  std::optional<ResourceInfo> pods_r, nodes_r;
  std::optional<ResourceInfo> volcano_r, plugins_r;
  std::map<std::string, NodeInfo> nodes;  // ordered: deterministic tie-breaks
  SchedulerAccounting pods;
  std::unordered_map<std::string, GroupInfo> groups;  // "<kind>|ns/name"
  // Volcano groups still Pending: admitted (Inqueue) once their minResources fit, which can only
  // become true when capacity is freed or the group changes.
  std::unordered_set<std::string> queued_volcano;
  std::unordered_set<std::string> changed_group_objects;  // since the last pass

  Impl(Store& s, SchedulerOptions o) : store(s), opt(std::move(o)), loop(s, "scheduler") {}

  static std::string group_key(GroupKind k, std::string_view ns, std::string_view name) {
    return fmt::format("{}|{}", k == GroupKind::Volcano ? "v" : "p", key_of(ns, name));
  }

  bool serves(std::string_view scheduler) const {
    if (scheduler.empty() || scheduler == "default-scheduler") return true;
    if (scheduler == "volcano") return volcano_r.has_value();
    return scheduler == opt.scheduler_plugins_name && plugins_r.has_value();
  }

  // ---- watch handlers -------------------------------------------------------------------------

  void on_crd(EventType, const Value&) {
    bool had_volcano = volcano_r.has_value(), had_plugins = plugins_r.has_value();
    if (!volcano_r) {
      volcano_r = resource(store, "scheduling.volcano.sh", "v1beta1", "podgroups");
      if (volcano_r)
        loop.watch(*volcano_r, "", [this](EventType t, const Value& o) { on_group(GroupKind::Volcano, t, o); });
    }
    if (!plugins_r) {
      plugins_r = resource(store, "scheduling.x-k8s.io", "v1alpha1", "podgroups");
      if (plugins_r)
        loop.watch(*plugins_r, "", [this](EventType t, const Value& o) { on_group(GroupKind::Plugins, t, o); });
    }
    if (had_volcano != volcano_r.has_value() || had_plugins != plugins_r.has_value())
      pods.reclassify([this](const PodFacts& p) { return serves(p.scheduler); });
  }

  void on_group(GroupKind kind, EventType type, const Value& obj) {
    std::string key = group_key(kind, str_at(obj, "/metadata/namespace"), str_at(obj, "/metadata/name"));
    pods.group_changed(key);
    if (type == EventType::Deleted) {
      groups.erase(key);
      queued_volcano.erase(key);
      return;
    }
    changed_group_objects.insert(key);
    GroupInfo& g = groups[key];
    g.kind = kind;
    g.ns = std::string(str_at(obj, "/metadata/namespace"));
    g.name = std::string(str_at(obj, "/metadata/name"));
    g.min_member = std::max<int64_t>(json::get_int(obj, "/spec/minMember").value_or(1), 1);
    g.min_resources = res_of(json::find(obj, "/spec/minResources"));
    g.phase = std::string(str_at(obj, "/status/phase"));
    if (const Value* st = json::find(obj, "/status")) g.status_sig = json::canonical(*st);
    if (kind == GroupKind::Volcano && (g.phase.empty() || g.phase == "Pending"))
      queued_volcano.insert(key);
    else
      queued_volcano.erase(key);
  }

  void on_node(EventType type, const Value& obj) {
    std::string name(str_at(obj, "/metadata/name"));
    if (type == EventType::Deleted) {
      if (nodes.erase(name)) pods.capacity_changed();
      return;
    }
    NodeInfo seen;
    seen.name = name;
    seen.alloc = res_of(json::find(obj, "/status/allocatable"));
    const Value* alloc = json::find(obj, "/status/allocatable");
    seen.alloc.pods = alloc && json::find(*alloc, "/pods") ? milli(*alloc, "pods") / 1000 : 110;
    const Value* c = find_condition(obj, "/status/conditions", "Ready");
    seen.ready = c && str_at(*c, "/status") == "True";
    seen.unschedulable = json::get_bool(obj, "/spec/unschedulable").value_or(false);
    auto [it, added] = nodes.try_emplace(name, seen);
    // Heartbeats change nothing the scheduler reads; only what a node offers retries parked pods.
    if (added || !(it->second == seen)) {
      it->second = std::move(seen);
      pods.capacity_changed();
    }
  }

  void on_pod(EventType type, const Value& obj) {
    std::string key = key_of(str_at(obj, "/metadata/namespace"), str_at(obj, "/metadata/name"));
    if (type == EventType::Deleted) {
      pods.erase(key);
      return;
    }
    PodFacts facts;
    std::string_view uid = str_at(obj, "/metadata/uid");
    TrackedPod* known = pods.find(key);
    if (known && known->uid == uid) {
      facts = *known;  // what a pod's spec fixes at creation is read once
    } else {
      facts.ns = std::string(str_at(obj, "/metadata/namespace"));
      facts.name = std::string(str_at(obj, "/metadata/name"));
      facts.uid = std::string(uid);
      facts.scheduler = std::string(str_at(obj, "/spec/schedulerName"));
      facts.req = pod_requests(obj);
      if (facts.scheduler == "volcano") {
        auto g = str_at(obj, "/metadata/annotations/" + json::escape_pointer_token(kVolcanoGroupAnnotation));
        if (!g.empty()) facts.group = group_key(GroupKind::Volcano, facts.ns, g);
      } else if (facts.scheduler == opt.scheduler_plugins_name) {
        auto g = str_at(obj, "/metadata/labels/" + json::escape_pointer_token(kPluginsGroupLabel));
        if (!g.empty()) facts.group = group_key(GroupKind::Plugins, facts.ns, g);
      }
      facts.served = serves(facts.scheduler);
    }
    facts.node = std::string(str_at(obj, "/spec/nodeName"));
    facts.phase = std::string(str_at(obj, "/status/phase"));
    facts.deleting = json::find(obj, "/metadata/deletionTimestamp") != nullptr;
    TrackedPod& p = pods.upsert(key, std::move(facts));
    if (const Value* c = find_condition(obj, "/status/conditions", "PodScheduled"))
      p.scheduled_cond = fmt::format("{}|{}|{}", str_at(*c, "/status"), str_at(*c, "/reason"), str_at(*c, "/message"));
  }

  // ---- scheduling -----------------------------------------------------------------------------

  // What is bound to each node now (the accounting keeps it up to date from events).
  std::map<std::string, Res> used_by_node() const {
    std::map<std::string, Res> used;
    for (const auto& [name, n] : nodes) used[name] = pods.used_on(name);
    return used;
  }

  // The node to place `p` on, or the reasons no node fits (reason -> node count).
  std::optional<std::string> pick(const PodInfo& p, const std::map<std::string, Res>& used,
                                  std::map<std::string, int>* reasons) const {
    std::optional<std::string> best;
    double best_score = -1;
    for (const auto& [name, n] : nodes) {
      if (!n.ready) {
        if (reasons) ++(*reasons)["node(s) had untolerated taint {node.kubernetes.io/not-ready: }"];
        continue;
      }
      if (n.unschedulable) {
        if (reasons) ++(*reasons)["node(s) were unschedulable"];
        continue;
      }
      Res free = n.alloc;
      free -= used.at(name);
      bool fits = true;
      auto lacks = [&](bool short_of, const char* reason) {
        if (!short_of) return;
        fits = false;
        if (reasons) ++(*reasons)[reason];
      };
      lacks(p.req.pods > free.pods, "Too many pods");
      lacks(p.req.cpu > free.cpu, "Insufficient cpu");
      lacks(p.req.mem > free.mem, "Insufficient memory");
      lacks(p.req.gpu > free.gpu, "Insufficient nvidia.com/gpu");
      if (!fits) continue;
      // Least-allocated scoring, as kube's default profile spreads pods.
      auto share = [](int64_t left, int64_t total) { return total > 0 ? double(left) / double(total) : 1.0; };
      double score = share(free.cpu - p.req.cpu, n.alloc.cpu) + share(free.mem - p.req.mem, n.alloc.mem);
      if (score > best_score) {
        best_score = score;
        best = name;
      }
    }
    return best;
  }

  std::string fit_error(const std::map<std::string, int>& reasons) const {
    std::vector<std::string> parts;
    for (const auto& [reason, count] : reasons) parts.push_back(fmt::format("{} {}", count, reason));
    std::sort(parts.begin(), parts.end());
    std::string msg = fmt::format("0/{} nodes are available:", nodes.size());
    if (!parts.empty()) {
      msg += " ";
      for (size_t i = 0; i < parts.size(); ++i) msg += (i ? ", " : "") + parts[i];
    }
    return msg + ".";
  }

  void bind(PodInfo& p, const std::string& node) {
    auto body = fmt::format(R"({{"spec":{{"nodeName":{}}}}})", json::dump(Value(node.c_str(), rapidjson::SizeType(node.size()))));
    auto r = store.patch(*pods_r, p.ns, p.name, PatchKind::Merge, body);
    if (!r) return;
    pods.bind(p, node);
    set_scheduled(p, true, "", "");
    record_event(store, r->root(), "", "Normal", "Scheduled",
                 fmt::format("Successfully assigned {}/{} to {}", p.ns, p.name, node), {p.scheduler_name(), ""});
  }

  void set_scheduled(PodInfo& p, bool ok, std::string_view reason, std::string_view message) {
    std::string sig = fmt::format("{}|{}|{}", ok ? "True" : "False", reason, message);
    if (sig == p.scheduled_cond) return;
    auto st = json::Document::object();
    Value conds(rapidjson::kArrayType);
    Value c(rapidjson::kObjectType);
    auto& a = st.alloc();
    c.AddMember("type", "PodScheduled", a);
    c.AddMember("status", json::str(ok ? "True" : "False", a), a);
    c.AddMember("lastProbeTime", Value(rapidjson::kNullType), a);
    c.AddMember("lastTransitionTime", json::str(now_rfc3339(), a), a);
    if (reason.empty()) {
      c.AddMember("reason", Value(rapidjson::kNullType), a);
      c.AddMember("message", Value(rapidjson::kNullType), a);
    } else {
      c.AddMember("reason", json::str(reason, a), a);
      c.AddMember("message", json::str(message, a), a);
    }
    conds.PushBack(c, a);
    (void)json::set(st, "/status/conditions", std::move(conds));
    auto written = store.patch(*pods_r, p.ns, p.name, PatchKind::Strategic, st.dump(), "status");
    if (!written) return;
    p.scheduled_cond = sig;
    if (!ok) record_event(store, written->root(), "", "Warning", "FailedScheduling", message, {p.scheduler_name(), ""});
  }

  bool volcano_admitted(const GroupInfo& g, const std::map<std::string, Res>& used) const {
    if (g.phase == "Inqueue" || g.phase == "Running") return true;
    Res free;
    for (const auto& [name, n] : nodes) {
      if (!n.ready || n.unschedulable) continue;
      Res f = n.alloc;
      f -= used.at(name);
      free += f;
    }
    const Res& m = g.min_resources;
    return m.cpu <= free.cpu && m.mem <= free.mem && m.gpu <= free.gpu;
  }

  void schedule_group(const std::string& key, std::vector<PodInfo*>& members, std::map<std::string, Res>& used) {
    auto git = groups.find(key);
    if (git == groups.end()) {
      std::string name = key.substr(key.find('/') + 1);
      for (PodInfo* p : members)
        set_scheduled(*p, false, "Unschedulable", fmt::format("pod group {} does not exist", name));
      return;
    }
    GroupInfo& g = git->second;
    if (g.kind == GroupKind::Volcano && !volcano_admitted(g, used)) {
      for (PodInfo* p : members)
        set_scheduled(*p, false, "Unschedulable",
                      fmt::format("pod group {} is Pending: its minResources do not fit the cluster's free resources",
                                  g.name));
      return;
    }
    int64_t bound = pods.stats_of(key).bound;
    // All-or-nothing: place on a copy, commit only if minMember is reached.
    auto trial = used;
    std::vector<std::pair<PodInfo*, std::string>> placed;
    std::map<std::string, int> first_reasons;
    bool have_reasons = false;
    std::vector<PodInfo*> unplaced;
    for (PodInfo* p : members) {
      std::map<std::string, int> reasons;
      auto node = pick(*p, trial, &reasons);
      if (node) {
        trial[*node] += p->req;
        placed.emplace_back(p, *node);
      } else {
        unplaced.push_back(p);
        if (!have_reasons) first_reasons = std::move(reasons), have_reasons = true;
      }
    }
    if (bound + static_cast<int64_t>(placed.size()) >= g.min_member) {
      for (auto& [p, node] : placed) {
        bind(*p, node);
        used[node] += p->req;
      }
      for (PodInfo* p : unplaced) set_scheduled(*p, false, "Unschedulable", fit_error(first_reasons));
      return;
    }
    std::string why = fmt::format("{}/{} pods of pod group {} can be placed, minMember is {}", bound + int64_t(placed.size()),
                                  bound + int64_t(members.size()), g.name, g.min_member);
    if (have_reasons) why += "; " + fit_error(first_reasons);
    for (PodInfo* p : members) set_scheduled(*p, false, "Unschedulable", why);
  }

  void update_group_status(GroupInfo& g, const GroupStats& s) {
    auto st = json::Document::object();
    std::string phase = g.phase.empty() ? "Pending" : g.phase;
    if (g.kind == GroupKind::Volcano) {
      if (phase == "Inqueue" && s.running + s.succeeded >= g.min_member) phase = "Running";
      (void)json::set_string(st, "/phase", phase);
      (void)json::set_int(st, "/running", s.running);
      (void)json::set_int(st, "/succeeded", s.succeeded);
      (void)json::set_int(st, "/failed", s.failed);
    } else {
      if (phase == "Pending") {
        if (s.total >= g.min_member) phase = "Scheduling";
      } else if (s.total < g.min_member && phase != "Finished" && phase != "Failed") {
        phase = "Pending";
      } else {
        if (s.bound >= g.min_member && phase == "Scheduling") phase = "Scheduled";
        if (s.running + s.succeeded >= g.min_member && phase == "Scheduled") phase = "Running";
        if (s.failed != 0 && s.failed + s.running + s.succeeded >= g.min_member) phase = "Failed";
        if (s.succeeded >= g.min_member) phase = "Finished";
      }
      (void)json::set_string(st, "/phase", phase);
      (void)json::set_int(st, "/scheduled", s.bound);
      (void)json::set_int(st, "/running", s.running);
      (void)json::set_int(st, "/succeeded", s.succeeded);
      (void)json::set_int(st, "/failed", s.failed);
    }
    std::string sig = json::canonical(st.root());
    if (sig == g.status_sig) return;
    auto body = json::Document::object();
    (void)json::set(body, "/status", json::clone(st.root(), body.alloc()));
    const ResourceInfo& r = g.kind == GroupKind::Volcano ? *volcano_r : *plugins_r;
    if (store.patch(r, g.ns, g.name, PatchKind::Merge, body.dump(), r.has_status ? "status" : "")) {
      g.status_sig = sig;
      g.phase = phase;
    }
  }

  // Costs what changed since the last pass: the pods that became pending or may fit now (with the
  // pending members of their gang groups) and the groups whose objects or member counts changed.
  void pass() {
    const bool freed = pods.take_capacity_freed();
    std::map<std::string, Res> used;
    bool have_used = false;
    auto used_now = [&]() -> std::map<std::string, Res>& {
      if (!have_used) used = used_by_node(), have_used = true;
      return used;
    };
    std::unordered_set<std::string> status_due;
    status_due.swap(changed_group_objects);
    // Volcano's enqueue step happens before allocation: admitted groups become Inqueue. It needs
    // no member pods: training-operator creates them only once its PodGroup left Pending.
    std::vector<std::string> check;
    for (const auto& key : queued_volcano)
      if (freed || status_due.count(key)) check.push_back(key);
    for (const auto& key : check) {
      GroupInfo& g = groups.at(key);
      if (!volcano_admitted(g, used_now())) continue;
      g.phase = "Inqueue";
      g.status_sig.clear();
      queued_volcano.erase(key);
      status_due.insert(key);
      pods.group_changed(key);
    }
    std::vector<PodInfo*> pending = pods.take_work();
    // Keyed by copies: binding rewrites a pod's facts.
    std::unordered_map<std::string, std::vector<PodInfo*>> members;
    for (PodInfo* p : pending)
      if (!p->group.empty()) members[p->group].push_back(p);
    std::unordered_set<std::string> done_groups;
    for (PodInfo* p : pending) {
      if (!p->group.empty()) {
        std::string group = p->group;
        if (done_groups.insert(group).second) schedule_group(group, members[group], used_now());
        continue;
      }
      std::map<std::string, int> reasons;
      if (auto node = pick(*p, used_now(), &reasons)) {
        bind(*p, *node);
        used_now()[*node] += p->req;
      } else {
        set_scheduled(*p, false, "Unschedulable", fit_error(reasons));
      }
    }
    for (auto& key : pods.take_changed_groups()) status_due.insert(std::move(key));
    for (const auto& key : status_due)
      if (auto g = groups.find(key); g != groups.end()) update_group_status(g->second, pods.stats_of(key));
  }
};

Scheduler::Scheduler(Store& store, SchedulerOptions options)
    : impl_(std::make_unique<Impl>(store, std::move(options))) {
  Impl& s = *impl_;
  s.pods_r = resource(store, "", "v1", "pods");
  s.nodes_r = resource(store, "", "v1", "nodes");
  if (!s.pods_r || !s.nodes_r) return;
  s.loop.watch(*s.nodes_r, "", [&s](EventType t, const Value& o) { s.on_node(t, o); });
  s.loop.watch(*s.pods_r, "", [&s](EventType t, const Value& o) { s.on_pod(t, o); });
  if (auto crds = resource(store, "apiextensions.k8s.io", "v1", "customresourcedefinitions"))
    s.loop.watch(*crds, "", [&s](EventType t, const Value& o) { s.on_crd(t, o); });
  s.on_crd(EventType::Added, Value());
  s.loop.set_after_batch([&s] { s.pass(); });
  s.loop.start();
}

Scheduler::~Scheduler() { impl_->loop.stop(); }

}  // namespace unitrain::localcluster::controllers
