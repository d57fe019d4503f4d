#include "localcluster/controllers/kubelet.h"

#include <charconv>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "localcluster/controllers/controller_base.h"
#include "localcluster/controllers/event_recorder.h"

namespace unitrain::localcluster::controllers {

namespace {

using json::Value;

constexpr std::string_view kDuration = "sim.unitrain.io/duration";
constexpr std::string_view kExitCode = "sim.unitrain.io/exit-code";
constexpr std::string_view kFailTimes = "sim.unitrain.io/fail-times";
constexpr std::string_view kFailExitCode = "sim.unitrain.io/fail-exit-code";
constexpr std::string_view kReadyAfter = "sim.unitrain.io/ready-after";
constexpr std::string_view kStartDelay = "sim.unitrain.io/start-delay";
constexpr std::string_view kLog = "sim.unitrain.io/log";

std::string annotation_pointer(std::string_view key) { return "/metadata/annotations/" + json::escape_pointer_token(key); }

int int_annotation(const Value& pod, std::string_view key, int fallback) {
  auto s = str_at(pod, annotation_pointer(key));
  int v = 0;
  if (s.empty() || std::from_chars(s.data(), s.data() + s.size(), v).ec != std::errc()) return fallback;
  return v;
}

struct Container {
  std::string name;
  std::string image;
};

struct Run {
  int exit_code = 0;
  std::string started_at;
  std::string finished_at;
  std::string container_id;
};

struct PodSim {
  std::string ns, name, uid, node;
  std::string run_key;  // identity for fail-times: what stays the same when the pod is re-created
  std::string restart_policy;
  std::vector<Container> containers, init_containers;
  Clock::duration run{};
  int exit_code = 0;
  int fail_times = 0;
  int fail_exit_code = 1;
  std::optional<Clock::duration> ready_after;
  Clock::duration start_delay{};
  bool forever = false;  // restartPolicy Always without a duration: runs until deleted
  std::vector<std::string> log_lines;

  std::string phase;  // "" not started by us, Pending (containers creating), Running, Succeeded, Failed
  bool ready = false;
  int restart_count = 0;
  std::string start_time, started_at, pod_ip, container_id;
  std::optional<Run> last;  // previous run, for lastState.terminated
  std::string waiting_reason, waiting_message;  // ContainerCreating, CrashLoopBackOff; "" while running
  bool deleting = false;
  EventLoop::TimerId run_timer = 0, ready_timer = 0, delete_timer = 0;
  json::Document ref;  // apiVersion, kind and metadata for events
};

struct NodeState {
  int index = 0;
  std::string ip;
  bool ready = true;
  EventLoop::TimerId lost_timer = 0;
};

Value condition(json::Document& d, std::string_view type, bool status, std::string_view reason,
                std::string_view now) {
  Value c(rapidjson::kObjectType);
  c.AddMember("type", json::str(type, d.alloc()), d.alloc());
  c.AddMember("status", json::str(status ? "True" : "False", d.alloc()), d.alloc());
  c.AddMember("lastProbeTime", Value(rapidjson::kNullType), d.alloc());
  c.AddMember("lastTransitionTime", json::str(now, d.alloc()), d.alloc());
  if (!reason.empty()) c.AddMember("reason", json::str(reason, d.alloc()), d.alloc());
  return c;
}

}  // namespace

struct Kubelet::Impl {
  Store& store;
  KubeletOptions opt;
  EventLoop loop;
  std::optional<ResourceInfo> pods_r, nodes_r;
  std::unordered_map<std::string, NodeState> nodes;
  std::unordered_map<std::string, PodSim> pods;   // ns/name
  std::unordered_map<std::string, int> runs;      // ns/name -> runs completed, for fail-times
  uint32_t next_ip = 0;

  Impl(Store& s, KubeletOptions o) : store(s), opt(std::move(o)), loop(s, "kubelet") {}

  std::string node_name(int i) const { return opt.node_prefix + std::to_string(i); }

