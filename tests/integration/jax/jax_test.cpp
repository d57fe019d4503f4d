// JAXJob as training-operator v1.9.0 runs it: the webhook's messages, the env of every container
// (PYTHONUNBUFFERED, COORDINATOR_PORT, COORDINATOR_ADDRESS, NUM_PROCESSES, PROCESS_ID, in that
// order), the master role on worker 0, a headless Service per worker, and the conditions of a
// job that succeeds and of one whose worker fails.
#include "frameworks/jax/register.h"
#include "tests/integration/frameworks/local_cluster_fixture.h"
#include "tests/support/json.h"

namespace json = unitrain::json;
namespace kube = unitrain::kube;
namespace fw = unitrain::framework;
using unitrain::testing::eventually;
using Cluster = unitrain::testing::LocalClusterFixture;

namespace {

const kube::GroupVersionResource kJAXJobs{"kubeflow.org", "v1", "jaxjobs"};

std::unique_ptr<fw::FrameworkPlugin> jax_plugin() {
  fw::Registry registry;
  REQUIRE(unitrain::frameworks::jax::register_jax(registry));
  auto plugin = registry.instantiate("jaxjob", {});
  REQUIRE(plugin);
  return std::move(*plugin);
}

std::string errors_of(const fw::Validation& v) {
  std::string out;
  for (const auto& e : v.errors) out += e.to_string() + "\n";
  return out;
}

void install_jax(Cluster& k) {
  REQUIRE(unitrain::frameworks::jax::register_jax(k.registry));
  const auto* registration = k.registry.find("jaxjob");
  REQUIRE(registration != nullptr);
  auto installed = unitrain::testing::install_crds(
      *k.client, std::string(UNITRAIN_SOURCE_DIR) + "/frameworks/jax/kubeflow.org_jaxjobs.yaml");
  if (!installed) FAIL(installed.error().message);
}

std::string env_of(const json::Value& pod, int container) {
  std::string env;
  for (const auto& e : json::find(pod, fmt::format("/spec/containers/{}/env", container))->GetArray())
    env += fmt::format("{}={} ", json::get_string(e, "/name").value_or(""), json::get_string(e, "/value").value_or(""));
  return env;
}

// "<type>:<reason> " for each condition, in order.
std::string reasons_of(const json::Value& job) {
  std::string out;
  for (const auto& c : json::find(job, "/status/conditions")->GetArray())
    out += std::string(json::get_string(c, "/type").value_or("")) + ":" +
           std::string(json::get_string(c, "/reason").value_or("")) + " ";
  return out;
}

}  // namespace

TEST_CASE("JAXJob: the descriptor and defaults of training-operator v1.9.0") {
  auto plugin = jax_plugin();
  const auto& d = plugin->descriptor();
  CHECK(d.name == "kubeflow.org/jaxjob");
  CHECK(d.api_version() == "kubeflow.org/v1");
  CHECK(d.plural == "jaxjobs");
  CHECK(d.controller_name == "jaxjob-controller");
  CHECK(d.metrics_framework == "jax");
  CHECK(d.replica_types == std::vector<std::string>{"Worker"});
  auto job = unitrain::testing::yaml(R"(
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: j, namespace: default}
spec:
  jaxReplicaSpecs:
    worker:
      template: {spec: {containers: [{name: jax, image: i}]}}
)");
  plugin->set_defaults(job);
  CHECK(json::string_at(job.root(), "/spec/runPolicy/cleanPodPolicy") == "None");
  const json::Value* worker = json::find(job.root(), "/spec/jaxReplicaSpecs/Worker");
  REQUIRE(worker != nullptr);
  CHECK(json::dump(*json::find(*worker, "/replicas")) == "1");
  CHECK(json::string_at(*worker, "/restartPolicy") == "Never");
  CHECK(json::dump(*json::find(*worker, "/template/spec/containers/0/ports")) ==
        R"([{"name":"jaxjob-port","containerPort":6666}])");
}

TEST_CASE("JAXJob: the webhook's messages, and no managedBy rule") {
  auto plugin = jax_plugin();
  auto bad = unitrain::testing::yaml(R"(
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: Bad_Name, namespace: default}
spec:
  runPolicy: {managedBy: example.com/other}
  jaxReplicaSpecs:
    Chief:
      template: {spec: {containers: [{name: jax, image: i}]}}
    Worker:
      template: {spec: {containers: [{name: main, image: ""}]}}
)");
  CHECK(errors_of(plugin->validate(nullptr, bad.root())) ==
        "metadata.name: Invalid value: \"Bad_Name\": should match: a DNS-1035 label must consist of lower case "
        "alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character "
        "(e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')\n"
        "spec.jaxReplicaSpecs[Chief]: Unsupported value: \"Chief\": supported values: \"Worker\"\n"
        "spec.jaxReplicaSpecs[Worker].template.spec.containers[0].image: Required value: must be required\n"
        "spec.jaxReplicaSpecs[Worker].template.spec.containers: Required value: must have at least one container "
        "with name jax\n");
  auto missing = unitrain::testing::yaml(R"(
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: ok, namespace: default}
spec: {}
)");
  CHECK(errors_of(plugin->validate(nullptr, missing.root())) == "spec.jaxReplicaSpecs: Required value: must be required\n");
}

