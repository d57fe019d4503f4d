// Decisions that end, pause or restart part of a job are written before anything acts on them.
// Each case makes the local cluster fail the write that carries the decision (a 500 or a 409 on
// pytorchjobs/status, or on the PATCH of the re-creation count) and checks, from the store's own
// history, that no pod was deleted before the decision was on the server, that no pod was
// created again, and that the job ends as upstream ends it.
#include "tests/integration/frameworks/lifecycle_fixture.h"

using namespace unitrain::testing;

namespace {

// The store's own history of a job's pods and of its PyTorchJob, read from watches the test opens
// before it acts: every object version with its resourceVersion, which orders all writes.
class StoreHistory {
 public:
  struct Version {
    int64_t resource_version = 0;
    std::string resource;  // "pods" | "pytorchjobs"
    std::string type;      // ADDED MODIFIED DELETED
    json::Document object;
  };

  explicit StoreHistory(lc::Store& store) {
    for (const auto& r : {kPodsR, kPyTorchJobs}) {
      auto info = store.find_resource(r.group, r.version, r.resource);
      REQUIRE(info);
      auto w = store.watch(*info, "default", lc::WatchRequest{});
      REQUIRE(w);
      watchers_.emplace_back(r.resource, std::move(*w));
    }
  }
  ~StoreHistory() {
    for (auto& [_, w] : watchers_) w->stop();
  }

  const std::vector<Version>& versions() {
    for (auto& [resource, w] : watchers_) {
      bool closed = false;
      for (const auto& ev : w->drain(closed)) {
        if (!ev.object) continue;
        auto doc = json::Document::parse(*ev.object);
        REQUIRE(doc);
        const int64_t rv = std::stoll(std::string(json::get_string(doc->root(), "/metadata/resourceVersion").value_or("0")));
        versions_.push_back({rv, resource, ev.type, std::move(*doc)});
      }
      REQUIRE_FALSE(closed);
    }
    std::stable_sort(versions_.begin(), versions_.end(),
                     [](const Version& a, const Version& b) { return a.resource_version < b.resource_version; });
    return versions_;
  }

  // The resourceVersion of the first version that matches, or 0.
  template <class Pred>
  int64_t first(Pred pred) {
    for (const auto& v : versions())
      if (pred(v)) return v.resource_version;
    return 0;
  }
  // The first write that took a pod away (deletionTimestamp set, or deleted outright).
  int64_t first_pod_deletion() {
    return first([](const Version& v) {
      return v.resource == "pods" && (v.type == "DELETED" || json::find(v.object.root(), "/metadata/deletionTimestamp"));
    });
  }
  // The first write that left the job with condition `type` True.
  int64_t first_job_condition(std::string_view type) {
    return first([&](const Version& v) {
      if (v.resource != "pytorchjobs") return false;
      if (const json::Value* conds = json::find(v.object.root(), "/status/conditions"))
        for (const auto& c : conds->GetArray())
          if (json::get_string(c, "/type") == type && json::get_string(c, "/status") == "True") return true;
      return false;
    });
  }

 private:
  std::vector<std::pair<std::string, std::unique_ptr<lc::Watcher>>> watchers_;
  std::vector<Version> versions_;
};

std::string durable_job_yaml(std::string_view run_policy, std::string_view restart_policy, int workers = 1) {
  return fmt::format(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: pt, namespace: default}}
spec:
  runPolicy: {0}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: {1}
      template:
        spec: {{containers: [{{name: pytorch, image: example.com/train:1}}]}}
    Worker:
      replicas: {2}
      restartPolicy: {1}
      template:
        spec: {{containers: [{{name: pytorch, image: example.com/train:1}}]}}
)",
                     run_policy, restart_policy, workers);
}

// From now on the local cluster answers `times` requests `verb` on `resource` with `fault`
// ("error500" or "error409").
void inject(Cluster& k, std::string_view verb, std::string_view resource, std::string_view fault, int times) {
  auto config = lc::FaultConfig::parse(
      fmt::format(R"({{"rules":[{{"verbs":["{}"],"resources":["{}"],"{}":1,"times":{}}}]}})", verb, resource, fault, times));
  REQUIRE(config);
  k.cluster.faults().configure(std::move(*config));
}

