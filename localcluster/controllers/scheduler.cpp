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

namespace unitrain::localcluster::controllers {

namespace {

using json::Value;

constexpr std::string_view kVolcanoGroupAnnotation = "scheduling.k8s.io/group-name";
constexpr std::string_view kPluginsGroupLabel = "scheduling.x-k8s.io/pod-group";

// Requests in milli-units (cpu millicores, memory milli-bytes, gpus milli), pods as a count.
struct Res {
  int64_t cpu = 0, mem = 0, gpu = 0, pods = 0;
  Res& operator+=(const Res& o) {
    cpu += o.cpu;
    mem += o.mem;
    gpu += o.gpu;
    pods += o.pods;
    return *this;
  }
  Res& operator-=(const Res& o) {
    cpu -= o.cpu;
    mem -= o.mem;
    gpu -= o.gpu;
    pods -= o.pods;
    return *this;
  }
};

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

struct PodInfo {
  std::string ns, name, uid, scheduler, node, phase;
  bool deleting = false;
  Res req;
  std::string group;  // "<kind>|ns/name" or ""
  uint64_t seq = 0;
  std::string scheduled_cond;  // "status|reason|message" of PodScheduled as last seen or written
  bool terminal() const { return phase == "Succeeded" || phase == "Failed"; }
  std::string_view scheduler_name() const { return scheduler.empty() ? std::string_view("default-scheduler") : scheduler; }
};

struct NodeInfo {
  std::string name;
  Res alloc;
  bool ready = false;
  bool unschedulable = false;
};

struct GroupInfo {
  GroupKind kind = GroupKind::None;
  std::string ns, name;
  int64_t min_member = 1;
  Res min_resources;
  std::string phase;
  std::string status_sig;  // what we last saw/wrote, to write only on change
};

struct GroupStats {
  int64_t total = 0, bound = 0, running = 0, succeeded = 0, failed = 0;
};

}  // namespace

struct Scheduler::Impl {
  Store& store;
  SchedulerOptions opt;
  EventLoop loop;
  std::optional<ResourceInfo> pods_r, nodes_r;
  std::optional<ResourceInfo> volcano_r, plugins_r;
  std::map<std::string, NodeInfo> nodes;  // ordered: deterministic tie-breaks
  std::unordered_map<std::string, PodInfo> pods;
  std::unordered_map<std::string, GroupInfo> groups;  // "<kind>|ns/name"
  uint64_t next_seq = 0;
  bool dirty = true;

  Impl(Store& s, SchedulerOptions o) : store(s), opt(std::move(o)), loop(s, "scheduler") {}

  static std::string group_key(GroupKind k, std::string_view ns, std::string_view name) {
    return fmt::format("{}|{}", k == GroupKind::Volcano ? "v" : "p", key_of(ns, name));
  }

  bool serves(const std::string& scheduler) const {
    if (scheduler.empty() || scheduler == "default-scheduler") return true;
    if (scheduler == "volcano") return volcano_r.has_value();
    return scheduler == opt.scheduler_plugins_name && plugins_r.has_value();
  }

  // ---- watch handlers -------------------------------------------------------------------------

  void on_crd(EventType, const Value&) {
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
    dirty = true;
  }

  void on_group(GroupKind kind, EventType type, const Value& obj) {
    std::string key = group_key(kind, str_at(obj, "/metadata/namespace"), str_at(obj, "/metadata/name"));
    dirty = true;
    if (type == EventType::Deleted) {
      groups.erase(key);
      return;
    }
    GroupInfo& g = groups[key];
    g.kind = kind;
    g.ns = std::string(str_at(obj, "/metadata/namespace"));
    g.name = std::string(str_at(obj, "/metadata/name"));
    g.min_member = std::max<int64_t>(json::get_int(obj, "/spec/minMember").value_or(1), 1);
    g.min_resources = res_of(json::find(obj, "/spec/minResources"));
    g.phase = std::string(str_at(obj, "/status/phase"));
    if (const Value* st = json::find(obj, "/status")) g.status_sig = json::canonical(*st);
  }

  void on_node(EventType type, const Value& obj) {
    std::string name(str_at(obj, "/metadata/name"));
    dirty = true;
    if (type == EventType::Deleted) {
      nodes.erase(name);
      return;
    }
    NodeInfo& n = nodes[name];
    n.name = name;
    n.alloc = res_of(json::find(obj, "/status/allocatable"));
    const Value* alloc = json::find(obj, "/status/allocatable");
    n.alloc.pods = alloc && json::find(*alloc, "/pods") ? milli(*alloc, "pods") / 1000 : 110;
    const Value* c = find_condition(obj, "/status/conditions", "Ready");
    n.ready = c && str_at(*c, "/status") == "True";
    n.unschedulable = json::get_bool(obj, "/spec/unschedulable").value_or(false);
  }

