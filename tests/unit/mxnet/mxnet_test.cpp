#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/framework/registry.h"
#include "core/json/json.h"
#include "frameworks/mxnet/register.h"
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

std::unique_ptr<fw::FrameworkPlugin> plugin() { return unitrain::testing::instantiate(unitrain::frameworks::mxnet::register_mxnet, "mxjob"); }

constexpr std::string_view kDist = R"(
metadata: {name: mx, namespace: ml}
spec:
  jobMode: MXTrain
  mxReplicaSpecs:
    scheduler:
      template: {spec: {containers: [{name: mxnet, image: a}]}}
    Server:
      template:
        metadata: {annotations: {tuner-server-key: srv}}
        spec: {containers: [{name: mxnet, image: a, ports: [{name: mxjob-port, containerPort: 9991}]}]}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: mxnet, image: a}]}}
)";

Document decorated(fw::FrameworkPlugin& p, const Document& job, const std::string& rt, int index) {
  Document pod = Document::object();
  REQUIRE(json::set(pod, "/spec", json::clone(*json::find(job.root(), "/spec/mxReplicaSpecs/" + rt + "/template/spec"), pod.alloc())));
  REQUIRE(p.decorate_pod(job.root(), {rt, index}, pod));
  return pod;
}

std::string env(const Document& pod) { return json::dump(*json::find(pod.root(), "/spec/containers/0/env")); }

}  // namespace

TEST_CASE("mxnet: descriptor, deprecation notice, defaults") {
  auto p = plugin();
  const auto& d = p->descriptor();
  CHECK(d.replica_types == std::vector<std::string>{"Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner"});
  CHECK(d.default_container == "mxnet");
  CHECK(d.default_port_name == "mxjob-port");
  CHECK(d.default_port == 9091);
  REQUIRE(p->capabilities().deprecation != nullptr);
  CHECK(p->capabilities().deprecation->warning().find("removed it in v1.9.0") != std::string::npos);
  Document job = yaml("spec: {mxReplicaSpecs: {scheduler: {}, tuner: {}}}\n");
  p->set_defaults(job);
  const json::Value& specs = *json::find(job.root(), "/spec/mxReplicaSpecs");
  CHECK(specs.HasMember("Scheduler"));
  CHECK(specs.HasMember("tuner"));  // Tuner* keys are not re-cased
  CHECK(json::get_string(job.root(), "/spec/mxReplicaSpecs/Scheduler/restartPolicy") == "Never");
}

TEST_CASE("mxnet: validation stops at the first reconciler-side problem, always warns") {
  auto p = plugin();
  Document ok = yaml(kDist);
  auto v = p->validate(nullptr, ok.root());
  CHECK(v.ok());
  REQUIRE(v.warnings.size() == 1);
  Document bad = yaml("metadata: {name: mx}\nspec: {mxReplicaSpecs: {Worker: {template: {spec: {containers: [{name: main, image: a}]}}}}}\n");
  v = p->validate(nullptr, bad.root());
  REQUIRE(v.errors.size() == 1);
  CHECK(v.errors[0].detail == "MXJobSpec is not valid: There is no container named mxnet in Worker");
  Document none = yaml("metadata: {name: mx}\nspec: {}\n");
  v = p->validate(nullptr, none.root());
  REQUIRE(v.errors.size() == 1);
  CHECK(v.errors[0].detail == "MXJobSpec is not valid");
  Document two = yaml("metadata: {name: mx}\nspec: {mxReplicaSpecs: {Scheduler: {replicas: 2, template: {spec: {containers: [{name: mxnet, image: a}]}}}}}\n");
  v = p->validate(nullptr, two.root());
  REQUIRE(v.errors.size() == 1);
  CHECK(v.errors[0].detail == "more than 1 scheduler found");
}

TEST_CASE("mxnet: MX_CONFIG and DMLC env, job-role on Server pods") {
  auto p = plugin();
  Document job = yaml(kDist);
  p->set_defaults(job);
  Document w = decorated(*p, job, "Worker", 1);
  CHECK(env(w) ==
        R"([{"name":"MX_CONFIG","value":"{\"cluster\":{\"scheduler\":[{\"url\":\"mx-scheduler-0\",\"port\":9091}],\"server\":[{\"url\":\"mx-server-0\",\"port\":9991}],)"
        R"(\"worker\":[{\"url\":\"mx-worker-0\",\"port\":9091},{\"url\":\"mx-worker-1\",\"port\":9091}]},\"labels\":{\"scheduler\":\"\",\"server\":\"srv\",\"worker\":\"\"},)"
        R"(\"task\":{\"type\":\"worker\",\"index\":1}}"},{"name":"DMLC_PS_ROOT_PORT","value":"9091"},{"name":"DMLC_PS_ROOT_URI","value":"mx-scheduler-0"},)"
        R"({"name":"DMLC_NUM_SERVER","value":"1"},{"name":"DMLC_NUM_WORKER","value":"2"},{"name":"DMLC_ROLE","value":"worker"},)"
        R"({"name":"DMLC_USE_KUBERNETES","value":"1"},{"name":"DMLC_WORKER_ID","value":"1"}])");
  CHECK_FALSE(json::find(w.root(), "/metadata/labels/training.kubeflow.org~1job-role"));
  Document s = decorated(*p, job, "Server", 0);
  CHECK(json::get_string(s.root(), "/metadata/labels/training.kubeflow.org~1job-role") == "master");
  CHECK(json::get_string(s.root(), "/spec/containers/0/env/5/value") == "server");
  CHECK(json::find(s.root(), "/spec/containers/0/env")->Size() == 7);
}