  void log(const PodSim& p, const Container& c, std::string_view run_id, const std::string& line) {
    if (opt.log) opt.log(ContainerLogLine{p.ns, p.name, c.name, run_id, p.restart_count > 0, line});
  }

  void event(const PodSim& p, const Container* c, std::string_view type, std::string_view reason,
             const std::string& message) {
    std::string field = c ? fmt::format("spec.containers{{{}}}", c->name) : std::string();
    record_event(store, p.ref.root(), field, type, reason, message, {"kubelet", p.node});
  }

  void register_nodes() {
    for (int i = 0; i < opt.nodes; ++i) {
      std::string name = node_name(i);
      NodeState ns;
      ns.index = i;
      ns.ip = fmt::format("172.18.{}.{}", (i + 2) / 250, (i + 2) % 250 + 1);
      nodes.emplace(name, ns);

      auto node = json::Document::object();
      (void)json::set_string(node, "/apiVersion", "v1");
      (void)json::set_string(node, "/kind", "Node");
      (void)json::set_string(node, "/metadata/name", name);
      (void)json::set_string(node, "/metadata/labels/kubernetes.io~1hostname", name);
      (void)json::set_string(node, "/metadata/labels/kubernetes.io~1os", "linux");
      (void)json::set_string(node, "/metadata/labels/kubernetes.io~1arch", "amd64");
      (void)json::set_string(node, "/spec/podCIDR", fmt::format("10.244.{}.0/24", i % 256));
      auto created = store.create(*nodes_r, "", std::move(node));
      if (!created && created.error().code != 409) continue;
      write_node_status(name, nodes[name]);
    }
  }

  void write_node_status(const std::string& name, const NodeState& n) {
    auto st = json::Document::object();
    std::string now = now_rfc3339();
    for (std::string_view field : {"capacity", "allocatable"}) {
      std::string base = fmt::format("/status/{}/", field);
      (void)json::set_string(st, base + "cpu", opt.cpu);
      (void)json::set_string(st, base + "memory", opt.memory);
      (void)json::set_string(st, base + "pods", opt.pods);
      (void)json::set_string(st, base + "ephemeral-storage", "100Gi");
      if (opt.gpu != "0" && !opt.gpu.empty()) (void)json::set_string(st, base + "nvidia.com~1gpu", opt.gpu);
    }
    Value conds(rapidjson::kArrayType);
    Value ready(rapidjson::kObjectType);
    ready.AddMember("type", "Ready", st.alloc());
    ready.AddMember("status", "True", st.alloc());
    ready.AddMember("lastHeartbeatTime", json::str(now, st.alloc()), st.alloc());
    ready.AddMember("lastTransitionTime", json::str(now, st.alloc()), st.alloc());
    ready.AddMember("reason", "KubeletReady", st.alloc());
    ready.AddMember("message", "kubelet is posting ready status", st.alloc());
    conds.PushBack(ready, st.alloc());
    (void)json::set(st, "/status/conditions", std::move(conds));
    Value addrs(rapidjson::kArrayType);
    Value a1(rapidjson::kObjectType);
    a1.AddMember("type", "InternalIP", st.alloc());
    a1.AddMember("address", json::str(n.ip, st.alloc()), st.alloc());
    Value a2(rapidjson::kObjectType);
    a2.AddMember("type", "Hostname", st.alloc());
    a2.AddMember("address", json::str(name, st.alloc()), st.alloc());
    addrs.PushBack(a1, st.alloc());
    addrs.PushBack(a2, st.alloc());
    (void)json::set(st, "/status/addresses", std::move(addrs));
    (void)json::set_string(st, "/status/nodeInfo/kubeletVersion", "v1.32.0-unitrain-sim");
    (void)json::set_string(st, "/status/nodeInfo/containerRuntimeVersion", "sim://1.0");
    (void)json::set_string(st, "/status/nodeInfo/operatingSystem", "linux");
    (void)json::set_string(st, "/status/nodeInfo/architecture", "amd64");
    (void)store.patch(*nodes_r, "", name, PatchKind::Merge, st.dump(), "status");
  }

