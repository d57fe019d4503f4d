#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/framework/registry.h"
#include "core/json/json.h"
#include "frameworks/paddle/register.h"
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

std::unique_ptr<fw::FrameworkPlugin> plugin() { return unitrain::testing::instantiate(unitrain::frameworks::paddle::register_paddle, "paddlejob"); }

constexpr std::string_view kPS = R"(
metadata: {name: pd, namespace: ml}
spec:
  elasticPolicy: {maxReplicas: 4}
  paddleReplicaSpecs:
    master:
      template: {spec: {containers: [{name: paddle, image: a}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: paddle, image: a}]}}
)";

Document decorated(fw::FrameworkPlugin& p, const Document& job, const std::string& rt, int index) {
  Document pod = Document::object();
  REQUIRE(json::set(pod, "/spec", json::clone(*json::find(job.root(), "/spec/paddleReplicaSpecs/" + rt + "/template/spec"), pod.alloc())));
  REQUIRE(p.decorate_pod(job.root(), {rt, index}, pod));
  return pod;
}

std::string env(const Document& pod) { return json::dump(*json::find(pod.root(), "/spec/containers/0/env")); }

}  // namespace

TEST_CASE("paddle: descriptor, defaults and elasticPolicy min/max") {
  auto p = plugin();
  CHECK(p->descriptor().default_port_name == "master");
  CHECK(p->descriptor().default_port == 36543);
  CHECK(p->descriptor().controller_name == "paddlejob-controller");
  Document job = yaml(kPS);
  p->set_defaults(job);
  CHECK(json::get_int(job.root(), "/spec/elasticPolicy/minReplicas") == 4);
  CHECK(json::get_int(job.root(), "/spec/elasticPolicy/maxReplicas") == 4);
  CHECK(json::get_string(job.root(), "/spec/paddleReplicaSpecs/Master/restartPolicy") == "OnFailure");
  CHECK(json::dump(*json::find(job.root(), "/spec/paddleReplicaSpecs/Worker/template/spec/containers/0/ports")) ==
        R"([{"name":"master","containerPort":36543}])");
  Document neither = yaml("spec: {elasticPolicy: {}, paddleReplicaSpecs: {Worker: {replicas: 3}}}\n");
  p->set_defaults(neither);
  CHECK(json::dump(*json::find(neither.root(), "/spec/elasticPolicy")) == R"({"minReplicas":3,"maxReplicas":3})");
}

TEST_CASE("paddle: validation quotes the default container name") {
  auto p = plugin();
  Document job = yaml("metadata: {name: x}\nspec: {paddleReplicaSpecs: {Chief: {template: {spec: {containers: [{name: main, image: a}]}}}}}\n");
  auto v = p->validate(nullptr, job.root());
  REQUIRE(v.errors.size() == 2);
  CHECK(v.errors[0].field == "spec.paddleReplicaSpecs[Chief]");
  CHECK(v.errors[1].to_string() ==
        "spec.paddleReplicaSpecs[Chief].template.spec.containers: Required value: must have at least one container with name \"paddle\"");
}

TEST_CASE("paddle: PS-mode env with POD_IP_DUMMY from the downward API") {
  auto p = plugin();
  Document job = yaml(kPS);
  p->set_defaults(job);
  Document m = decorated(*p, job, "Master", 0);
  CHECK(env(m) ==
        R"([{"name":"PYTHONUNBUFFERED","value":"1"},{"name":"PADDLE_JOB_ID","value":"pd"},{"name":"PADDLE_NNODES","value":"3"},)"
        R"({"name":"POD_IP_DUMMY","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}},{"name":"PADDLE_MASTER","value":"$(POD_IP_DUMMY):36543"},)"
        R"({"name":"PADDLE_SERVER_NUM","value":"1"}])");
  CHECK(json::get_string(m.root(), "/metadata/labels/training.kubeflow.org~1job-role") == "master");
  Document w = decorated(*p, job, "Worker", 1);
  CHECK(env(w) ==
        R"([{"name":"PYTHONUNBUFFERED","value":"1"},{"name":"PADDLE_JOB_ID","value":"pd"},{"name":"PADDLE_NNODES","value":"3"},)"
        R"({"name":"PADDLE_MASTER","value":"pd-master-0:36543"},{"name":"PADDLE_TRAINER_NUM","value":"1"}])");
}

