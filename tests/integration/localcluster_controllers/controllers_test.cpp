// The local cluster's controllers against a real in-memory Store and its watches, with short
// simulated durations (50-300 ms) so every scenario finishes within seconds.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/api/time.h"
#include "localcluster/controllers/controller_base.h"
#include "localcluster/controllers/controllers.h"
#include "localcluster/controllers/podgroup_crds.h"
#include "localcluster/disruption.h"
#include "localcluster/memory_store.h"
#include "tests/support/eventually.h"

using namespace unitrain;
using namespace unitrain::localcluster;
using namespace unitrain::localcluster::controllers;
using namespace std::chrono_literals;

namespace {

using unitrain::testing::eventually;

json::Document parse(const std::string& text) {
  auto d = json::Document::parse(text);
  REQUIRE(d);
  return std::move(*d);
}

struct Env {
  std::unique_ptr<Store> store;
  ResourceInfo pods, nodes, jobs, configmaps;
  std::mutex log_mu;
  std::vector<std::string> log;

  Env() {
    auto s = make_memory_store({});
    REQUIRE(s);
    store = std::move(*s);
    pods = *store->find_resource("", "v1", "pods");
    nodes = *store->find_resource("", "v1", "nodes");
    jobs = *store->find_resource("batch", "v1", "jobs");
    configmaps = *store->find_resource("", "v1", "configmaps");
  }

  ContainerLogSink sink() {
    return [this](const ContainerLogLine& l) {
      std::lock_guard lock(log_mu);
      log.push_back(fmt::format("{}/{}: {}", l.ns, l.pod, l.line));
    };
  }
  std::vector<std::string> logs() {
    std::lock_guard l(log_mu);
    return log;
  }

  std::optional<json::Document> get(const ResourceInfo& r, std::string_view name, std::string_view ns = "default") {
    auto g = store->get(r, r.namespaced ? ns : "", name);
    if (!g) return std::nullopt;
    return std::move(*g);
  }
  std::string str(const ResourceInfo& r, std::string_view name, std::string_view pointer) {
    auto g = get(r, name);
    return g ? std::string(str_at(g->root(), pointer)) : std::string();
  }
  json::Document create(const ResourceInfo& r, const std::string& text) {
    auto c = store->create(r, r.namespaced ? "default" : "", parse(text));
    if (!c) FAIL("create: " << c.error().message);
    return std::move(*c);
  }
  void remove(const ResourceInfo& r, std::string_view name, std::optional<std::string> policy,
              std::optional<int64_t> grace = std::nullopt) {
    DeleteRequest req;
    req.propagation_policy = std::move(policy);
    req.grace_period_seconds = grace;
    auto d = store->remove(r, "default", name, req);
    if (!d) FAIL("delete: " << d.error().message);
  }
  std::vector<json::Document> list(const ResourceInfo& r, const std::string& selector = "") {
    ListRequest req;
    req.label_selector = selector;
    auto l = store->list(r, "default", req);
    REQUIRE(l);
    auto d = parse(*l);
    std::vector<json::Document> out;
    for (const auto& item : json::find(d.root(), "/items")->GetArray()) out.push_back(json::Document::copy_of(item));
    return out;
  }
  std::string condition(const ResourceInfo& r, std::string_view name, std::string_view type,
                        std::string_view field = "/status") {
    auto g = get(r, name);
    if (!g) return "";
    const json::Value* c = find_condition(g->root(), "/status/conditions", type);
    return c ? std::string(str_at(*c, field)) : "";
  }
};

std::string pod_json(const std::string& name, const std::string& annotations, const std::string& restart = "Never",
                     const std::string& cpu = "100m", const std::string& extra_meta = "",
                     const std::string& scheduler = "default-scheduler") {
  return fmt::format(
      R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{}","annotations":{{{}}}{}}},
          "spec":{{"schedulerName":"{}","restartPolicy":"{}","initContainers":[{{"name":"init","image":"busybox"}}],
          "containers":[{{"name":"main","image":"trainer:1","resources":{{"requests":{{"cpu":"{}","memory":"64Mi"}}}}}}]}}}})",
      name, annotations, extra_meta, scheduler, restart, cpu);
}

KubeletOptions kubelet_options(Env& env, int nodes = 3, std::string cpu = "8") {
  KubeletOptions k;
  k.nodes = nodes;
  k.cpu = std::move(cpu);
  k.memory = "16Gi";
  k.log = env.sink();
  k.node_lost_grace = 200ms;
  k.max_termination_grace = 100ms;
  k.restart_backoff = 0ms;  // restarts at once; the back-off has its own test
  return k;
}

ControllersOptions all(Env& env, int nodes = 3, std::string cpu = "8") {
  ControllersOptions o;
  o.kubelet_options = kubelet_options(env, nodes, std::move(cpu));
  return o;
}

}  // namespace

TEST_CASE("go durations parse as time.ParseDuration does", "[base]") {
  CHECK(parse_go_duration("500ms") == std::chrono::milliseconds(500));
  CHECK(parse_go_duration("1m30s") == std::chrono::seconds(90));
  CHECK(parse_go_duration("1.5h") == std::chrono::minutes(90));
  CHECK(parse_go_duration("0") == std::chrono::nanoseconds(0));
  CHECK_FALSE(parse_go_duration("10").has_value());
  CHECK_FALSE(parse_go_duration("5x").has_value());
}

TEST_CASE("kubelet registers nodes and runs a pod to Succeeded", "[kubelet]") {
  Env env;
  Controllers c(*env.store, all(env));
  REQUIRE(eventually([&] { return env.get(env.nodes, "node-2").has_value(); }));
  CHECK(env.condition(env.nodes, "node-0", "Ready") == "True");
  CHECK(env.str(env.nodes, "node-0", "/status/allocatable/cpu") == "8");
  CHECK(env.str(env.nodes, "node-0", "/status/capacity/nvidia.com~1gpu") == "8");

  env.create(env.pods, pod_json("p1", R"("sim.unitrain.io/duration":"150ms")"));
  REQUIRE(eventually([&] { return env.str(env.pods, "p1", "/status/phase") == "Running"; }));
  auto running = *env.get(env.pods, "p1");
  CHECK(str_at(running.root(), "/spec/nodeName").starts_with("node-"));
  CHECK(str_at(running.root(), "/status/podIP").starts_with("10.244."));
  CHECK(str_at(running.root(), "/status/hostIP").starts_with("172.18."));
  CHECK_FALSE(str_at(running.root(), "/status/startTime").empty());
  CHECK(str_at(running.root(), "/status/containerStatuses/0/state/running/startedAt").size() == 20);
  CHECK(json::get_bool(running.root(), "/status/containerStatuses/0/ready") == true);
  CHECK(str_at(running.root(), "/status/containerStatuses/0/image") == "trainer:1");
  CHECK(str_at(running.root(), "/status/initContainerStatuses/0/state/terminated/reason") == "Completed");
  CHECK(env.condition(env.pods, "p1", "PodScheduled") == "True");
  CHECK(env.condition(env.pods, "p1", "Ready") == "True");

  REQUIRE(eventually([&] { return env.str(env.pods, "p1", "/status/phase") == "Succeeded"; }));
  auto done = *env.get(env.pods, "p1");
  CHECK(json::get_int(done.root(), "/status/containerStatuses/0/state/terminated/exitCode") == 0);
  CHECK(str_at(done.root(), "/status/containerStatuses/0/state/terminated/reason") == "Completed");
  CHECK(env.condition(env.pods, "p1", "Ready") == "False");
  auto logs = env.logs();
  CHECK(std::find(logs.begin(), logs.end(), "default/p1: starting container main") != logs.end());
  CHECK(std::find(logs.begin(), logs.end(), "default/p1: container main exited with code 0") != logs.end());
}

TEST_CASE("fail-times with restartPolicy Never fails the first runs of a name, then succeeds", "[kubelet]") {
  Env env;
  Controllers c(*env.store, all(env));
  std::string ann = R"("sim.unitrain.io/duration":"50ms","sim.unitrain.io/fail-times":"2","sim.unitrain.io/fail-exit-code":"3")";
  for (int run = 0; run < 3; ++run) {
    env.create(env.pods, pod_json("flaky", ann));
    std::string expected = run < 2 ? "Failed" : "Succeeded";
    REQUIRE(eventually([&] { return env.str(env.pods, "flaky", "/status/phase") == expected; }));
    auto pod = *env.get(env.pods, "flaky");
    CHECK(json::get_int(pod.root(), "/status/containerStatuses/0/state/terminated/exitCode") == (run < 2 ? 3 : 0));
    env.remove(env.pods, "flaky", std::nullopt);
    REQUIRE(eventually([&] { return !env.get(env.pods, "flaky").has_value(); }));
  }
}

TEST_CASE("restartPolicy OnFailure restarts in place, Always restarts after success", "[kubelet]") {
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.pods, pod_json("onfail", R"("sim.unitrain.io/duration":"50ms","sim.unitrain.io/fail-times":"2")",
                                "OnFailure"));
  REQUIRE(eventually([&] { return env.str(env.pods, "onfail", "/status/phase") == "Succeeded"; }));
  auto pod = *env.get(env.pods, "onfail");
  CHECK(json::get_int(pod.root(), "/status/containerStatuses/0/restartCount") == 2);
  CHECK(json::get_int(pod.root(), "/status/containerStatuses/0/lastState/terminated/exitCode") == 1);

  env.create(env.pods, pod_json("always", R"("sim.unitrain.io/duration":"50ms")", "Always"));
  REQUIRE(eventually([&] {
    auto p = env.get(env.pods, "always");
    return p && json::get_int(p->root(), "/status/containerStatuses/0/restartCount").value_or(0) >= 2;
  }));
  auto again = *env.get(env.pods, "always");
  CHECK(str_at(again.root(), "/status/phase") == "Running");
  CHECK(json::get_int(again.root(), "/status/containerStatuses/0/lastState/terminated/exitCode") == 0);
}

TEST_CASE("ready-after delays the Ready condition", "[kubelet]") {
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.pods, pod_json("slow", R"("sim.unitrain.io/duration":"5s","sim.unitrain.io/ready-after":"300ms")"));
  REQUIRE(eventually([&] { return env.str(env.pods, "slow", "/status/phase") == "Running"; }));
  CHECK(env.condition(env.pods, "slow", "Ready") == "False");
  REQUIRE(eventually([&] { return env.condition(env.pods, "slow", "Ready") == "True"; }));
}

TEST_CASE("graceful deletion stops the container, then removes the pod", "[kubelet]") {
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.pods, pod_json("victim", R"("sim.unitrain.io/duration":"1h")"));
  REQUIRE(eventually([&] { return env.str(env.pods, "victim", "/status/phase") == "Running"; }));
  env.remove(env.pods, "victim", std::nullopt);
  CHECK(env.get(env.pods, "victim").has_value());  // still there: graceful
  REQUIRE(eventually([&] { return !env.get(env.pods, "victim").has_value(); }));
  auto logs = env.logs();
  CHECK(std::find(logs.begin(), logs.end(), "default/victim: container main exited with code 143") != logs.end());
}

