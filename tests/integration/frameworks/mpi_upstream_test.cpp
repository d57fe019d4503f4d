// MPIJob v2beta1 as mpi-operator v0.8's own integration tests see it, on the local cluster with a
// manual kubelet (the test moves pods through their phases, as upstream's tests do): the events
// and their order, the conditions in order with their reasons and messages, the replica statuses,
// the order in which the job's objects are created and deleted (by resourceVersion, as a watcher
// sees them), suspend and resume of the launcher Job, a failed launcher's message, and the
// PodGroups of both gang schedulers compared whole.
#include "tests/integration/frameworks/lifecycle_fixture.h"

#include <atomic>

#include "core/gang/gang.h"

using namespace unitrain::testing;

namespace {

// A job named "pi" with `workers` workers; `extra_spec` and `run_policy` are YAML flow mappings' members.
std::string mpi_job(int workers, std::string_view run_policy = "{}", std::string_view metadata_extra = "",
                    std::string_view launcher_spec_extra = "", std::string_view worker_spec_extra = "") {
  return fmt::format(R"(
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {{name: pi, namespace: default{}}}
spec:
  slotsPerWorker: 1
  runPolicy: {}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec: {{{}containers: [{{name: launcher, image: example.com/mpi:1, command: [mpirun, /pi]}}]}}
    Worker:
      replicas: {}
      template:
        spec: {{{}containers: [{{name: worker, image: example.com/mpi:1}}]}}
)",
                     metadata_extra, run_policy, launcher_spec_extra, workers, worker_spec_extra);
}

// The events about the job whose reason starts with "MPIJob" or is a launcher Job's failure, in
// the order the controller recorded them.
std::vector<std::string> job_events(const Cluster& k) {
  std::vector<std::string> out;
  for (const auto& e : k.events.events())
    if (e.find(" MPIJob") != std::string::npos || e.find(" BackoffLimitExceeded") != std::string::npos) out.push_back(e);
  return out;
}

std::string status_member(Cluster& k, std::string_view pointer) {
  auto job = k.get(kMPIJobs, "pi");
  if (!job) return "<gone>";
  const json::Value* v = json::find(job->root(), pointer);
  return v == nullptr ? "<none>" : json::dump(*v);
}

// Every ADDED and MODIFIED of the watched resources in "default", with the resourceVersion the
// server gave it: the order a watcher sees.
class WatchLog {
 public:
  struct Entry {
    std::string resource, type, name;
    uint64_t rv = 0;
    bool deleting = false;    // metadata.deletionTimestamp set
    bool suspended = false;   // spec.suspend (batch Jobs)
  };
  WatchLog(kube::Client& client, std::vector<kube::GroupVersionResource> resources) {
    for (auto& r : resources) {
      auto list = client.list(r, "default", {});
      REQUIRE(list);
      kube::WatchOptions o;
      o.resource_version = std::string(json::get_string(list->root(), "/metadata/resourceVersion").value_or(""));
      auto w = client.watch(r, "default", o);
      REQUIRE(w);
      streams_.push_back(std::move(*w));
      threads_.emplace_back([this, stream = streams_.back().get(), resource = r.resource] { read(*stream, resource); });
    }
  }
  ~WatchLog() {
    stop_ = true;
    for (auto& s : streams_) s->cancel();
    for (auto& t : threads_) t.join();
  }
  std::vector<Entry> entries() const {
    std::lock_guard lock(mu_);
    auto out = entries_;
    std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.rv < b.rv; });
    return out;
  }
  // "resource/name" of the first entry of each object matching `pick`, in resourceVersion order.
  template <class Pick>
  std::vector<std::string> first(Pick pick) const {
    std::vector<std::string> out;
    for (const auto& e : entries()) {
      const std::string key = e.resource + "/" + e.name;
      if (pick(e) && std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
    }
    return out;
  }

 private:
  void read(kube::WatchStream& stream, const std::string& resource) {
    while (!stop_) {
      auto ev = stream.next(std::chrono::milliseconds(200));
      if (!ev || (!*ev && !stream.timed_out())) return;
      if (!*ev) continue;
      const auto& e = **ev;
      if (e.type != kube::WatchEvent::Type::Added && e.type != kube::WatchEvent::Type::Modified &&
          e.type != kube::WatchEvent::Type::Deleted)
        continue;
      Entry entry;
      entry.resource = resource;
      entry.type = e.type == kube::WatchEvent::Type::Added ? "ADDED" : e.type == kube::WatchEvent::Type::Modified ? "MODIFIED" : "DELETED";
      entry.name = std::string(json::get_string(e.object.root(), "/metadata/name").value_or(""));
      entry.rv = std::stoull(std::string(json::get_string(e.object.root(), "/metadata/resourceVersion").value_or("0")));
      entry.deleting = json::find(e.object.root(), "/metadata/deletionTimestamp") != nullptr || e.type == kube::WatchEvent::Type::Deleted;
      entry.suspended = json::get_bool(e.object.root(), "/spec/suspend").value_or(false);
      std::lock_guard lock(mu_);
      entries_.push_back(std::move(entry));
    }
  }
  std::vector<std::unique_ptr<kube::WatchStream>> streams_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
};

