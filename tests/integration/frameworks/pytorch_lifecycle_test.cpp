// PyTorchJob through the core's terminal paths on the local cluster: each restart policy,
// backoffLimit, activeDeadlineSeconds, suspend/resume, every cleanPodPolicy and TTL. Each case
// asserts the exact conditions and which objects exist afterwards.
#include "tests/integration/frameworks/lifecycle_fixture.h"

#include "core/api/time.h"

using namespace unitrain::testing;

namespace {

struct JobSpec {
  std::string name = "pt";
  std::string restart_policy = "OnFailure";
  std::string run_policy = "{}";
  std::string master_annotations = "{sim.unitrain.io/duration: 1h}";
  std::string worker_annotations = "{sim.unitrain.io/duration: 1h}";
  int workers = 1;
};

std::string pytorch_yaml(const JobSpec& s) {
  return fmt::format(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: {0}, namespace: default}}
spec:
  runPolicy: {1}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: {2}
      template:
        metadata: {{annotations: {3}}}
        spec: {{containers: [{{name: pytorch, image: example.com/train:1}}]}}
    Worker:
      replicas: {5}
      restartPolicy: {2}
      template:
        metadata: {{annotations: {4}}}
        spec: {{containers: [{{name: pytorch, image: example.com/train:1}}]}}
)",
                     s.name, s.run_policy, s.restart_policy, s.master_annotations, s.worker_annotations, s.workers);
}

std::string uid_of(Cluster& k, const kube::GroupVersionResource& r, std::string_view name) {
  auto o = k.get(r, name);
  return o ? std::string(json::get_string(o->root(), "/metadata/uid").value_or("")) : "";
}

std::string annotation(Cluster& k, std::string_view name, std::string_view key) {
  auto o = k.get(kPyTorchJobs, name);
  if (!o) return "";
  return std::string(json::get_string(o->root(), "/metadata/annotations/" + json::escape_pointer_token(key)).value_or(""));
}

}  // namespace

TEST_CASE("pytorch lifecycle: restartPolicy Never fails the job when a worker fails") {
  Cluster k;
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob");
  JobSpec s;
  s.restart_policy = "Never";
  s.worker_annotations = "{sim.unitrain.io/duration: 200ms, sim.unitrain.io/exit-code: \"1\"}";
  k.create_yaml(kPyTorchJobs, pytorch_yaml(s));
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Failed"); }));
  const std::string conds = k.conditions(kPyTorchJobs, "pt");
  CHECK(conds.find("Failed=True(PyTorchJobFailed: PyTorchJob pt is failed because 1 Worker replica(s) failed.)") != std::string::npos);
  CHECK(conds.find("Restarting") == std::string::npos);
  // cleanPodPolicy defaults to None: the failed worker and the running master stay.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(k.names(kPodsR) == std::vector<std::string>{"pt-master-0", "pt-worker-0"});
  CHECK(k.events.has("Normal ExitedWithCode Pod: default.pt-worker-0 exited with code 1"));
  CHECK(eventually([&] { return ctl->counters()["default"].failed == 1; }));
}

TEST_CASE("pytorch lifecycle: restartPolicy OnFailure restarts in place and backoffLimit fires on restart counts") {
  Cluster k;
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob");
  JobSpec s;
  s.run_policy = "{backoffLimit: 2}";
  s.worker_annotations = "{sim.unitrain.io/duration: 150ms, sim.unitrain.io/fail-times: \"100\"}";
  k.create_yaml(kPyTorchJobs, pytorch_yaml(s));
  const std::string worker_uid_before = [&] {
    std::string u;
    eventually([&] { return !(u = uid_of(k, kPodsR, "pt-worker-0")).empty(); });
    return u;
  }();
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Failed"); }));
  CHECK(k.conditions(kPyTorchJobs, "pt").find(
            "Failed=True(PyTorchJobFailed: Job pt has failed because it has reached the specified backoff limit)") != std::string::npos);
  // A backoff failure deletes every pod (and its Service) regardless of cleanPodPolicy.
  REQUIRE(eventually([&] { return k.names(kPodsR).empty() && k.names(kServicesR).empty(); }));
  // In-place restarts: the pod was never re-created.
  CHECK(annotation(k, "pt", "training.unitrain.io/pod-restarts").empty());
  CHECK(!worker_uid_before.empty());
  CHECK(eventually([&] { return ctl->counters()["default"].failed == 1; }));
}

