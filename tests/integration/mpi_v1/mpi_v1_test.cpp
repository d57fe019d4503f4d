// MPIJob v1 end to end: the local cluster's API server, simulated kubelet and GC, the REST client
// and the job-controller core running the kubeflow.org/mpijob@v1 module.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "core/controller/job_controller.h"
#include "core/framework/registry.h"
#include "core/kube/rest_client.h"
#include "frameworks/mpi/v1/register.h"
#include "frameworks/mpi/v2/register.h"
#include "localcluster/controllers/controllers.h"
#include "localcluster/local_cluster.h"
#include "tests/support/eventually.h"
#include "tests/support/local_cluster.h"
#include "tests/support/skip.h"

namespace c = unitrain::controller;
namespace fw = unitrain::framework;
namespace json = unitrain::json;
namespace kube = unitrain::kube;
namespace lc = unitrain::localcluster;
using json::Document;

namespace {

const kube::GroupVersionResource kMPIJobs{"kubeflow.org", "v1", "mpijobs"};
const kube::GroupVersionResource kPods{"", "v1", "pods"};

using unitrain::testing::read_text;
using unitrain::testing::rest_config_of;
using unitrain::testing::RecordingSink;

using unitrain::testing::eventually;
using unitrain::testing::skip;

// Successful requests of one verb the API server counted, by resource ("pods", "roles"), from its
// /metrics exposition.
std::map<std::string, uint64_t> requests(const lc::LocalCluster& cluster, std::string_view verb) {
  std::map<std::string, uint64_t> out;
  const std::regex line(fmt::format(
      R"re(apiserver_request_total\{{code="2\d\d",component="apiserver",group="[^"]*",resource="([^"]*)",subresource="",verb="{}",version="[^"]*"\}} (\d+))re",
      verb));
  std::istringstream in(cluster.metrics().render());
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_match(l, m, line)) out[m[1].str()] += std::stoull(m[2].str());
  }
  return out;
}
std::map<std::string, uint64_t> creations(const lc::LocalCluster& cluster) { return requests(cluster, "POST"); }

struct Cluster {
  lc::LocalCluster cluster{lc::LocalClusterOptions{}};
  std::unique_ptr<lc::controllers::Controllers> controllers;
  std::unique_ptr<kube::RestClient> client;
  kube::RealClock clock;
  RecordingSink events;
  fw::Registry registry;
  std::unique_ptr<c::JobController> ctl;

  std::unique_ptr<c::JobController> v2;

  // `both_versions`: one CRD serving v1 and v2beta1 (conversion None: only apiVersion changes,
  // as the local cluster does without a webhook) and an MPI v2 controller beside the v1 one.
  explicit Cluster(bool both_versions = false) {
    REQUIRE(cluster.start());
    lc::controllers::ControllersOptions co;
    co.kubelet_options.restart_backoff = std::chrono::milliseconds(0);
    controllers = std::make_unique<lc::controllers::Controllers>(cluster.store(), std::move(co));
    auto rc = kube::RestClient::create(rest_config_of(cluster));
    REQUIRE(rc);
    client = std::move(*rc);
    REQUIRE(unitrain::frameworks::mpi::v1::register_mpi_v1(registry));
    const std::string crds = std::string(UNITRAIN_SOURCE_DIR) + "/manifests/crds/";
    auto docs = json::parse_yaml(read_text(crds + "kubeflow.org_mpijobs_v1.yaml"));
    REQUIRE(docs);
    Document crd = (*docs)[0];
    if (both_versions) {
      auto v2_docs = json::parse_yaml(read_text(crds + "kubeflow.org_mpijobs_v2beta1.yaml"));
      REQUIRE(v2_docs);
      crd = (*v2_docs)[0];
      json::Value v1_version(*json::find((*docs)[0].root(), "/spec/versions/0"), crd.alloc());
      v1_version["storage"] = false;
      json::find(crd.root(), "/spec/versions")->PushBack(v1_version, crd.alloc());
    }
    REQUIRE(client->create({"apiextensions.k8s.io", "v1", "customresourcedefinitions"}, "", crd.root()));
    fw::PluginConfig config;
    config.options["mpi-kubectl-delivery-image"] = "example.com/kubectl-delivery:test";
    auto plugin = registry.instantiate("mpijob-v1", config);
    REQUIRE(plugin);
    ctl = std::make_unique<c::JobController>(*client, clock, events, std::move(*plugin), c::JobControllerOptions{});
    ctl->start();
    REQUIRE(ctl->wait_for_sync(std::chrono::seconds(10)));
    if (both_versions) {
      REQUIRE(unitrain::frameworks::mpi::v2::register_mpi_v2(registry));
      auto p2 = registry.instantiate("mpijob-v2", {});
      REQUIRE(p2);
      v2 = std::make_unique<c::JobController>(*client, clock, events, std::move(*p2), c::JobControllerOptions{});
      v2->start();
      REQUIRE(v2->wait_for_sync(std::chrono::seconds(10)));
    }
  }