uint64_t injected(Cluster& k, std::string_view fault) {
  return k.cluster.faults().counts()[fault == "error409" ? "409" : "500"];
}

// A running container that restarted `restarts` times in place (restartPolicy OnFailure).
void set_running_with_restarts(Cluster& k, std::string_view pod, int restarts) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto obj = k.get(kPodsR, pod);
    REQUIRE(obj);
    auto status = json::Document::parse(fmt::format(
        R"({{"phase":"Running","containerStatuses":[{{"name":"pytorch","ready":true,"restartCount":{},"image":"x","imageID":"",
            "state":{{"running":{{}}}},"lastState":{{"terminated":{{"exitCode":1,"reason":"Error"}}}}}}]}})",
        restarts));
    REQUIRE(status);
    obj->root().RemoveMember("status");
    obj->root().AddMember("status", json::clone(status->root(), obj->alloc()), obj->alloc());
    auto r = k.client->update_status(kPodsR, "default", obj->root());
    if (r) return;
    if (!r.error().is(kube::ApiError::Reason::Conflict)) FAIL("pod status update: " << r.error().message);
  }
  FAIL("pod status update kept conflicting");
}

// Both pods created and Running, and the job's Running status written: nothing more to write.
void run_job(Cluster& k) {
  REQUIRE(eventually([&] { return k.exists(kPodsR, "pt-master-0") && k.exists(kPodsR, "pt-worker-0"); }));
  k.set_pod_phase("pt-master-0", "Running");
  k.set_pod_phase("pt-worker-0", "Running");
  REQUIRE(eventually([&] {
    auto job = k.get(kPyTorchJobs, "pt");
    return k.has_true(kPyTorchJobs, "pt", "Running") && job &&
           json::get_int(job->root(), "/status/replicaStatuses/Worker/active").value_or(0) == 1 &&
           json::get_int(job->root(), "/status/replicaStatuses/Master/active").value_or(0) == 1;
  }));
}

std::string annotation(Cluster& k, std::string_view key) {
  auto o = k.get(kPyTorchJobs, "pt");
  if (!o) return "";
  return std::string(json::get_string(o->root(), "/metadata/annotations/" + json::escape_pointer_token(key)).value_or(""));
}

constexpr std::string_view kBackoffMessage =
    "Failed=True(PyTorchJobFailed: Job pt has failed because it has reached the specified backoff limit)";

}  // namespace

TEST_CASE("durable decisions: backoffLimit reached by in-place restarts survives a failed status write, and no pod is created again") {
  const std::string fault = GENERATE(as<std::string>{}, "error500", "error409");
  INFO(fault << " on the status write that fails the job");
  Cluster k({.manual_kubelet = true});
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob");
  k.create_yaml(kPyTorchJobs, durable_job_yaml("{backoffLimit: 2}", "OnFailure"));
  run_job(k);
  StoreHistory history(k.cluster.store());
  const auto before = writes_since(k.cluster);
  const uint64_t faults_before = injected(k, fault);

  inject(k, "PUT", "pytorchjobs/status", fault, 1);
  set_running_with_restarts(k, "pt-worker-0", 2);
  // Either outcome ends the wait: the job failed, or (the bug) a pod was created again.
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Failed") || writes_since(k.cluster, before).get("POST pods") > 0; }));
  REQUIRE(writes_since(k.cluster, before).get("POST pods") == 0);
  REQUIRE(eventually([&] { return k.names(kPodsR).empty() && k.names(kServicesR).empty(); }));
  INFO(k.dump());
  CHECK(injected(k, fault) == faults_before + 1);
  CHECK(k.conditions(kPyTorchJobs, "pt").find(kBackoffMessage) != std::string::npos);
  const int64_t failed_at = history.first_job_condition("Failed");
  REQUIRE(failed_at > 0);
  CHECK(failed_at < history.first_pod_deletion());
  CHECK(eventually([&] { return ctl->counters()["default"].failed == 1; }));
  CHECK(eventually([&] { return k.events.has("Normal PyTorchJobFailed Job pt has failed because it has reached the specified backoff limit"); }));
}