TEST_CASE("pytorch lifecycle: restartPolicy Always re-creates a pod that failed and marks the job Restarting") {
  Cluster k({.manual_kubelet = true});
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob");
  JobSpec s;
  s.restart_policy = "Always";
  k.create_yaml(kPyTorchJobs, pytorch_yaml(s));
  REQUIRE(eventually([&] { return k.exists(kPodsR, "pt-master-0") && k.exists(kPodsR, "pt-worker-0"); }));
  const std::string first_uid = uid_of(k, kPodsR, "pt-worker-0");
  // The master stays Pending: a running master would make the next pass Running, which replaces
  // Restarting (the reference rule) before a poll could see it.
  k.set_pod_phase("pt-worker-0", "Failed", 1);
  REQUIRE(eventually([&] {
    const auto u = uid_of(k, kPodsR, "pt-worker-0");
    return !u.empty() && u != first_uid;
  }));
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Restarting"); }));
  CHECK(k.conditions(kPyTorchJobs, "pt").find("Restarting=True(PyTorchJobRestarting: ") != std::string::npos);
  CHECK(!k.has_true(kPyTorchJobs, "pt", "Failed"));
  CHECK(annotation(k, "pt", "training.unitrain.io/pod-restarts") == "1");
  CHECK(eventually([&] { return k.events.has("Warning PyTorchJobRestarting job pt is restarting because Worker replica(s) failed."); }));
  // The replacement runs: Running replaces Restarting.
  k.set_pod_phase("pt-master-0", "Running");
  k.set_pod_phase("pt-worker-0", "Running");
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Running"); }));
  CHECK(!k.has_true(kPyTorchJobs, "pt", "Restarting"));
  CHECK(eventually([&] { return ctl->counters()["default"].restarted == 1; }));
}

