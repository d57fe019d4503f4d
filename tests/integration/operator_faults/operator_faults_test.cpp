#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "core/api/meta.h"
#include "core/controller/job_controller.h"
#include "core/framework/registry.h"
#include "core/kube/rest_client.h"
#include "frameworks/mpi/v2/register.h"
#include "frameworks/pytorch/register.h"
#include "localcluster/controllers/controllers.h"
#include "localcluster/local_cluster.h"
#include "tests/support/eventually.h"
#include "tests/support/local_cluster.h"

namespace c = unitrain::controller;
namespace fw = unitrain::framework;
namespace json = unitrain::json;
namespace kube = unitrain::kube;
namespace lc = unitrain::localcluster;
using namespace std::chrono_literals;

namespace {

class NullSink final : public c::EventSink {
 public:
  void event(const json::Value&, std::string_view, std::string_view, std::string) override {}
};

using unitrain::testing::install_crds;
using unitrain::testing::read_text;
using unitrain::testing::rest_config_of;

using unitrain::testing::eventually;
// Every request may meet an injected fault and its retry back-off: the jobs take longer than usual.
constexpr auto kUnderFaults = std::chrono::seconds(90);

// Counts pod creations per name straight from the store, which no injected fault touches: a
// duplicate pod (a second creation under one name, or a pod beyond the expected set) shows here.
class PodCreations {
 public:
  explicit PodCreations(lc::Store& store) {
    auto pods = store.find_resource("", "v1", "pods");
    REQUIRE(pods);
    lc::WatchRequest wr;
    auto w = store.watch(*pods, "default", wr);
    REQUIRE(w);
    watcher_ = std::move(*w);
    thread_ = std::thread([this] {
      while (!stop_) {
        bool closed = false;
        for (const auto& ev : watcher_->drain(closed)) {
          if (ev.type != "ADDED" || !ev.object) continue;
          auto doc = json::Document::parse(*ev.object);
          if (!doc) continue;
          std::lock_guard g(mu_);
          ++counts_[std::string(json::get_string(doc->root(), "/metadata/name").value_or(""))];
        }
        std::this_thread::sleep_for(10ms);
      }
    });
  }
  ~PodCreations() {
    stop_ = true;
    thread_.join();
    watcher_->stop();
  }
  std::map<std::string, int> counts() {
    std::lock_guard g(mu_);
    return counts_;
  }
  // "name×n ..." of the pods whose names start with `prefix`, for a readable check.
  std::string of(std::string_view prefix) {
    std::string out;
    for (const auto& [name, n] : counts())
      if (name.rfind(prefix, 0) == 0) out += fmt::format("{}×{} ", name, n);
    return out;
  }

 private:
  std::unique_ptr<lc::Watcher> watcher_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::map<std::string, int> counts_;
  std::thread thread_;
};

const kube::GroupVersionResource kPods{"", "v1", "pods"};
const kube::GroupVersionResource kPyTorchJobs{"kubeflow.org", "v1", "pytorchjobs"};
const kube::GroupVersionResource kMPIJobs{"kubeflow.org", "v2beta1", "mpijobs"};

// 10% 500s, 5% 429s and 5% 409s on every write of the operator, watches cut every 5 events and
// the first two watch resumes answered 410.
constexpr const char* kFaults = R"({"seed":2024,"rules":[{"verbs":"write","error500":0.1,"error429":0.05,
    "retryAfterSeconds":1,"error409":0.05}],"watchCutAfterEvents":5,"watchExpireResumes":2})";

struct Env {
  lc::LocalCluster cluster{[] {
    lc::LocalClusterOptions o;
    o.attach = [](lc::Store& s) -> std::shared_ptr<void> {
      lc::controllers::ControllersOptions co;
      co.kubelet_options.restart_backoff = std::chrono::milliseconds(0);
      return std::make_shared<lc::controllers::Controllers>(s, std::move(co));
    };
    return o;
  }()};
  std::unique_ptr<kube::RestClient> client;
  kube::RealClock clock;
  NullSink events;
  fw::Registry registry;

  Env() {
    REQUIRE(cluster.start());
    auto rc = kube::RestClient::create(rest_config_of(cluster));
    REQUIRE(rc);
    client = std::move(*rc);
    REQUIRE(unitrain::frameworks::pytorch::register_pytorch(registry));
    REQUIRE(unitrain::frameworks::mpi::v2::register_mpi_v2(registry));
  }

  // `file` under manifests/crds.
  void install_crd(const std::string& file) {
    auto installed = install_crds(*client, std::string(UNITRAIN_SOURCE_DIR) + "/manifests/crds/" + file);
    if (!installed) FAIL(installed.error().message);
  }

  std::unique_ptr<c::JobController> controller(std::string_view name) {
    auto plugin = registry.instantiate(name, {});
    REQUIRE(plugin);
    auto ctl = std::make_unique<c::JobController>(*client, clock, events, std::move(*plugin), c::JobControllerOptions{});
    ctl->start();
    REQUIRE(ctl->wait_for_sync(std::chrono::seconds(10)));
    return ctl;
  }