TEST_CASE("kubelet manual mode changes no pod phase", "[kubelet]") {
  Env env;
  auto o = all(env);
  o.kubelet_options.manual = true;
  Controllers c(*env.store, std::move(o));
  env.create(env.pods, pod_json("still", R"("sim.unitrain.io/duration":"10ms")"));
  REQUIRE(eventually([&] { return !env.str(env.pods, "still", "/spec/nodeName").empty(); }));
  std::this_thread::sleep_for(300ms);
  CHECK(env.str(env.pods, "still", "/status/phase") == "Pending");
}

TEST_CASE("a NotReady node loses its running pods after the grace period", "[kubelet]") {
  Env env;
  Controllers c(*env.store, all(env, 1));
  env.create(env.pods, pod_json("onnode", R"("sim.unitrain.io/duration":"1h")"));
  REQUIRE(eventually([&] { return env.str(env.pods, "onnode", "/status/phase") == "Running"; }));
  auto patched = env.store->patch(
      env.nodes, "", "node-0", PatchKind::Strategic,
      R"({"status":{"conditions":[{"type":"Ready","status":"False","reason":"NodeStatusUnknown"}]}})", "status");
  REQUIRE(patched);
  REQUIRE(eventually([&] { return env.str(env.pods, "onnode", "/status/phase") == "Failed"; }));
  CHECK(env.str(env.pods, "onnode", "/status/reason") == "NodeLost");
  CHECK(env.condition(env.pods, "onnode", "DisruptionTarget") == "True");
  CHECK(env.condition(env.pods, "onnode", "DisruptionTarget", "/reason") == "DeletionByTaintManager");
  // The scheduler no longer places pods there.
  env.create(env.pods, pod_json("later", R"("sim.unitrain.io/duration":"1h")"));
  REQUIRE(eventually([&] { return env.condition(env.pods, "later", "PodScheduled", "/reason") == "Unschedulable"; }));
  CHECK(env.condition(env.pods, "later", "PodScheduled", "/message") ==
        "0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }.");
}

TEST_CASE("scheduler reports unfit pods and binds them when capacity frees", "[scheduler]") {
  Env env;
  Controllers c(*env.store, all(env, 3, "2"));
  for (int i = 0; i < 3; ++i)
    env.create(env.pods, pod_json(fmt::format("big-{}", i), R"("sim.unitrain.io/duration":"1h")", "Never", "1500m"));
  REQUIRE(eventually([&] {
    for (int i = 0; i < 3; ++i)
      if (env.str(env.pods, fmt::format("big-{}", i), "/status/phase") != "Running") return false;
    return true;
  }));
  std::vector<std::string> nodes_used;
  for (int i = 0; i < 3; ++i) nodes_used.push_back(env.str(env.pods, fmt::format("big-{}", i), "/spec/nodeName"));
  std::sort(nodes_used.begin(), nodes_used.end());
  CHECK(nodes_used == std::vector<std::string>{"node-0", "node-1", "node-2"});

  env.create(env.pods, pod_json("waiting", R"("sim.unitrain.io/duration":"100ms")", "Never", "1"));
  REQUIRE(eventually([&] { return env.condition(env.pods, "waiting", "PodScheduled", "/reason") == "Unschedulable"; }));
  CHECK(env.condition(env.pods, "waiting", "PodScheduled") == "False");
  CHECK(env.condition(env.pods, "waiting", "PodScheduled", "/message") ==
        "0/3 nodes are available: 3 Insufficient cpu.");
  CHECK(env.str(env.pods, "waiting", "/spec/nodeName").empty());

  env.remove(env.pods, "big-1", std::nullopt, 0);
  REQUIRE(eventually([&] { return env.str(env.pods, "waiting", "/status/phase") == "Succeeded"; }));
  CHECK(env.condition(env.pods, "waiting", "PodScheduled") == "True");
}

namespace {

void gang_scenario(Env& env, bool volcano) {
  // 3 nodes x 2 cpu; two 1-cpu blockers leave room for 4 of the 5 gang members.
  env.create(env.pods, pod_json("blocker-0", R"("sim.unitrain.io/duration":"1h")", "Never", "1"));
  env.create(env.pods, pod_json("blocker-1", R"("sim.unitrain.io/duration":"1h")", "Never", "1"));
  REQUIRE(eventually([&] {
    return env.str(env.pods, "blocker-0", "/status/phase") == "Running" &&
           env.str(env.pods, "blocker-1", "/status/phase") == "Running";
  }));
  ResourceInfo pg = volcano ? *env.store->find_resource("scheduling.volcano.sh", "v1beta1", "podgroups")
                            : *env.store->find_resource("scheduling.x-k8s.io", "v1alpha1", "podgroups");
  env.create(pg, fmt::format(R"({{"apiVersion":"{}","kind":"PodGroup","metadata":{{"name":"gang"}},
                                 "spec":{{"minMember":5{}}}}})",
                             pg.api_version(), volcano ? R"(,"minResources":{"cpu":"5"})" : ""));
  for (int i = 0; i < 5; ++i) {
    std::string meta = volcano ? R"(,"labels":{})" : R"(,"labels":{"scheduling.x-k8s.io/pod-group":"gang"})";
    std::string ann = R"("sim.unitrain.io/duration":"1h")";
    if (volcano) ann += R"(,"scheduling.k8s.io/group-name":"gang")";
    env.create(env.pods, pod_json(fmt::format("member-{}", i), ann, "Never", "1", meta,
                                  volcano ? "volcano" : "scheduler-plugins-scheduler"));
  }
  REQUIRE(eventually([&] {
    for (int i = 0; i < 5; ++i)
      if (env.condition(env.pods, fmt::format("member-{}", i), "PodScheduled", "/reason") != "Unschedulable")
        return false;
    return true;
  }));
  std::this_thread::sleep_for(200ms);
  for (int i = 0; i < 5; ++i) CHECK(env.str(env.pods, fmt::format("member-{}", i), "/spec/nodeName").empty());
  CHECK(env.str(pg, "gang", "/status/phase") == (volcano ? "Pending" : "Scheduling"));

  env.remove(env.pods, "blocker-0", std::nullopt, 0);
  REQUIRE(eventually([&] {
    for (int i = 0; i < 5; ++i)
      if (env.str(env.pods, fmt::format("member-{}", i), "/status/phase") != "Running") return false;
    return true;
  }));
  REQUIRE(eventually([&] { return env.str(pg, "gang", "/status/phase") == "Running"; }));
  auto group = *env.get(pg, "gang");
  CHECK(json::get_int(group.root(), "/status/running") == 5);
  if (!volcano) CHECK(json::get_int(group.root(), "/status/scheduled") == 5);
}

}  // namespace

TEST_CASE("Volcano gang: none of 5 bind while 4 fit, all bind once capacity frees", "[scheduler][gang]") {
  Env env;
  REQUIRE(install_podgroup_crds(*env.store, {true, false}));
  Controllers c(*env.store, all(env, 3, "2"));
  gang_scenario(env, true);
}

TEST_CASE("scheduler-plugins gang: none of 5 bind while 4 fit, all bind once capacity frees", "[scheduler][gang]") {
  Env env;
  REQUIRE(install_podgroup_crds(*env.store, {false, true}));
  Controllers c(*env.store, all(env, 3, "2"));
  gang_scenario(env, false);
}

TEST_CASE("podgroup CRDs installed after start are picked up", "[scheduler][gang]") {
  Env env;
  Controllers c(*env.store, all(env, 1, "4"));
  env.create(env.pods, pod_json("vpod", R"("sim.unitrain.io/duration":"1h")", "Never", "1", "", "volcano"));
  std::this_thread::sleep_for(200ms);
  CHECK(env.str(env.pods, "vpod", "/spec/nodeName").empty());  // volcano not served yet
  REQUIRE(install_podgroup_crds(*env.store));
  // Without a group annotation a volcano pod schedules on its own.
  REQUIRE(eventually([&] { return !env.str(env.pods, "vpod", "/spec/nodeName").empty(); }));
}

namespace {

std::string cm_json(const std::string& name, const std::string& owner_name = "", const std::string& owner_uid = "",
                    bool block = false) {
  std::string refs;
  if (!owner_uid.empty())
    refs = fmt::format(R"(,"ownerReferences":[{{"apiVersion":"v1","kind":"ConfigMap","name":"{}","uid":"{}",
                          "blockOwnerDeletion":{}}}])",
                       owner_name, owner_uid, block ? "true" : "false");
  return fmt::format(R"({{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{}"{}}},"data":{{"a":"b"}}}})",
                     name, refs);
}

}  // namespace

TEST_CASE("garbage collector: background, foreground and orphan propagation", "[gc]") {
  Env env;
  GarbageCollector gc(*env.store);

  SECTION("background") {
    auto owner = env.create(env.configmaps, cm_json("owner"));
    std::string uid(str_at(owner.root(), "/metadata/uid"));
    env.create(env.configmaps, cm_json("dep-a", "owner", uid));
    env.create(env.configmaps, cm_json("dep-b", "owner", uid, true));
    env.remove(env.configmaps, "owner", "Background");
    CHECK_FALSE(env.get(env.configmaps, "owner").has_value());
    REQUIRE(eventually([&] {
      return !env.get(env.configmaps, "dep-a").has_value() && !env.get(env.configmaps, "dep-b").has_value();
    }));
  }
  SECTION("foreground") {
    auto owner = env.create(env.configmaps, cm_json("owner"));
    std::string uid(str_at(owner.root(), "/metadata/uid"));
    auto dep = env.create(env.configmaps, cm_json("dep", "owner", uid, true));
    env.create(env.configmaps, cm_json("grandchild", "dep", std::string(str_at(dep.root(), "/metadata/uid")), true));
    env.remove(env.configmaps, "owner", "Foreground");
    auto deleting = env.get(env.configmaps, "owner");
    REQUIRE(deleting.has_value());
    CHECK(json::find(deleting->root(), "/metadata/deletionTimestamp") != nullptr);
    REQUIRE(eventually([&] { return !env.get(env.configmaps, "owner").has_value(); }));
    // The owner goes last.
    CHECK_FALSE(env.get(env.configmaps, "dep").has_value());
    CHECK_FALSE(env.get(env.configmaps, "grandchild").has_value());
  }
  SECTION("orphan") {
    auto owner = env.create(env.configmaps, cm_json("owner"));
    std::string uid(str_at(owner.root(), "/metadata/uid"));
    env.create(env.configmaps, cm_json("dep", "owner", uid, true));
    env.remove(env.configmaps, "owner", "Orphan");
    REQUIRE(eventually([&] { return !env.get(env.configmaps, "owner").has_value(); }));
    std::this_thread::sleep_for(100ms);
    auto dep = env.get(env.configmaps, "dep");
    REQUIRE(dep.has_value());
    CHECK(json::find(dep->root(), "/metadata/ownerReferences") == nullptr);
  }
  SECTION("dependents of an owner that no longer exists") {
    env.create(env.configmaps, cm_json("dangling", "ghost", "00000000-0000-0000-0000-000000000000"));
    REQUIRE(eventually([&] { return !env.get(env.configmaps, "dangling").has_value(); }));
  }
}

TEST_CASE("garbage collector collects dependents left from before it started", "[gc]") {
  Env env;
  auto owner = env.create(env.configmaps, cm_json("owner"));
  env.create(env.configmaps, cm_json("dep", "owner", std::string(str_at(owner.root(), "/metadata/uid"))));
  env.remove(env.configmaps, "owner", "Background");
  REQUIRE(env.get(env.configmaps, "dep").has_value());
  GarbageCollector gc(*env.store);
  REQUIRE(eventually([&] { return !env.get(env.configmaps, "dep").has_value(); }));
}