  void submit(std::string_view yaml, const kube::GroupVersionResource& r = kMPIJobs) {
    auto docs = json::parse_yaml(yaml);
    REQUIRE(docs);
    for (const auto& d : *docs) REQUIRE(client->create(r, "default", d.root()));
  }

  // "Type=Status/Reason: message" for every condition, in order.
  std::string conditions(std::string_view name) {
    auto obj = client->get(kMPIJobs, "default", name);
    if (!obj) return "";
    std::string out;
    if (const json::Value* conds = json::find(obj->root(), "/status/conditions"))
      for (const auto& cond : conds->GetArray())
        out += fmt::format("{}={}/{}: {}\n", json::get_string(cond, "/type").value_or(""), json::get_string(cond, "/status").value_or(""),
                           json::get_string(cond, "/reason").value_or(""), json::get_string(cond, "/message").value_or(""));
    return out;
  }

  bool has_condition(std::string_view name, std::string_view type) {
    return conditions(name).find(fmt::format("{}=True", type)) != std::string::npos;
  }

  std::string dump(const kube::GroupVersionResource& r, std::string_view name, std::string_view pointer) {
    auto obj = client->get(r, "default", name);
    if (!obj) return "<" + std::string(name) + " missing>";
    const json::Value* v = json::find(obj->root(), pointer);
    return v ? json::dump(*v) : std::string("<missing>");
  }
};

}  // namespace

TEST_CASE("MPIJob v1 with 2 workers runs to Succeeded with exactly its objects") {
  Cluster k;
  auto before = creations(k.cluster);
  k.submit(R"(
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: pi}
spec:
  slotsPerWorker: 2
  runPolicy: {cleanPodPolicy: Running}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 1500ms}}
        spec: {containers: [{name: mpi, image: example.com/mpi:1, command: [mpirun, -np, "4", /pi]}]}
    Worker:
      replicas: 2
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 1h}}
        spec: {containers: [{name: mpi, image: example.com/mpi:1}]}
)");
  // While it runs: both workers Running are listed for discover_hosts.sh.
  REQUIRE(eventually([&] {
    return k.dump({"", "v1", "configmaps"}, "pi-config", "/data/discover_hosts.sh") ==
           R"("#!/bin/sh\necho pi-worker-0:2\necho pi-worker-1:2")";
  }));
  REQUIRE(eventually([&] { return k.has_condition("pi", "Succeeded"); }));
  CHECK(k.conditions("pi").find("Created=True/MPIJobCreated: MPIJob pi is created.\n") == 0);
  CHECK(k.conditions("pi").find("Succeeded=True/MPIJobSucceeded: MPIJob pi is successfully completed.\n") != std::string::npos);
  CHECK(k.conditions("pi").find("Failed") == std::string::npos);
  CHECK(k.dump(kMPIJobs, "pi", "/status/replicaStatuses/Launcher") == R"({"succeeded":1})");
  CHECK(k.dump(kMPIJobs, "pi", "/status/completionTime") != "<missing>");

  CHECK(k.dump({"", "v1", "configmaps"}, "pi-config", "/data/hostfile") == R"("pi-worker-0 slots=2\npi-worker-1 slots=2\n")");
  CHECK(k.dump({"", "v1", "configmaps"}, "pi-config", "/data/kubexec.sh") ==
        R"("#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n/opt/kube/kubectl exec ${POD_NAME} -- /bin/sh -c \"$*\"")");
  CHECK(k.dump({"", "v1", "configmaps"}, "pi-config", "/metadata/ownerReferences/0/kind") == R"("MPIJob")");
  // Upstream's labels, plus the module's child label the operator's caches select its objects by.
  CHECK(k.dump({"", "v1", "serviceaccounts"}, "pi-launcher", "/metadata/labels") ==
        R"({"app":"pi","training.kubeflow.org/operator-name":"mpijob-controller"})");
  CHECK(k.dump({"rbac.authorization.k8s.io", "v1", "roles"}, "pi-launcher", "/rules") ==
        R"([{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["pods"]},{"verbs":["create"],"apiGroups":[""],"resources":["pods/exec"],"resourceNames":["pi-worker-0","pi-worker-1"]}])");
  CHECK(k.dump({"rbac.authorization.k8s.io", "v1", "rolebindings"}, "pi-launcher", "/roleRef") ==
        R"({"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"pi-launcher"})");

  // The launcher is a bare Pod named <job>-launcher that stays after success (cleanPodPolicy
  // Running removes only what still runs: the workers).
  CHECK(k.dump(kPods, "pi-launcher", "/status/phase") == R"("Succeeded")");
  CHECK(k.dump(kPods, "pi-launcher", "/spec/serviceAccountName") == R"("pi-launcher")");
  CHECK(k.dump(kPods, "pi-launcher", "/spec/initContainers/0/image") == R"("example.com/kubectl-delivery:test")");
  CHECK(k.dump(kPods, "pi-launcher", "/metadata/labels/training.kubeflow.org~1job-role") == R"("master")");
  CHECK(k.dump(kPods, "pi-launcher", "/metadata/ownerReferences/0/apiVersion") == R"("kubeflow.org/v1")");
  REQUIRE(eventually([&] {
    for (auto name : {"pi-worker-0", "pi-worker-1"}) {
      auto w = k.client->get(kPods, "default", name);
      if (w && json::find(w->root(), "/metadata/deletionTimestamp") == nullptr) return false;
    }
    return true;
  }));

  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto after = creations(k.cluster);
  auto created = [&](const std::string& r) { return after[r] - before[r]; };
  CHECK(created("pods") == 3);
  CHECK(created("configmaps") == 1);
  CHECK(created("serviceaccounts") == 1);
  CHECK(created("roles") == 1);
  CHECK(created("rolebindings") == 1);
  CHECK(created("services") == 0);
  CHECK(created("jobs") == 0);
  CHECK(created("secrets") == 0);
  // In sync from the start: the Role and ServiceAccount are never rewritten; the ConfigMap only
  // when the set of Running workers in discover_hosts.sh changed (at most once per worker here).
  auto updates = requests(k.cluster, "PUT");
  CHECK(updates["roles"] == 0);
  CHECK(updates["rolebindings"] == 0);
  CHECK(updates["serviceaccounts"] == 0);
  CHECK(updates["configmaps"] <= 2);
}