  std::string allocate_ip() {
    uint32_t n = next_ip++ % (256u * 254u);
    return fmt::format("10.244.{}.{}", n / 254, n % 254 + 1);
  }

  void cancel_timers(PodSim& p) {
    for (auto* t : {&p.run_timer, &p.ready_timer, &p.delete_timer}) {
      if (*t) loop.cancel(*t);
      *t = 0;
    }
  }

  // ---- events ---------------------------------------------------------------------------------

  void on_node(EventType type, const Value& obj) {
    std::string name(str_at(obj, "/metadata/name"));
    auto it = nodes.find(name);
    if (it == nodes.end() || type == EventType::Deleted) return;
    NodeState& n = it->second;
    const Value* c = find_condition(obj, "/status/conditions", "Ready");
    bool ready = c && str_at(*c, "/status") == "True";
    if (ready == n.ready) return;
    n.ready = ready;
    if (!ready) {
      n.lost_timer = loop.after(opt.node_lost_grace, [this, name] { node_lost(name); });
      return;
    }
    if (n.lost_timer) loop.cancel(n.lost_timer);
    n.lost_timer = 0;
    for (auto& [key, p] : pods)
      if (p.node == name && p.phase.empty() && !p.deleting && !opt.manual) start(p);
  }

  void on_pod(EventType type, const Value& obj) {
    std::string key = key_of(str_at(obj, "/metadata/namespace"), str_at(obj, "/metadata/name"));
    auto it = pods.find(key);
    if (type == EventType::Deleted) {
      if (it != pods.end() && it->second.uid == str_at(obj, "/metadata/uid")) {
        cancel_timers(it->second);
        pods.erase(it);
      }
      return;
    }
    std::string_view node = str_at(obj, "/spec/nodeName");
    if (node.empty() || !nodes.count(std::string(node))) return;
    if (it != pods.end() && it->second.uid != str_at(obj, "/metadata/uid")) {
      cancel_timers(it->second);
      pods.erase(it);
      it = pods.end();
    }
    if (it == pods.end()) {
      it = pods.emplace(key, make_sim(obj)).first;
      PodSim& p = it->second;
      std::string_view phase = str_at(obj, "/status/phase");
      if (phase == "Succeeded" || phase == "Failed" || phase == "Running") p.phase = std::string(phase);
      bool runnable = !opt.manual && nodes[p.node].ready && !json::find(obj, "/metadata/deletionTimestamp");
      if (p.phase.empty() && runnable) {
        start(p);
      } else if (p.phase == "Running" && runnable) {
        // Running before this kubelet started (a restart over a persisted store): the container
        // runs again from now, keeping the pod's identity and counts.
        p.start_time = std::string(str_at(obj, "/status/startTime"));
        p.pod_ip = std::string(str_at(obj, "/status/podIP"));
        if (p.pod_ip.empty()) p.pod_ip = allocate_ip();
        p.restart_count = static_cast<int>(json::get_int(obj, "/status/containerStatuses/0/restartCount").value_or(0));
        begin_run(p);
      }
    }
    PodSim& p = it->second;
    if (json::find(obj, "/metadata/deletionTimestamp") && !p.deleting) begin_delete(p, obj);
  }