namespace {

std::string job_json(const std::string& name, const std::string& spec_extra, const std::string& annotations,
                     const std::string& restart = "Never") {
  return fmt::format(
      R"({{"apiVersion":"batch/v1","kind":"Job","metadata":{{"name":"{}"}},
          "spec":{{{}"template":{{"metadata":{{"annotations":{{{}}}}},
          "spec":{{"restartPolicy":"{}","containers":[{{"name":"main","image":"launcher:1"}}]}}}}}}}})",
      name, spec_extra, annotations, restart);
}

std::vector<std::string> condition_types(const json::Document& job) {
  std::vector<std::string> out;
  if (const json::Value* cs = json::find(job.root(), "/status/conditions"); cs && cs->IsArray())
    for (const auto& c : cs->GetArray()) out.emplace_back(str_at(c, "/type"));
  return out;
}

}  // namespace

TEST_CASE("Job 1/1 runs its pod and completes as Kubernetes reports it", "[job]") {
  Env env;
  Controllers c(*env.store, all(env));
  auto job = env.create(env.jobs, job_json("one", "", R"("sim.unitrain.io/duration":"100ms")"));
  std::string uid(str_at(job.root(), "/metadata/uid"));
  REQUIRE(eventually([&] { return env.condition(env.jobs, "one", "Complete") == "True"; }));
  auto done = *env.get(env.jobs, "one");
  CHECK(json::get_int(done.root(), "/status/succeeded") == 1);
  CHECK(json::find(done.root(), "/status/failed") == nullptr);
  CHECK(json::get_int(done.root(), "/status/ready") == 0);
  CHECK_FALSE(str_at(done.root(), "/status/startTime").empty());
  CHECK_FALSE(str_at(done.root(), "/status/completionTime").empty());
  CHECK(condition_types(done) == std::vector<std::string>{"SuccessCriteriaMet", "Complete"});
  CHECK(env.condition(env.jobs, "one", "Complete", "/reason") == "CompletionsReached");
  CHECK(env.condition(env.jobs, "one", "Complete", "/message") == "Reached expected number of succeeded pods");
  CHECK(json::get_int(done.root(), "/spec/backoffLimit") == 6);
  CHECK(str_at(done.root(), "/spec/selector/matchLabels/batch.kubernetes.io~1controller-uid") == uid);

  auto pods = env.list(env.pods, "batch.kubernetes.io/job-name=one");
  REQUIRE(pods.size() == 1);
  const auto& pod = pods[0].root();
  std::string name(str_at(pod, "/metadata/name"));
  CHECK(name.size() == std::string("one-").size() + 5);
  CHECK(name.starts_with("one-"));
  CHECK(str_at(pod, "/metadata/labels/controller-uid") == uid);
  CHECK(str_at(pod, "/metadata/labels/job-name") == "one");
  CHECK(str_at(pod, "/metadata/labels/batch.kubernetes.io~1controller-uid") == uid);
  CHECK(json::find(pod, "/metadata/annotations/batch.kubernetes.io~1job-tracking") != nullptr);
  CHECK(str_at(pod, "/metadata/ownerReferences/0/uid") == uid);
  CHECK(json::get_bool(pod, "/metadata/ownerReferences/0/controller") == true);
  CHECK(json::get_bool(pod, "/metadata/ownerReferences/0/blockOwnerDeletion") == true);
}

TEST_CASE("Job with fail-times 2 completes within backoffLimit 3", "[job]") {
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.jobs, job_json("retry", R"("backoffLimit":3,)",
                                R"("sim.unitrain.io/duration":"50ms","sim.unitrain.io/fail-times":"2")"));
  REQUIRE(eventually([&] { return env.condition(env.jobs, "retry", "Complete") == "True"; }));
  auto done = *env.get(env.jobs, "retry");
  CHECK(json::get_int(done.root(), "/status/failed") == 2);
  CHECK(json::get_int(done.root(), "/status/succeeded") == 1);
  CHECK(env.list(env.pods, "job-name=retry").size() == 3);
}

TEST_CASE("Job with fail-times 2 fails with backoffLimit 1", "[job]") {
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.jobs, job_json("doomed", R"("backoffLimit":1,)",
                                R"("sim.unitrain.io/duration":"50ms","sim.unitrain.io/fail-times":"2")"));
  REQUIRE(eventually([&] { return env.condition(env.jobs, "doomed", "Failed") == "True"; }));
  auto done = *env.get(env.jobs, "doomed");
  CHECK(condition_types(done) == std::vector<std::string>{"FailureTarget", "Failed"});
  CHECK(env.condition(env.jobs, "doomed", "Failed", "/reason") == "BackoffLimitExceeded");
  CHECK(env.condition(env.jobs, "doomed", "Failed", "/message") == "Job has reached the specified backoff limit");
  CHECK(json::get_int(done.root(), "/status/failed") == 2);
  CHECK(json::find(done.root(), "/status/completionTime") == nullptr);
}

TEST_CASE("Job with restartPolicy OnFailure counts container restarts against backoffLimit", "[job]") {
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.jobs, job_json("restarts", R"("backoffLimit":2,)",
                                R"("sim.unitrain.io/duration":"50ms","sim.unitrain.io/fail-times":"5")", "OnFailure"));
  REQUIRE(eventually([&] { return env.condition(env.jobs, "restarts", "Failed") == "True"; }));
  CHECK(env.condition(env.jobs, "restarts", "Failed", "/reason") == "BackoffLimitExceeded");
}

TEST_CASE("Job completions and parallelism", "[job]") {
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.jobs, job_json("many", R"("completions":5,"parallelism":2,)", R"("sim.unitrain.io/duration":"50ms")"));
  int max_active = 0;
  REQUIRE(eventually([&] {
    auto j = env.get(env.jobs, "many");
    if (j) max_active = std::max<int>(max_active, static_cast<int>(json::get_int(j->root(), "/status/active").value_or(0)));
    return env.condition(env.jobs, "many", "Complete") == "True";
  }));
  CHECK(max_active <= 2);
  CHECK(json::get_int(env.get(env.jobs, "many")->root(), "/status/succeeded") == 5);
  CHECK(env.list(env.pods, "job-name=many").size() == 5);
}

TEST_CASE("Job activeDeadlineSeconds fails it with DeadlineExceeded", "[job]") {
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.jobs, job_json("slow", R"("activeDeadlineSeconds":1,)", R"("sim.unitrain.io/duration":"1h")"));
  REQUIRE(eventually([&] { return env.condition(env.jobs, "slow", "Failed") == "True"; }));
  CHECK(env.condition(env.jobs, "slow", "Failed", "/reason") == "DeadlineExceeded");
  CHECK(env.condition(env.jobs, "slow", "Failed", "/message") == "Job was active longer than specified deadline");
  CHECK(env.condition(env.jobs, "slow", "FailureTarget", "/reason") == "DeadlineExceeded");
  // The active pod is deleted by the controller and, as in Kubernetes, counted as failed.
  REQUIRE(eventually([&] {
    for (const auto& p : env.list(env.pods, "job-name=slow")) {
      auto phase = str_at(p.root(), "/status/phase");
      if (phase != "Failed" && phase != "Succeeded") return false;
    }
    return true;
  }));
  REQUIRE(eventually([&] { return json::get_int(env.get(env.jobs, "slow")->root(), "/status/failed") == 1; }));
}

TEST_CASE("Job suspend deletes active pods and resume starts them again", "[job]") {
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.jobs, job_json("paused", R"("suspend":true,)", R"("sim.unitrain.io/duration":"300ms")"));
  REQUIRE(eventually([&] { return env.condition(env.jobs, "paused", "Suspended") == "True"; }));
  CHECK(env.condition(env.jobs, "paused", "Suspended", "/reason") == "JobSuspended");
  CHECK(env.list(env.pods, "job-name=paused").empty());
  CHECK(env.str(env.jobs, "paused", "/status/startTime").empty());

  REQUIRE(env.store->patch(env.jobs, "default", "paused", PatchKind::Merge, R"({"spec":{"suspend":false}})"));
  REQUIRE(eventually([&] { return json::get_int(env.get(env.jobs, "paused")->root(), "/status/active") == 1; }));
  CHECK(env.condition(env.jobs, "paused", "Suspended") == "False");
  CHECK(env.condition(env.jobs, "paused", "Suspended", "/reason") == "JobResumed");
  CHECK_FALSE(env.str(env.jobs, "paused", "/status/startTime").empty());

  // Suspending a running job deletes its pod without counting a failure.
  REQUIRE(env.store->patch(env.jobs, "default", "paused", PatchKind::Merge, R"({"spec":{"suspend":true}})"));
  REQUIRE(eventually([&] { return env.list(env.pods, "job-name=paused").empty(); }));
  REQUIRE(eventually([&] { return env.condition(env.jobs, "paused", "Suspended") == "True"; }));
  CHECK(json::find(env.get(env.jobs, "paused")->root(), "/status/failed") == nullptr);

  REQUIRE(env.store->patch(env.jobs, "default", "paused", PatchKind::Merge, R"({"spec":{"suspend":false}})"));
  REQUIRE(eventually([&] { return env.condition(env.jobs, "paused", "Complete") == "True"; }));
}

TEST_CASE("Job template: scheduling directives change only while suspended and never started", "[job]") {
  // kube-apiserver's rule, which mpi-operator meets by clearing status.startTime through the
  // status subresource before it rewrites a suspended launcher Job's template.
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.jobs, job_json("gated", R"("suspend":true,)", R"("sim.unitrain.io/duration":"1h")"));
  REQUIRE(eventually([&] { return env.condition(env.jobs, "gated", "Suspended") == "True"; }));
  auto merge = [&](std::string_view body, std::string_view subresource = {}) {
    return env.store->patch(env.jobs, "default", "gated", PatchKind::Merge, body, subresource);
  };
  // Never started: nodeSelector, labels and annotations may change; the containers may not.
  CHECK(merge(R"({"spec":{"template":{"metadata":{"labels":{"kueue":"yes"}},"spec":{"nodeSelector":{"zone":"a"}}}}})"));
  auto image = merge(R"({"spec":{"template":{"spec":{"containers":[{"name":"main","image":"other:2"}]}}}})");
  INFO((image ? image->dump() : std::string()));
  REQUIRE_FALSE(image);
  CHECK(image.error().message.find("spec.template: Invalid value") != std::string::npos);
  CHECK(image.error().message.find("field is immutable") != std::string::npos);

  // Started once: suspended again, it keeps status.startTime and so its whole template.
  REQUIRE(merge(R"({"spec":{"suspend":false}})"));
  REQUIRE(eventually([&] { return json::get_int(env.get(env.jobs, "gated")->root(), "/status/active") == 1; }));
  REQUIRE(merge(R"({"spec":{"suspend":true}})"));
  REQUIRE(eventually([&] { return env.list(env.pods, "job-name=gated").empty(); }));
  REQUIRE(eventually([&] { return env.condition(env.jobs, "gated", "Suspended") == "True"; }));
  CHECK_FALSE(env.str(env.jobs, "gated", "/status/startTime").empty());
  auto moved = merge(R"({"spec":{"template":{"spec":{"nodeSelector":{"zone":"b"}}}}})");
  REQUIRE_FALSE(moved);
  CHECK(moved.error().message.find("field is immutable") != std::string::npos);

  // Cleared through jobs/status, the scheduling directives are mutable again.
  REQUIRE(merge(R"({"status":{"startTime":null}})", "status"));
  CHECK(merge(R"({"spec":{"template":{"spec":{"nodeSelector":{"zone":"b"}}}}})"));
  CHECK(env.str(env.jobs, "gated", "/spec/template/spec/nodeSelector/zone") == "b");
  // Resumed, it starts again with a fresh startTime.
  REQUIRE(merge(R"({"spec":{"suspend":false}})"));
  REQUIRE(eventually([&] { return !env.str(env.jobs, "gated", "/status/startTime").empty(); }));
}

