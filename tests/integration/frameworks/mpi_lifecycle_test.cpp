// MPIJob v2 through the core's paths on the local cluster: launcher failure, every
// cleanPodPolicy, suspend/resume (the launcher Job suspended with the job) and scaling workers
// (pods added and removed, hostfile rewritten).
#include "tests/integration/frameworks/lifecycle_fixture.h"

using namespace unitrain::testing;

namespace {

struct MpiSpec {
  std::string run_policy = "{}";
  std::string launcher_annotations = "{sim.unitrain.io/duration: 1h}";
  std::string worker_annotations = "{sim.unitrain.io/duration: 1h}";
  int workers = 2;
};

std::string mpi_yaml(const MpiSpec& s) {
  return fmt::format(R"(
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {{name: pi, namespace: default}}
spec:
  slotsPerWorker: 1
  runPolicy: {0}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        metadata: {{annotations: {1}}}
        spec: {{containers: [{{name: launcher, image: example.com/mpi:1, command: [mpirun, /pi]}}]}}
    Worker:
      replicas: {3}
      template:
        metadata: {{annotations: {2}}}
        spec: {{containers: [{{name: worker, image: example.com/mpi:1}}]}}
)",
                     s.run_policy, s.launcher_annotations, s.worker_annotations, s.workers);
}

std::vector<std::string> worker_pods(Cluster& k) {
  std::vector<std::string> out;
  for (auto& n : k.names(kPodsR))
    if (n.rfind("pi-worker-", 0) == 0) out.push_back(n);
  return out;
}

std::string hostfile(Cluster& k) {
  auto cm = k.get(kConfigMapsR, "pi-config");
  return cm ? std::string(json::get_string(cm->root(), "/data/hostfile").value_or("")) : "";
}

bool launcher_suspended(Cluster& k) {
  auto j = k.get(kBatchJobsR, "pi-launcher");
  return j && json::get_bool(j->root(), "/spec/suspend").value_or(false);
}

}  // namespace

TEST_CASE("mpi lifecycle: a failed launcher Job fails the MPIJob and cleanPodPolicy Running removes the workers") {
  Cluster k;
  k.install_crd("kubeflow.org_mpijobs.yaml");
  auto ctl = k.controller("mpijob-v2");
  MpiSpec s;
  s.run_policy = "{backoffLimit: 0, cleanPodPolicy: Running}";
  s.launcher_annotations = "{sim.unitrain.io/duration: 200ms, sim.unitrain.io/exit-code: \"1\"}";
  k.create_yaml(kMPIJobs, mpi_yaml(s));
  REQUIRE(eventually([&] { return k.has_true(kMPIJobs, "pi", "Failed"); }));
  const std::string conds = k.conditions(kMPIJobs, "pi");
  INFO(conds);
  CHECK(conds.find("Created=True(MPIJobCreated: MPIJob default/pi is created.)") == 0);
  CHECK(conds.find("Failed=True(BackoffLimitExceeded") != std::string::npos);
  CHECK(!k.has_true(kMPIJobs, "pi", "Succeeded"));
  REQUIRE(eventually([&] { return worker_pods(k).empty(); }));
  auto job = k.get(kMPIJobs, "pi");
  REQUIRE(job);
  CHECK(json::get_int(job->root(), "/status/replicaStatuses/Launcher/failed").value_or(0) == 1);
  CHECK(json::find(job->root(), "/status/completionTime"));
  // The launcher Job stays (mpi-operator never deletes it).
  CHECK(k.exists(kBatchJobsR, "pi-launcher"));
  CHECK(eventually([&] { return ctl->counters()["default"].failed == 1; }));
}