TEST_CASE("durable decisions: the re-creation count is written before the failed pod is deleted") {
  Cluster k({.manual_kubelet = true});
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob");

  SECTION("a failed count write leaves the failed pod alone; the retry reaches backoffLimit without a new pod") {
    k.create_yaml(kPyTorchJobs, durable_job_yaml("{backoffLimit: 1}", "ExitCode"));
    run_job(k);
    StoreHistory history(k.cluster.store());
    const auto before = writes_since(k.cluster);
    const uint64_t faults_before = injected(k, "error500");
    inject(k, "PATCH", "pytorchjobs", "error500", 1);
    k.set_pod_phase("pt-worker-0", "Failed", 137);
    REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Failed") || writes_since(k.cluster, before).get("POST pods") > 0; }));
    REQUIRE(writes_since(k.cluster, before).get("POST pods") == 0);
    REQUIRE(eventually([&] { return k.names(kPodsR).empty(); }));
    INFO(k.dump());
    CHECK(injected(k, "error500") == faults_before + 1);
    CHECK(annotation(k, "training.unitrain.io/pod-restarts") == "1");
    CHECK(k.conditions(kPyTorchJobs, "pt").find(kBackoffMessage) != std::string::npos);
    CHECK(history.first_job_condition("Failed") < history.first_pod_deletion());
  }
  SECTION("a failed delete after the count was written does not count the same pod twice") {
    k.create_yaml(kPyTorchJobs, durable_job_yaml("{backoffLimit: 3}", "ExitCode"));
    run_job(k);
    const std::string first_uid(json::get_string(k.get(kPodsR, "pt-worker-0")->root(), "/metadata/uid").value_or(""));
    const auto before = writes_since(k.cluster);
    const uint64_t faults_before = injected(k, "error500");
    inject(k, "DELETE", "pods", "error500", 1);
    k.set_pod_phase("pt-worker-0", "Failed", 137);
    REQUIRE(eventually([&] {
      auto pod = k.get(kPodsR, "pt-worker-0");
      return pod && json::get_string(pod->root(), "/metadata/uid").value_or("") != first_uid &&
             !json::find(pod->root(), "/metadata/deletionTimestamp");
    }));
    INFO(k.dump());
    // The running master makes the job Running again at once, replacing Restarting: the event stays.
    CHECK(k.events.has("Warning PyTorchJobRestarting job pt is restarting because Worker replica(s) failed."));
    CHECK(injected(k, "error500") == faults_before + 1);
    CHECK(annotation(k, "training.unitrain.io/pod-restarts") == "1");
    // The server counts a POST as it answers it, which can be just after the pod is readable.
    REQUIRE(eventually([&] { return writes_since(k.cluster, before).get("POST pods") >= 1; }));
    CHECK(writes_since(k.cluster, before).get("POST pods") == 1);
    CHECK(!k.has_true(kPyTorchJobs, "pt", "Failed"));
  }
}

