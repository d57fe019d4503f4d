#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/framework/registry.h"
#include "core/json/json.h"
#include "frameworks/tensorflow/register.h"
#include "tests/support/json.h"
#include "tests/support/framework.h"
#include "tests/support/skip.h"

namespace fw = unitrain::framework;
namespace json = unitrain::json;
using json::Document;

namespace {

using unitrain::testing::yaml;
using unitrain::testing::pod_status;
using unitrain::testing::conditions;
using unitrain::testing::skip;

std::unique_ptr<fw::FrameworkPlugin> plugin(std::string cluster_domain = {}) {
  fw::PluginConfig c;
  c.cluster_domain = std::move(cluster_domain);
  return unitrain::testing::instantiate(unitrain::frameworks::tensorflow::register_tensorflow, "TFJob", std::move(c));
}

constexpr std::string_view kMnist = R"(
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: dist-mnist
  namespace: ml
spec:
  tfReplicaSpecs:
    ps:
      replicas: 2
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
              ports:
                - name: tfjob-port
                  containerPort: 3333
            - name: sidecar
              image: example/sidecar:1
)";

// The core's share of a pod: name, labels and the template copy; decorate_pod adds the rest.
Document core_pod(const Document& job, const std::string& rt, int index) {
  std::string lower = rt == "PS" ? "ps" : rt == "Worker" ? "worker" : rt == "Chief" ? "chief" : "master";
  Document pod = Document::object();
  REQUIRE(json::set_string(pod, "/metadata/name", "dist-mnist-" + lower + "-" + std::to_string(index)));
  REQUIRE(json::set_string(pod, "/metadata/labels/training.kubeflow.org~1replica-type", lower));
  REQUIRE(json::set(pod, "/spec", json::clone(*json::find(job.root(), "/spec/tfReplicaSpecs/" + rt + "/template/spec"), pod.alloc())));
  return pod;
}

std::string env_of(const Document& pod, int container) {
  const json::Value* env = json::find(pod.root(), "/spec/containers/" + std::to_string(container) + "/env");
  return env == nullptr ? std::string("<none>") : json::dump(*env);
}

fw::Observed observe(const std::vector<Document>& pods) {
  fw::Observed o;
  for (const auto& p : pods) o.pods.push_back(&p.root());
  return o;
}

}  // namespace

TEST_CASE("tensorflow: registration, aliases and descriptor") {
  fw::Registry r;
  REQUIRE(unitrain::frameworks::tensorflow::register_tensorflow(r));
  for (const char* n : {"tfjob", "tensorflow", "TFJob", "kubeflow.org/tfjob"}) {
    REQUIRE(r.find(n) != nullptr);
    CHECK(r.find(n)->descriptor.name == "kubeflow.org/tfjob");
  }
  const auto& d = r.find("tfjob")->descriptor;
  CHECK(d.replica_types == std::vector<std::string>{"Chief", "Evaluator", "Master", "PS", "Worker"});
  CHECK(d.default_container == "tensorflow");
  CHECK(d.default_port_name == "tfjob-port");
  CHECK(d.default_port == 2222);
  CHECK(d.controller_name == "tfjob-controller");
  CHECK(d.metrics_framework == "tensorflow");
  CHECK(d.plural == "tfjobs");
  CHECK(d.replica_specs_field == "tfReplicaSpecs");
}

TEST_CASE("tensorflow: defaults re-case PS, set Never, successPolicy and the default port") {
  auto p = plugin();
  Document job = yaml(kMnist);
  p->set_defaults(job);
  const json::Value& specs = *json::find(job.root(), "/spec/tfReplicaSpecs");
  CHECK(specs.HasMember("PS"));
  CHECK_FALSE(specs.HasMember("ps"));
  CHECK(json::get_string(job.root(), "/spec/tfReplicaSpecs/PS/restartPolicy") == "Never");
  CHECK(json::get_string(job.root(), "/spec/successPolicy") == "");
  CHECK(json::get_string(job.root(), "/spec/runPolicy/cleanPodPolicy") == "None");
  CHECK(json::dump(*json::find(job.root(), "/spec/tfReplicaSpecs/PS/template/spec/containers/0/ports")) ==
        R"([{"name":"tfjob-port","containerPort":2222}])");
  // An existing tfjob-port is kept as it is.
  CHECK(json::dump(*json::find(job.root(), "/spec/tfReplicaSpecs/Worker/template/spec/containers/0/ports")) ==
        R"([{"name":"tfjob-port","containerPort":3333}])");
}