const std::vector<kube::GroupVersionResource> kChildren{kServicesR, kConfigMapsR, kSecretsR, kPodsR, kBatchJobsR};

std::string launcher_pod(Cluster& k) {
  kube::ListOptions launchers;
  launchers.label_selector = "training.kubeflow.org/job-role=launcher";
  auto list = k.client->list(kPodsR, "default", launchers);
  if (!list) return "";
  for (const auto& it : json::find(list->root(), "/items")->GetArray())
    if (!json::find(it, "/metadata/deletionTimestamp")) return std::string(json::get_string(it, "/metadata/name").value_or(""));
  return "";
}

bool launcher_suspended(Cluster& k) {
  auto j = k.get(kBatchJobsR, "pi-launcher");
  return j && json::get_bool(j->root(), "/spec/suspend").value_or(false);
}

// A pod's status set through the status subresource: phase, and for a failed pod the reason and
// message the kubelet reports.
void set_pod_status(Cluster& k, const std::string& pod, std::string_view phase, std::string_view reason = "",
                    std::string_view message = "") {
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto obj = k.get(kPodsR, pod);
    REQUIRE(obj);
    auto& a = obj->alloc();
    json::Value status(rapidjson::kObjectType);
    status.AddMember("phase", json::str(phase, a), a);
    if (!reason.empty()) status.AddMember("reason", json::str(reason, a), a);
    if (!message.empty()) status.AddMember("message", json::str(message, a), a);
    if (phase == "Running") {
      auto conditions = json::Document::parse(R"([{"type":"Ready","status":"True"}])");
      status.AddMember("conditions", json::clone(conditions->root(), a), a);
    }
    obj->root().RemoveMember("status");
    obj->root().AddMember("status", status, a);
    auto r = k.client->update_status(kPodsR, "default", obj->root());
    if (r) return;
    if (!r.error().is(kube::ApiError::Reason::Conflict)) FAIL("pod status update: " << r.error().message);
  }
  FAIL("pod status update kept conflicting");
}

std::vector<std::string> workers(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(fmt::format("pi-worker-{}", i));
  return out;
}

}  // namespace