TEST_CASE("paddle: status as PyTorch without the elastic shortcut") {
  auto p = plugin();
  Document job = yaml("metadata: {name: pd, namespace: ml}\nspec: {elasticPolicy: {}, paddleReplicaSpecs: {Worker: {replicas: 2, template: {spec: {containers: [{name: paddle, image: a}]}}}}}\n");
  p->set_defaults(job);
  std::vector<Document> pods;
  pods.push_back(pod_status("worker", 0, "Succeeded"));
  pods.push_back(pod_status("worker", 1, "Running"));
  fw::Observed o;
  for (const auto& d : pods) o.pods.push_back(&d.root());
  auto s = p->compute_status(job.root(), o);
  CHECK(conditions(s) == "Running/PaddleJobRunning: PaddleJob ml/pd is running.\n");
  CHECK(s.replica_statuses["Worker"].selector ==
        "training.kubeflow.org/job-name=pd,training.kubeflow.org/operator-name=paddlejob-controller,training.kubeflow.org/replica-type=worker");
  pods[1] = pod_status("worker", 1, "Failed");
  o.pods = {&pods[0].root(), &pods[1].root()};
  s = p->compute_status(job.root(), o);
  CHECK(conditions(s) == "Restarting/PaddleJobRestarting: PaddleJob pd is restarting because 1 Worker replica(s) failed.\n");
  pods[1] = pod_status("worker", 1, "Succeeded");
  o.pods = {&pods[0].root(), &pods[1].root()};
  s = p->compute_status(job.root(), o);
  CHECK(conditions(s) == "Succeeded/PaddleJobSucceeded: PaddleJob ml/pd successfully completed.\n");
}

TEST_CASE("paddle: upstream example simple-cpu.yaml (collective mode)") {
  const std::filesystem::path file = std::string(UNITRAIN_REFERENCE_EXAMPLES) + "/paddlepaddle/simple-cpu.yaml";
  if (!std::filesystem::exists(file)) {
    return skip("reference example " + file.string() + " not found");
  }
  WARN("ran against the upstream example(s) in " << file);
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  Document job = yaml(ss.str());
  auto p = plugin();
  CHECK(p->validate(nullptr, job.root()).ok());
  p->set_defaults(job);
  Document w0 = decorated(*p, job, "Worker", 0);
  CHECK(env(w0) ==
        R"([{"name":"PYTHONUNBUFFERED","value":"1"},{"name":"PADDLE_JOB_ID","value":"paddle-simple-cpu"},{"name":"PADDLE_NNODES","value":"2"},)"
        R"({"name":"POD_IP_DUMMY","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}},{"name":"PADDLE_MASTER","value":"$(POD_IP_DUMMY):37777"}])");
  Document w1 = decorated(*p, job, "Worker", 1);
  CHECK(json::get_string(w1.root(), "/spec/containers/0/env/3/value") == "paddle-simple-cpu-worker-0:37777");
  CHECK_FALSE(json::find(w1.root(), "/metadata/labels/training.kubeflow.org~1job-role"));
}

// Specs upstream accepts and then never runs: refused with field paths, the same at admission and
// in the controller.
TEST_CASE("paddle: nonsense specs are refused with their field paths") {
  auto p = plugin();
  const Document base = yaml(R"(
apiVersion: kubeflow.org/v1
kind: PaddleJob
metadata: {name: pd, namespace: ml}
spec:
  paddleReplicaSpecs:
    Worker: {replicas: 2, template: {spec: {containers: [{name: paddle, image: p}]}}}
)");
  unitrain::testing::check_refusals(*p, base, {
      {{R"({"spec":{"paddleReplicaSpecs":{"Worker":{"replicas":-4}}}})"},
       {"spec.paddleReplicaSpecs[Worker].replicas: Invalid value: -4: must be greater than or equal to 0"}},
      {{R"({"spec":{"paddleReplicaSpecs":null}})", R"({"spec":{"paddleReplicaSpecs":{}}})"},
       {"spec.paddleReplicaSpecs: Required value: must have at least one replica spec"}},
      {{R"({"spec":{"runPolicy":{"backoffLimit":-1,"ttlSecondsAfterFinished":-10}}})"},
       {"spec.runPolicy.ttlSecondsAfterFinished: Invalid value: -10: must be greater than or equal to 0",
        "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0"}},
      {{R"({"spec":{"runPolicy":{"cleanPodPolicy":"Never"}}})"},
       {R"(spec.runPolicy.cleanPodPolicy: Unsupported value: "Never": supported values: "All", "None", "Running")"}},
  });
}
