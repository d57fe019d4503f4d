// PyTorchJob and MPIJob v2 end to end on the local cluster: the happy path, exact env, and the
// API writes each job costs.
#include "tests/integration/frameworks/local_cluster_fixture.h"

using namespace unitrain::testing;

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
  REQUIRE(eventually([&] { return k.true_conditions(kPyTorchJobs, "mnist").find("Succeeded") != std::string::npos; }));
  CHECK(k.true_conditions(kPyTorchJobs, "mnist") == "Created Succeeded ");

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
  k.install_crd("kubeflow.org_mpijobs.yaml");
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
  REQUIRE(eventually([&] { return k.true_conditions(kMPIJobs, "pi").find("Succeeded") != std::string::npos; }));
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