TEST_CASE("Job ttlSecondsAfterFinished deletes the job and, through the GC, its pods", "[job][gc]") {
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.jobs, job_json("shortlived", R"("ttlSecondsAfterFinished":0,)", R"("sim.unitrain.io/duration":"50ms")"));
  REQUIRE(eventually([&] { return env.get(env.jobs, "shortlived").has_value(); }));
  REQUIRE(eventually([&] { return !env.get(env.jobs, "shortlived").has_value(); }));
  REQUIRE(eventually([&] { return env.list(env.pods, "job-name=shortlived").empty(); }));
}

TEST_CASE("deleting a Job cascades to its pods in background and foreground", "[job][gc]") {
  Env env;
  Controllers c(*env.store, all(env));
  for (std::string policy : {"Background", "Foreground"}) {
    std::string name = policy == "Background" ? "bg" : "fg";
    env.create(env.jobs, job_json(name, R"("parallelism":2,"completions":2,)", R"("sim.unitrain.io/duration":"1h")"));
    REQUIRE(eventually([&] { return env.list(env.pods, "job-name=" + name).size() == 2; }));
    env.remove(env.jobs, name, policy);
    REQUIRE(eventually([&] { return !env.get(env.jobs, name).has_value(); }));
    if (policy == "Foreground") CHECK(env.list(env.pods, "job-name=" + name).empty());
    REQUIRE(eventually([&] { return env.list(env.pods, "job-name=" + name).empty(); }));
  }
  // The API default for batch/v1 Jobs is orphan: the pods stay, without the owner reference.
  env.create(env.jobs, job_json("orph", "", R"("sim.unitrain.io/duration":"1h")"));
  REQUIRE(eventually([&] { return env.list(env.pods, "job-name=orph").size() == 1; }));
  env.remove(env.jobs, "orph", std::nullopt);
  REQUIRE(eventually([&] { return !env.get(env.jobs, "orph").has_value(); }));
  REQUIRE(eventually([&] {
    auto pods = env.list(env.pods, "job-name=orph");
    return pods.size() == 1 && json::find(pods[0].root(), "/metadata/ownerReferences") == nullptr;
  }));
}

TEST_CASE("Job podReplacementPolicy decides whether terminating pods are replaced at once", "[job]") {
  for (std::string policy : {"TerminatingOrFailed", "Failed"}) {
    Env env;
    auto o = all(env);
    // A terminating window the test can observe also on a busy machine: "replaced at once" is shown
    // by the replacement being active while the old pod still terminates, not by a deadline.
    o.kubelet_options.max_termination_grace = 3s;
    Controllers c(*env.store, std::move(o));
    env.create(env.jobs, job_json("repl", fmt::format(R"("podReplacementPolicy":"{}",)", policy),
                                  R"("sim.unitrain.io/duration":"1h")"));
    REQUIRE(eventually([&] { return env.list(env.pods, "job-name=repl").size() == 1; }));
    REQUIRE(eventually([&] { return env.str(env.pods, std::string(str_at(env.list(env.pods, "job-name=repl")[0].root(),
                                                                         "/metadata/name")),
                                            "/status/phase") == "Running"; }));
    env.remove(env.pods, str_at(env.list(env.pods, "job-name=repl")[0].root(), "/metadata/name"), std::nullopt);
    REQUIRE(eventually([&] {
      return json::get_int(env.get(env.jobs, "repl")->root(), "/status/terminating").value_or(0) == 1;
    }));
    if (policy == "Failed") {
      std::this_thread::sleep_for(300ms);
      auto job = *env.get(env.jobs, "repl");
      CHECK(json::get_int(job.root(), "/status/terminating") == 1);
      CHECK(json::find(job.root(), "/status/active") == nullptr);
      CHECK(env.list(env.pods, "job-name=repl").size() == 1);
      // Once the old pod ended Failed, the replacement comes.
      REQUIRE(eventually([&] { return json::get_int(env.get(env.jobs, "repl")->root(), "/status/active") == 1; }));
    } else {
      REQUIRE(eventually([&] { return json::get_int(env.get(env.jobs, "repl")->root(), "/status/active") == 1; }));
      CHECK(json::get_int(env.get(env.jobs, "repl")->root(), "/status/terminating") == 1);
    }
    CHECK(json::get_int(env.get(env.jobs, "repl")->root(), "/status/failed").value_or(0) <= 1);
  }
}

namespace {

// An Indexed Job of `completions` pods; `spec_extra` and `annotations` as in job_json.
std::string indexed_job_json(const std::string& name, int completions, const std::string& spec_extra,
                             const std::string& annotations) {
  return fmt::format(
      R"({{"apiVersion":"batch/v1","kind":"Job","metadata":{{"name":"{}"}},
          "spec":{{"completionMode":"Indexed","completions":{},{}"template":{{"metadata":{{"annotations":{{{}}}}},
          "spec":{{"restartPolicy":"Never","subdomain":"workers",
                   "initContainers":[{{"name":"init","image":"busybox"}}],
                   "containers":[{{"name":"main","image":"trainer:1","env":[{{"name":"A","value":"1"}}]}}]}}}}}}}})",
      name, completions, spec_extra, annotations);
}

int64_t job_int(Env& env, std::string_view name, std::string_view pointer) {
  auto j = env.get(env.jobs, name);
  return j ? json::get_int(j->root(), pointer).value_or(0) : -1;
}

}  // namespace

TEST_CASE("Indexed Job: one pod per index with its annotation, label, hostname and JOB_COMPLETION_INDEX", "[job][indexed]") {
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.jobs, indexed_job_json("idx", 3, R"("parallelism":3,)", R"("sim.unitrain.io/duration":"100ms")"));
  REQUIRE(eventually([&] { return env.condition(env.jobs, "idx", "Complete") == "True"; }));
  auto done = *env.get(env.jobs, "idx");
  CHECK(str_at(done.root(), "/status/completedIndexes") == "0-2");
  CHECK(json::get_int(done.root(), "/status/succeeded") == 3);
  CHECK(json::find(done.root(), "/status/failedIndexes") == nullptr);  // no backoffLimitPerIndex
  CHECK(condition_types(done) == std::vector<std::string>{"SuccessCriteriaMet", "Complete"});
  CHECK(env.condition(env.jobs, "idx", "Complete", "/reason") == "CompletionsReached");

  auto pods = env.list(env.pods, "batch.kubernetes.io/job-name=idx");
  REQUIRE(pods.size() == 3);
  std::set<std::string> indexes;
  for (const auto& pod : pods) {
    const auto& p = pod.root();
    std::string ix(str_at(p, "/metadata/annotations/batch.kubernetes.io~1job-completion-index"));
    indexes.insert(ix);
    CHECK(str_at(p, "/metadata/labels/batch.kubernetes.io~1job-completion-index") == ix);
    std::string name(str_at(p, "/metadata/name"));
    CHECK(name.starts_with("idx-" + ix + "-"));
    CHECK(name.size() == ("idx-" + ix + "-").size() + 5);
    CHECK(str_at(p, "/spec/hostname") == "idx-" + ix);
    CHECK(str_at(p, "/spec/subdomain") == "workers");
    for (const char* list : {"/spec/containers/0/env", "/spec/initContainers/0/env"}) {
      const json::Value* env_list = json::find(p, list);
      REQUIRE(env_list);
      const auto& last = (*env_list)[env_list->Size() - 1];
      CHECK(str_at(last, "/name") == "JOB_COMPLETION_INDEX");
      CHECK(str_at(last, "/valueFrom/fieldRef/fieldPath") == "metadata.labels['batch.kubernetes.io/job-completion-index']");
    }
    CHECK(str_at(p, "/spec/containers/0/env/0/name") == "A");  // the template's own env stays first
  }
  CHECK(indexes == std::set<std::string>{"0", "1", "2"});
}

TEST_CASE("Indexed Job with parallelism 1 runs its indexes in order and retries a failed index", "[job][indexed]") {
  Env env;
  Controllers c(*env.store, all(env));
  // fail-times counts per generateName, so each index's first pod fails once.
  env.create(env.jobs, indexed_job_json("seq", 3, R"("parallelism":1,"backoffLimit":5,)",
                                        R"("sim.unitrain.io/duration":"50ms","sim.unitrain.io/fail-times":"1")"));
  int max_active = 0;
  REQUIRE(eventually([&] {
    max_active = std::max<int>(max_active, static_cast<int>(job_int(env, "seq", "/status/active")));
    return env.condition(env.jobs, "seq", "Complete") == "True";
  }));
  CHECK(max_active <= 1);
  CHECK(job_int(env, "seq", "/status/failed") == 3);
  CHECK(env.str(env.jobs, "seq", "/status/completedIndexes") == "0-2");
  CHECK(env.list(env.pods, "job-name=seq").size() == 6);
}

TEST_CASE("podFailurePolicy FailJob on an exit code fails the Job with the rule's message", "[job][policy]") {
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.jobs, job_json("fatal", R"("backoffLimit":6,"podFailurePolicy":{"rules":[
      {"action":"Ignore","onExitCodes":{"operator":"In","values":[43]}},
      {"action":"FailJob","onExitCodes":{"containerName":"main","operator":"In","values":[42]}}]},)",
                                R"("sim.unitrain.io/duration":"50ms","sim.unitrain.io/fail-times":"1","sim.unitrain.io/fail-exit-code":"42")"));
  REQUIRE(eventually([&] { return env.condition(env.jobs, "fatal", "Failed") == "True"; }));
  auto done = *env.get(env.jobs, "fatal");
  CHECK(condition_types(done) == std::vector<std::string>{"FailureTarget", "Failed"});
  auto pods = env.list(env.pods, "job-name=fatal");
  REQUIRE(pods.size() == 1);
  std::string message = fmt::format("Container main for pod default/{} failed with exit code 42 matching FailJob rule at index 1",
                                    str_at(pods[0].root(), "/metadata/name"));
  CHECK(env.condition(env.jobs, "fatal", "Failed", "/reason") == "PodFailurePolicy");
  CHECK(env.condition(env.jobs, "fatal", "Failed", "/message") == message);
  CHECK(env.condition(env.jobs, "fatal", "FailureTarget", "/message") == message);
  CHECK(json::get_int(done.root(), "/status/failed") == 1);
  CHECK(str_at(done.root(), "/spec/podReplacementPolicy") == "Failed");
}

TEST_CASE("podFailurePolicy Ignore: failures it matches do not count against backoffLimit", "[job][policy]") {
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.jobs, job_json("shrug", R"("backoffLimit":0,"podFailurePolicy":{"rules":[
      {"action":"Ignore","onExitCodes":{"operator":"In","values":[43]}}]},)",
                                R"("sim.unitrain.io/duration":"50ms","sim.unitrain.io/fail-times":"2","sim.unitrain.io/fail-exit-code":"43")"));
  REQUIRE(eventually([&] { return env.condition(env.jobs, "shrug", "Complete") == "True"; }));
  CHECK(json::find(env.get(env.jobs, "shrug")->root(), "/status/failed") == nullptr);
  CHECK(env.list(env.pods, "job-name=shrug").size() == 3);
}