  std::string true_conditions(const kube::GroupVersionResource& r, std::string_view name) {
    auto obj = cluster.store().find_resource(r.group, r.version, r.resource);
    REQUIRE(obj);
    auto got = cluster.store().get(*obj, "default", name);
    if (!got) return "";
    std::string out;
    if (const json::Value* conds = json::find(got->root(), "/status/conditions"))
      for (const auto& cond : conds->GetArray())
        if (json::get_string(cond, "/status") == "True") out += std::string(json::get_string(cond, "/type").value_or("")) + " ";
    return out;
  }

  json::Document stored(const kube::GroupVersionResource& r, std::string_view name) {
    auto info = cluster.store().find_resource(r.group, r.version, r.resource);
    REQUIRE(info);
    auto got = cluster.store().get(*info, "default", name);
    REQUIRE(got);
    return std::move(*got);
  }
};

}  // namespace

TEST_CASE("PyTorchJob and MPIJob v2 reach Succeeded through 500/429/409 on writes, cut watches and 410",
          "[faults]") {
  Env env;
  env.install_crd("kubeflow.org_pytorchjobs.yaml");
  env.install_crd("kubeflow.org_mpijobs_v2beta1.yaml");
  PodCreations creations(env.cluster.store());
  env.cluster.faults().configure(*lc::FaultConfig::parse(kFaults));
  auto pytorch = env.controller("pytorchjob");
  auto mpi = env.controller("mpijob-v2");

  auto jobs = json::parse_yaml(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: torch, namespace: default}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        # Outlasts the workers' start-up through the faults (a 429 holds a create back for its
        # 1 s Retry-After), as torchrun's rendezvous makes a real master wait for its workers.
        # A master done before a worker ran ends the job with that worker counted nowhere, in
        # training-operator v1.8 too (only Running counts as active, Succeeded += Active).
        metadata: {annotations: {sim.unitrain.io/duration: 3s}}
        spec: {containers: [{name: pytorch, image: example.com/train:1}]}
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 500ms}}
        spec: {containers: [{name: pytorch, image: example.com/train:1}]}
---
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: pi, namespace: default}
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 500ms}}
        spec: {containers: [{name: launcher, image: example.com/mpi:1}]}
    Worker:
      replicas: 2
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 1h}}
        spec: {containers: [{name: worker, image: example.com/mpi:1}]}
)");
  REQUIRE(jobs);
  // The test's own creates go through the same faults: retry them as a user would.
  auto create = [&](const kube::GroupVersionResource& r, const json::Value& obj) {
    for (int i = 0; i < 20; ++i) {
      auto got = env.client->create(r, "default", obj);
      if (got || got.error().is(kube::ApiError::Reason::AlreadyExists)) return;
    }
    FAIL("could not create the job through the faults");
  };
  create(kPyTorchJobs, (*jobs)[0].root());
  create(kMPIJobs, (*jobs)[1].root());

  REQUIRE(eventually([&] { return env.true_conditions(kPyTorchJobs, "torch").find("Succeeded") != std::string::npos; }, kUnderFaults));
  REQUIRE(eventually([&] { return env.true_conditions(kMPIJobs, "pi").find("Succeeded") != std::string::npos; }, kUnderFaults));
  CHECK(env.true_conditions(kPyTorchJobs, "torch").find("Failed") == std::string::npos);
  CHECK(env.true_conditions(kMPIJobs, "pi").find("Failed") == std::string::npos);

  // No lost status: the replica counts the jobs finished with are on the server. The pass after
  // Succeeded folds what was still active into succeeded (training-operator's finished-job
  // step); wait for it rather than read between the two writes.
  REQUIRE(eventually([&] {
    auto obj = env.stored(kPyTorchJobs, "torch");
    const json::Value* statuses = json::find(obj.root(), "/status/replicaStatuses");
    if (!statuses || !statuses->IsObject()) return false;
    for (const auto& m : statuses->GetObject())
      if (json::get_int(m.value, "/active").value_or(0) != 0) return false;
    return true;
  }, kUnderFaults));
  auto torch = env.stored(kPyTorchJobs, "torch");
  CHECK(json::get_int(torch.root(), "/status/replicaStatuses/Master/succeeded") == 1);
  CHECK(json::get_int(torch.root(), "/status/replicaStatuses/Worker/succeeded") == 3);
  CHECK(json::find(torch.root(), "/status/completionTime") != nullptr);
  auto pi = env.stored(kMPIJobs, "pi");
  CHECK(json::get_int(pi.root(), "/status/replicaStatuses/Launcher/succeeded") == 1);

  // No duplicate pods: each expected name created once, nothing else but the launcher Job's pod.
  std::this_thread::sleep_for(1s);
  auto counts = creations.counts();
  for (const char* name : {"torch-master-0", "torch-worker-0", "torch-worker-1", "torch-worker-2", "pi-worker-0",
                           "pi-worker-1"}) {
    INFO(name);
    CHECK(counts[name] == 1);
  }
  int launcher_pods = 0;
  for (const auto& [name, n] : counts) {
    if (name.rfind("pi-launcher-", 0) == 0) launcher_pods += n;
  }
  CHECK(launcher_pods == 1);
  CHECK(counts.size() == 7);

  auto injected = env.cluster.faults().counts();
  std::string summary;
  for (const auto& [k, n] : injected) summary += fmt::format("{}={} ", k, n);
  WARN("faults injected: " << summary);
  CHECK(injected["500"] > 0);
  CHECK(injected["watchCut"] > 0);
  CHECK(injected["watchExpired"] == 2);
  CHECK(injected["429"] + injected["409"] > 0);
}

