#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "core/controller/job_controller.h"
#include "core/framework/registry.h"
#include "core/kube/rest_client.h"
#include "frameworks/mpi/v2/register.h"
#include "frameworks/pytorch/register.h"
#include "localcluster/controllers/controllers.h"
#include "localcluster/local_cluster.h"

namespace c = unitrain::controller;
namespace fw = unitrain::framework;
namespace json = unitrain::json;
namespace kube = unitrain::kube;
namespace lc = unitrain::localcluster;
using json::Document;

namespace {

class RecordingSink final : public c::EventSink {
 public:
  void event(const json::Value&, std::string_view type, std::string_view reason, std::string message) override {
    std::lock_guard lock(mu_);
    events_.push_back(fmt::format("{} {} {}", type, reason, message));
  }
  std::vector<std::string> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> events_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

// Writes the API server counted, by verb and resource, from its /metrics exposition.
struct WriteCounts {
  std::map<std::string, uint64_t> by_verb_resource;  // "POST pods", "PUT pytorchjobs/status"
  uint64_t total(bool with_events) const {
    uint64_t n = 0;
    for (const auto& [k, v] : by_verb_resource)
      if (with_events || k.find("events") == std::string::npos) n += v;
    return n;
  }
  std::string describe() const {
    std::string out;
    for (const auto& [k, v] : by_verb_resource) out += fmt::format("{}={} ", k, v);
    return out;
  }
};

WriteCounts writes_since(const lc::LocalCluster& cluster, const WriteCounts& before = {}) {
  WriteCounts w;
  static const std::regex line(R"re(apiserver_request_total\{code="(\d+)",component="apiserver",group="[^"]*",resource="([^"]*)",subresource="([^"]*)",verb="(POST|PUT|PATCH|DELETE|APPLY|DELETECOLLECTION)",version="[^"]*"\} (\d+))re");
  std::istringstream in(cluster.metrics().render());
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    std::string key = fmt::format("{} {}{}{}", m[4].str(), m[2].str(), m[3].str().empty() ? "" : "/", m[3].str());
    w.by_verb_resource[key] += std::stoull(m[5].str());
  }
  for (const auto& [k, v] : before.by_verb_resource) w.by_verb_resource[k] -= v;
  return w;
}

struct Cluster {
  lc::LocalCluster cluster{lc::LocalClusterOptions{}};
  std::unique_ptr<lc::controllers::Controllers> controllers;
  std::unique_ptr<kube::RestClient> client;
  kube::RealClock clock;
  RecordingSink events;
  fw::Registry registry;

  Cluster() {
    REQUIRE(cluster.start());
    lc::controllers::ControllersOptions o;
    controllers = std::make_unique<lc::controllers::Controllers>(cluster.store(), o);
    kube::RestConfig cfg;
    cfg.scheme = "http";
    cfg.host = "127.0.0.1";
    cfg.port = cluster.port();
    cfg.qps = -1;
    auto rc = kube::RestClient::create(cfg);
    REQUIRE(rc);
    client = std::move(*rc);
    REQUIRE(unitrain::frameworks::pytorch::register_pytorch(registry));
    REQUIRE(unitrain::frameworks::mpi::v2::register_mpi_v2(registry));
  }

  void install_crd(const std::string& file) {
    auto docs = json::parse_yaml(read_file(std::string(UNITRAIN_SOURCE_DIR) + "/manifests/crds/" + file));
    REQUIRE(docs);
    for (const auto& d : *docs) REQUIRE(client->create({"apiextensions.k8s.io", "v1", "customresourcedefinitions"}, "", d.root()));
  }

  std::unique_ptr<c::JobController> controller(std::string_view name) {
    auto plugin = registry.instantiate(name, {});
    REQUIRE(plugin);
    auto ctl = std::make_unique<c::JobController>(*client, clock, events, std::move(*plugin), c::JobControllerOptions{});
    ctl->start();
    REQUIRE(ctl->wait_for_sync(std::chrono::seconds(10)));
    return ctl;
  }

  std::string condition_types(const kube::GroupVersionResource& r, std::string_view name) {
    auto obj = client->get(r, "default", name);
    if (!obj) return "";
    std::string out;
    if (const json::Value* conds = json::find(obj->root(), "/status/conditions"))
      for (const auto& cond : conds->GetArray())
        if (json::get_string(cond, "/status") == "True") out += std::string(json::get_string(cond, "/type").value_or("")) + " ";
    return out;
  }
};

const kube::GroupVersionResource kPyTorchJobs{"kubeflow.org", "v1", "pytorchjobs"};
const kube::GroupVersionResource kMPIJobs{"kubeflow.org", "v2beta1", "mpijobs"};

}  // namespace