TEST_CASE("tensorflow: validation accepts any key, rejects Chief together with Master") {
  auto p = plugin();
  Document ok = yaml(kMnist);
  CHECK(p->validate(nullptr, ok.root()).ok());

  Document both = yaml(R"(
metadata: {name: two-chiefs}
spec:
  tfReplicaSpecs:
    Chief: {template: {spec: {containers: [{name: tensorflow, image: a}]}}}
    Master: {template: {spec: {containers: [{name: tensorflow, image: a}]}}}
    Custom: {template: {spec: {containers: [{name: tensorflow, image: a}]}}}
)");
  auto v = p->validate(nullptr, both.root());
  REQUIRE(v.errors.size() == 1);
  CHECK(v.errors[0].to_string() == "spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role");

  Document bad = yaml(R"(
metadata: {name: 0-bad}
spec:
  tfReplicaSpecs:
    Worker: {template: {spec: {containers: [{name: main, image: ""}]}}}
)");
  auto e = p->validate(nullptr, bad.root());
  REQUIRE(e.errors.size() == 3);
  CHECK(e.errors[0].field == "metadata.name");
  CHECK(e.errors[1].to_string() == "spec.tfReplicaSpecs[Worker].template.spec.containers[0].image: Required value: must be required");
  CHECK(e.errors[2].to_string() ==
        "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must have at least one container with name tensorflow");

  Document missing = yaml("metadata: {name: x}\nspec: {}\n");
  auto m = p->validate(nullptr, missing.root());
  REQUIRE(m.errors.size() == 1);
  CHECK(m.errors[0].to_string() == "spec.tfReplicaSpecs: Required value: must be required");
}

TEST_CASE("tensorflow: TF_CONFIG byte-exact on the tensorflow container only") {
  auto p = plugin();
  Document job = yaml(kMnist);
  p->set_defaults(job);
  Document pod = core_pod(job, "Worker", 1);
  REQUIRE(p->decorate_pod(job.root(), {"Worker", 1}, pod));
  CHECK(env_of(pod, 0) ==
        R"([{"name":"TF_CONFIG","value":"{\"cluster\":{\"ps\":[\"dist-mnist-ps-0.ml.svc:2222\",\"dist-mnist-ps-1.ml.svc:2222\"],)"
        R"(\"worker\":[\"dist-mnist-worker-0.ml.svc:3333\",\"dist-mnist-worker-1.ml.svc:3333\"]},\"task\":{\"type\":\"worker\",\"index\":1},\"environment\":\"cloud\"}"}])");
  CHECK(env_of(pod, 1) == "<none>");
  // Worker 0 carries job-role=master when there is no Chief or Master.
  CHECK_FALSE(json::find(pod.root(), "/metadata/labels/training.kubeflow.org~1job-role"));
  Document w0 = core_pod(job, "Worker", 0);
  REQUIRE(p->decorate_pod(job.root(), {"Worker", 0}, w0));
  CHECK(json::get_string(w0.root(), "/metadata/labels/training.kubeflow.org~1job-role") == "master");
}

