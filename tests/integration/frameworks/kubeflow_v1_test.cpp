// TFJob, MXJob, XGBoostJob and PaddleJob through the real core on the local cluster: the pods,
// services and env each framework's spec describes (training-operator-v1.md §3–4), a failure,
// the restart rules where the frameworks differ, and suspend/resume.
//
// The simulated kubelet gives every pod of a replica type the same behaviour; where a test needs
// one index to finish before the others (TF's worker-0 rule) it lets the pods run for an hour
// and writes that pod's terminal status itself, as envtest-based upstream tests do.
#include "tests/integration/frameworks/local_cluster_fixture.h"

namespace json = unitrain::json;
namespace kube = unitrain::kube;
using unitrain::testing::env_of;
using unitrain::testing::env_value;
using unitrain::testing::eventually;
using unitrain::testing::writes_since;
using Cluster = unitrain::testing::LocalClusterFixture;

namespace {

const kube::GroupVersionResource kPods{"", "v1", "pods"};
const kube::GroupVersionResource kServices{"", "v1", "services"};
const kube::GroupVersionResource kTFJobs{"kubeflow.org", "v1", "tfjobs"};
const kube::GroupVersionResource kMXJobs{"kubeflow.org", "v1", "mxjobs"};
const kube::GroupVersionResource kXGBoostJobs{"kubeflow.org", "v1", "xgboostjobs"};
const kube::GroupVersionResource kPaddleJobs{"kubeflow.org", "v1", "paddlejobs"};

// A replica spec in flow style: `image` of a container named `container`, the simulated run
// behaviour as pod annotations.
std::string replica(std::string_view type, int replicas, std::string_view restart_policy, std::string_view container,
                    std::string_view annotations) {
  return fmt::format(
      "    {}:\n      replicas: {}\n      restartPolicy: {}\n      template:\n"
      "        metadata: {{annotations: {{{}}}}}\n"
      "        spec: {{containers: [{{name: {}, image: example.com/train:1}}]}}\n",
      type, replicas, restart_policy, annotations, container);
}

void create(Cluster& k, const kube::GroupVersionResource& r, const std::string& yaml) {
  auto docs = json::parse_yaml(yaml);
  if (!docs) FAIL(docs.error().message);
  auto created = k.client->create(r, "default", (*docs)[0].root());
  if (!created) FAIL(created.error().to_string());
}

// Ends a pod the kubelet is still running: phase and the default container's terminated state.
void finish_pod(Cluster& k, std::string_view name, std::string_view container, int exit_code) {
  REQUIRE(eventually([&] { return k.pod_phase(name) == "Running"; }));
  REQUIRE(eventually([&] {
    auto pod = k.client->get(kPods, "default", name);
    if (!pod) return false;
    auto status = json::Document::parse(fmt::format(
        R"({{"phase":"{}","containerStatuses":[{{"name":"{}","ready":false,"restartCount":0,"image":"example.com/train:1","imageID":"","state":{{"terminated":{{"exitCode":{},"reason":"{}"}}}}}}]}})",
        exit_code == 0 ? "Succeeded" : "Failed", container, exit_code, exit_code == 0 ? "Completed" : "Error"));
    REQUIRE(status);
    json::Value copy(status->root(), pod->alloc());
    pod->root().RemoveMember("status");
    pod->root().AddMember("status", copy, pod->alloc());
    return static_cast<bool>(k.client->update_status(kPods, "default", pod->root()));
  }));
}

std::string label(const json::Value& obj, std::string_view key) {
  return std::string(json::get_string(obj, "/metadata/labels/" + json::escape_pointer_token(key)).value_or("<unset>"));
}

std::string service_ports(Cluster& k, std::string_view name) {
  auto svc = k.client->get(kServices, "default", name);
  if (!svc) return "<absent>";
  std::string out = std::string(json::get_string(svc->root(), "/spec/clusterIP").value_or("")) + " ";
  if (const json::Value* ports = json::find(svc->root(), "/spec/ports"))
    for (const auto& p : ports->GetArray())
      out += fmt::format("{}:{} ", json::get_string(p, "/name").value_or(""), json::get_int(p, "/port").value_or(0));
  return out;
}

int64_t int_at(Cluster& k, const kube::GroupVersionResource& r, std::string_view name, std::string_view pointer) {
  auto obj = k.client->get(r, "default", name);
  return obj ? json::get_int(obj->root(), pointer).value_or(-1) : -1;
}

bool has_event(const Cluster& k, std::string_view prefix) {
  for (const auto& e : k.events.events())
    if (e.rfind(prefix, 0) == 0) return true;
  return false;
}

// Suspends a running job, checks its pods go and the conditions the core writes, resumes it and
// waits for Succeeded (§3.2 steps 5–6).
void suspend_and_resume(Cluster& k, const kube::GroupVersionResource& r, std::string_view kind, std::string_view name,
                        int pods) {
  REQUIRE(eventually([&] {
    const std::string names = k.children("pods", name);
    return std::count(names.begin(), names.end(), ' ') == pods;
  }));
  REQUIRE(k.client->patch(r, "default", name, kube::PatchType::Merge, R"({"spec":{"runPolicy":{"suspend":true}}})"));
  REQUIRE(eventually([&] { return k.has_condition(r, name, "Suspended"); }));
  REQUIRE(eventually([&] { return k.children("pods", name).empty(); }));
  // Deleted with the pods and not re-created while suspended.
  REQUIRE(eventually([&] { return k.children("services", name).empty(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(k.children("services", name).empty());
  CHECK(k.condition_message(r, name, "Suspended") == fmt::format("{} {} is suspended.", kind, name));
  CHECK(k.condition_types(r, name).find("Running ") == std::string::npos);
  CHECK_FALSE(k.has_condition(r, name, "Succeeded"));

  REQUIRE(k.client->patch(r, "default", name, kube::PatchType::Merge, R"({"spec":{"runPolicy":{"suspend":false}}})"));
  REQUIRE(eventually([&] { return k.has_condition(r, name, "Succeeded"); }));
  CHECK_FALSE(k.has_condition(r, name, "Suspended"));
  CHECK(k.condition_message(r, name, "Suspended") == fmt::format("{} {} is resumed.", kind, name));
  CHECK(has_event(k, fmt::format("Normal {}Suspended", kind)));
  CHECK(has_event(k, fmt::format("Normal {}Resumed", kind)));
}

}  // namespace

// ---- TFJob -------------------------------------------------------------------------------------

TEST_CASE("TFJob PS and Workers: TF_CONFIG, services, job-role, worker 0 finishing completes the job") {
  Cluster k;
  k.install_crd("kubeflow.org_tfjobs.yaml");
  auto ctl = k.controller("tfjob");
  create(k, kTFJobs,
         "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: dist, namespace: default}\n"
         "spec:\n  runPolicy: {cleanPodPolicy: Running}\n  tfReplicaSpecs:\n" +
             replica("PS", 1, "Never", "tensorflow", "sim.unitrain.io/duration: 1h") +
             replica("Worker", 2, "Never", "tensorflow", "sim.unitrain.io/duration: 1h"));
  REQUIRE(eventually([&] { return k.children("pods", "dist") == "dist-ps-0 dist-worker-0 dist-worker-1 "; }));
  CHECK(k.children("services", "dist") == "dist-ps-0 dist-worker-0 dist-worker-1 ");
  CHECK(service_ports(k, "dist-worker-1") == "None tfjob-port:2222 ");

  auto worker1 = k.client->get(kPods, "default", "dist-worker-1");
  REQUIRE(worker1);
  CHECK(env_value(worker1->root(), "TF_CONFIG") ==
        R"({"cluster":{"ps":["dist-ps-0.default.svc:2222"],"worker":["dist-worker-0.default.svc:2222","dist-worker-1.default.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"})");
  CHECK(env_of(worker1->root()).rfind("TF_CONFIG=", 0) == 0);
  CHECK(label(worker1->root(), "training.kubeflow.org/replica-type") == "worker");
  CHECK(label(worker1->root(), "training.kubeflow.org/replica-index") == "1");
  CHECK(label(worker1->root(), "training.kubeflow.org/job-role") == "<unset>");
  auto worker0 = k.client->get(kPods, "default", "dist-worker-0");
  REQUIRE(worker0);
  CHECK(label(worker0->root(), "training.kubeflow.org/job-role") == "master");
  auto ps0 = k.client->get(kPods, "default", "dist-ps-0");
  REQUIRE(ps0);
  CHECK(env_value(ps0->root(), "TF_CONFIG") ==
        R"({"cluster":{"ps":["dist-ps-0.default.svc:2222"],"worker":["dist-worker-0.default.svc:2222","dist-worker-1.default.svc:2222"]},"task":{"type":"ps","index":0},"environment":"cloud"})");
  REQUIRE(eventually([&] { return k.has_condition(kTFJobs, "dist", "Running"); }));
  CHECK(k.condition_message(kTFJobs, "dist", "Running") == "TFJob default/dist is running.");

  // Worker 1 and the PS still run; worker 0's exit 0 is enough without successPolicy AllWorkers.
  finish_pod(k, "dist-worker-0", "tensorflow", 0);
  REQUIRE(eventually([&] { return k.has_condition(kTFJobs, "dist", "Succeeded"); }));
  CHECK(k.condition_types(kTFJobs, "dist") == "Created Succeeded ");
  CHECK(k.condition_message(kTFJobs, "dist", "Succeeded") == "TFJob default/dist successfully completed.");
  // cleanPodPolicy Running removes the pods that were still running.
  REQUIRE(eventually([&] { return k.children("pods", "dist") == "dist-worker-0 "; }));
}

TEST_CASE("TFJob successPolicy AllWorkers waits for every worker after worker 0") {
  Cluster k;
  k.install_crd("kubeflow.org_tfjobs.yaml");
  auto ctl = k.controller("tfjob");
  create(k, kTFJobs,
         "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: all, namespace: default}\n"
         "spec:\n  successPolicy: AllWorkers\n  tfReplicaSpecs:\n" +
             replica("Worker", 2, "Never", "tensorflow", "sim.unitrain.io/duration: 1h"));
  finish_pod(k, "all-worker-0", "tensorflow", 0);
  REQUIRE(eventually([&] { return int_at(k, kTFJobs, "all", "/status/replicaStatuses/Worker/succeeded") == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_FALSE(k.has_condition(kTFJobs, "all", "Succeeded"));
  CHECK(k.has_condition(kTFJobs, "all", "Running"));
  finish_pod(k, "all-worker-1", "tensorflow", 0);
  REQUIRE(eventually([&] { return k.has_condition(kTFJobs, "all", "Succeeded"); }));
  CHECK(k.condition_types(kTFJobs, "all") == "Created Succeeded ");
}

TEST_CASE("TFJob with a Chief: the chief decides success and carries job-role master") {
  Cluster k;
  k.install_crd("kubeflow.org_tfjobs.yaml");
  auto ctl = k.controller("tfjob");
  create(k, kTFJobs,
         "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: chief, namespace: default}\n"
         "spec:\n  tfReplicaSpecs:\n" +
             replica("Chief", 1, "Never", "tensorflow", "sim.unitrain.io/duration: 300ms") +
             replica("Worker", 1, "Never", "tensorflow", "sim.unitrain.io/duration: 1h"));
  REQUIRE(eventually([&] { return k.has_condition(kTFJobs, "chief", "Succeeded"); }));
  auto c0 = k.client->get(kPods, "default", "chief-chief-0");
  REQUIRE(c0);
  CHECK(label(c0->root(), "training.kubeflow.org/job-role") == "master");
  CHECK(label(k.client->get(kPods, "default", "chief-worker-0")->root(), "training.kubeflow.org/job-role") == "<unset>");
  CHECK(env_value(c0->root(), "TF_CONFIG") ==
        R"({"cluster":{"chief":["chief-chief-0.default.svc:2222"],"worker":["chief-worker-0.default.svc:2222"]},"task":{"type":"chief","index":0},"environment":"cloud"})");
  // cleanPodPolicy defaults to None: the worker keeps running.
  CHECK(k.pod_phase("chief-worker-0") == "Running");
}

TEST_CASE("TFJob: a failed worker with restartPolicy Never fails the job") {
  Cluster k;
  k.install_crd("kubeflow.org_tfjobs.yaml");
  auto ctl = k.controller("tfjob");
  create(k, kTFJobs,
         "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: bad, namespace: default}\n"
         "spec:\n  tfReplicaSpecs:\n" +
             replica("PS", 1, "Never", "tensorflow", "sim.unitrain.io/duration: 1h") +
             replica("Worker", 1, "Never", "tensorflow", "sim.unitrain.io/duration: 200ms, sim.unitrain.io/exit-code: '1'"));
  REQUIRE(eventually([&] { return k.has_condition(kTFJobs, "bad", "Failed"); }));
  CHECK(k.condition_types(kTFJobs, "bad") == "Created Failed ");
  CHECK(k.condition_message(kTFJobs, "bad", "Failed") == "TFJob default/bad has failed because 1 Worker replica(s) failed.");
  CHECK(k.pod_phase("bad-worker-0") == "Failed");  // Never: not re-created
}

TEST_CASE("TFJob: restartPolicy ExitCode re-creates a worker that exits 137, then succeeds") {
  Cluster k;
  k.install_crd("kubeflow.org_tfjobs.yaml");
  auto ctl = k.controller("tfjob");
  const auto before = writes_since(k.cluster);
  create(k, kTFJobs,
         "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: retry, namespace: default}\n"
         "spec:\n  tfReplicaSpecs:\n" +
             replica("PS", 1, "Never", "tensorflow", "sim.unitrain.io/duration: 1h") +
             replica("Worker", 1, "ExitCode", "tensorflow",
                     "sim.unitrain.io/duration: 200ms, sim.unitrain.io/fail-times: '1', sim.unitrain.io/fail-exit-code: '137'"));
  REQUIRE(eventually([&] { return k.has_condition(kTFJobs, "retry", "Succeeded"); }));
  CHECK_FALSE(k.has_condition(kTFJobs, "retry", "Failed"));
  CHECK(has_event(k, "Warning TFJobRestarting"));
  CHECK(writes_since(k.cluster, before).by_verb_resource["POST pods"] == 3);  // PS + worker twice
}

TEST_CASE("TFJob suspend deletes its pods and resume runs it to Succeeded") {
  Cluster k;
  k.install_crd("kubeflow.org_tfjobs.yaml");
  auto ctl = k.controller("tfjob");
  create(k, kTFJobs,
         "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: pause, namespace: default}\n"
         "spec:\n  tfReplicaSpecs:\n" +
             replica("Worker", 2, "Never", "tensorflow", "sim.unitrain.io/duration: 2s"));
  suspend_and_resume(k, kTFJobs, "TFJob", "pause", 2);
}

// ---- MXJob -------------------------------------------------------------------------------------

TEST_CASE("MXJob scheduler, server and workers: MX_CONFIG and DMLC_* env, the scheduler decides success") {
  Cluster k;
  k.install_crd("kubeflow.org_mxjobs.yaml");
  auto ctl = k.controller("mxjob");
  create(k, kMXJobs,
         "apiVersion: kubeflow.org/v1\nkind: MXJob\nmetadata: {name: mx, namespace: default}\n"
         "spec:\n  jobMode: MXTrain\n  runPolicy: {cleanPodPolicy: All}\n  mxReplicaSpecs:\n" +
             replica("Scheduler", 1, "Never", "mxnet", "sim.unitrain.io/duration: 1h") +
             replica("Server", 1, "Never", "mxnet", "sim.unitrain.io/duration: 1h") +
             replica("Worker", 2, "Never", "mxnet", "sim.unitrain.io/duration: 1h"));
  REQUIRE(eventually([&] { return k.children("pods", "mx") == "mx-scheduler-0 mx-server-0 mx-worker-0 mx-worker-1 "; }));
  CHECK(k.children("services", "mx") == "mx-scheduler-0 mx-server-0 mx-worker-0 mx-worker-1 ");
  CHECK(service_ports(k, "mx-scheduler-0") == "None mxjob-port:9091 ");
  auto w1 = k.client->get(kPods, "default", "mx-worker-1");
  REQUIRE(w1);
  CHECK(env_of(w1->root()) ==
        R"(MX_CONFIG={"cluster":{"scheduler":[{"url":"mx-scheduler-0","port":9091}],"server":[{"url":"mx-server-0","port":9091}],"worker":[{"url":"mx-worker-0","port":9091},{"url":"mx-worker-1","port":9091}]},"labels":{"scheduler":"","server":"","worker":""},"task":{"type":"worker","index":1}} )"
        "DMLC_PS_ROOT_PORT=9091 DMLC_PS_ROOT_URI=mx-scheduler-0 DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=2 DMLC_ROLE=worker "
        "DMLC_USE_KUBERNETES=1 DMLC_WORKER_ID=1 ");
  auto server = k.client->get(kPods, "default", "mx-server-0");
  REQUIRE(server);
  CHECK(label(server->root(), "training.kubeflow.org/job-role") == "master");
  CHECK(env_value(server->root(), "DMLC_ROLE") == "server");
  CHECK(env_value(server->root(), "DMLC_WORKER_ID") == "<unset>");
  CHECK(label(k.client->get(kPods, "default", "mx-scheduler-0")->root(), "training.kubeflow.org/job-role") == "<unset>");
  REQUIRE(eventually([&] { return k.has_condition(kMXJobs, "mx", "Running"); }));
  CHECK(k.condition_message(kMXJobs, "mx", "Running") == "MXJob mx is running.");

  // Workers finishing is not enough: the scheduler decides.
  finish_pod(k, "mx-worker-0", "mxnet", 0);
  finish_pod(k, "mx-worker-1", "mxnet", 0);
  REQUIRE(eventually([&] { return int_at(k, kMXJobs, "mx", "/status/replicaStatuses/Worker/succeeded") == 2; }));
  CHECK_FALSE(k.has_condition(kMXJobs, "mx", "Succeeded"));
  finish_pod(k, "mx-scheduler-0", "mxnet", 0);
  REQUIRE(eventually([&] { return k.has_condition(kMXJobs, "mx", "Succeeded"); }));
  CHECK(k.condition_message(kMXJobs, "mx", "Succeeded") == "MXJob mx is successfully completed.");
  REQUIRE(eventually([&] { return k.children("pods", "mx").empty(); }));  // cleanPodPolicy All
}

TEST_CASE("MXJob: a failed worker fails the job with upstream's lower-case message") {
  Cluster k;
  k.install_crd("kubeflow.org_mxjobs.yaml");
  auto ctl = k.controller("mxjob");
  create(k, kMXJobs,
         "apiVersion: kubeflow.org/v1\nkind: MXJob\nmetadata: {name: mxbad, namespace: default}\n"
         "spec:\n  jobMode: MXTrain\n  mxReplicaSpecs:\n" +
             replica("Scheduler", 1, "Never", "mxnet", "sim.unitrain.io/duration: 1h") +
             replica("Worker", 1, "Never", "mxnet", "sim.unitrain.io/duration: 200ms, sim.unitrain.io/exit-code: '2'"));
  REQUIRE(eventually([&] { return k.has_condition(kMXJobs, "mxbad", "Failed"); }));
  CHECK(k.condition_message(kMXJobs, "mxbad", "Failed") == "mxjob mxbad is failed because 1 Worker replica(s) failed.");
  CHECK(k.condition_types(kMXJobs, "mxbad") == "Created Failed ");
}

TEST_CASE("MXJob single worker with restartPolicy ExitCode: 137 is retried, then the job succeeds") {
  Cluster k;
  k.install_crd("kubeflow.org_mxjobs.yaml");
  auto ctl = k.controller("mxjob");
  const auto before = writes_since(k.cluster);
  create(k, kMXJobs,
         "apiVersion: kubeflow.org/v1\nkind: MXJob\nmetadata: {name: mxone, namespace: default}\n"
         "spec:\n  jobMode: MXTrain\n  mxReplicaSpecs:\n" +
             replica("Worker", 1, "ExitCode", "mxnet",
                     "sim.unitrain.io/duration: 200ms, sim.unitrain.io/fail-times: '1', sim.unitrain.io/fail-exit-code: '137'"));
  REQUIRE(eventually([&] { return k.has_condition(kMXJobs, "mxone", "Succeeded"); }));
  CHECK(has_event(k, "Warning MXJobRestarting"));
  CHECK(writes_since(k.cluster, before).by_verb_resource["POST pods"] == 2);
  auto w0 = k.client->get(kPods, "default", "mxone-worker-0");
  REQUIRE(w0);
  CHECK(env_value(w0->root(), "DMLC_PS_ROOT_PORT") == "0");
  CHECK(env_value(w0->root(), "DMLC_PS_ROOT_URI") == "");
}

TEST_CASE("MXJob suspend deletes its pods and resume runs it to Succeeded") {
  Cluster k;
  k.install_crd("kubeflow.org_mxjobs.yaml");
  auto ctl = k.controller("mxjob");
  create(k, kMXJobs,
         "apiVersion: kubeflow.org/v1\nkind: MXJob\nmetadata: {name: mxpause, namespace: default}\n"
         "spec:\n  jobMode: MXTrain\n  mxReplicaSpecs:\n" +
             replica("Scheduler", 1, "Never", "mxnet", "sim.unitrain.io/duration: 2s") +
             replica("Worker", 1, "Never", "mxnet", "sim.unitrain.io/duration: 2s"));
  suspend_and_resume(k, kMXJobs, "MXJob", "mxpause", 2);
}

// ---- XGBoostJob --------------------------------------------------------------------------------

TEST_CASE("XGBoostJob master and workers: MASTER_*, RANK, WORKER_ADDRS, the master decides success") {
  Cluster k;
  k.install_crd("kubeflow.org_xgboostjobs.yaml");
  auto ctl = k.controller("xgboostjob");
  create(k, kXGBoostJobs,
         "apiVersion: kubeflow.org/v1\nkind: XGBoostJob\nmetadata: {name: xgb, namespace: default}\n"
         "spec:\n  runPolicy: {cleanPodPolicy: Running}\n  xgbReplicaSpecs:\n" +
             replica("Master", 1, "Never", "xgboost", "sim.unitrain.io/duration: 1s") +
             replica("Worker", 2, "Never", "xgboost", "sim.unitrain.io/duration: 1h"));
  REQUIRE(eventually([&] { return k.children("pods", "xgb") == "xgb-master-0 xgb-worker-0 xgb-worker-1 "; }));
  CHECK(k.children("services", "xgb") == "xgb-master-0 xgb-worker-0 xgb-worker-1 ");
  CHECK(service_ports(k, "xgb-master-0") == "None xgboostjob-port:9999 ");
  auto w1 = k.client->get(kPods, "default", "xgb-worker-1");
  REQUIRE(w1);
  CHECK(env_of(w1->root()) ==
        "MASTER_PORT=9999 MASTER_ADDR=xgb-master-0 WORLD_SIZE=3 RANK=2 PYTHONUNBUFFERED=1 WORKER_PORT=9999 "
        "WORKER_ADDRS=xgb-worker-0,xgb-worker-1 ");
  auto m0 = k.client->get(kPods, "default", "xgb-master-0");
  REQUIRE(m0);
  CHECK(env_value(m0->root(), "RANK") == "0");
  CHECK(label(m0->root(), "training.kubeflow.org/job-role") == "master");
  REQUIRE(eventually([&] { return k.has_condition(kXGBoostJobs, "xgb", "Succeeded"); }));
  CHECK(k.condition_message(kXGBoostJobs, "xgb", "Succeeded") == "XGBoostJob xgb is successfully completed.");
  REQUIRE(eventually([&] { return k.children("pods", "xgb") == "xgb-master-0 "; }));
}

TEST_CASE("XGBoostJob: a worker failing with restartPolicy Never fails the job") {
  Cluster k;
  k.install_crd("kubeflow.org_xgboostjobs.yaml");
  auto ctl = k.controller("xgboostjob");
  create(k, kXGBoostJobs,
         "apiVersion: kubeflow.org/v1\nkind: XGBoostJob\nmetadata: {name: xbad, namespace: default}\n"
         "spec:\n  xgbReplicaSpecs:\n" +
             replica("Master", 1, "Never", "xgboost", "sim.unitrain.io/duration: 1h") +
             replica("Worker", 1, "Never", "xgboost", "sim.unitrain.io/duration: 200ms, sim.unitrain.io/exit-code: '1'"));
  REQUIRE(eventually([&] { return k.has_condition(kXGBoostJobs, "xbad", "Failed"); }));
  CHECK(k.condition_message(kXGBoostJobs, "xbad", "Failed") == "XGBoostJob xbad is failed because 1 Worker replica(s) failed.");
}

TEST_CASE("XGBoostJob restartPolicy ExitCode: 137 restarts the worker, exit 3 fails the job") {
  Cluster k;
  k.install_crd("kubeflow.org_xgboostjobs.yaml");
  auto ctl = k.controller("xgboostjob");
  const auto before = writes_since(k.cluster);
  create(k, kXGBoostJobs,
         "apiVersion: kubeflow.org/v1\nkind: XGBoostJob\nmetadata: {name: xretry, namespace: default}\n"
         "spec:\n  xgbReplicaSpecs:\n" +
             replica("Master", 1, "Never", "xgboost", "sim.unitrain.io/duration: 3s") +
             replica("Worker", 1, "ExitCode", "xgboost",
                     "sim.unitrain.io/duration: 200ms, sim.unitrain.io/fail-times: '1', sim.unitrain.io/fail-exit-code: '137'"));
  REQUIRE(eventually([&] { return k.has_condition(kXGBoostJobs, "xretry", "Succeeded"); }));
  CHECK(has_event(k, "Warning XGBoostJobRestarting"));
  CHECK(writes_since(k.cluster, before).by_verb_resource["POST pods"] == 3);

  create(k, kXGBoostJobs,
         "apiVersion: kubeflow.org/v1\nkind: XGBoostJob\nmetadata: {name: xperm, namespace: default}\n"
         "spec:\n  xgbReplicaSpecs:\n" +
             replica("Master", 1, "Never", "xgboost", "sim.unitrain.io/duration: 1h") +
             replica("Worker", 1, "ExitCode", "xgboost", "sim.unitrain.io/duration: 200ms, sim.unitrain.io/exit-code: '3'"));
  REQUIRE(eventually([&] { return k.has_condition(kXGBoostJobs, "xperm", "Failed"); }));
  CHECK(k.condition_message(kXGBoostJobs, "xperm", "Failed") == R"(job "xperm" is failing because "Worker" replica(s) failed.)");
  CHECK(k.pod_phase("xperm-worker-0") == "Failed");
}

TEST_CASE("XGBoostJob suspend deletes its pods and resume runs it to Succeeded") {
  Cluster k;
  k.install_crd("kubeflow.org_xgboostjobs.yaml");
  auto ctl = k.controller("xgboostjob");
  create(k, kXGBoostJobs,
         "apiVersion: kubeflow.org/v1\nkind: XGBoostJob\nmetadata: {name: xpause, namespace: default}\n"
         "spec:\n  xgbReplicaSpecs:\n" +
             replica("Master", 1, "Never", "xgboost", "sim.unitrain.io/duration: 2s") +
             replica("Worker", 1, "Never", "xgboost", "sim.unitrain.io/duration: 2s"));
  suspend_and_resume(k, kXGBoostJobs, "XGBoostJob", "xpause", 2);
}

// ---- PaddleJob ---------------------------------------------------------------------------------

TEST_CASE("PaddleJob collective: PADDLE_* env with POD_IP_DUMMY on worker 0, selector, Succeeded") {
  Cluster k;
  k.install_crd("kubeflow.org_paddlejobs.yaml");
  auto ctl = k.controller("paddlejob");
  create(k, kPaddleJobs,
         "apiVersion: kubeflow.org/v1\nkind: PaddleJob\nmetadata: {name: pd, namespace: default}\n"
         "spec:\n  paddleReplicaSpecs:\n" +
             replica("Worker", 2, "OnFailure", "paddle", "sim.unitrain.io/duration: 1s"));
  REQUIRE(eventually([&] { return k.children("pods", "pd") == "pd-worker-0 pd-worker-1 "; }));
  CHECK(k.children("services", "pd") == "pd-worker-0 pd-worker-1 ");
  CHECK(service_ports(k, "pd-worker-0") == "None master:36543 ");
  auto w0 = k.client->get(kPods, "default", "pd-worker-0");
  auto w1 = k.client->get(kPods, "default", "pd-worker-1");
  REQUIRE(w0);
  REQUIRE(w1);
  CHECK(env_of(w0->root()) ==
        "PYTHONUNBUFFERED=1 PADDLE_JOB_ID=pd PADDLE_NNODES=2 POD_IP_DUMMY<-status.podIP PADDLE_MASTER=$(POD_IP_DUMMY):36543 ");
  CHECK(env_of(w1->root()) == "PYTHONUNBUFFERED=1 PADDLE_JOB_ID=pd PADDLE_NNODES=2 PADDLE_MASTER=pd-worker-0:36543 ");
  CHECK(label(w0->root(), "training.kubeflow.org/job-role") == "<unset>");
  REQUIRE(eventually([&] { return k.has_condition(kPaddleJobs, "pd", "Succeeded"); }));
  CHECK(k.condition_message(kPaddleJobs, "pd", "Succeeded") == "PaddleJob default/pd successfully completed.");
  auto job = k.client->get(kPaddleJobs, "default", "pd");
  REQUIRE(job);
  CHECK(json::get_string(job->root(), "/status/replicaStatuses/Worker/selector") ==
        "training.kubeflow.org/job-name=pd,training.kubeflow.org/operator-name=paddlejob-controller,"
        "training.kubeflow.org/replica-type=worker");
}

TEST_CASE("PaddleJob PS mode: the master hosts the endpoint and decides success") {
  Cluster k;
  k.install_crd("kubeflow.org_paddlejobs.yaml");
  auto ctl = k.controller("paddlejob");
  create(k, kPaddleJobs,
         "apiVersion: kubeflow.org/v1\nkind: PaddleJob\nmetadata: {name: ps, namespace: default}\n"
         "spec:\n  paddleReplicaSpecs:\n" +
             replica("Master", 1, "Never", "paddle", "sim.unitrain.io/duration: 1s") +
             replica("Worker", 2, "Never", "paddle", "sim.unitrain.io/duration: 1h"));
  REQUIRE(eventually([&] { return k.children("pods", "ps") == "ps-master-0 ps-worker-0 ps-worker-1 "; }));
  auto m0 = k.client->get(kPods, "default", "ps-master-0");
  auto w1 = k.client->get(kPods, "default", "ps-worker-1");
  REQUIRE(m0);
  REQUIRE(w1);
  CHECK(env_of(m0->root()) ==
        "PYTHONUNBUFFERED=1 PADDLE_JOB_ID=ps PADDLE_NNODES=3 POD_IP_DUMMY<-status.podIP "
        "PADDLE_MASTER=$(POD_IP_DUMMY):36543 PADDLE_SERVER_NUM=1 ");
  CHECK(env_of(w1->root()) ==
        "PYTHONUNBUFFERED=1 PADDLE_JOB_ID=ps PADDLE_NNODES=3 PADDLE_MASTER=ps-master-0:36543 PADDLE_TRAINER_NUM=1 ");
  CHECK(label(m0->root(), "training.kubeflow.org/job-role") == "master");
  REQUIRE(eventually([&] { return k.has_condition(kPaddleJobs, "ps", "Succeeded"); }));
  CHECK(k.condition_message(kPaddleJobs, "ps", "Succeeded") == "PaddleJob ps is successfully completed.");
}

TEST_CASE("PaddleJob: restartPolicy Never fails the job, OnFailure restarts in place and succeeds") {
  Cluster k;
  k.install_crd("kubeflow.org_paddlejobs.yaml");
  auto ctl = k.controller("paddlejob");
  const auto before = writes_since(k.cluster);
  create(k, kPaddleJobs,
         "apiVersion: kubeflow.org/v1\nkind: PaddleJob\nmetadata: {name: pbad, namespace: default}\n"
         "spec:\n  paddleReplicaSpecs:\n" +
             replica("Worker", 1, "Never", "paddle", "sim.unitrain.io/duration: 200ms, sim.unitrain.io/exit-code: '1'"));
  create(k, kPaddleJobs,
         "apiVersion: kubeflow.org/v1\nkind: PaddleJob\nmetadata: {name: pflaky, namespace: default}\n"
         "spec:\n  paddleReplicaSpecs:\n" +
             replica("Worker", 1, "OnFailure", "paddle", "sim.unitrain.io/duration: 200ms, sim.unitrain.io/fail-times: '2'"));
  REQUIRE(eventually([&] { return k.has_condition(kPaddleJobs, "pbad", "Failed"); }));
  CHECK(k.condition_message(kPaddleJobs, "pbad", "Failed") == "PaddleJob pbad is failed because 1 Worker replica(s) failed.");
  REQUIRE(eventually([&] { return k.has_condition(kPaddleJobs, "pflaky", "Succeeded"); }));
  auto pod = k.client->get(kPods, "default", "pflaky-worker-0");
  REQUIRE(pod);
  CHECK(json::get_int(pod->root(), "/status/containerStatuses/0/restartCount") == 2);
  CHECK(writes_since(k.cluster, before).by_verb_resource["POST pods"] == 2);  // one pod per job
}

TEST_CASE("PaddleJob suspend deletes its pods and resume runs it to Succeeded") {
  Cluster k;
  k.install_crd("kubeflow.org_paddlejobs.yaml");
  auto ctl = k.controller("paddlejob");
  create(k, kPaddleJobs,
         "apiVersion: kubeflow.org/v1\nkind: PaddleJob\nmetadata: {name: ppause, namespace: default}\n"
         "spec:\n  paddleReplicaSpecs:\n" +
             replica("Worker", 2, "OnFailure", "paddle", "sim.unitrain.io/duration: 2s"));
  suspend_and_resume(k, kPaddleJobs, "PaddleJob", "ppause", 2);
}