TEST_CASE("mpi-operator v0.8: a job that succeeds records Created, Running and Succeeded in that order") {
  Cluster k({.manual_kubelet = true});
  k.install_crd("kubeflow.org_mpijobs.yaml");
  auto ctl = k.controller("mpijob-v2");
  k.create_yaml(kMPIJobs, mpi_job(2, "{cleanPodPolicy: Running}"));
  REQUIRE(eventually([&] { return k.exists(kBatchJobsR, "pi-launcher") && launcher_pod(k) != ""; }));
  REQUIRE(eventually([&] { return status_member(k, "/status/replicaStatuses") == R"({"Launcher":{},"Worker":{}})"; }));
  for (const auto& w : workers(2)) set_pod_status(k, w, "Running");
  REQUIRE(eventually([&] { return status_member(k, "/status/replicaStatuses") == R"({"Launcher":{},"Worker":{"active":2}})"; }));
  set_pod_status(k, launcher_pod(k), "Running");
  REQUIRE(eventually([&] { return k.has_true(kMPIJobs, "pi", "Running"); }));
  CHECK(status_member(k, "/status/replicaStatuses") == R"({"Launcher":{"active":1},"Worker":{"active":2}})");
  set_pod_status(k, launcher_pod(k), "Succeeded");
  REQUIRE(eventually([&] { return k.has_true(kMPIJobs, "pi", "Succeeded"); }));
  REQUIRE(eventually([&] { return status_member(k, "/status/replicaStatuses") == R"({"Launcher":{"succeeded":1},"Worker":{}})"; }));
  INFO(k.dump());
  CHECK(k.conditions(kMPIJobs, "pi") ==
        "Created=True(MPIJobCreated: MPIJob default/pi is created.) "
        "Running=False(MPIJobRunning: MPIJob default/pi is running.) "
        "Succeeded=True(MPIJobSucceeded: MPIJob default/pi successfully completed.) ");
  CHECK(job_events(k) == std::vector<std::string>{"Normal MPIJobCreated MPIJob default/pi is created.",
                                                  "Normal MPIJobRunning MPIJob default/pi is running",
                                                  "Normal MPIJobSucceeded MPIJob default/pi successfully completed."});
}

TEST_CASE("mpi-operator v0.8: a failed launcher fails the job with the launcher pod's message, and a Warning") {
  Cluster k({.manual_kubelet = true});
  k.install_crd("kubeflow.org_mpijobs.yaml");
  auto ctl = k.controller("mpijob-v2");
  k.create_yaml(kMPIJobs, mpi_job(1, "{backoffLimit: 0}"));
  REQUIRE(eventually([&] { return launcher_pod(k) != ""; }));
  set_pod_status(k, "pi-worker-0", "Running");
  set_pod_status(k, launcher_pod(k), "Failed", "Error", "mpirun exited with status 3");
  REQUIRE(eventually([&] { return k.has_true(kMPIJobs, "pi", "Failed"); }));
  INFO(k.dump());
  const std::string failed = "Failed=True(BackoffLimitExceeded/Error: Job has reached the specified backoff limit: mpirun exited with status 3)";
  CHECK(k.conditions(kMPIJobs, "pi").find(failed) != std::string::npos);
  CHECK(eventually([&] {
    return job_events(k) == std::vector<std::string>{
                                "Normal MPIJobCreated MPIJob default/pi is created.",
                                "Warning BackoffLimitExceeded/Error Job has reached the specified backoff limit: mpirun exited with status 3"};
  }));
  CHECK(status_member(k, "/status/replicaStatuses/Launcher") == R"({"failed":1})");
}