TEST_CASE("tensorflow: CUSTOM_CLUSTER_DOMAIN suffix, chief role and single-replica jobs") {
  auto p = plugin("cluster.local");
  Document job = yaml(R"(
metadata: {name: dist-mnist, namespace: ml}
spec:
  tfReplicaSpecs:
    Chief: {template: {spec: {containers: [{name: tensorflow, image: a}]}}}
    Evaluator: {template: {spec: {containers: [{name: tensorflow, image: a}]}}}
)");
  p->set_defaults(job);
  Document pod = core_pod(job, "Chief", 0);
  REQUIRE(p->decorate_pod(job.root(), {"Chief", 0}, pod));
  CHECK(json::get_string(pod.root(), "/spec/containers/0/env/0/value") ==
        R"({"cluster":{"chief":["dist-mnist-chief-0.ml.svc.cluster.local:2222"],"evaluator":["dist-mnist-evaluator-0.ml.svc.cluster.local:2222"]},"task":{"type":"chief","index":0},"environment":"cloud"})");
  CHECK(json::get_string(pod.root(), "/metadata/labels/training.kubeflow.org~1job-role") == "master");

  Document single = yaml(R"(
metadata: {name: dist-mnist, namespace: ml}
spec:
  tfReplicaSpecs:
    Worker: {template: {spec: {containers: [{name: tensorflow, image: a}]}}}
)");
  p->set_defaults(single);
  Document w = core_pod(single, "Worker", 0);
  REQUIRE(p->decorate_pod(single.root(), {"Worker", 0}, w));
  CHECK(env_of(w, 0) == "<none>");
  CHECK(json::dump(*json::find(w.root(), "/spec/containers/0/ports")) == R"([{"name":"tfjob-port","containerPort":2222}])");
}

TEST_CASE("tensorflow: sparse TF_CONFIG for enableDynamicWorker") {
  auto p = plugin();
  Document job = yaml(kMnist);
  REQUIRE(json::set_bool(job, "/spec/enableDynamicWorker", true));
  p->set_defaults(job);
  Document w = core_pod(job, "Worker", 1);
  REQUIRE(p->decorate_pod(job.root(), {"Worker", 1}, w));
  CHECK(json::get_string(w.root(), "/spec/containers/0/env/0/value") ==
        R"({"cluster":{"worker":{"1":"dist-mnist-worker-1.ml.svc:3333"},"ps":["dist-mnist-ps-0.ml.svc:2222","dist-mnist-ps-1.ml.svc:2222"]},"task":{"type":"worker","index":1}})");
  Document ps = core_pod(job, "PS", 1);
  REQUIRE(p->decorate_pod(job.root(), {"PS", 1}, ps));
  CHECK(json::get_string(ps.root(), "/spec/containers/0/env/0/value") ==
        R"({"cluster":{"worker":{},"ps":["dist-mnist-ps-1.ml.svc:2222"]},"task":{"type":"ps","index":1}})");

  Document no_ps = yaml(R"(
metadata: {name: dist-mnist, namespace: ml}
spec:
  enableDynamicWorker: true
  tfReplicaSpecs:
    Worker: {replicas: 2, template: {spec: {containers: [{name: tensorflow, image: a}]}}}
)");
  p->set_defaults(no_ps);
  Document w0 = core_pod(no_ps, "Worker", 0);
  REQUIRE(p->decorate_pod(no_ps.root(), {"Worker", 0}, w0));
  CHECK(json::get_string(w0.root(), "/spec/containers/0/env/0/value") ==
        R"({"cluster":{"worker":{"0":"dist-mnist-worker-0.ml.svc:2222"},"ps":null},"task":{"type":"worker","index":0}})");
}

TEST_CASE("tensorflow: one headless service per replica with the tensorflow ports") {
  auto p = plugin();
  Document job = yaml(kMnist);
  p->set_defaults(job);
  auto objs = p->desired_objects(job.root(), {});
  REQUIRE(objs);
  REQUIRE(objs->size() == 4);
  CHECK(json::dump((*objs)[3].object.root()) ==
        R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"dist-mnist-worker-1","namespace":"ml","labels":{"training.kubeflow.org/job-name":"dist-mnist","training.kubeflow.org/operator-name":"tfjob-controller","training.kubeflow.org/replica-index":"1","training.kubeflow.org/replica-type":"worker"}},)"
        R"("spec":{"clusterIP":"None","selector":{"training.kubeflow.org/job-name":"dist-mnist","training.kubeflow.org/operator-name":"tfjob-controller","training.kubeflow.org/replica-index":"1","training.kubeflow.org/replica-type":"worker"},"ports":[{"name":"tfjob-port","port":3333}]}})");
  auto slots = p->pod_slots(job.root());
  REQUIRE(slots.size() == 4);
  CHECK(slots[0].replica_type == "PS");
  CHECK(slots[3].replica_type == "Worker");
}