TEST_CASE("durable decisions: activeDeadlineSeconds, suspend and cleanPodPolicy write the job before deleting its pods") {
  const std::string fault = GENERATE(as<std::string>{}, "error500", "error409");
  Cluster k({.manual_kubelet = true});
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob");

  SECTION("activeDeadlineSeconds") {
    StoreHistory history(k.cluster.store());
    const auto before = writes_since(k.cluster);
    const uint64_t faults_before = injected(k, fault);
    k.create_yaml(kPyTorchJobs, durable_job_yaml("{activeDeadlineSeconds: 3}", "OnFailure"));
    // The pods stay Pending (manual kubelet), so after the first status write (startTime) only
    // the deadline changes the job, and its write fails.
    REQUIRE(eventually([&] {
      auto job = k.get(kPyTorchJobs, "pt");
      return job && json::find(job->root(), "/status/startTime") && k.names(kPodsR).size() == 2;
    }));
    const auto created = writes_since(k.cluster, before);
    inject(k, "PUT", "pytorchjobs/status", fault, 1);
    REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Failed"); }, std::chrono::seconds(20)));
    REQUIRE(eventually([&] { return k.names(kPodsR).empty(); }));
    INFO(k.dump());
    CHECK(k.conditions(kPyTorchJobs, "pt").find(
              "Failed=True(PyTorchJobFailed: Job pt has failed because it was active longer than specified deadline)") !=
          std::string::npos);
    CHECK(injected(k, fault) == faults_before + 1);
    CHECK(writes_since(k.cluster, before).get("POST pods") == created.get("POST pods"));
    CHECK(history.first_job_condition("Failed") < history.first_pod_deletion());
  }
  SECTION("suspend") {
    k.create_yaml(kPyTorchJobs, durable_job_yaml("{}", "OnFailure"));
    run_job(k);
    StoreHistory history(k.cluster.store());
    const auto before = writes_since(k.cluster);
    const uint64_t faults_before = injected(k, fault);
    inject(k, "PUT", "pytorchjobs/status", fault, 1);
    k.patch_job(kPyTorchJobs, "pt", R"({"spec":{"runPolicy":{"suspend":true}}})");
    REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Suspended"); }));
    REQUIRE(eventually([&] { return k.names(kPodsR).empty() && k.names(kServicesR).empty(); }));
    INFO(k.dump());
    CHECK(injected(k, fault) == faults_before + 1);
    CHECK(writes_since(k.cluster, before).get("POST pods") == 0);
    CHECK(history.first_job_condition("Suspended") < history.first_pod_deletion());
  }
  SECTION("cleanPodPolicy All on failure") {
    k.create_yaml(kPyTorchJobs, durable_job_yaml("{cleanPodPolicy: All}", "Never"));
    run_job(k);
    StoreHistory history(k.cluster.store());
    const auto before = writes_since(k.cluster);
    const uint64_t faults_before = injected(k, fault);
    inject(k, "PUT", "pytorchjobs/status", fault, 1);
    k.set_pod_phase("pt-master-0", "Failed", 1);
    REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Failed"); }));
    REQUIRE(eventually([&] { return k.names(kPodsR).empty() && k.names(kServicesR).empty(); }));
    INFO(k.dump());
    CHECK(k.conditions(kPyTorchJobs, "pt").find("Failed=True(PyTorchJobFailed: PyTorchJob pt is failed because 1 Master replica(s) failed.)") !=
          std::string::npos);
    CHECK(injected(k, fault) == faults_before + 1);
    CHECK(writes_since(k.cluster, before).get("POST pods") == 0);
    CHECK(history.first_job_condition("Failed") < history.first_pod_deletion());
  }
}

TEST_CASE("durable decisions: TTL deletes the job only after its finished status is written") {
  Cluster k({.manual_kubelet = true});
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob");
  k.create_yaml(kPyTorchJobs, durable_job_yaml("{ttlSecondsAfterFinished: 0, cleanPodPolicy: Running}", "Never"));
  run_job(k);
  StoreHistory history(k.cluster.store());
  inject(k, "PUT", "pytorchjobs/status", "error500", 1);
  // The master succeeds while the worker still runs: the worker's active count is folded into
  // succeeded (training-operator's finished-job step) and written before cleanPodPolicy and TTL
  // act, also when the first write of it fails.
  k.set_pod_phase("pt-master-0", "Succeeded", 0);
  REQUIRE(eventually([&] { return !k.exists(kPyTorchJobs, "pt"); }));
  const int64_t deleted_at = history.first([](const StoreHistory::Version& v) { return v.resource == "pytorchjobs" && v.type == "DELETED"; });
  const int64_t folded_at = history.first([](const StoreHistory::Version& v) {
    return v.resource == "pytorchjobs" && json::get_int(v.object.root(), "/status/replicaStatuses/Worker/succeeded").value_or(0) == 1;
  });
  CHECK(history.first_job_condition("Succeeded") > 0);
  CHECK(folded_at > 0);
  CHECK(folded_at < history.first_pod_deletion());
  CHECK(folded_at < deleted_at);
  CHECK(eventually([&] { return k.events.has("Normal SuccessfulDeletePod Deleted job: pt"); }));
}