TEST_CASE("PyTorchJob with 1 Master and 3 Workers runs to Succeeded on the local cluster") {
  Cluster k;
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob");
  const auto before = writes_since(k.cluster);
  auto job = json::parse_yaml(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: mnist, namespace: default}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 300ms}}
        spec: {containers: [{name: pytorch, image: example.com/train:1}]}
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 300ms}}
        spec: {containers: [{name: pytorch, image: example.com/train:1}]}
)");
  REQUIRE(job);
  REQUIRE(k.client->create(kPyTorchJobs, "default", (*job)[0].root()));
  REQUIRE(eventually([&] { return k.condition_types(kPyTorchJobs, "mnist").find("Succeeded") != std::string::npos; }));
  CHECK(k.condition_types(kPyTorchJobs, "mnist") == "Created Succeeded ");

  auto pod = k.client->get({"", "v1", "pods"}, "default", "mnist-worker-2");
  REQUIRE(pod);
  std::string env;
  for (const auto& e : json::find(pod->root(), "/spec/containers/0/env")->GetArray())
    env += fmt::format("{}={} ", json::get_string(e, "/name").value_or(""), json::get_string(e, "/value").value_or(""));
  CHECK(env == "PYTHONUNBUFFERED=1 MASTER_PORT=23456 PET_MASTER_PORT=23456 MASTER_ADDR=mnist-master-0 PET_MASTER_ADDR=mnist-master-0 "
               "WORLD_SIZE=4 RANK=3 PET_NODE_RANK=3 PET_NPROC_PER_NODE=auto PET_NNODES=4 ");
  CHECK(k.client->get({"", "v1", "services"}, "default", "mnist-master-0"));

  // Settle, then count: a finished job must cost no further writes.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto w = writes_since(k.cluster, before);
  UNSCOPED_INFO("PyTorchJob writes: " << w.describe());
  CHECK(w.by_verb_resource["POST pods"] == 4);
  CHECK(w.by_verb_resource["POST services"] == 4);
  const auto settled = writes_since(k.cluster);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  CHECK(writes_since(k.cluster, settled).total(false) == 0);
  WARN("PyTorchJob (1 Master + 3 Workers) writes without events: " << w.total(false) << " (" << w.describe() << ")");
}

TEST_CASE("MPIJob v2 with 2 workers runs its launcher Job to Succeeded on the local cluster") {
  Cluster k;
  k.install_crd("kubeflow.org_mpijobs_v2beta1.yaml");
  auto ctl = k.controller("mpijob-v2");
  const auto before = writes_since(k.cluster);
  auto job = json::parse_yaml(R"(
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: pi, namespace: default}
spec:
  slotsPerWorker: 1
  runPolicy: {cleanPodPolicy: Running}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 500ms}}
        spec: {containers: [{name: launcher, image: example.com/mpi:1, command: [mpirun, -n, "2", /pi]}]}
    Worker:
      replicas: 2
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 1h}}
        spec: {containers: [{name: worker, image: example.com/mpi:1}]}
)");
  REQUIRE(job);
  REQUIRE(k.client->create(kMPIJobs, "default", (*job)[0].root()));
  REQUIRE(eventually([&] { return k.condition_types(kMPIJobs, "pi").find("Succeeded") != std::string::npos; }));
  CHECK(k.client->get({"batch", "v1", "jobs"}, "default", "pi-launcher"));
  CHECK(k.client->get({"", "v1", "configmaps"}, "default", "pi-config"));
  CHECK(k.client->get({"", "v1", "secrets"}, "default", "pi-ssh"));
  CHECK(k.client->get({"", "v1", "services"}, "default", "pi"));
  // cleanPodPolicy Running removes the still-running workers.
  REQUIRE(eventually([&] {
    auto w0 = k.client->get({"", "v1", "pods"}, "default", "pi-worker-0");
    return !w0 || json::find(w0->root(), "/metadata/deletionTimestamp") != nullptr;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto w = writes_since(k.cluster, before);
  CHECK(w.by_verb_resource["POST secrets"] == 1);
  CHECK(w.by_verb_resource["POST jobs"] == 1);
  CHECK(w.by_verb_resource["PUT services"] == 0);  // the Service is in sync from the start: no drift loop
  WARN("MPIJob v2 (2 workers) writes without events: " << w.total(false) << " (" << w.describe() << ")");
}