TEST_CASE("podFailurePolicy on the DisruptionTarget condition: a pod lost with its node is not counted", "[job][policy]") {
  Env env;
  Controllers c(*env.store, all(env, 2));
  env.create(env.jobs, job_json("evicted", R"("backoffLimit":0,"podFailurePolicy":{"rules":[
      {"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]},)",
                                R"("sim.unitrain.io/duration":"3s")"));
  std::string node;
  REQUIRE(eventually([&] {
    auto pods = env.list(env.pods, "job-name=evicted");
    if (pods.size() != 1 || str_at(pods[0].root(), "/status/phase") != "Running") return false;
    node = std::string(str_at(pods[0].root(), "/spec/nodeName"));
    return true;
  }));
  REQUIRE(env.store->patch(env.nodes, "", node, PatchKind::Strategic,
                           R"({"status":{"conditions":[{"type":"Ready","status":"False","reason":"NodeStatusUnknown"}]}})",
                           "status"));
  // The lost pod is replaced on the other node and the Job completes: backoffLimit 0 never fired.
  REQUIRE(eventually([&] { return env.condition(env.jobs, "evicted", "Complete") == "True"; }));
  CHECK(json::find(env.get(env.jobs, "evicted")->root(), "/status/failed") == nullptr);
  CHECK(env.list(env.pods, "job-name=evicted").size() == 2);
}

TEST_CASE("backoffLimitPerIndex: each index retries on its own, exhausted indexes fail the Job", "[job][indexed][policy]") {
  Env env;
  Controllers c(*env.store, all(env));
  std::string flaky = R"("sim.unitrain.io/duration":"50ms","sim.unitrain.io/fail-times":"1")";
  SECTION("one retry per index is enough") {
    env.create(env.jobs, indexed_job_json("retry", 3, R"("parallelism":3,"backoffLimitPerIndex":1,)", flaky));
    REQUIRE(eventually([&] { return env.condition(env.jobs, "retry", "Complete") == "True"; }));
    auto done = *env.get(env.jobs, "retry");
    CHECK(json::get_int(done.root(), "/status/failed") == 3);
    CHECK(str_at(done.root(), "/status/completedIndexes") == "0-2");
    CHECK(str_at(done.root(), "/status/failedIndexes").empty());
    CHECK(json::find(done.root(), "/status/failedIndexes") != nullptr);
    // The replacement of each index carries the failures before it.
    std::multiset<std::string> counts;
    for (const auto& p : env.list(env.pods, "job-name=retry"))
      counts.insert(std::string(str_at(p.root(), "/metadata/annotations/batch.kubernetes.io~1job-index-failure-count")));
    CHECK(counts == std::multiset<std::string>{"0", "0", "0", "1", "1", "1"});
  }
  SECTION("no retry: every index fails, reason FailedIndexes") {
    env.create(env.jobs, indexed_job_json("none", 3, R"("parallelism":3,"backoffLimitPerIndex":0,)", flaky));
    REQUIRE(eventually([&] { return env.condition(env.jobs, "none", "Failed") == "True"; }));
    CHECK(env.condition(env.jobs, "none", "Failed", "/reason") == "FailedIndexes");
    CHECK(env.condition(env.jobs, "none", "Failed", "/message") == "Job has failed indexes");
    CHECK(env.str(env.jobs, "none", "/status/failedIndexes") == "0-2");
    CHECK(env.list(env.pods, "job-name=none").size() == 3);
  }
  SECTION("maxFailedIndexes 0: the first failed index ends the Job") {
    env.create(env.jobs, indexed_job_json("strict", 3, R"("parallelism":1,"backoffLimitPerIndex":0,"maxFailedIndexes":0,)", flaky));
    REQUIRE(eventually([&] { return env.condition(env.jobs, "strict", "Failed") == "True"; }));
    CHECK(env.condition(env.jobs, "strict", "Failed", "/reason") == "MaxFailedIndexesExceeded");
    CHECK(env.condition(env.jobs, "strict", "Failed", "/message") ==
          "Job has exceeded the specified maximal number of failed indexes");
    CHECK(env.str(env.jobs, "strict", "/status/failedIndexes") == "0");
  }
  SECTION("FailIndex fails an index at its first matching failure") {
    env.create(env.jobs, indexed_job_json("failidx", 2, R"("parallelism":2,"backoffLimitPerIndex":3,"podFailurePolicy":{"rules":[
        {"action":"FailIndex","onExitCodes":{"operator":"In","values":[7]}}]},)",
                                          R"("sim.unitrain.io/duration":"50ms","sim.unitrain.io/fail-times":"1","sim.unitrain.io/fail-exit-code":"7")"));
    REQUIRE(eventually([&] { return env.condition(env.jobs, "failidx", "Failed") == "True"; }));
    CHECK(env.condition(env.jobs, "failidx", "Failed", "/reason") == "FailedIndexes");
    CHECK(env.str(env.jobs, "failidx", "/status/failedIndexes") == "0,1");
    CHECK(env.list(env.pods, "job-name=failidx").size() == 2);
  }
}

TEST_CASE("successPolicy: the Job completes once its rule is met, with reason SuccessPolicy", "[job][indexed][policy]") {
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.jobs, indexed_job_json("leader", 3, R"("parallelism":1,"successPolicy":{"rules":[{"succeededIndexes":"0"}]},)",
                                        R"("sim.unitrain.io/duration":"50ms")"));
  REQUIRE(eventually([&] { return env.condition(env.jobs, "leader", "Complete") == "True"; }));
  auto done = *env.get(env.jobs, "leader");
  CHECK(condition_types(done) == std::vector<std::string>{"SuccessCriteriaMet", "Complete"});
  CHECK(env.condition(env.jobs, "leader", "SuccessCriteriaMet", "/reason") == "SuccessPolicy");
  CHECK(env.condition(env.jobs, "leader", "Complete", "/reason") == "SuccessPolicy");
  CHECK(env.condition(env.jobs, "leader", "Complete", "/message") == "Matched rules at index 0");
  CHECK(str_at(done.root(), "/status/completedIndexes") == "0");
  CHECK(json::get_int(done.root(), "/status/succeeded") == 1);
  CHECK_FALSE(str_at(done.root(), "/status/completionTime").empty());
}

TEST_CASE("Indexed Job suspend deletes its pods uncounted, resume recreates the missing indexes", "[job][indexed]") {
  Env env;
  Controllers c(*env.store, all(env));
  env.create(env.jobs, indexed_job_json("held", 2, R"("parallelism":2,)", R"("sim.unitrain.io/duration":"1h")"));
  REQUIRE(eventually([&] { return job_int(env, "held", "/status/active") == 2; }));
  std::string started = env.str(env.jobs, "held", "/status/startTime");
  REQUIRE(env.store->patch(env.jobs, "default", "held", PatchKind::Merge, R"({"spec":{"suspend":true}})"));
  REQUIRE(eventually([&] { return env.list(env.pods, "job-name=held").empty(); }));
  REQUIRE(eventually([&] { return env.condition(env.jobs, "held", "Suspended") == "True"; }));
  CHECK(env.condition(env.jobs, "held", "Suspended", "/reason") == "JobSuspended");
  CHECK(json::find(env.get(env.jobs, "held")->root(), "/status/failed") == nullptr);
  CHECK(env.str(env.jobs, "held", "/status/startTime") == started);  // kept while suspended, as upstream

  REQUIRE(env.store->patch(env.jobs, "default", "held", PatchKind::Merge, R"({"spec":{"suspend":false}})"));
  REQUIRE(eventually([&] { return job_int(env, "held", "/status/active") == 2; }));
  CHECK(env.condition(env.jobs, "held", "Suspended", "/reason") == "JobResumed");
  std::set<std::string> indexes;
  for (const auto& p : env.list(env.pods, "job-name=held"))
    indexes.insert(std::string(str_at(p.root(), "/metadata/labels/batch.kubernetes.io~1job-completion-index")));
  CHECK(indexes == std::set<std::string>{"0", "1"});
}

// ---- apps/v1, storage, admission, kubelet fidelity ------------------------------------------

namespace {

ResourceInfo res(Env& env, std::string_view group, std::string_view plural) {
  auto r = env.store->find_resource(group, "v1", plural);
  REQUIRE(r);
  return *r;
}

// A pod template whose containers run until deleted (restartPolicy Always, no duration).
std::string workload_json(const std::string& kind, const std::string& name, int replicas, const std::string& extra_spec,
                          const std::string& template_annotations = "") {
  std::string replicas_field = kind == "DaemonSet" ? "" : fmt::format(R"("replicas":{},)", replicas);
  return fmt::format(
      R"({{"apiVersion":"apps/v1","kind":"{}","metadata":{{"name":"{}"}},
          "spec":{{{}{}"selector":{{"matchLabels":{{"app":"{}"}}}},
          "template":{{"metadata":{{"labels":{{"app":"{}"}},"annotations":{{{}}}}},
                       "spec":{{"containers":[{{"name":"c","image":"nginx:1","resources":{{"requests":{{"cpu":"10m"}}}}}}]}}}}}}}})",
      kind, name, replicas_field, extra_spec, name, name, template_annotations);
}

int64_t int_at(Env& env, const ResourceInfo& r, std::string_view name, std::string_view pointer) {
  auto g = env.get(r, name);
  return g ? json::get_int(g->root(), pointer).value_or(0) : -1;
}

}  // namespace

TEST_CASE("Deployment rolls out through ReplicaSets and reports what kubectl rollout status reads", "[apps]") {
  Env env;
  Controllers c(*env.store, all(env));
  auto deployments = res(env, "apps", "deployments");
  auto replicasets = res(env, "apps", "replicasets");
  env.create(deployments, workload_json("Deployment", "web", 3, ""));
  auto rolled_out = [&] {
    auto d = env.get(deployments, "web");
    if (!d) return false;
    const auto& o = d->root();
    return json::get_int(o, "/status/observedGeneration") == json::get_int(o, "/metadata/generation") &&
           json::get_int(o, "/status/updatedReplicas") == 3 && json::get_int(o, "/status/replicas") == 3 &&
           json::get_int(o, "/status/availableReplicas") == 3;
  };
  REQUIRE(eventually(rolled_out));
  CHECK(env.condition(deployments, "web", "Available") == "True");
  CHECK(env.condition(deployments, "web", "Progressing", "/reason") == "NewReplicaSetAvailable");
  auto sets = env.list(replicasets, "app=web");
  REQUIRE(sets.size() == 1);
  std::string first_rs(str_at(sets[0].root(), "/metadata/name"));
  std::string hash(str_at(sets[0].root(), "/metadata/labels/pod-template-hash"));
  CHECK(first_rs == "web-" + hash);
  CHECK(str_at(sets[0].root(), "/metadata/annotations/deployment.kubernetes.io~1revision") == "1");
  auto pods = env.list(env.pods, "app=web");
  CHECK(pods.size() == 3);
  for (const auto& p : pods) CHECK(str_at(p.root(), "/metadata/ownerReferences/0/name") == first_rs);

  // A new template: a second ReplicaSet takes over, the first one is scaled to zero.
  auto d = *env.get(deployments, "web");
  REQUIRE(json::set_string(d, "/spec/template/metadata/annotations/rev", "2"));
  REQUIRE(env.store->update(deployments, "default", "web", std::move(d)));
  REQUIRE(eventually([&] { return rolled_out() && env.list(env.pods, "app=web").size() == 3; }));
  REQUIRE(eventually([&] { return int_at(env, replicasets, first_rs, "/spec/replicas") == 0; }));
  REQUIRE(eventually([&] {
    for (const auto& p : env.list(env.pods, "app=web"))
      if (str_at(p.root(), "/metadata/labels/pod-template-hash") == hash) return false;
    return env.list(env.pods, "app=web").size() == 3;
  }));
  CHECK(env.list(replicasets, "app=web").size() == 2);
  CHECK(env.str(deployments, "web", "/metadata/annotations/deployment.kubernetes.io~1revision") == "2");

  // Scaling down removes pods.
  REQUIRE(env.store->patch(deployments, "default", "web", PatchKind::Merge, R"({"spec":{"replicas":1}})"));
  REQUIRE(eventually([&] {
    return env.list(env.pods, "app=web").size() == 1 && int_at(env, deployments, "web", "/status/replicas") == 1;
  }));
}