  void on_pod(EventType type, const Value& obj) {
    std::string key = key_of(str_at(obj, "/metadata/namespace"), str_at(obj, "/metadata/name"));
    if (type == EventType::Deleted) {
      auto it = pods.find(key);
      if (it != pods.end()) {
        // A bound pod going away frees capacity; an unbound one changes no one's fit.
        if (!it->second.node.empty() || !it->second.group.empty()) dirty = true;
        pods.erase(it);
      }
      return;
    }
    auto [it, inserted] = pods.try_emplace(key);
    PodInfo& p = it->second;
    std::string_view uid = str_at(obj, "/metadata/uid");
    if (inserted || p.uid != uid) {
      p = PodInfo{};
      p.seq = next_seq++;
      p.ns = std::string(str_at(obj, "/metadata/namespace"));
      p.name = std::string(str_at(obj, "/metadata/name"));
      p.uid = std::string(uid);
      p.scheduler = std::string(str_at(obj, "/spec/schedulerName"));
      p.req = pod_requests(obj);
      if (p.scheduler == "volcano") {
        auto g = str_at(obj, "/metadata/annotations/" + json::escape_pointer_token(kVolcanoGroupAnnotation));
        if (!g.empty()) p.group = group_key(GroupKind::Volcano, p.ns, g);
      } else if (p.scheduler == opt.scheduler_plugins_name) {
        auto g = str_at(obj, "/metadata/labels/" + json::escape_pointer_token(kPluginsGroupLabel));
        if (!g.empty()) p.group = group_key(GroupKind::Plugins, p.ns, g);
      }
    }
    std::string node(str_at(obj, "/spec/nodeName"));
    std::string phase(str_at(obj, "/status/phase"));
    bool deleting = json::find(obj, "/metadata/deletionTimestamp") != nullptr;
    if (inserted || node != p.node || phase != p.phase || deleting != p.deleting) dirty = true;
    p.node = std::move(node);
    p.phase = std::move(phase);
    p.deleting = deleting;
    if (const Value* c = find_condition(obj, "/status/conditions", "PodScheduled"))
      p.scheduled_cond = fmt::format("{}|{}|{}", str_at(*c, "/status"), str_at(*c, "/reason"), str_at(*c, "/message"));
  }

  // ---- scheduling -----------------------------------------------------------------------------

  std::map<std::string, Res> used_by_node() const {
    std::map<std::string, Res> used;
    for (const auto& [name, n] : nodes) used[name];
    for (const auto& [k, p] : pods)
      if (!p.node.empty() && !p.terminal()) used[p.node] += p.req;
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
    p.node = node;
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

  std::unordered_map<std::string, GroupStats> group_stats() const {
    std::unordered_map<std::string, GroupStats> stats;
    for (const auto& [k, p] : pods) {
      if (p.group.empty() || p.deleting) continue;
      GroupStats& s = stats[p.group];
      ++s.total;
      if (!p.node.empty() && p.phase != "Failed") ++s.bound;
      if (p.phase == "Running") ++s.running;
      if (p.phase == "Succeeded") ++s.succeeded;
      if (p.phase == "Failed") ++s.failed;
    }
    return stats;
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

  void schedule_group(const std::string& key, std::vector<PodInfo*>& members, std::map<std::string, Res>& used,
                      const std::unordered_map<std::string, GroupStats>& stats) {
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
    int64_t bound = 0;
    if (auto s = stats.find(key); s != stats.end()) bound = s->second.bound;
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

  void pass() {
    if (!dirty) return;
    dirty = false;
    auto used = used_by_node();
    auto stats = group_stats();
    // Volcano's enqueue step happens before allocation: admitted groups become Inqueue. It needs
    // no member pods: training-operator creates them only once its PodGroup left Pending.
    for (auto& [key, g] : groups) {
      if (g.kind == GroupKind::Volcano && (g.phase.empty() || g.phase == "Pending") && volcano_admitted(g, used)) {
        g.phase = "Inqueue";
        g.status_sig.clear();
      }
    }
    std::vector<PodInfo*> pending;
    for (auto& [k, p] : pods)
      if (p.node.empty() && !p.deleting && (p.phase.empty() || p.phase == "Pending") && serves(p.scheduler))
        pending.push_back(&p);
    std::sort(pending.begin(), pending.end(), [](const PodInfo* a, const PodInfo* b) { return a->seq < b->seq; });
    std::unordered_map<std::string, std::vector<PodInfo*>> members;
    for (PodInfo* p : pending)
      if (!p->group.empty()) members[p->group].push_back(p);
    std::unordered_set<std::string> done_groups;
    for (PodInfo* p : pending) {
      if (!p->group.empty()) {
        if (done_groups.insert(p->group).second) schedule_group(p->group, members[p->group], used, stats);
        continue;
      }
      std::map<std::string, int> reasons;
      if (auto node = pick(*p, used, &reasons)) {
        bind(*p, *node);
        used[*node] += p->req;
      } else {
        set_scheduled(*p, false, "Unschedulable", fit_error(reasons));
      }
    }
    stats = group_stats();
    for (auto& [key, g] : groups) update_group_status(g, stats[key]);
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