TEST_CASE("MPIJob v1 whose launcher exits 1 ends Failed with reason MPIJobFailed") {
  Cluster k;
  k.submit(R"(
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: bad}
spec:
  mpiReplicaSpecs:
    Launcher:
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 300ms, sim.unitrain.io/exit-code: "1"}}
        spec: {containers: [{name: mpi, image: example.com/mpi:1}]}
    Worker:
      replicas: 1
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 1h}}
        spec: {containers: [{name: mpi, image: example.com/mpi:1}]}
)");
  REQUIRE(eventually([&] { return k.has_condition("bad", "Failed"); }));
  CHECK(k.conditions("bad").find("Failed=True/MPIJobFailed: MPIJob bad is failed because 1 Launcher replica(s) failed.\n") !=
        std::string::npos);
  CHECK(k.conditions("bad").find("MPIJobMPIJobFailed") == std::string::npos);
  CHECK(k.dump(kMPIJobs, "bad", "/status/replicaStatuses/Launcher") == R"({"failed":1})");
  // A bare launcher Pod is never retried.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(k.dump(kPods, "bad-launcher", "/status/phase") == R"("Failed")");
}

TEST_CASE("MPIJob v1 and v2 controllers in one process each take only their own jobs, objects and pods") {
  Cluster k(true);
  const kube::GroupVersionResource v2_jobs{"kubeflow.org", "v2beta1", "mpijobs"};
  k.submit(R"(
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: one}
spec:
  runPolicy: {managedBy: kubeflow.org/training-operator}
  mpiReplicaSpecs:
    Launcher:
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 500ms}}
        spec: {containers: [{name: mpi, image: example.com/mpi:1}]}
    Worker:
      replicas: 1
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 1h}}
        spec: {containers: [{name: mpi, image: example.com/mpi:1}]}
)");
  k.submit(R"(
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: two}
spec:
  runPolicy: {managedBy: kubeflow.org/mpi-operator}
  mpiReplicaSpecs:
    Launcher:
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 500ms}}
        spec: {containers: [{name: launcher, image: example.com/mpi:1}]}
    Worker:
      replicas: 1
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 1h}}
        spec: {containers: [{name: worker, image: example.com/mpi:1}]}
)",
           v2_jobs);
  REQUIRE(eventually([&] { return k.has_condition("one", "Succeeded"); }));
  REQUIRE(eventually([&] {
    auto two = k.client->get(v2_jobs, "default", "two");
    return two && json::dump(*json::find(two->root(), "/status")).find(R"("type":"Succeeded","status":"True")") != std::string::npos;
  }));
  // v1: a bare launcher Pod, RBAC, kubexec.sh, pods labelled mpijob-controller; no launcher Job.
  CHECK(k.dump(kPods, "one-launcher", "/metadata/labels/training.kubeflow.org~1operator-name") == R"("mpijob-controller")");
  CHECK(k.dump(kPods, "one-worker-0", "/metadata/labels/training.kubeflow.org~1operator-name") == R"("mpijob-controller")");
  CHECK_FALSE(k.client->get({"batch", "v1", "jobs"}, "default", "one-launcher"));
  CHECK_FALSE(k.client->get({"", "v1", "secrets"}, "default", "one-ssh"));
  CHECK(k.dump({"", "v1", "configmaps"}, "one-config", "/metadata/ownerReferences/0/apiVersion") == R"("kubeflow.org/v1")");
  // v2: a launcher Job, the SSH Secret, a Service, pods labelled mpi-operator; no v1 objects.
  CHECK(k.client->get({"batch", "v1", "jobs"}, "default", "two-launcher"));
  CHECK(k.client->get({"", "v1", "secrets"}, "default", "two-ssh"));
  CHECK(k.dump(kPods, "two-worker-0", "/metadata/labels/training.kubeflow.org~1operator-name") == R"("mpi-operator")");
  CHECK_FALSE(k.client->get(kPods, "default", "two-launcher"));
  CHECK_FALSE(k.client->get({"rbac.authorization.k8s.io", "v1", "roles"}, "default", "two-launcher"));
  CHECK_FALSE(k.client->get({"", "v1", "serviceaccounts"}, "default", "two-launcher"));
  CHECK(k.dump({"", "v1", "configmaps"}, "two-config", "/data/kubexec.sh") == "<missing>");
  CHECK(k.dump({"", "v1", "configmaps"}, "two-config", "/metadata/ownerReferences/0/apiVersion") == R"("kubeflow.org/v2beta1")");
  for (const auto& e : k.events.events()) CHECK(e.find("ErrResourceExists") == std::string::npos);
}