TEST_CASE("StatefulSet creates ordinal pods in order with their claims, DaemonSet one pod per node", "[apps]") {
  Env env;
  Controllers c(*env.store, all(env));
  auto statefulsets = res(env, "apps", "statefulsets");
  auto daemonsets = res(env, "apps", "daemonsets");
  auto claims = res(env, "", "persistentvolumeclaims");
  env.create(statefulsets,
             workload_json("StatefulSet", "db", 2,
                           R"("serviceName":"db","volumeClaimTemplates":[{"metadata":{"name":"data"},
                               "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}],)",
                           R"("sim.unitrain.io/ready-after":"300ms")"));
  // OrderedReady: db-1 only once db-0 is Ready.
  REQUIRE(eventually([&] {
    bool first_ready = env.condition(env.pods, "db-0", "Ready") == "True";
    if (!first_ready) CHECK_FALSE(env.get(env.pods, "db-1").has_value());
    return first_ready;
  }));
  REQUIRE(eventually([&] {
    auto s = env.get(statefulsets, "db");
    return s && json::get_int(s->root(), "/status/readyReplicas") == 2 &&
           str_at(s->root(), "/status/currentRevision") == str_at(s->root(), "/status/updateRevision");
  }));
  auto pod = *env.get(env.pods, "db-1");
  CHECK(str_at(pod.root(), "/spec/hostname") == "db-1");
  CHECK(str_at(pod.root(), "/spec/subdomain") == "db");
  CHECK(str_at(pod.root(), "/metadata/labels/apps.kubernetes.io~1pod-index") == "1");
  CHECK(str_at(pod.root(), "/spec/volumes/0/persistentVolumeClaim/claimName") == "data-db-1");
  REQUIRE(eventually([&] { return env.str(claims, "data-db-1", "/status/phase") == "Bound"; }));

  env.create(daemonsets, workload_json("DaemonSet", "agent", 0, ""));
  REQUIRE(eventually([&] {
    auto d = env.get(daemonsets, "agent");
    return d && json::get_int(d->root(), "/status/desiredNumberScheduled") == 3 &&
           json::get_int(d->root(), "/status/numberReady") == 3 &&
           json::get_int(d->root(), "/status/updatedNumberScheduled") == 3;
  }));
  std::set<std::string> nodes_used;
  for (const auto& p : env.list(env.pods, "app=agent")) nodes_used.insert(std::string(str_at(p.root(), "/spec/nodeName")));
  CHECK(nodes_used.size() == 3);
}

TEST_CASE("PersistentVolumeClaims are bound at once by the default StorageClass's provisioner", "[storage]") {
  Env env;
  Controllers c(*env.store, all(env));
  auto claims = res(env, "", "persistentvolumeclaims");
  auto volumes = res(env, "", "persistentvolumes");
  auto classes = res(env, "storage.k8s.io", "storageclasses");
  REQUIRE(eventually([&] { return env.get(classes, "standard").has_value(); }));
  CHECK(env.str(classes, "standard", "/metadata/annotations/storageclass.kubernetes.io~1is-default-class") == "true");
  auto created = env.create(claims, R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"work"},
      "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"5Gi"}}}})");
  std::string volume = "pvc-" + std::string(str_at(created.root(), "/metadata/uid"));
  REQUIRE(eventually([&] { return env.str(claims, "work", "/status/phase") == "Bound"; }));
  auto claim = *env.get(claims, "work");
  CHECK(str_at(claim.root(), "/spec/volumeName") == volume);
  CHECK(str_at(claim.root(), "/spec/storageClassName") == "standard");
  CHECK(str_at(claim.root(), "/status/capacity/storage") == "5Gi");
  auto pv = env.get(volumes, volume);
  REQUIRE(pv);
  CHECK(str_at(pv->root(), "/status/phase") == "Bound");
  CHECK(str_at(pv->root(), "/spec/claimRef/name") == "work");
  CHECK(str_at(pv->root(), "/spec/capacity/storage") == "5Gi");
  env.remove(claims, "work", std::nullopt);
  REQUIRE(eventually([&] { return !env.get(volumes, volume).has_value(); }));

  // A class that does not exist leaves the claim Pending.
  env.create(claims, R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"nowhere"},
      "spec":{"storageClassName":"fast","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}})");
  REQUIRE(eventually([&] {
    for (const auto& e : env.list(res(env, "", "events")))
      if (str_at(e.root(), "/involvedObject/name") == "nowhere" && str_at(e.root(), "/reason") == "ProvisioningFailed")
        return true;
    return false;
  }));
  CHECK(env.str(claims, "nowhere", "/status/phase") == "Pending");
}

TEST_CASE("ResourceQuota refuses pods over it as kube-apiserver words it, LimitRange defaults apply", "[admission]") {
  Env env;
  Controllers c(*env.store, all(env));
  auto quotas = res(env, "", "resourcequotas");
  auto limits = res(env, "", "limitranges");
  env.create(limits, R"({"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"defaults"},
      "spec":{"limits":[{"type":"Container","default":{"cpu":"500m","memory":"256Mi"},"defaultRequest":{"cpu":"250m"}}]}})");
  env.create(quotas, R"({"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute"},
      "spec":{"hard":{"pods":"2","requests.cpu":"600m"}}})");
  auto bare = [](const std::string& name) {
    return fmt::format(R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{}"}},
        "spec":{{"containers":[{{"name":"main","image":"x"}}]}}}})", name);
  };
  auto p1 = env.create(env.pods, bare("p1"));
  CHECK(str_at(p1.root(), "/spec/containers/0/resources/limits/cpu") == "500m");
  CHECK(str_at(p1.root(), "/spec/containers/0/resources/requests/cpu") == "250m");
  CHECK(str_at(p1.root(), "/spec/containers/0/resources/requests/memory") == "256Mi");
  CHECK(str_at(p1.root(), "/metadata/annotations/kubernetes.io~1limit-ranger").starts_with("LimitRanger plugin set: "));
  env.create(env.pods, bare("p2"));
  auto third = env.store->create(env.pods, "default", parse(bare("p3")));
  REQUIRE_FALSE(third);
  CHECK(third.error().code == 403);
  REQUIRE(eventually([&] {
    auto q = env.get(quotas, "compute");
    return q && str_at(q->root(), "/status/used/pods") == "2" && str_at(q->root(), "/status/used/requests.cpu") == "500m" &&
           str_at(q->root(), "/status/hard/pods") == "2";
  }));
  CHECK(third.error().message ==
        "pods \"p3\" is forbidden: exceeded quota: compute, requested: pods=1,requests.cpu=250m, used: "
        "pods=2,requests.cpu=500m, limited: pods=2,requests.cpu=600m");

  // A quota on limits.memory needs every container to state one.
  env.remove(quotas, "compute", std::nullopt);
  env.remove(limits, "defaults", std::nullopt);
  env.create(quotas, R"({"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"mem"},
      "spec":{"hard":{"limits.memory":"1Gi"}}})");
  auto unstated = env.store->create(env.pods, "default", parse(bare("p4")));
  REQUIRE_FALSE(unstated);
  CHECK(unstated.error().message == "pods \"p4\" is forbidden: failed quota: mem: must specify limits.memory for: main");
}

TEST_CASE("kubelet: ContainerCreating, CrashLoopBackOff with a doubling back-off, events, no null states", "[kubelet]") {
  Env env;
  auto o = all(env);
  o.kubelet_options.restart_backoff = 100ms;
  o.kubelet_options.restart_backoff_max = 400ms;
  Controllers c(*env.store, std::move(o));
  env.create(env.pods, pod_json("slow-start", R"("sim.unitrain.io/start-delay":"400ms","sim.unitrain.io/duration":"1h")"));
  REQUIRE(eventually([&] {
    return env.str(env.pods, "slow-start", "/status/containerStatuses/0/state/waiting/reason") == "ContainerCreating";
  }));
  CHECK(env.str(env.pods, "slow-start", "/status/phase") == "Pending");
  REQUIRE(eventually([&] { return env.str(env.pods, "slow-start", "/status/phase") == "Running"; }));
  auto running = *env.get(env.pods, "slow-start");
  const json::Value* state = json::find(running.root(), "/status/containerStatuses/0/state");
  REQUIRE(state);
  CHECK(json::find(*state, "/running") != nullptr);
  CHECK(json::find(*state, "/terminated") == nullptr);
  CHECK(json::find(*state, "/waiting") == nullptr);

  env.create(env.pods, pod_json("crasher", R"("sim.unitrain.io/duration":"20ms","sim.unitrain.io/exit-code":"2")", "Always"));
  std::set<std::string> messages;
  REQUIRE(eventually([&] {
    auto p = env.get(env.pods, "crasher");
    if (!p) return false;
    if (str_at(p->root(), "/status/containerStatuses/0/state/waiting/reason") == "CrashLoopBackOff") {
      std::string m(str_at(p->root(), "/status/containerStatuses/0/state/waiting/message"));
      messages.insert(m.substr(0, m.find(" restarting")));
    }
    return messages.count("back-off 400ms") > 0;
  }, 30s, 5ms));
  CHECK(messages.count("back-off 800ms") == 0);  // capped at restart_backoff_max
  auto crasher = *env.get(env.pods, "crasher");
  CHECK(str_at(crasher.root(), "/status/phase") == "Running");
  CHECK(str_at(crasher.root(), "/status/containerStatuses/0/lastState/terminated/reason") == "Error");
  CHECK(json::get_int(crasher.root(), "/status/containerStatuses/0/restartCount").value_or(0) >= 3);

  auto reasons_for = [&](std::string_view pod) {
    std::set<std::string> out;
    for (const auto& e : env.list(res(env, "", "events")))
      if (str_at(e.root(), "/involvedObject/name") == pod) out.insert(std::string(str_at(e.root(), "/reason")));
    return out;
  };
  REQUIRE(eventually([&] { return reasons_for("crasher").count("BackOff") > 0; }));
  auto reasons = reasons_for("crasher");
  for (const char* want : {"Scheduled", "Pulling", "Pulled", "Created", "Started", "BackOff"}) CHECK(reasons.count(want) == 1);
  env.remove(env.pods, "slow-start", std::nullopt);
  REQUIRE(eventually([&] { return reasons_for("slow-start").count("Killing") > 0; }));
}