TEST_CASE("pytorch lifecycle: restartPolicy ExitCode retries exit codes >= 128 and fails on permanent codes") {
  Cluster k;
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob");

  SECTION("retryable: the pod is re-created and the job then succeeds") {
    JobSpec s;
    s.restart_policy = "ExitCode";
    s.master_annotations = "{sim.unitrain.io/duration: 2s}";
    s.worker_annotations = "{sim.unitrain.io/duration: 100ms, sim.unitrain.io/fail-times: \"1\", sim.unitrain.io/fail-exit-code: \"137\"}";
    k.create_yaml(kPyTorchJobs, pytorch_yaml(s));
    REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Succeeded"); }));
    CHECK(annotation(k, "pt", "training.unitrain.io/pod-restarts") == "1");
    CHECK(k.events.has("Normal ExitedWithCode Pod: default.pt-worker-0 exited with code 137"));
    CHECK(k.events.has("Warning PyTorchJobRestarting job pt is restarting because Worker replica(s) failed."));
    CHECK(!k.has_true(kPyTorchJobs, "pt", "Failed"));
    CHECK(eventually([&] { return ctl->counters()["default"].successful == 1; }));
  }
  SECTION("permanent: exit code 3 fails the job and keeps the pod") {
    JobSpec s;
    s.restart_policy = "ExitCode";
    s.worker_annotations = "{sim.unitrain.io/duration: 100ms, sim.unitrain.io/exit-code: \"3\"}";
    k.create_yaml(kPyTorchJobs, pytorch_yaml(s));
    if (!eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Failed"); })) FAIL(k.dump() << k.conditions(kPyTorchJobs, "pt"));
    CHECK(k.conditions(kPyTorchJobs, "pt").find(R"(Failed=True(PyTorchJobFailed: job "pt" is failing because "Worker" replica(s) failed.))") !=
          std::string::npos);
    CHECK(annotation(k, "pt", "training.unitrain.io/pod-restarts").empty());
    CHECK(k.exists(kPodsR, "pt-worker-0"));
    CHECK(eventually([&] { return ctl->counters()["default"].failed == 1; }));
  }
  SECTION("retryable forever: backoffLimit counts the re-creations and fires") {
    JobSpec s;
    s.restart_policy = "ExitCode";
    s.run_policy = "{backoffLimit: 2}";
    s.worker_annotations = "{sim.unitrain.io/duration: 100ms, sim.unitrain.io/fail-times: \"100\", sim.unitrain.io/fail-exit-code: \"130\"}";
    k.create_yaml(kPyTorchJobs, pytorch_yaml(s));
    REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Failed"); }));
    CHECK(k.conditions(kPyTorchJobs, "pt").find(
              "Failed=True(PyTorchJobFailed: Job pt has failed because it has reached the specified backoff limit)") != std::string::npos);
    CHECK(annotation(k, "pt", "training.unitrain.io/pod-restarts") == "2");
    REQUIRE(eventually([&] { return k.names(kPodsR).empty(); }));
  }
}

TEST_CASE("pytorch lifecycle: activeDeadlineSeconds fails the job at the deadline with no other event") {
  Cluster k({.manual_kubelet = true});
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob");
  JobSpec s;
  s.run_policy = "{activeDeadlineSeconds: 2}";
  k.create_yaml(kPyTorchJobs, pytorch_yaml(s));
  REQUIRE(eventually([&] { return k.exists(kPodsR, "pt-master-0") && k.exists(kPodsR, "pt-worker-0"); }));
  k.set_pod_phase("pt-master-0", "Running");
  k.set_pod_phase("pt-master-0", "Running");
  k.set_pod_phase("pt-worker-0", "Running");
  // On a loaded machine the 2 s may pass before a pass writes Running: the job then goes to
  // Failed from Created, which is the same deadline decision.
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Running") || k.has_true(kPyTorchJobs, "pt", "Failed"); }));
  // From here nothing changes in the cluster: only the controller's own requeue can fail the job.
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Failed"); }, std::chrono::seconds(15)));
  auto job = k.get(kPyTorchJobs, "pt");
  REQUIRE(job);
  auto start = unitrain::api::parse_time(json::get_string(job->root(), "/status/startTime").value_or(""));
  auto done = unitrain::api::parse_time(json::get_string(job->root(), "/status/completionTime").value_or(""));
  REQUIRE(start);
  REQUIRE(done);
  CHECK(*done - *start >= std::chrono::seconds(2));
  CHECK(k.conditions(kPyTorchJobs, "pt").find(
            "Failed=True(PyTorchJobFailed: Job pt has failed because it was active longer than specified deadline)") != std::string::npos);
  REQUIRE(eventually([&] { return k.names(kPodsR).empty() && k.names(kServicesR).empty(); }));
}

TEST_CASE("pytorch lifecycle: suspend deletes pods and services, resume re-creates them and resets startTime") {
  Cluster k({.manual_kubelet = true});
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob");
  k.create_yaml(kPyTorchJobs, pytorch_yaml({}));
  REQUIRE(eventually([&] { return k.exists(kPodsR, "pt-master-0") && k.exists(kPodsR, "pt-worker-0"); }));
  k.set_pod_phase("pt-master-0", "Running");
  k.set_pod_phase("pt-master-0", "Running");
  k.set_pod_phase("pt-worker-0", "Running");
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Running"); }));
  const std::string start_before(json::get_string(k.get(kPyTorchJobs, "pt")->root(), "/status/startTime").value_or(""));

  k.patch_job(kPyTorchJobs, "pt", R"({"spec":{"runPolicy":{"suspend":true}}})");
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Suspended"); }));
  REQUIRE(eventually([&] { return k.names(kPodsR).empty() && k.names(kServicesR).empty(); }));
  const std::string suspended = k.conditions(kPyTorchJobs, "pt");
  CHECK(suspended.find("Running=False(PyTorchJobSuspended: PyTorchJob pt is suspended.)") != std::string::npos);
  CHECK(suspended.find("Suspended=True(PyTorchJobSuspended: PyTorchJob pt is suspended.)") != std::string::npos);
  // active 0 is omitted, as the reference API's omitempty does.
  CHECK(json::find(k.get(kPyTorchJobs, "pt")->root(), "/status/replicaStatuses/Worker") != nullptr);
  CHECK(json::get_int(k.get(kPyTorchJobs, "pt")->root(), "/status/replicaStatuses/Worker/active").value_or(0) == 0);
  // Suspension keeps startTime (the reference operator's tests assert it unchanged).
  CHECK(json::get_string(k.get(kPyTorchJobs, "pt")->root(), "/status/startTime").value_or("") == start_before);
  // Nothing is re-created while suspended.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(k.names(kPodsR).empty());

  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // startTime has second resolution
  k.patch_job(kPyTorchJobs, "pt", R"({"spec":{"runPolicy":{"suspend":false}}})");
  REQUIRE(eventually([&] { return k.names(kPodsR) == std::vector<std::string>{"pt-master-0", "pt-worker-0"}; }));
  REQUIRE(eventually([&] { return k.names(kServicesR) == std::vector<std::string>{"pt-master-0", "pt-worker-0"}; }));
  REQUIRE(eventually([&] { return k.conditions(kPyTorchJobs, "pt").find("Suspended=False(PyTorchJobResumed: PyTorchJob pt is resumed.)") != std::string::npos; }));
  const std::string start_after(json::get_string(k.get(kPyTorchJobs, "pt")->root(), "/status/startTime").value_or(""));
  CHECK(start_after > start_before);
  CHECK(eventually([&] { return k.events.has("Normal PyTorchJobSuspended PyTorchJob pt is suspended."); }));
  CHECK(eventually([&] { return k.events.has("Normal PyTorchJobResumed PyTorchJob pt is resumed."); }));
}

TEST_CASE("pytorch lifecycle: cleanPodPolicy on success and on failure") {
  const std::string policy = GENERATE(as<std::string>{}, "None", "Running", "All");
  const bool succeed = GENERATE(true, false);
  INFO("cleanPodPolicy " << policy << (succeed ? " on success" : " on failure"));
  Cluster k({.manual_kubelet = true});
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob");
  JobSpec s;
  s.restart_policy = "Never";
  s.workers = 2;
  s.run_policy = fmt::format("{{cleanPodPolicy: {}}}", policy);
  k.create_yaml(kPyTorchJobs, pytorch_yaml(s));
  REQUIRE(eventually([&] { return k.names(kPodsR).size() == 3; }));
  k.set_pod_phase("pt-worker-0", "Succeeded", 0);
  k.set_pod_phase("pt-worker-1", "Running");
  k.set_pod_phase("pt-master-0", succeed ? "Succeeded" : "Failed", succeed ? 0 : 1);
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", succeed ? "Succeeded" : "Failed"); }));

  std::vector<std::string> expected;
  if (policy == "None") expected = {"pt-master-0", "pt-worker-0", "pt-worker-1"};
  if (policy == "Running") expected = {"pt-master-0", "pt-worker-0"};
  REQUIRE(eventually([&] { return k.names(kPodsR) == expected; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(k.names(kPodsR) == expected);
  // Services go with their pods.
  CHECK(k.names(kServicesR) == expected);
  if (succeed) {
    CHECK(k.conditions(kPyTorchJobs, "pt").find("Succeeded=True(PyTorchJobSucceeded: PyTorchJob pt is successfully completed.)") !=
          std::string::npos);
  } else {
    CHECK(k.conditions(kPyTorchJobs, "pt").find("Failed=True(PyTorchJobFailed: PyTorchJob pt is failed because 1 Master replica(s) failed.)") !=
          std::string::npos);
  }
}

TEST_CASE("pytorch lifecycle: a master that succeeds before its workers gets Succeeded and the final counts in one status write") {
  // training-operator writes Succeeded with the workers' live counts, and its finished-job step
  // folds them into succeeded in a second write; that write follows from the first alone, so
  // the Succeeded write carries the folded counts and the finished pass writes nothing.
  Cluster k({.manual_kubelet = true});
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob");
  JobSpec s;
  s.restart_policy = "Never";
  s.workers = 3;
  s.run_policy = "{cleanPodPolicy: Running}";
  k.create_yaml(kPyTorchJobs, pytorch_yaml(s));
  const std::vector<std::string> pods{"pt-master-0", "pt-worker-0", "pt-worker-1", "pt-worker-2"};
  REQUIRE(eventually([&] { return k.names(kPodsR) == pods; }));
  for (const auto& pod : pods) k.set_pod_phase(pod, "Running");
  auto replica_statuses = [&] {
    auto job = k.get(kPyTorchJobs, "pt");
    const json::Value* statuses = job ? json::find(job->root(), "/status/replicaStatuses") : nullptr;
    return statuses ? json::Document::copy_of(*statuses).dump() : std::string();
  };
  REQUIRE(eventually([&] {
    return k.has_true(kPyTorchJobs, "pt", "Running") &&
           replica_statuses().find(R"("Worker":{"active":3)") != std::string::npos;
  }));
  const auto before = writes_since(k.cluster);

  k.set_pod_phase("pt-master-0", "Succeeded", 0);
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Succeeded"); }));
  // The finished pass has run once the running workers are gone (cleanPodPolicy Running): it
  // writes the status, if at all, before it deletes them.
  REQUIRE(eventually([&] { return k.names(kPodsR) == std::vector<std::string>{"pt-master-0"}; }));
  INFO(writes_since(k.cluster, before).describe());
  CHECK(writes_since(k.cluster, before).get("PUT pytorchjobs/status") == 1);
  CHECK(replica_statuses().find(R"("Master":{"succeeded":1)") != std::string::npos);
  CHECK(replica_statuses().find(R"("Worker":{"succeeded":3)") != std::string::npos);
  CHECK(replica_statuses().find("active") == std::string::npos);
}

TEST_CASE("pytorch lifecycle: ttlSecondsAfterFinished deletes the finished job and its children") {
  Cluster k;
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob");
  JobSpec s;
  s.run_policy = "{ttlSecondsAfterFinished: 1}";
  s.master_annotations = "{sim.unitrain.io/duration: 100ms}";
  s.worker_annotations = "{sim.unitrain.io/duration: 100ms}";
  k.create_yaml(kPyTorchJobs, pytorch_yaml(s));
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Succeeded"); }));
  CHECK(k.exists(kPyTorchJobs, "pt"));
  REQUIRE(eventually([&] { return !k.exists(kPyTorchJobs, "pt"); }));
  REQUIRE(eventually([&] { return k.names(kPodsR).empty() && k.names(kServicesR).empty(); }));
  CHECK(eventually([&] { return k.events.has("Normal SuccessfulDeletePod Deleted job: pt"); }));
  CHECK(eventually([&] { return ctl->counters()["default"].deleted == 1; }));
}

TEST_CASE("pytorch lifecycle: a pod create burst whose connection drops after the first create is resent, and the first "
          "pod, already stored, counts as created") {
  Cluster k;
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  // The first pod create is stored, then its connection closes unanswered: the three creates
  // pipelined behind it on that connection get no answer either.
  auto faults = lc::FaultConfig::parse(R"({"rules":[{"verbs":["POST"],"resources":["pods"],"dropAfterCommit":1,"times":1}]})");
  REQUIRE(faults);
  k.cluster.faults().configure(*faults);
  auto ctl = k.controller("pytorchjob");
  JobSpec s;
  s.workers = 3;
  k.create_yaml(kPyTorchJobs, pytorch_yaml(s));
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Running"); }));
  INFO(k.dump());
  CHECK(k.cluster.faults().counts()["dropAfterCommit"] == 1);
  CHECK(k.names(kPodsR) == std::vector<std::string>{"pt-master-0", "pt-worker-0", "pt-worker-1", "pt-worker-2"});
  size_t created = 0, master_created = 0;
  for (const auto& e : k.events.events()) {
    created += e.find("Normal SuccessfulCreatePod Created pod: pt-") != std::string::npos;
    master_created += e.find("Normal SuccessfulCreatePod Created pod: pt-master-0") != std::string::npos;
  }
  CHECK(created == 4);
  CHECK(master_created == 1);
  CHECK_FALSE(k.events.has("FailedCreatePod"));
  CHECK_FALSE(k.events.has("ErrResourceExists"));
}