  PodSim make_sim(const Value& obj) {
    PodSim p;
    p.ns = std::string(str_at(obj, "/metadata/namespace"));
    p.name = std::string(str_at(obj, "/metadata/name"));
    p.uid = std::string(str_at(obj, "/metadata/uid"));
    p.node = std::string(str_at(obj, "/spec/nodeName"));
    std::string_view generate = str_at(obj, "/metadata/generateName");
    p.run_key = generate.empty() ? key_of(p.ns, p.name) : key_of(p.ns, std::string(generate) + "*");
    p.restart_policy = std::string(str_at(obj, "/spec/restartPolicy"));
    if (p.restart_policy.empty()) p.restart_policy = "Always";
    for (auto [ptr, list] : {std::pair{"/spec/containers", &p.containers}, {"/spec/initContainers", &p.init_containers}}) {
      if (const Value* cs = json::find(obj, ptr); cs && cs->IsArray())
        for (const auto& c : cs->GetArray())
          list->push_back({std::string(str_at(c, "/name")), std::string(str_at(c, "/image"))});
    }
    auto dur = parse_go_duration(str_at(obj, annotation_pointer(kDuration)));
    p.run = dur && dur->count() >= 0 ? std::chrono::duration_cast<Clock::duration>(*dur)
                                     : std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(1));
    p.exit_code = int_annotation(obj, kExitCode, 0);
    p.fail_times = int_annotation(obj, kFailTimes, 0);
    p.fail_exit_code = int_annotation(obj, kFailExitCode, 1);
    if (auto ra = parse_go_duration(str_at(obj, annotation_pointer(kReadyAfter))); ra && ra->count() > 0)
      p.ready_after = std::chrono::duration_cast<Clock::duration>(*ra);
    if (auto sd = parse_go_duration(str_at(obj, annotation_pointer(kStartDelay))); sd && sd->count() > 0)
      p.start_delay = std::chrono::duration_cast<Clock::duration>(*sd);
    p.forever = p.restart_policy == "Always" && !dur;
    std::string_view text = str_at(obj, annotation_pointer(kLog));
    while (!text.empty()) {
      auto nl = text.find('\n');
      p.log_lines.emplace_back(text.substr(0, nl));
      text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    }
    p.ref = json::Document::object();
    (void)json::set_string(p.ref, "/apiVersion", "v1");
    (void)json::set_string(p.ref, "/kind", "Pod");
    for (const char* f : {"name", "namespace", "uid", "resourceVersion"})
      (void)json::set_string(p.ref, std::string("/metadata/") + f, str_at(obj, std::string("/metadata/") + f));
    return p;
  }

  // ---- pod lifecycle --------------------------------------------------------------------------

  void start(PodSim& p) {
    p.phase = "Pending";
    p.start_time = now_rfc3339();
    p.pod_ip = allocate_ip();
    for (const auto& c : p.init_containers) {
      std::string id = fmt::format("containerd://{}-init-{}", p.uid, c.name);
      log(p, c, id, fmt::format("starting container {}", c.name));
      log(p, c, id, fmt::format("container {} exited with code 0", c.name));
    }
    for (const auto& c : p.containers) event(p, &c, "Normal", "Pulling", fmt::format("Pulling image \"{}\"", c.image));
    if (p.start_delay == Clock::duration::zero()) {
      begin_run(p);
      return;
    }
    p.waiting_reason = "ContainerCreating";
    write_status(p, nullptr);
    after(p, p.start_delay, p.run_timer, [this](PodSim& q) { begin_run(q); });
  }

  // Runs `fn` on the pod after `delay` unless it was deleted or re-created meanwhile.
  void after(PodSim& p, Clock::duration delay, EventLoop::TimerId& slot, std::function<void(PodSim&)> fn) {
    std::string key = key_of(p.ns, p.name);
    std::string uid = p.uid;
    auto which = &slot == &p.run_timer ? 0 : &slot == &p.ready_timer ? 1 : 2;
    slot = loop.after(delay, [this, key, uid, which, fn = std::move(fn)] {
      auto it = pods.find(key);
      if (it == pods.end() || it->second.uid != uid) return;
      PodSim& q = it->second;
      (which == 0 ? q.run_timer : which == 1 ? q.ready_timer : q.delete_timer) = 0;
      fn(q);
    });
  }