// ---- rollout history, availability, budgets, limits, static volumes ---------------------------

namespace {

std::vector<json::Document> owned_by(Env& env, const ResourceInfo& r, const std::string& owner_name) {
  std::vector<json::Document> out;
  for (auto& d : env.list(r))
    if (str_at(d.root(), "/metadata/ownerReferences/0/name") == owner_name) out.push_back(std::move(d));
  return out;
}

// revision number -> ControllerRevision name, of the revisions `owner` controls.
std::map<int64_t, std::string> revisions_of(Env& env, const std::string& owner) {
  std::map<int64_t, std::string> out;
  for (const auto& r : owned_by(env, res(env, "apps", "controllerrevisions"), owner))
    out[json::get_int(r.root(), "/revision").value_or(-1)] = std::string(str_at(r.root(), "/metadata/name"));
  return out;
}

void set_template_annotation(Env& env, const ResourceInfo& r, const std::string& name, const std::string& value) {
  REQUIRE(env.store->patch(r, "default", name, PatchKind::Merge,
                           fmt::format(R"({{"spec":{{"template":{{"metadata":{{"annotations":{{"rev":"{}"}}}}}}}}}})", value)));
}

bool has_event(Env& env, std::string_view object, std::string_view reason) {
  for (const auto& e : env.list(res(env, "", "events")))
    if (str_at(e.root(), "/involvedObject/name") == object && str_at(e.root(), "/reason") == reason) return true;
  return false;
}

}  // namespace

TEST_CASE("Deployment revisions: a rollback reuses the old ReplicaSet with the next revision", "[apps][history]") {
  Env env;
  Controllers c(*env.store, all(env));
  auto deployments = res(env, "apps", "deployments");
  auto replicasets = res(env, "apps", "replicasets");
  env.create(deployments, workload_json("Deployment", "web", 2, ""));
  REQUIRE(eventually([&] { return env.str(deployments, "web", "/metadata/annotations/deployment.kubernetes.io~1revision") == "1"; }));
  auto first = env.list(replicasets, "app=web");
  REQUIRE(first.size() == 1);
  std::string first_rs(str_at(first[0].root(), "/metadata/name"));
  CHECK(str_at(first[0].root(), "/metadata/annotations/deployment.kubernetes.io~1max-replicas") == "3");

  // kubectl annotate ... kubernetes.io/change-cause, then a new template: the new ReplicaSet
  // carries the cause `kubectl rollout history` prints.
  REQUIRE(env.store->patch(deployments, "default", "web", PatchKind::Merge,
                           R"({"metadata":{"annotations":{"kubernetes.io/change-cause":"image 2"}},
                               "spec":{"template":{"metadata":{"annotations":{"rev":"2"}}}}})"));
  REQUIRE(eventually([&] { return env.str(deployments, "web", "/metadata/annotations/deployment.kubernetes.io~1revision") == "2"; }));
  std::string second_rs;
  for (const auto& rs : env.list(replicasets, "app=web"))
    if (str_at(rs.root(), "/metadata/name") != first_rs) second_rs = std::string(str_at(rs.root(), "/metadata/name"));
  REQUIRE_FALSE(second_rs.empty());
  CHECK(env.str(replicasets, second_rs, "/metadata/annotations/kubernetes.io~1change-cause") == "image 2");
  CHECK(env.str(replicasets, second_rs, "/metadata/annotations/deployment.kubernetes.io~1revision") == "2");

  // What `kubectl rollout undo` writes: the first ReplicaSet's template (hash label removed, with
  // a typed client's null creationTimestamp and the zero values a protobuf body carries) back
  // into the Deployment.
  auto rs1 = *env.get(replicasets, first_rs);
  auto tmpl = json::Document::copy_of(*json::find(rs1.root(), "/spec/template"));
  json::remove(tmpl, "/metadata/labels/pod-template-hash");
  REQUIRE(json::set(tmpl, "/metadata/creationTimestamp", json::Value()));
  REQUIRE(json::set_int(tmpl, "/metadata/generation", 0));
  REQUIRE(json::set_bool(tmpl, "/spec/containers/0/tty", false));
  REQUIRE(json::set_bool(tmpl, "/spec/hostNetwork", false));
  auto patch = json::Document::parse(R"([{"op":"replace","path":"/spec/template","value":null}])");
  REQUIRE(patch);
  (*json::find(patch->root(), "/0/value")).CopyFrom(tmpl.root(), patch->alloc());
  REQUIRE(env.store->patch(deployments, "default", "web", PatchKind::JSON, patch->dump()));
  REQUIRE(eventually([&] {
    return env.str(replicasets, first_rs, "/metadata/annotations/deployment.kubernetes.io~1revision") == "3" &&
           env.str(deployments, "web", "/metadata/annotations/deployment.kubernetes.io~1revision") == "3";
  }));
  CHECK(env.str(replicasets, first_rs, "/metadata/annotations/deployment.kubernetes.io~1revision-history") == "1");
  CHECK(env.list(replicasets, "app=web").size() == 2);  // no third ReplicaSet
  REQUIRE(eventually([&] {
    return int_at(env, replicasets, first_rs, "/status/availableReplicas") == 2 &&
           int_at(env, replicasets, second_rs, "/spec/replicas") == 0;
  }));
}

TEST_CASE("StatefulSet and DaemonSet keep ControllerRevisions, a template seen before gets the next number",
          "[apps][history]") {
  Env env;
  Controllers c(*env.store, all(env));
  auto statefulsets = res(env, "apps", "statefulsets");
  auto daemonsets = res(env, "apps", "daemonsets");
  env.create(statefulsets, workload_json("StatefulSet", "db", 2, R"("serviceName":"db","revisionHistoryLimit":1,)"));
  auto settled = [&](const std::string& revision) {
    auto s = env.get(statefulsets, "db");
    if (!s || str_at(s->root(), "/status/updateRevision") != revision ||
        str_at(s->root(), "/status/currentRevision") != revision || json::get_int(s->root(), "/status/updatedReplicas") != 2)
      return false;
    for (const auto& p : env.list(env.pods, "app=db"))
      if (str_at(p.root(), "/metadata/labels/controller-revision-hash") != revision) return false;
    return true;
  };
  REQUIRE(eventually([&] { return revisions_of(env, "db").size() == 1; }));
  std::string r1 = revisions_of(env, "db").at(1);
  REQUIRE(eventually([&] { return settled(r1); }));
  auto revision = *env.get(res(env, "apps", "controllerrevisions"), r1);
  CHECK(str_at(revision.root(), "/data/spec/template/$patch") == "replace");
  CHECK(str_at(revision.root(), "/metadata/labels/app") == "db");
  CHECK_FALSE(str_at(revision.root(), "/metadata/labels/controller.kubernetes.io~1hash").empty());

  set_template_annotation(env, statefulsets, "db", "2");
  REQUIRE(eventually([&] { return revisions_of(env, "db").count(2) == 1; }));
  std::string r2 = revisions_of(env, "db").at(2);
  REQUIRE(eventually([&] { return settled(r2); }));
  // Back to the first template (kubectl rollout undo patches the revision's data in): revision 1
  // becomes 3, no new revision is made.
  std::string data = json::dump(*json::find(revision.root(), "/data"));
  REQUIRE(env.store->patch(statefulsets, "default", "db", PatchKind::Strategic, data));
  REQUIRE(eventually([&] { return revisions_of(env, "db") == std::map<int64_t, std::string>{{2, r2}, {3, r1}}; }));
  REQUIRE(eventually([&] { return settled(r1); }));
  // revisionHistoryLimit 1: a third template leaves the current one and one unused revision.
  set_template_annotation(env, statefulsets, "db", "4");
  REQUIRE(eventually([&] { return revisions_of(env, "db").count(4) == 1; }));
  REQUIRE(eventually([&] { return settled(revisions_of(env, "db").at(4)); }));
  REQUIRE(eventually([&] { return revisions_of(env, "db").size() == 2; }));

  env.create(daemonsets, workload_json("DaemonSet", "agent", 0, ""));
  REQUIRE(eventually([&] { return revisions_of(env, "agent").size() == 1; }));
  set_template_annotation(env, daemonsets, "agent", "2");
  REQUIRE(eventually([&] {
    auto revs = revisions_of(env, "agent");
    if (revs.size() != 2) return false;
    std::string hash = revs.at(2).substr(std::string("agent-").size());
    auto pods = env.list(env.pods, "app=agent");
    if (pods.size() != 3) return false;
    for (const auto& p : pods)
      if (str_at(p.root(), "/metadata/labels/controller-revision-hash") != hash) return false;
    return int_at(env, daemonsets, "agent", "/status/updatedNumberScheduled") == 3;
  }));
  CHECK(str_at(env.get(res(env, "apps", "controllerrevisions"), revisions_of(env, "agent").at(2))->root(),
               "/metadata/labels/controller-revision-hash") == revisions_of(env, "agent").at(2).substr(6));
}

TEST_CASE("minReadySeconds: pods count as available only after being Ready that long", "[apps][availability]") {
  Env env;
  Controllers c(*env.store, all(env));
  auto deployments = res(env, "apps", "deployments");
  auto replicasets = res(env, "apps", "replicasets");
  constexpr int kMinReady = 2;
  env.create(deployments, workload_json("Deployment", "slow", 2, fmt::format(R"("minReadySeconds":{},)", kMinReady)));
  bool saw_ready_unavailable = false;
  REQUIRE(eventually([&] {
    auto d = env.get(deployments, "slow");
    if (!d) return false;
    int64_t ready = json::get_int(d->root(), "/status/readyReplicas").value_or(0);
    int64_t available = json::get_int(d->root(), "/status/availableReplicas").value_or(0);
    if (ready == 2 && available < 2) saw_ready_unavailable = true;
    if (available == 0) return false;
    // Never available before the pods' Ready transition plus minReadySeconds.
    auto now = std::chrono::system_clock::now();
    for (const auto& p : env.list(env.pods, "app=slow")) {
      const json::Value* cond = find_condition(p.root(), "/status/conditions", "Ready");
      if (!cond || str_at(*cond, "/status") != "True") continue;
      auto since = api::parse_time(str_at(*cond, "/lastTransitionTime"));
      REQUIRE(since);
      if (available == 2) CHECK(now >= *since + std::chrono::seconds(kMinReady));
    }
    return available == 2;
  }, 30s, 20ms));
  CHECK(saw_ready_unavailable);
  auto sets = env.list(replicasets, "app=slow");
  REQUIRE(sets.size() == 1);
  CHECK(json::get_int(sets[0].root(), "/spec/minReadySeconds") == kMinReady);
  REQUIRE(eventually([&] { return env.condition(deployments, "slow", "Progressing", "/reason") == "NewReplicaSetAvailable"; }));
  CHECK(env.condition(deployments, "slow", "Available", "/reason") == "MinimumReplicasAvailable");
  CHECK(env.condition(deployments, "slow", "Progressing", "/message") ==
        fmt::format("ReplicaSet \"{}\" has successfully progressed.", str_at(sets[0].root(), "/metadata/name")));
}