TEST_CASE("JAXJob: every container gets the coordinator env in upstream's order, worker 0 is the master role") {
  auto plugin = jax_plugin();
  auto job = unitrain::testing::yaml(R"(
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: jaxjob-simple, namespace: default}
spec:
  jaxReplicaSpecs:
    Worker:
      replicas: 3
      template:
        spec:
          containers:
            - {name: jax, image: i, ports: [{name: jaxjob-port, containerPort: 7777}]}
            - {name: sidecar, image: s}
)");
  plugin->set_defaults(job);
  const auto slots = plugin->pod_slots(job.root());
  REQUIRE(slots.size() == 3);
  auto pod = unitrain::testing::doc(R"({"metadata": {"name": "jaxjob-simple-worker-2", "labels": {}},
      "spec": {"containers": [{"name": "jax", "image": "i"}, {"name": "sidecar", "image": "s"}]}})");
  REQUIRE(plugin->decorate_pod(job.root(), slots[2], pod));
  const std::string want =
      "PYTHONUNBUFFERED=1 COORDINATOR_PORT=7777 COORDINATOR_ADDRESS=jaxjob-simple-worker-0 NUM_PROCESSES=3 PROCESS_ID=2 ";
  CHECK(env_of(pod.root(), 0) == want);
  CHECK(env_of(pod.root(), 1) == want);
  CHECK(json::find(pod.root(), "/metadata/labels/training.kubeflow.org~1job-role") == nullptr);

  auto first = unitrain::testing::doc(R"({"metadata": {"name": "jaxjob-simple-worker-0", "labels": {}},
      "spec": {"containers": [{"name": "jax", "image": "i"}]}})");
  REQUIRE(plugin->decorate_pod(job.root(), slots[0], first));
  CHECK(json::string_at(first.root(), "/metadata/labels/training.kubeflow.org~1job-role") == "master");
  CHECK(env_of(first.root(), 0) ==
        "PYTHONUNBUFFERED=1 COORDINATOR_PORT=7777 COORDINATOR_ADDRESS=jaxjob-simple-worker-0 NUM_PROCESSES=3 PROCESS_ID=0 ");
}

TEST_CASE("JAXJob: upstream's cpu-demo runs to Succeeded on the local cluster") {
  Cluster k;
  install_jax(k);
  auto ctl = k.controller("jaxjob");
  auto job = unitrain::testing::yaml(R"(
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: jaxjob-simple, namespace: default}
spec:
  jaxReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 300ms}}
        spec:
          containers:
            - name: jax
              image: docker.io/kubeflow/jaxjob-simple:latest
              command: ["python3", "train.py"]
              imagePullPolicy: Always
)");
  REQUIRE(k.client->create(kJAXJobs, "default", job.root()));
  REQUIRE(eventually([&] { return k.has_condition(kJAXJobs, "jaxjob-simple", "Succeeded"); }));
  CHECK(k.condition_message(kJAXJobs, "jaxjob-simple", "Succeeded") == "JAXJob default/jaxjob-simple successfully completed.");
  CHECK(k.condition_message(kJAXJobs, "jaxjob-simple", "Created") == "JAXJob jaxjob-simple is created.");
  auto stored = k.client->get(kJAXJobs, "default", "jaxjob-simple");
  REQUIRE(stored);
  CHECK(reasons_of(stored->root()) == "Created:JAXJobCreated Running:JAXJobRunning Succeeded:JAXJobSucceeded ");
  CHECK(json::string_at(stored->root(), "/status/replicaStatuses/Worker/selector") ==
        "training.kubeflow.org/job-name=jaxjob-simple,training.kubeflow.org/operator-name=jaxjob-controller,"
        "training.kubeflow.org/replica-type=worker");
  CHECK(k.children("services", "jaxjob-simple") == "jaxjob-simple-worker-0 jaxjob-simple-worker-1 ");
  auto pod = k.client->get({"", "v1", "pods"}, "default", "jaxjob-simple-worker-1");
  REQUIRE(pod);
  CHECK(env_of(pod->root(), 0) ==
        "PYTHONUNBUFFERED=1 COORDINATOR_PORT=6666 COORDINATOR_ADDRESS=jaxjob-simple-worker-0 NUM_PROCESSES=2 PROCESS_ID=1 ");
}

TEST_CASE("JAXJob: a failing worker (restartPolicy Never) fails the job with upstream's reason and message") {
  Cluster k;
  install_jax(k);
  auto ctl = k.controller("jaxjob");
  auto job = unitrain::testing::yaml(R"(
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: jax-fails, namespace: default}
spec:
  jaxReplicaSpecs:
    Worker:
      replicas: 1
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 200ms, sim.unitrain.io/exit-code: "1"}}
        spec: {containers: [{name: jax, image: i}]}
)");
  REQUIRE(k.client->create(kJAXJobs, "default", job.root()));
  REQUIRE(eventually([&] { return k.has_condition(kJAXJobs, "jax-fails", "Failed"); }));
  CHECK(k.condition_message(kJAXJobs, "jax-fails", "Failed") == "JAXJob jax-fails is failed because 1 Worker replica(s) failed.");
  auto stored = k.client->get(kJAXJobs, "default", "jax-fails");
  REQUIRE(stored);
  CHECK_THAT(reasons_of(stored->root()), Catch::EndsWith("Failed:JAXJobFailed "));
  CHECK_FALSE(k.has_condition(kJAXJobs, "jax-fails", "Succeeded"));
}