  void begin_run(PodSim& p) {
    p.phase = "Running";
    p.waiting_reason.clear();
    p.waiting_message.clear();
    p.started_at = now_rfc3339();
    p.container_id = fmt::format("containerd://{}-{}", p.uid, p.restart_count);
    p.ready = !p.ready_after;
    for (const auto& c : p.containers) {
      if (p.restart_count == 0)
        event(p, &c, "Normal", "Pulled",
              fmt::format("Successfully pulled image \"{}\" in 0s (0s including waiting). Image size: 0 bytes.", c.image));
      else
        event(p, &c, "Normal", "Pulled", fmt::format("Container image \"{}\" already present on machine", c.image));
      event(p, &c, "Normal", "Created", fmt::format("Created container: {}", c.name));
      event(p, &c, "Normal", "Started", fmt::format("Started container {}", c.name));
      log(p, c, p.container_id, fmt::format("starting container {}", c.name));
      for (const auto& line : p.log_lines) log(p, c, p.container_id, line);
    }
    write_status(p, nullptr);
    if (p.ready_after) after(p, *p.ready_after, p.ready_timer, [this](PodSim& q) {
      if (q.phase != "Running" || !q.waiting_reason.empty()) return;
      q.ready = true;
      write_status(q, nullptr);
    });
    if (!p.forever) after(p, p.run, p.run_timer, [this](PodSim& q) { finish_run(q); });
  }

  // Kubernetes' restart back-off: the base, doubled per restart already made, capped.
  Clock::duration backoff(int restarts) const {
    auto d = std::chrono::duration_cast<Clock::duration>(opt.restart_backoff);
    auto cap = std::chrono::duration_cast<Clock::duration>(opt.restart_backoff_max);
    for (int i = 0; i < restarts && d < cap; ++i) d *= 2;
    return std::min(d, cap);
  }

  void finish_run(PodSim& p) {
    if (p.ready_timer) loop.cancel(p.ready_timer);
    p.ready_timer = 0;
    int& done = runs[p.run_key];
    int code = done < p.fail_times ? p.fail_exit_code : p.exit_code;
    ++done;
    for (const auto& c : p.containers) log(p, c, p.container_id, fmt::format("container {} exited with code {}", c.name, code));
    Run r{code, p.started_at, now_rfc3339(), p.container_id};
    bool restart = p.restart_policy == "Always" || (p.restart_policy == "OnFailure" && code != 0);
    if (!restart) {
      p.phase = code == 0 ? "Succeeded" : "Failed";
      p.ready = false;
      write_status(p, &r);
      return;
    }
    p.last = r;
    p.ready = false;
    auto delay = backoff(p.restart_count);
    ++p.restart_count;
    if (delay <= Clock::duration::zero()) {
      begin_run(p);
      return;
    }
    p.waiting_reason = "CrashLoopBackOff";
    for (const auto& c : p.containers) {
      p.waiting_message = fmt::format("back-off {} restarting failed container={} pod={}_{}({})",
                                      go_duration(std::chrono::duration_cast<std::chrono::milliseconds>(delay)), c.name,
                                      p.name, p.ns, p.uid);
      event(p, &c, "Warning", "BackOff",
            fmt::format("Back-off restarting failed container {} in pod {}_{}({})", c.name, p.name, p.ns, p.uid));
    }
    write_status(p, nullptr);
    after(p, delay, p.run_timer, [this](PodSim& q) { begin_run(q); });
  }

  // Go's time.Duration.String() at millisecond precision ("300ms", "10s", "1.5s", "5m0s").
  static std::string go_duration(std::chrono::milliseconds d) {
    int64_t ms = d.count();
    if (ms < 1000) return fmt::format("{}ms", ms);
    std::string seconds = ms % 1000 == 0 ? fmt::format("{}s", (ms / 1000) % 60)
                                         : fmt::format("{}s", static_cast<double>(ms % 60000) / 1000.0);
    return ms < 60000 ? seconds : fmt::format("{}m{}", ms / 60000, seconds);
  }