TEST_CASE("tensorflow: status — worker 0 completion, AllWorkers, failure") {
  auto p = plugin();
  Document job = yaml(kMnist);
  p->set_defaults(job);

  std::vector<Document> pods;
  pods.push_back(pod_status("ps", 0, "Running"));
  pods.push_back(pod_status("worker", 0, "Succeeded", 0));
  pods.push_back(pod_status("worker", 1, "Running"));
  auto s = p->compute_status(job.root(), observe(pods));
  CHECK(conditions(s) == "Succeeded/TFJobSucceeded: TFJob ml/dist-mnist successfully completed.\n");
  CHECK(s.set_completion_time);
  CHECK(s.replica_statuses["PS"].active == 1);
  CHECK(s.replica_statuses["Worker"].succeeded == 1);
  CHECK_FALSE(s.replica_statuses["Worker"].selector.has_value());

  REQUIRE(json::set_string(job, "/spec/successPolicy", "AllWorkers"));
  s = p->compute_status(job.root(), observe(pods));
  CHECK(conditions(s) == "Running/TFJobRunning: TFJob ml/dist-mnist is running.\n");

  // Worker 0 exiting non-zero does not count as completion.
  REQUIRE(json::set_string(job, "/spec/successPolicy", ""));
  pods[1] = pod_status("worker", 0, "Succeeded", 1);
  s = p->compute_status(job.root(), observe(pods));
  CHECK(conditions(s) == "Running/TFJobRunning: TFJob ml/dist-mnist is running.\n");

  pods[0] = pod_status("ps", 0, "Failed");
  s = p->compute_status(job.root(), observe(pods));
  CHECK(conditions(s) == "Failed/TFJobFailed: TFJob ml/dist-mnist has failed because 1 PS replica(s) failed.\n");
  CHECK(s.set_completion_time);
}

TEST_CASE("tensorflow: never proposes both Succeeded and Failed (QUIRK 6 fixed)") {
  auto p = plugin();
  Document job = yaml(R"(
metadata: {name: j, namespace: ml}
spec:
  tfReplicaSpecs:
    Chief: {template: {spec: {containers: [{name: tensorflow, image: a}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: tensorflow, image: a}]}}}
)");
  p->set_defaults(job);
  std::vector<Document> pods;
  pods.push_back(pod_status("chief", 0, "Succeeded", 0));
  pods.push_back(pod_status("worker", 0, "Failed", 1));
  auto s = p->compute_status(job.root(), observe(pods));
  CHECK(conditions(s) == "Succeeded/TFJobSucceeded: TFJob ml/j successfully completed.\n");
  REQUIRE(s.events.size() == 1);
  CHECK(s.events[0].type + " " + s.events[0].reason + " " + s.events[0].message ==
        "Normal TFJobSucceeded TFJob ml/j successfully completed.");

  // A failed dynamic worker is ignored; a Restarting condition in status is re-asserted.
  pods[0] = pod_status("chief", 0, "Running");
  REQUIRE(json::set_bool(job, "/spec/enableDynamicWorker", true));
  s = p->compute_status(job.root(), observe(pods));
  CHECK(conditions(s) == "Running/TFJobRunning: TFJob ml/j is running.\n");
  auto restarting = Document::parse(R"([{"type":"Restarting","status":"True"}])");
  REQUIRE(restarting);
  REQUIRE(json::set(job, "/status/conditions", json::clone(restarting->root(), job.alloc())));
  s = p->compute_status(job.root(), observe(pods));
  CHECK(conditions(s) ==
        "Running/TFJobRunning: TFJob ml/j is running.\nRestarting/TFJobRestarting: TFJob ml/j is restarting because 1 Worker replica(s) failed.\n");
  CHECK(s.events.empty());  // TFJob re-asserts Restarting, and records Running, without an event
}