TEST_CASE("mpi lifecycle: cleanPodPolicy decides which workers survive success") {
  const std::string policy = GENERATE(as<std::string>{}, "None", "Running", "All");
  INFO("cleanPodPolicy " << policy);
  Cluster k;
  k.install_crd("kubeflow.org_mpijobs.yaml");
  auto ctl = k.controller("mpijob-v2");
  MpiSpec s;
  s.run_policy = fmt::format("{{cleanPodPolicy: {}}}", policy);
  s.launcher_annotations = "{sim.unitrain.io/duration: 300ms}";
  k.create_yaml(kMPIJobs, mpi_yaml(s));
  REQUIRE(eventually([&] { return k.has_true(kMPIJobs, "pi", "Succeeded"); }));
  CHECK(k.conditions(kMPIJobs, "pi").find("Succeeded=True(MPIJobSucceeded: MPIJob default/pi successfully completed.)") != std::string::npos);
  const std::vector<std::string> expected =
      policy == "None" ? std::vector<std::string>{"pi-worker-0", "pi-worker-1"} : std::vector<std::string>{};
  REQUIRE(eventually([&] { return worker_pods(k) == expected; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(worker_pods(k) == expected);
  if (policy != "None") {
    auto job = k.get(kMPIJobs, "pi");
    REQUIRE(job);
    INFO(json::dump(*json::find(job->root(), "/status/replicaStatuses")));
    // mpi-operator zeroes the Worker status when it cleans up (zeros are omitted).
    CHECK(json::dump(*json::find(job->root(), "/status/replicaStatuses/Worker")) == "{}");
  }
  CHECK(eventually([&] { return ctl->counters()["default"].successful == 1; }));
}

TEST_CASE("mpi lifecycle: suspend suspends the launcher Job and deletes workers, resume brings both back") {
  Cluster k;
  k.install_crd("kubeflow.org_mpijobs.yaml");
  auto ctl = k.controller("mpijob-v2");
  k.create_yaml(kMPIJobs, mpi_yaml({}));
  REQUIRE(eventually([&] { return k.has_true(kMPIJobs, "pi", "Running"); }));
  const std::string start_before(json::get_string(k.get(kMPIJobs, "pi")->root(), "/status/startTime").value_or(""));

  k.patch_job(kMPIJobs, "pi", R"({"spec":{"runPolicy":{"suspend":true}}})");
  REQUIRE(eventually([&] { return k.has_true(kMPIJobs, "pi", "Suspended"); }));
  REQUIRE(eventually([&] { return launcher_suspended(k); }));
  REQUIRE(eventually([&] { return worker_pods(k).empty(); }));
  const std::string conds = k.conditions(kMPIJobs, "pi");
  CHECK(conds.find("Suspended=True(MPIJobSuspended: MPIJob suspended)") != std::string::npos);
  CHECK(conds.find("Running=False(MPIJobSuspended: MPIJob default/pi is suspended.)") != std::string::npos);
  // The batch Job controller ends the suspended launcher's pod.
  REQUIRE(eventually([&] { return k.names(kPodsR).empty(); }));

  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // startTime has second resolution
  k.patch_job(kMPIJobs, "pi", R"({"spec":{"runPolicy":{"suspend":false}}})");
  REQUIRE(eventually([&] { return worker_pods(k) == std::vector<std::string>{"pi-worker-0", "pi-worker-1"}; }));
  REQUIRE(eventually([&] { return !launcher_suspended(k); }));
  REQUIRE(eventually([&] { return k.conditions(kMPIJobs, "pi").find("Suspended=False(MPIJobResumed: MPIJob resumed)") != std::string::npos; }));
  REQUIRE(eventually([&] { return k.has_true(kMPIJobs, "pi", "Running"); }));
  CHECK(std::string(json::get_string(k.get(kMPIJobs, "pi")->root(), "/status/startTime").value_or("")) > start_before);
}

TEST_CASE("mpi lifecycle: scaling workers adds and removes pods and rewrites the hostfile") {
  Cluster k;
  k.install_crd("kubeflow.org_mpijobs.yaml");
  auto ctl = k.controller("mpijob-v2");
  k.create_yaml(kMPIJobs, mpi_yaml({}));
  REQUIRE(eventually([&] { return k.has_true(kMPIJobs, "pi", "Running"); }));
  CHECK(hostfile(k) == "pi-worker-0.pi.default.svc slots=1\npi-worker-1.pi.default.svc slots=1\n");

  k.patch_job(kMPIJobs, "pi", R"({"spec":{"mpiReplicaSpecs":{"Worker":{"replicas":3}}}})");
  REQUIRE(eventually([&] { return worker_pods(k) == std::vector<std::string>{"pi-worker-0", "pi-worker-1", "pi-worker-2"}; }));
  REQUIRE(eventually([&] {
    return hostfile(k) == "pi-worker-0.pi.default.svc slots=1\npi-worker-1.pi.default.svc slots=1\npi-worker-2.pi.default.svc slots=1\n";
  }));

  k.patch_job(kMPIJobs, "pi", R"({"spec":{"mpiReplicaSpecs":{"Worker":{"replicas":1}}}})");
  REQUIRE(eventually([&] { return worker_pods(k) == std::vector<std::string>{"pi-worker-0"}; }));
  REQUIRE(eventually([&] { return hostfile(k) == "pi-worker-0.pi.default.svc slots=1\n"; }));
  REQUIRE(eventually([&] {
    auto job = k.get(kMPIJobs, "pi");
    return job && json::get_int(job->root(), "/status/replicaStatuses/Worker/active").value_or(-1) == 1;
  }));
  CHECK(k.has_true(kMPIJobs, "pi", "Running"));
}

TEST_CASE("pytorch lifecycle: scaling workers adds and removes pods and their services") {
  Cluster k;
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob");
  k.create_yaml(kPyTorchJobs, R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: default}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 1h}}
        spec: {containers: [{name: pytorch, image: example.com/train:1}]}
    Worker:
      replicas: 1
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 1h}}
        spec: {containers: [{name: pytorch, image: example.com/train:1}]}
)");
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Running"); }));
  k.patch_job(kPyTorchJobs, "pt", R"({"spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":3}}}})");
  const std::vector<std::string> three{"pt-master-0", "pt-worker-0", "pt-worker-1", "pt-worker-2"};
  REQUIRE(eventually([&] { return k.names(kPodsR) == three && k.names(kServicesR) == three; }));
  REQUIRE(eventually([&] {
    auto job = k.get(kPyTorchJobs, "pt");
    return job && json::get_int(job->root(), "/status/replicaStatuses/Worker/active").value_or(-1) == 3;
  }));
  k.patch_job(kPyTorchJobs, "pt", R"({"spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":1}}}})");
  const std::vector<std::string> one{"pt-master-0", "pt-worker-0"};
  REQUIRE(eventually([&] { return k.names(kPodsR) == one && k.names(kServicesR) == one; }));
  REQUIRE(eventually([&] {
    auto job = k.get(kPyTorchJobs, "pt");
    return job && json::get_int(job->root(), "/status/replicaStatuses/Worker/active").value_or(-1) == 1;
  }));
  CHECK(k.has_true(kPyTorchJobs, "pt", "Running"));
}