TEST_CASE("mxnet: status follows the Scheduler, or the single Worker") {
  auto p = plugin();
  Document job = yaml(kDist);
  p->set_defaults(job);
  std::vector<Document> pods;
  pods.push_back(pod_status("scheduler", 0, "Running"));
  pods.push_back(pod_status("worker", 0, "Failed"));
  fw::Observed o;
  for (const auto& d : pods) o.pods.push_back(&d.root());
  auto s = p->compute_status(job.root(), o);
  CHECK(conditions(s) == "Running/MXJobRunning: MXJob mx is running.\nFailed/MXJobFailed: mxjob mx is failed because 1 Worker replica(s) failed.\n");
  pods[0] = pod_status("scheduler", 0, "Succeeded");
  o.pods = {&pods[0].root()};
  s = p->compute_status(job.root(), o);
  CHECK(conditions(s) == "Succeeded/MXJobSucceeded: MXJob mx is successfully completed.\n");

  Document single = yaml("metadata: {name: one}\nspec: {mxReplicaSpecs: {Worker: {restartPolicy: ExitCode}}}\n");
  pods[0] = pod_status("worker", 0, "Failed");
  o.pods = {&pods[0].root()};
  s = p->compute_status(single.root(), o);
  CHECK(conditions(s) == "Restarting/MXJobRestarting: mxjob one is restarting because 1 Worker replica(s) failed.\n");
}

TEST_CASE("mxnet: upstream example mxjob_dist_v1.yaml") {
  const std::filesystem::path file = std::string(UNITRAIN_REFERENCE_EXAMPLES) + "/mxnet/mxjob_dist_v1.yaml";
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
  Document sched = decorated(*p, job, "Scheduler", 0);
  CHECK(env(sched) ==
        R"([{"name":"MX_CONFIG","value":"{\"cluster\":{\"scheduler\":[{\"url\":\"mxnet-job-scheduler-0\",\"port\":9991}],\"server\":[{\"url\":\"mxnet-job-server-0\",\"port\":9991}],)"
        R"(\"worker\":[{\"url\":\"mxnet-job-worker-0\",\"port\":9991}]},\"labels\":{\"scheduler\":\"\",\"server\":\"\",\"worker\":\"\"},)"
        R"(\"task\":{\"type\":\"scheduler\",\"index\":0}}"},{"name":"DMLC_PS_ROOT_PORT","value":"9991"},{"name":"DMLC_PS_ROOT_URI","value":"mxnet-job-scheduler-0"},)"
        R"({"name":"DMLC_NUM_SERVER","value":"1"},{"name":"DMLC_NUM_WORKER","value":"1"},{"name":"DMLC_ROLE","value":"scheduler"},)"
        R"({"name":"DMLC_USE_KUBERNETES","value":"1"}])");
}

// Specs upstream accepts and then never runs: refused with field paths, the same at admission and
// in the controller (after upstream's own first-problem check).
TEST_CASE("mxnet: nonsense specs are refused with their field paths") {
  auto p = plugin();
  const Document base = yaml(R"(
apiVersion: kubeflow.org/v1
kind: MXJob
metadata: {name: mx, namespace: ml}
spec:
  jobMode: MXTrain
  mxReplicaSpecs:
    Scheduler: {replicas: 1, template: {spec: {containers: [{name: mxnet, image: m}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: mxnet, image: m}]}}}
)");
  unitrain::testing::check_refusals(*p, base, {
      {{R"({"spec":{"mxReplicaSpecs":{"Worker":{"replicas":-2}}}})"},
       {"spec.mxReplicaSpecs[Worker].replicas: Invalid value: -2: must be greater than or equal to 0"}},
      {{R"({"spec":{"mxReplicaSpecs":null}})", R"({"spec":{"mxReplicaSpecs":{}}})"},
       {"spec.mxReplicaSpecs: Required value: must have at least one replica spec"}},
      {{R"({"spec":{"runPolicy":{"activeDeadlineSeconds":-1}}})"},
       {"spec.runPolicy.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0"}},
      {{R"({"spec":{"runPolicy":{"cleanPodPolicy":"Done"}}})"},
       {R"(spec.runPolicy.cleanPodPolicy: Unsupported value: "Done": supported values: "All", "None", "Running")"}},
  });
}