  void begin_delete(PodSim& p, const Value& obj) {
    p.deleting = true;
    if (p.run_timer) loop.cancel(p.run_timer);
    if (p.ready_timer) loop.cancel(p.ready_timer);
    p.run_timer = p.ready_timer = 0;
    auto grace_s = json::get_int(obj, "/metadata/deletionGracePeriodSeconds").value_or(30);
    auto grace = std::min<Clock::duration>(std::chrono::seconds(std::max<int64_t>(grace_s, 0)),
                                           opt.max_termination_grace);
    if (p.phase != "Running") grace = Clock::duration::zero();
    if (p.phase == "Running" && !opt.manual)
      for (const auto& c : p.containers) event(p, &c, "Normal", "Killing", fmt::format("Stopping container {}", c.name));
    std::string key = key_of(p.ns, p.name);
    std::string uid = p.uid;
    p.delete_timer = loop.after(grace, [this, key, uid] {
      auto it = pods.find(key);
      if (it == pods.end() || it->second.uid != uid) return;
      PodSim& pod = it->second;
      pod.delete_timer = 0;
      if (pod.phase == "Running" && !opt.manual) {
        for (const auto& c : pod.containers)
          log(pod, c, pod.container_id, fmt::format("container {} exited with code 143", c.name));
        Run r{143, pod.started_at, now_rfc3339(), pod.container_id};
        pod.phase = "Failed";
        pod.ready = false;
        write_status(pod, &r);
      }
      DeleteRequest req;
      req.grace_period_seconds = 0;
      req.precondition_uid = uid;
      (void)store.remove(*pods_r, pod.ns, pod.name, req);
    });
  }

  void node_lost(const std::string& node) {
    auto nit = nodes.find(node);
    if (nit == nodes.end()) return;
    nit->second.lost_timer = 0;
    if (nit->second.ready || opt.manual) return;
    for (auto& [key, p] : pods) {
      if (p.node != node || p.phase != "Running" || p.deleting) continue;
      if (p.run_timer) loop.cancel(p.run_timer);
      if (p.ready_timer) loop.cancel(p.ready_timer);
      p.run_timer = p.ready_timer = 0;
      p.phase = "Failed";
      p.ready = false;
      auto st = json::Document::object();
      std::string now = now_rfc3339();
      (void)json::set_string(st, "/status/phase", "Failed");
      (void)json::set_string(st, "/status/reason", "NodeLost");
      (void)json::set_string(st, "/status/message",
                             fmt::format("Node {} which was running pod {} is unresponsive", node, p.name));
      Value conds(rapidjson::kArrayType);
      conds.PushBack(condition(st, "Ready", false, "NodeLost", now), st.alloc());
      conds.PushBack(condition(st, "ContainersReady", false, "NodeLost", now), st.alloc());
      (void)json::set(st, "/status/conditions", std::move(conds));
      (void)store.patch(*pods_r, p.ns, p.name, PatchKind::Strategic, st.dump(), "status");
    }
  }