TEST_CASE("MPIJob v1 created suspended gets no objects until resumed, then runs to Succeeded") {
  Cluster k;
  k.submit(R"(
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: later}
spec:
  runPolicy: {suspend: true}
  mpiReplicaSpecs:
    Launcher:
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 300ms}}
        spec: {containers: [{name: mpi, image: example.com/mpi:1}]}
    Worker:
      replicas: 1
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 1h}}
        spec: {containers: [{name: mpi, image: example.com/mpi:1}]}
)");
  REQUIRE(eventually([&] { return k.has_condition("later", "Suspended"); }));
  CHECK(k.conditions("later").find("Suspended=True/MPIJobSuspended: MPIJob later is suspended.\n") != std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_FALSE(k.client->get({"", "v1", "configmaps"}, "default", "later-config"));
  CHECK_FALSE(k.client->get({"", "v1", "serviceaccounts"}, "default", "later-launcher"));
  CHECK_FALSE(k.client->get(kPods, "default", "later-launcher"));
  CHECK_FALSE(k.client->get(kPods, "default", "later-worker-0"));
  REQUIRE(k.client->patch(kMPIJobs, "default", "later", kube::PatchType::Merge, R"({"spec":{"runPolicy":{"suspend":false}}})"));
  REQUIRE(eventually([&] { return k.has_condition("later", "Succeeded"); }));
  CHECK(k.conditions("later").find("Suspended=False/MPIJobResumed: MPIJob later is resumed.\n") != std::string::npos);
  CHECK(k.client->get({"rbac.authorization.k8s.io", "v1", "roles"}, "default", "later-launcher"));
}

TEST_CASE("MPIJob v1 uses a ServiceAccount its launcher template names even when the job does not own it") {
  Cluster k;
  REQUIRE(k.client->create({"", "v1", "serviceaccounts"}, "default",
                           Document::parse(R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"shared","namespace":"default"}})")->root()));
  k.submit(R"(
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: sa}
spec:
  mpiReplicaSpecs:
    Launcher:
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 300ms}}
        spec: {serviceAccountName: shared, containers: [{name: mpi, image: example.com/mpi:1}]}
)");
  REQUIRE(eventually([&] { return k.has_condition("sa", "Succeeded"); }));
  CHECK(k.dump({"", "v1", "serviceaccounts"}, "shared", "/metadata/ownerReferences") == "<missing>");
  CHECK(k.dump({"rbac.authorization.k8s.io", "v1", "rolebindings"}, "sa-launcher", "/subjects/0/name") == R"("shared")");
  CHECK(k.dump(kPods, "sa-launcher", "/spec/serviceAccountName") == R"("shared")");
  for (const auto& e : k.events.events()) CHECK(e.find("ErrResourceExists") == std::string::npos);
}