TEST_CASE("mpi-operator v0.8: objects are created Service, ConfigMap, Secret, workers by index, then the launcher Job, and deleted by index") {
  Cluster k;
  k.install_crd("kubeflow.org_mpijobs.yaml");
  WatchLog log(*k.client, kChildren);
  auto ctl = k.controller("mpijob-v2");
  k.create_yaml(kMPIJobs, fmt::format(R"(
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {{name: pi, namespace: default}}
spec:
  runPolicy: {{cleanPodPolicy: All}}
  mpiReplicaSpecs:
    Launcher:
      template:
        metadata: {{annotations: {{sim.unitrain.io/duration: 1h}}}}
        spec: {{containers: [{{name: launcher, image: example.com/mpi:1}}]}}
    Worker:
      replicas: 12
      template:
        metadata: {{annotations: {{sim.unitrain.io/duration: 1h}}}}
        spec: {{containers: [{{name: worker, image: example.com/mpi:1}}]}}
)"));
  REQUIRE(eventually([&] { return k.exists(kBatchJobsR, "pi-launcher"); }));
  std::vector<std::string> created{"services/pi", "configmaps/pi-config", "secrets/pi-ssh"};
  for (const auto& w : workers(12)) created.push_back("pods/" + w);
  created.push_back("jobs/pi-launcher");
  auto ours = [](const WatchLog::Entry& e) { return e.type == "ADDED" && e.name.rfind("pi-launcher-", 0) != 0; };
  REQUIRE(eventually([&] { return log.first(ours).size() == created.size(); }));
  CHECK(log.first(ours) == created);

  k.patch_job(kMPIJobs, "pi", R"({"spec":{"runPolicy":{"suspend":true}}})");
  std::vector<std::string> deleted;
  for (const auto& w : workers(12)) deleted.push_back("pods/" + w);
  auto worker_deleted = [](const WatchLog::Entry& e) { return e.deleting && e.name.rfind("pi-worker-", 0) == 0; };
  REQUIRE(eventually([&] { return log.first(worker_deleted).size() == deleted.size(); }));
  CHECK(log.first(worker_deleted) == deleted);
  // The launcher Job was suspended before the first worker went. Each resource has its own watch,
  // so the Job's MODIFIED may arrive after the pods' DELETEs: wait for it, then order by resourceVersion.
  auto launcher_suspended_entry = [](const WatchLog::Entry& e) { return e.resource == "jobs" && e.suspended; };
  REQUIRE(eventually([&] { return log.first(launcher_suspended_entry).size() == 1; }));
  auto suspended_or_worker_deleted = [&](const WatchLog::Entry& e) { return launcher_suspended_entry(e) || worker_deleted(e); };
  CHECK(log.first(suspended_or_worker_deleted).front() == "jobs/pi-launcher");
}

TEST_CASE("mpi-operator v0.8: created suspended, then resumed: conditions, events, status and the launcher Job") {
  Cluster k({.manual_kubelet = true});
  k.install_crd("kubeflow.org_mpijobs.yaml");
  WatchLog log(*k.client, {kPodsR, kBatchJobsR});
  auto ctl = k.controller("mpijob-v2");
  k.create_yaml(kMPIJobs, mpi_job(2, "{suspend: true}"));
  REQUIRE(eventually([&] { return launcher_suspended(k); }));
  REQUIRE(eventually([&] { return status_member(k, "/status/replicaStatuses") == R"({"Launcher":{},"Worker":{}})"; }));
  INFO(k.dump());
  CHECK(k.conditions(kMPIJobs, "pi") ==
        "Created=True(MPIJobCreated: MPIJob default/pi is created.) "
        "Suspended=True(MPIJobSuspended: MPIJob suspended) "
        "Running=False(MPIJobSuspended: MPIJob default/pi is suspended.) ");
  CHECK(status_member(k, "/status/startTime") == "<none>");
  CHECK(k.names(kPodsR).empty());
  // The controller records its events after the status write the waits above saw.
  const std::vector<std::string> suspended_events{"Normal MPIJobCreated MPIJob default/pi is created.",
                                                  "Normal MPIJobSuspended MPIJob suspended"};
  CHECK(eventually([&] { return job_events(k) == suspended_events; }));
  CHECK(job_events(k) == suspended_events);

  // What Kueue does before it resumes a job: scheduling directives on the launcher template.
  k.patch_job(kMPIJobs, "pi",
              R"({"spec":{"runPolicy":{"suspend":false},"mpiReplicaSpecs":{"Launcher":{"template":{"metadata":)"
              R"({"labels":{"foo":"bar"}},"spec":{"nodeSelector":{"accelerator":"example-model"}}}}}}})");
  REQUIRE(eventually([&] { return !launcher_suspended(k); }));
  REQUIRE(eventually([&] { return k.conditions(kMPIJobs, "pi").find("Suspended=False") != std::string::npos; }));
  CHECK(k.conditions(kMPIJobs, "pi") ==
        "Created=True(MPIJobCreated: MPIJob default/pi is created.) "
        "Running=False(MPIJobSuspended: MPIJob default/pi is suspended.) "
        "Suspended=False(MPIJobResumed: MPIJob resumed) ");
  CHECK(status_member(k, "/status/startTime") != "<none>");
  const std::vector<std::string> resumed_events{"Normal MPIJobCreated MPIJob default/pi is created.",
                                                "Normal MPIJobSuspended MPIJob suspended",
                                                "Normal MPIJobResumed MPIJob resumed"};
  CHECK(eventually([&] { return job_events(k) == resumed_events; }));
  CHECK(job_events(k) == resumed_events);
  auto launcher = k.get(kBatchJobsR, "pi-launcher");
  REQUIRE(launcher);
  CHECK(json::get_string(launcher->root(), "/spec/template/metadata/labels/foo") == "bar");
  CHECK(json::get_string(launcher->root(), "/spec/template/spec/nodeSelector/accelerator") == "example-model");
  // The workers came back before the launcher Job was unsuspended.
  auto resumed_or_created = [](const WatchLog::Entry& e) {
    return (e.resource == "jobs" && e.type == "MODIFIED" && !e.suspended) ||
           (e.resource == "pods" && e.type == "ADDED" && e.name.rfind("pi-worker-", 0) == 0);
  };
  REQUIRE(eventually([&] { return log.first(resumed_or_created).size() >= 3; }));
  CHECK(log.first(resumed_or_created) == std::vector<std::string>{"pods/pi-worker-0", "pods/pi-worker-1", "jobs/pi-launcher"});
}

TEST_CASE("mpi-operator v0.8: suspending a running job, then resuming it with new scheduling directives") {
  Cluster k({.manual_kubelet = true});
  k.install_crd("kubeflow.org_mpijobs.yaml");
  auto ctl = k.controller("mpijob-v2");
  k.create_yaml(kMPIJobs, mpi_job(1));
  REQUIRE(eventually([&] { return launcher_pod(k) != ""; }));
  set_pod_status(k, "pi-worker-0", "Running");
  set_pod_status(k, launcher_pod(k), "Running");
  REQUIRE(eventually([&] { return k.has_true(kMPIJobs, "pi", "Running"); }));

  k.patch_job(kMPIJobs, "pi", R"({"spec":{"runPolicy":{"suspend":true}}})");
  REQUIRE(eventually([&] { return launcher_suspended(k) && k.names(kPodsR).empty(); }));
  REQUIRE(eventually([&] {
    return k.conditions(kMPIJobs, "pi") ==
           "Created=True(MPIJobCreated: MPIJob default/pi is created.) "
           "Suspended=True(MPIJobSuspended: MPIJob suspended) "
           "Running=False(MPIJobSuspended: MPIJob default/pi is suspended.) ";
  }));
  REQUIRE(eventually([&] { return status_member(k, "/status/replicaStatuses") == R"({"Launcher":{},"Worker":{}})"; }));
  // The launcher Job ran, so the API server keeps its template until its startTime is cleared.
  CHECK(json::find(k.get(kBatchJobsR, "pi-launcher")->root(), "/status/startTime") != nullptr);

  k.patch_job(kMPIJobs, "pi",
              R"({"spec":{"runPolicy":{"suspend":false},"mpiReplicaSpecs":{"Launcher":{"template":{"spec":)"
              R"({"nodeSelector":{"accelerator":"example-model-v2"}}}}}}})");
  REQUIRE(eventually([&] { return !launcher_suspended(k); }));
  INFO(k.dump());
  auto launcher = k.get(kBatchJobsR, "pi-launcher");
  REQUIRE(launcher);
  CHECK(json::get_string(launcher->root(), "/spec/template/spec/nodeSelector/accelerator") == "example-model-v2");
  REQUIRE(eventually([&] { return k.names(kPodsR).size() == 2; }));  // the worker and a new launcher pod
  // The pass writes the status after its creates: the pods can be seen before it.
  CHECK(eventually([&] {
    return k.conditions(kMPIJobs, "pi") ==
           "Created=True(MPIJobCreated: MPIJob default/pi is created.) "
           "Running=False(MPIJobSuspended: MPIJob default/pi is suspended.) "
           "Suspended=False(MPIJobResumed: MPIJob resumed) ";
  }));
}

namespace {

struct GangCase {
  std::string scheduler;
  std::string run_policy;
  std::string expected_spec;  // canonical JSON
};

}  // namespace

TEST_CASE("mpi-operator v0.8: PodGroups of both gang schedulers, compared whole") {
  const GangCase c = GENERATE(values<GangCase>({
      // Queue from the annotation, priority class from the launcher template, limits that are not
      // requests count, minMember = workers + 1.
      {"volcano", "{}",
       R"({"minMember":3,"minResources":{"cpu":"2500m","memory":"2Gi"},"priorityClassName":"high","queue":"annotated"})"},
      // schedulingPolicy wins; two of three pods: the lower-priority workers count one.
      {"volcano", "{schedulingPolicy: {minAvailable: 2, queue: given, priorityClass: given-class}}",
       R"({"minMember":2,"minResources":{"cpu":"1500m","memory":"1Gi"},"priorityClassName":"given-class","queue":"given"})"},
      // minAvailable 0: no minResources at all.
      {"volcano", "{schedulingPolicy: {minAvailable: 0}}", R"({"minMember":0,"priorityClassName":"high","queue":"annotated"})"},
      {"scheduler-plugins-scheduler", "{}",
       R"({"minMember":3,"minResources":{"cpu":"2500m","memory":"2Gi"},"scheduleTimeoutSeconds":0})"},
      {"scheduler-plugins-scheduler", "{schedulingPolicy: {scheduleTimeoutSeconds: 900, minAvailable: 0}}",
       R"({"minMember":0,"scheduleTimeoutSeconds":900})"},
  }));
  INFO(c.scheduler << " " << c.run_policy);
  Cluster k({.podgroup_crds = true});
  k.install_crd("kubeflow.org_mpijobs.yaml");
  k.create_yaml(kPriorityClasses, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n");
  c::JobControllerOptions options;
  options.gang = std::shared_ptr<const unitrain::gang::Backend>(unitrain::gang::make_backend(c.scheduler));
  fw::PluginConfig config;
  config.gang_scheduler_name = c.scheduler;
  auto ctl = k.controller("mpijob-v2", std::move(options), std::move(config));
  // The launcher requests cpu; each worker requests cpu and limits cpu and memory (the memory
  // limit, not requested, counts).
  k.create_yaml(kMPIJobs, fmt::format(R"(
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {{name: pi, namespace: default, annotations: {{scheduling.volcano.sh/queue-name: annotated}}}}
spec:
  runPolicy: {}
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          priorityClassName: high
          containers: [{{name: launcher, image: example.com/mpi:1, resources: {{requests: {{cpu: 500m}}}}}}]
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{{name: worker, image: example.com/mpi:1, resources: {{requests: {{cpu: "1"}}, limits: {{cpu: "2", memory: 1Gi}}}}}}]
)",
                                      c.run_policy));
  const auto& pgs = c.scheduler == "volcano" ? kVolcanoPodGroups : kPluginsPodGroups;
  REQUIRE(eventually([&] { return k.exists(pgs, "pi"); }));
  auto pg = k.get(pgs, "pi");
  REQUIRE(pg);
  CHECK(json::canonical(*json::find(pg->root(), "/spec")) == c.expected_spec);
}