  // The whole kubelet-owned part of pod status; `final_run` set when the containers terminated.
  // A JSON merge patch: the arrays (conditions, container statuses) are replaced whole, so no
  // stale state and no null placeholders are left behind.
  void write_status(const PodSim& p, const Run* final_run) {
    auto st = json::Document::object();
    auto& a = st.alloc();
    std::string now = now_rfc3339();
    const NodeState& n = nodes[p.node];
    (void)json::set_string(st, "/status/phase", p.phase);
    (void)json::set_string(st, "/status/hostIP", n.ip);
    (void)json::set_string(st, "/status/podIP", p.pod_ip);
    Value host_ips(rapidjson::kArrayType), pod_ips(rapidjson::kArrayType);
    Value hip(rapidjson::kObjectType), pip(rapidjson::kObjectType);
    hip.AddMember("ip", json::str(n.ip, a), a);
    pip.AddMember("ip", json::str(p.pod_ip, a), a);
    host_ips.PushBack(hip, a);
    pod_ips.PushBack(pip, a);
    (void)json::set(st, "/status/hostIPs", std::move(host_ips));
    (void)json::set(st, "/status/podIPs", std::move(pod_ips));
    (void)json::set_string(st, "/status/startTime", p.start_time);

    bool terminal = final_run != nullptr;
    std::string_view not_ready = terminal ? "PodCompleted" : "ContainersNotReady";
    Value conds(rapidjson::kArrayType);
    conds.PushBack(condition(st, "PodReadyToStartContainers", !terminal, "", now), a);
    conds.PushBack(condition(st, "Initialized", true, terminal ? "PodCompleted" : "", now), a);
    conds.PushBack(condition(st, "Ready", p.ready, p.ready ? "" : not_ready, now), a);
    conds.PushBack(condition(st, "ContainersReady", p.ready, p.ready ? "" : not_ready, now), a);
    conds.PushBack(condition(st, "PodScheduled", true, "", now), a);
    (void)json::set(st, "/status/conditions", std::move(conds));

    auto terminated = [&](const Run& r) {
      Value t(rapidjson::kObjectType);
      t.AddMember("exitCode", r.exit_code, a);
      t.AddMember("reason", json::str(r.exit_code == 0 ? "Completed" : "Error", a), a);
      t.AddMember("startedAt", json::str(r.started_at, a), a);
      t.AddMember("finishedAt", json::str(r.finished_at, a), a);
      t.AddMember("containerID", json::str(r.container_id, a), a);
      return t;
    };
    auto status_of = [&](const Container& c, bool init) {
      Value s(rapidjson::kObjectType);
      s.AddMember("name", json::str(c.name, a), a);
      s.AddMember("image", json::str(c.image, a), a);
      s.AddMember("imageID", json::str(c.image, a), a);
      Value state(rapidjson::kObjectType);
      Value last(rapidjson::kObjectType);
      bool created = !(p.waiting_reason == "ContainerCreating");
      if (init) {
        Run r{0, p.start_time, p.start_time, fmt::format("containerd://{}-init-{}", p.uid, c.name)};
        state.AddMember("terminated", terminated(r), a);
        s.AddMember("containerID", json::str(r.container_id, a), a);
        s.AddMember("ready", true, a);
        s.AddMember("restartCount", 0, a);
        s.AddMember("started", false, a);
      } else {
        if (final_run) {
          state.AddMember("terminated", terminated(*final_run), a);
        } else if (!p.waiting_reason.empty()) {
          Value waiting(rapidjson::kObjectType);
          waiting.AddMember("reason", json::str(p.waiting_reason, a), a);
          if (!p.waiting_message.empty()) waiting.AddMember("message", json::str(p.waiting_message, a), a);
          state.AddMember("waiting", waiting, a);
        } else {
          Value running(rapidjson::kObjectType);
          running.AddMember("startedAt", json::str(p.started_at, a), a);
          state.AddMember("running", running, a);
        }
        if (p.last) last.AddMember("terminated", terminated(*p.last), a);
        if (created) s.AddMember("containerID", json::str(final_run ? final_run->container_id : p.container_id, a), a);
        s.AddMember("ready", p.ready && !final_run, a);
        s.AddMember("restartCount", p.restart_count, a);
        s.AddMember("started", !final_run && p.waiting_reason.empty(), a);
      }
      s.AddMember("state", state, a);
      s.AddMember("lastState", last, a);
      return s;
    };
    Value cs(rapidjson::kArrayType), ics(rapidjson::kArrayType);
    for (const auto& c : p.containers) cs.PushBack(status_of(c, false), a);
    for (const auto& c : p.init_containers) ics.PushBack(status_of(c, true), a);
    (void)json::set(st, "/status/containerStatuses", std::move(cs));
    if (!p.init_containers.empty()) (void)json::set(st, "/status/initContainerStatuses", std::move(ics));
    (void)store.patch(*pods_r, p.ns, p.name, PatchKind::Merge, st.dump(), "status");
  }
};

Kubelet::Kubelet(Store& store, KubeletOptions options) : impl_(std::make_unique<Impl>(store, std::move(options))) {
  Impl& k = *impl_;
  k.pods_r = resource(store, "", "v1", "pods");
  k.nodes_r = resource(store, "", "v1", "nodes");
  if (!k.pods_r || !k.nodes_r) return;  // a store without core resources has nothing to run
  k.register_nodes();
  k.loop.watch(*k.nodes_r, "", [&k](EventType t, const json::Value& o) { k.on_node(t, o); });
  k.loop.watch(*k.pods_r, "", [&k](EventType t, const json::Value& o) { k.on_pod(t, o); });
  k.loop.start();
}

Kubelet::~Kubelet() { impl_->loop.stop(); }

std::string Kubelet::node_name(int index) const { return impl_->node_name(index); }

}  // namespace unitrain::localcluster::controllers