// The informers are not one snapshot: after an API-server restart each re-lists on its own, so
// the garbage collector's deletes of a deleted job's pods can reach the controller while its jobs
// cache still holds the job. Here the jobs informer can neither list nor watch after the restart
// (409s, which the client does not retry), the pods informer can.
TEST_CASE("a job deleted while the jobs cache is stale gets none of its garbage-collected pods again",
          "[faults]") {
  Env env;
  env.install_crd("kubeflow.org_pytorchjobs.yaml");
  PodCreations creations(env.cluster.store());
  auto pytorch = env.controller("pytorchjob");
  auto job = json::parse_yaml(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: gone, namespace: default}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 1h}}
        spec: {containers: [{name: pytorch, image: example.com/train:1}]}
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 1h}}
        spec: {containers: [{name: pytorch, image: example.com/train:1}]}
)");
  REQUIRE(job);
  REQUIRE(env.client->create(kPyTorchJobs, "default", (*job)[0].root()));
  auto active = [&](const char* replica) {
    auto obj = env.stored(kPyTorchJobs, "gone");
    return json::get_int(obj.root(), fmt::format("/status/replicaStatuses/{}/active", replica)).value_or(0);
  };
  REQUIRE(eventually([&] { return active("Master") == 1 && active("Worker") == 1; }));
  // A new job's pods are created without reading the job back.
  CHECK(pytorch->reconcile_stats().job_confirmations == 0);
  auto pods = env.cluster.store().find_resource("", "v1", "pods");
  REQUIRE(pods);
  auto pod_exists = [&](std::string_view name) { return env.cluster.store().get(*pods, "default", name).has_value(); };

  // A replica pod someone else deletes is created again (upstream does too), once the job is
  // confirmed live on the server.
  REQUIRE(env.client->remove(kPods, "default", "gone-worker-0"));
  REQUIRE(eventually([&] { return creations.counts()["gone-worker-0"] == 2 && pod_exists("gone-worker-0"); }));
  CHECK(pytorch->reconcile_stats().job_confirmations >= 1);
  CHECK(pytorch->reconcile_stats().stale_jobs == 0);
  REQUIRE(eventually([&] { return active("Worker") == 1; }));
  // The controller's cache has the job as the server does (its own last status write included).
  REQUIRE(eventually([&] {
    const std::string stored_rv(unitrain::api::resource_version_of(env.stored(kPyTorchJobs, "gone").root()));
    for (const auto& cached : pytorch->managed_jobs())
      if (unitrain::api::resource_version_of(cached->root()) == stored_rv) return true;
    return false;
  }));

  env.cluster.faults().configure(
      *lc::FaultConfig::parse(R"({"rules":[{"verbs":["LIST","WATCH"],"resources":["pytorchjobs"],"error409":1}]})"));
  REQUIRE(env.cluster.restart());
  kube::DeleteOptions background;
  background.propagation_policy = "Background";
  REQUIRE(env.client->remove(kPyTorchJobs, "default", "gone", background));
  REQUIRE(eventually([&] { return !pod_exists("gone-master-0") && !pod_exists("gone-worker-0"); }));
  // Then a pass runs over the cached job, which has no pods left: it finds the job gone on the
  // server, or (the race) creates them again.
  const std::string before = creations.of("gone-");
  REQUIRE(eventually([&] { return pytorch->reconcile_stats().stale_jobs >= 1 || creations.of("gone-") != before; }));
  CHECK(creations.of("gone-") == before);
  CHECK(pytorch->reconcile_stats().stale_jobs >= 1);
  CHECK_FALSE(pod_exists("gone-master-0"));
  CHECK_FALSE(pod_exists("gone-worker-0"));
  // The cache was stale all along: the jobs informer never saw the delete.
  CHECK(pytorch->managed_jobs().size() == 1);

  // Once the jobs informer lists again, the job leaves the cache and nothing more happens.
  env.cluster.faults().configure(*lc::FaultConfig::parse(R"({"rules":[]})"));
  REQUIRE(eventually([&] { return pytorch->managed_jobs().empty(); }, 60s));
  CHECK(creations.of("gone-") == before);
}