TEST_CASE("tensorflow: upstream example tf_job_mnist.yaml") {
  const std::filesystem::path file = std::string(UNITRAIN_REFERENCE_EXAMPLES) + "/tensorflow/tf_job_mnist.yaml";
  if (!std::filesystem::exists(file)) {
    return skip("reference example " + file.string() + " not found");
  }
  WARN("ran against the upstream example(s) in " << file);
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  Document job = yaml(ss.str());
  REQUIRE(json::set_string(job, "/metadata/namespace", "default"));
  auto p = plugin();
  CHECK(p->validate(nullptr, job.root()).ok());
  p->set_defaults(job);
  CHECK(p->pod_slots(job.root()).size() == 6);
  Document pod = Document::object();
  REQUIRE(json::set(pod, "/spec", json::clone(*json::find(job.root(), "/spec/tfReplicaSpecs/PS/template/spec"), pod.alloc())));
  REQUIRE(p->decorate_pod(job.root(), {"PS", 1}, pod));
  CHECK(env_of(pod, 0) ==
        R"([{"name":"TF_CONFIG","value":"{\"cluster\":{\"ps\":[\"dist-mnist-for-e2e-test-ps-0.default.svc:2222\",\"dist-mnist-for-e2e-test-ps-1.default.svc:2222\"],)"
        R"(\"worker\":[\"dist-mnist-for-e2e-test-worker-0.default.svc:2222\",\"dist-mnist-for-e2e-test-worker-1.default.svc:2222\",)"
        R"(\"dist-mnist-for-e2e-test-worker-2.default.svc:2222\",\"dist-mnist-for-e2e-test-worker-3.default.svc:2222\"]},\"task\":{\"type\":\"ps\",\"index\":1},\"environment\":\"cloud\"}"}])");
}

// Specs upstream accepts and then never runs (no pods, no message) or runs wrongly: refused with
// field paths, the same at admission and when the controller meets a job stored without webhooks.
TEST_CASE("tensorflow: nonsense specs are refused with their field paths") {
  auto p = plugin();
  const Document base = yaml(R"(
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf, namespace: ml}
spec:
  tfReplicaSpecs:
    PS: {replicas: 1, template: {spec: {containers: [{name: tensorflow, image: tf}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: tensorflow, image: tf}]}}}
)");
  unitrain::testing::check_refusals(*p, base, {
      {{R"({"spec":{"tfReplicaSpecs":{"Worker":{"replicas":-2}}}})"},
       {"spec.tfReplicaSpecs[Worker].replicas: Invalid value: -2: must be greater than or equal to 0"}},
      {{R"({"spec":{"tfReplicaSpecs":null}})", R"({"spec":{"tfReplicaSpecs":{}}})"},
       {"spec.tfReplicaSpecs: Required value: must have at least one replica spec"}},
      {{R"({"spec":{"runPolicy":{"activeDeadlineSeconds":-1,"backoffLimit":-3}}})"},
       {"spec.runPolicy.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
        "spec.runPolicy.backoffLimit: Invalid value: -3: must be greater than or equal to 0"}},
      {{R"({"spec":{"runPolicy":{"cleanPodPolicy":"Sometimes"}}})"},
       {R"(spec.runPolicy.cleanPodPolicy: Unsupported value: "Sometimes": supported values: "All", "None", "Running")"}},
      {{R"({"spec":{"runPolicy":{"backoffLimit":"3"}}})"},
       {R"(spec.runPolicy.backoffLimit: Invalid value: "3": must be an integer)"}},
      {{R"({"spec":{"tfReplicaSpecs":{"Worker":{"replicas":"two"}}}})"},
       {R"(spec.tfReplicaSpecs[Worker].replicas: Invalid value: "two": must be an integer)"}},
  });
}