TEST_CASE("progressDeadlineSeconds: a rollout without progress reports ProgressDeadlineExceeded", "[apps][availability]") {
  Env env;
  Controllers c(*env.store, all(env));
  auto deployments = res(env, "apps", "deployments");
  env.create(deployments, workload_json("Deployment", "stuck", 1, R"("progressDeadlineSeconds":1,)",
                                        R"("sim.unitrain.io/ready-after":"1h")"));
  REQUIRE(eventually([&] { return env.condition(deployments, "stuck", "Progressing", "/reason") == "ProgressDeadlineExceeded"; }));
  auto rs = env.list(res(env, "apps", "replicasets"), "app=stuck");
  REQUIRE(rs.size() == 1);
  CHECK(env.condition(deployments, "stuck", "Progressing") == "False");
  CHECK(env.condition(deployments, "stuck", "Progressing", "/message") ==
        fmt::format("ReplicaSet \"{}\" has timed out progressing.", str_at(rs[0].root(), "/metadata/name")));
  CHECK(env.condition(deployments, "stuck", "Available", "/reason") == "MinimumReplicasUnavailable");

  // Paused: Progressing Unknown/DeploymentPaused on a fresh deployment, DeploymentResumed after.
  env.create(deployments, workload_json("Deployment", "held", 1, R"("paused":true,)"));
  REQUIRE(eventually([&] { return env.condition(deployments, "held", "Progressing", "/reason") == "DeploymentPaused"; }));
  CHECK(env.condition(deployments, "held", "Progressing") == "Unknown");
  REQUIRE(env.store->patch(deployments, "default", "held", PatchKind::Merge, R"({"spec":{"paused":false}})"));
  REQUIRE(eventually([&] { return env.condition(deployments, "held", "Progressing", "/reason") == "NewReplicaSetAvailable"; }));
}

TEST_CASE("LimitRange min, max and maxLimitRequestRatio refuse pods and claims as kube-apiserver words it", "[admission]") {
  Env env;
  auto limits = res(env, "", "limitranges");
  auto claims = res(env, "", "persistentvolumeclaims");
  env.create(limits, R"({"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"bounds"},
      "spec":{"limits":[{"type":"Container","min":{"cpu":"100m"},"max":{"memory":"1Gi"},"maxLimitRequestRatio":{"cpu":"2"},
                         "default":{"cpu":"400m","memory":"512Mi"},"defaultRequest":{"cpu":"200m"}},
                        {"type":"Pod","max":{"cpu":"1"}},
                        {"type":"PersistentVolumeClaim","min":{"storage":"1Gi"},"max":{"storage":"10Gi"}}]}})");
  auto pod = [](const std::string& name, const std::string& resources) {
    return fmt::format(R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{}"}},
        "spec":{{"containers":[{{"name":"main","image":"x","resources":{}}}]}}}})", name, resources);
  };
  auto refusal = [&](const std::string& body) {
    auto r = env.store->create(env.pods, "default", parse(body));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == 403);
    return r.error().message;
  };
  // Defaults alone satisfy the bounds.
  env.create(env.pods, pod("fine", "{}"));
  CHECK(refusal(pod("tiny", R"({"requests":{"cpu":"50m"},"limits":{"cpu":"100m"}})")) ==
        "pods \"tiny\" is forbidden: minimum cpu usage per Container is 100m, but request is 50m");
  CHECK(refusal(pod("big", R"({"limits":{"memory":"2Gi"}})")) ==
        "pods \"big\" is forbidden: maximum memory usage per Container is 1Gi, but limit is 2Gi");
  CHECK(refusal(pod("spiky", R"({"requests":{"cpu":"100m"},"limits":{"cpu":"400m"}})")) ==
        "pods \"spiky\" is forbidden: cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000");
  CHECK(refusal(pod("both", R"({"requests":{"cpu":"800m"},"limits":{"cpu":"1200m","memory":"2Gi"}})")) ==
        "pods \"both\" is forbidden: [maximum memory usage per Container is 1Gi, but limit is 2Gi, "
        "maximum cpu usage per Pod is 1, but limit is 1200m]");
  auto claim = [](const std::string& name, const std::string& size) {
    return fmt::format(R"({{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{{"name":"{}"}},
        "spec":{{"accessModes":["ReadWriteOnce"],"resources":{{"requests":{{"storage":"{}"}}}}}}}})", name, size);
  };
  auto huge = env.store->create(claims, "default", parse(claim("huge", "20Gi")));
  REQUIRE_FALSE(huge);
  CHECK(huge.error().message ==
        "persistentvolumeclaims \"huge\" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi");
  env.create(claims, claim("right", "5Gi"));
}

TEST_CASE("PodDisruptionBudget status and evictions that honour it", "[policy]") {
  Env env;
  Controllers c(*env.store, all(env));
  auto deployments = res(env, "apps", "deployments");
  auto budgets = *env.store->find_resource("policy", "v1", "poddisruptionbudgets");
  env.create(deployments, workload_json("Deployment", "web", 2, ""));
  env.create(budgets, R"({"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"web"},
      "spec":{"minAvailable":2,"selector":{"matchLabels":{"app":"web"}}}})");
  auto status = [&](std::string_view field) { return int_at(env, budgets, "web", std::string("/status/") + std::string(field)); };
  REQUIRE(eventually([&] { return status("currentHealthy") == 2 && status("expectedPods") == 2; }));
  CHECK(status("desiredHealthy") == 2);
  CHECK(status("disruptionsAllowed") == 0);
  CHECK(env.condition(budgets, "web", "DisruptionAllowed") == "False");
  CHECK(env.condition(budgets, "web", "DisruptionAllowed", "/reason") == "InsufficientPods");

  auto pods = env.list(env.pods, "app=web");
  REQUIRE(pods.size() == 2);
  auto eviction = [](std::string_view name) {
    return parse(fmt::format(R"({{"apiVersion":"policy/v1","kind":"Eviction","metadata":{{"name":"{}"}}}})", name));
  };
  std::string first(str_at(pods[0].root(), "/metadata/name")), second(str_at(pods[1].root(), "/metadata/name"));
  auto refused = evict_pod(*env.store, env.pods, "default", first, eviction(first).root(), false);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == 429);
  CHECK(refused.error().message == "Cannot evict pod as it would violate the pod's disruption budget.");
  CHECK(str_at(refused.error().details.root(), "/causes/0/reason") == "DisruptionBudget");
  CHECK(str_at(refused.error().details.root(), "/causes/0/message") ==
        "The disruption budget web needs 2 healthy pods and has 2 currently");
  CHECK(env.get(env.pods, first).has_value());
  auto mismatch = evict_pod(*env.store, env.pods, "default", first, eviction("other").root(), false);
  REQUIRE_FALSE(mismatch);
  CHECK(mismatch.error().message == "name in URL does not match name in Eviction object");

  // maxUnavailable 1 of the Deployment's 2 replicas: one eviction, then the budget is spent.
  REQUIRE(env.store->patch(budgets, "default", "web", PatchKind::Merge, R"({"spec":{"minAvailable":null,"maxUnavailable":1}})"));
  REQUIRE(eventually([&] { return status("disruptionsAllowed") == 1 && status("desiredHealthy") == 1; }));
  CHECK(env.condition(budgets, "web", "DisruptionAllowed", "/reason") == "SufficientPods");
  auto evicted = evict_pod(*env.store, env.pods, "default", first, eviction(first).root(), false);
  REQUIRE(evicted);
  CHECK(str_at(evicted->root(), "/status") == "Success");
  auto spent = evict_pod(*env.store, env.pods, "default", second, eviction(second).root(), false);
  REQUIRE_FALSE(spent);
  CHECK(spent.error().code == 429);
  // The Deployment replaces the evicted pod; once it is Ready the budget allows one again.
  REQUIRE(eventually([&] { return status("currentHealthy") == 2 && status("disruptionsAllowed") == 1; }));
}

TEST_CASE("static PersistentVolumes: claims bind to an Available volume that fits, else wait", "[storage]") {
  Env env;
  Controllers c(*env.store, all(env));
  auto claims = res(env, "", "persistentvolumeclaims");
  auto volumes = res(env, "", "persistentvolumes");
  auto volume = [](const std::string& name, const std::string& size, const std::string& modes, const std::string& cls,
                   const std::string& labels = "{}") {
    return fmt::format(R"({{"apiVersion":"v1","kind":"PersistentVolume","metadata":{{"name":"{}","labels":{}}},
        "spec":{{"capacity":{{"storage":"{}"}},"accessModes":[{}],"storageClassName":"{}",
                 "persistentVolumeReclaimPolicy":"Retain","hostPath":{{"path":"/data/{}"}}}}}})",
                       name, labels, size, modes, cls, name);
  };
  auto claim = [](const std::string& name, const std::string& size, const std::string& modes, const std::string& extra) {
    return fmt::format(R"({{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{{"name":"{}"}},
        "spec":{{{}"accessModes":[{}],"resources":{{"requests":{{"storage":"{}"}}}}}}}})", name, extra, modes, size);
  };
  env.create(volumes, volume("small", "2Gi", R"("ReadWriteOnce")", ""));
  env.create(volumes, volume("large", "50Gi", R"("ReadWriteOnce","ReadWriteMany")", "", R"({"tier":"gold"})"));
  env.create(volumes, volume("classy", "5Gi", R"("ReadWriteOnce")", "standard"));
  REQUIRE(eventually([&] {
    for (const char* v : {"small", "large", "classy"})
      if (env.str(volumes, v, "/status/phase") != "Available") return false;
    return true;
  }));

  // storageClassName "": the smallest class-less volume that fits; capacity is the volume's.
  env.create(claims, claim("a", "1Gi", R"("ReadWriteOnce")", R"("storageClassName":"",)"));
  REQUIRE(eventually([&] { return env.str(claims, "a", "/status/phase") == "Bound"; }));
  CHECK(env.str(claims, "a", "/spec/volumeName") == "small");
  CHECK(env.str(claims, "a", "/status/capacity/storage") == "2Gi");
  CHECK(env.str(volumes, "small", "/spec/claimRef/name") == "a");
  CHECK(env.str(volumes, "small", "/status/phase") == "Bound");

  // The default class: its Available volume first, before provisioning.
  env.create(claims, claim("b", "1Gi", R"("ReadWriteOnce")", ""));
  REQUIRE(eventually([&] { return env.str(claims, "b", "/status/phase") == "Bound"; }));
  CHECK(env.str(claims, "b", "/spec/volumeName") == "classy");

  // ReadWriteMany and a selector: only "large" fits; a claim nothing fits waits.
  env.create(claims, claim("c", "100Gi", R"("ReadWriteOnce")", R"("storageClassName":"",)"));
  env.create(claims, claim("d", "1Gi", R"("ReadWriteMany")", R"("storageClassName":"","selector":{"matchLabels":{"tier":"gold"}},)"));
  REQUIRE(eventually([&] { return env.str(claims, "d", "/spec/volumeName") == "large"; }));
  REQUIRE(eventually([&] { return has_event(env, "c", "FailedBinding"); }));
  CHECK(env.str(claims, "c", "/status/phase") == "Pending");
  // A volume that fits arrives: the waiting claim binds to it.
  env.create(volumes, volume("huge", "200Gi", R"("ReadWriteOnce")", ""));
  REQUIRE(eventually([&] { return env.str(claims, "c", "/spec/volumeName") == "huge"; }));
  REQUIRE(eventually([&] { return env.str(claims, "c", "/status/phase") == "Bound"; }));
}