TEST_CASE("MPIJob v1 without a Launcher fails validation once, with upstream's message, and gets no objects") {
  Cluster k;
  auto before = creations(k.cluster);
  k.submit(R"(
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: headless}
spec:
  mpiReplicaSpecs:
    Worker: {replicas: 1, template: {spec: {containers: [{name: mpi, image: example.com/mpi:1}]}}}
)");
  REQUIRE(eventually([&] { return k.has_condition("headless", "Failed"); }));
  CHECK(k.conditions("headless").find(
            "Failed=True/MPIJobFailedValidation: MPIJob.kubeflow.org \"headless\" is invalid: spec.mpiReplicaSpecs[Launcher]: "
            "Required value: MPIReplicaSpec is not valid: Master ReplicaSpec must be present\n") != std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto after = creations(k.cluster);
  CHECK(after["pods"] == before["pods"]);
  CHECK(after["configmaps"] == before["configmaps"]);
  CHECK(after["roles"] == before["roles"]);
}

TEST_CASE("MPIJob v1: upstream examples/mpi-v1 run on the local cluster") {
  const std::filesystem::path dir = std::filesystem::path(UNITRAIN_SOURCE_DIR) / ".." / "shared" / "reference" / "examples" / "mpi-v1";
  if (!std::filesystem::is_directory(dir)) {
    return skip("the upstream examples are not at " + dir.string());
  }
  WARN("ran: upstream examples from " << dir.string());
  Cluster k;
  k.submit(read_text((dir / "tensorflow-mnist.yaml").string()));
  k.submit(read_text((dir / "tensorflow-mnist-elastic.yaml").string()));
  for (const std::string job : {"tensorflow-mnist", "tensorflow-mnist-elastic"}) {
    INFO(job);
    REQUIRE(eventually([&] { return k.has_condition(job, "Succeeded"); }));
    CHECK(k.dump({"", "v1", "configmaps"}, job + "-config", "/data/hostfile") ==
          fmt::format(R"("{0}-worker-0 slots=1\n{0}-worker-1 slots=1\n")", job));
    CHECK(k.dump({"rbac.authorization.k8s.io", "v1", "roles"}, job + "-launcher", "/rules/1/resourceNames") ==
          fmt::format(R"(["{0}-worker-0","{0}-worker-1"])", job));
    CHECK(k.dump({"", "v1", "serviceaccounts"}, job + "-launcher", "/metadata/name") == fmt::format(R"("{}-launcher")", job));
    CHECK(k.dump({"rbac.authorization.k8s.io", "v1", "rolebindings"}, job + "-launcher", "/subjects/0/name") ==
          fmt::format(R"("{}-launcher")", job));
    CHECK(k.dump(kPods, job + "-launcher", "/spec/initContainers/0/name") == R"("kubectl-delivery")");
  }
  // tensorflow-mnist's launcher container is named like the workers ("mpi"): env after the
  // example's own (none), for a CPU launcher.
  CHECK(k.dump(kPods, "tensorflow-mnist-launcher", "/spec/containers/0/env") ==
        R"([{"name":"OMPI_MCA_plm_rsh_agent","value":"/etc/mpi/kubexec.sh"},{"name":"OMPI_MCA_orte_default_hostfile","value":"/etc/mpi/hostfile"},{"name":"NVIDIA_VISIBLE_DEVICES"},{"name":"NVIDIA_DRIVER_CAPABILITIES"},{"name":"I_MPI_HYDRA_BOOTSTRAP","value":"rsh"},{"name":"I_MPI_HYDRA_BOOTSTRAP_EXEC","value":"/etc/mpi/kubexec.sh"}])");
  CHECK(k.dump(kPods, "tensorflow-mnist-launcher", "/spec/containers/0/command") == R"(["mpirun"])");
  // The elastic example's deprecated top-level cleanPodPolicy is kept by the CRD.
  CHECK(k.dump(kMPIJobs, "tensorflow-mnist-elastic", "/spec/cleanPodPolicy") == R"("Running")");
}
