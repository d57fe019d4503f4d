#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/framework/registry.h"
#include "core/json/json.h"
#include "frameworks/xgboost/register.h"
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

std::unique_ptr<fw::FrameworkPlugin> plugin() { return unitrain::testing::instantiate(unitrain::frameworks::xgboost::register_xgboost, "xgboost"); }

constexpr std::string_view kRabit = R"(
metadata: {name: xgb, namespace: ml}
spec:
  xgbReplicaSpecs:
    master:
      template:
        spec:
          containers:
            - name: xgboost
              image: a
              env: [{name: USER, value: u}]
            - name: sidecar
              image: b
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: xgboost
              image: a
              ports: [{name: xgboostjob-port, containerPort: 9991}]
)";

Document decorated(fw::FrameworkPlugin& p, const Document& job, const std::string& rt, int index) {
  Document pod = Document::object();
  REQUIRE(json::set(pod, "/spec", json::clone(*json::find(job.root(), "/spec/xgbReplicaSpecs/" + rt + "/template/spec"), pod.alloc())));
  REQUIRE(p.decorate_pod(job.root(), {rt, index}, pod));
  return pod;
}

std::string env(const Document& pod, int container) { return json::dump(*json::find(pod.root(), "/spec/containers/" + std::to_string(container) + "/env")); }

}  // namespace

TEST_CASE("xgboost: descriptor and defaults") {
  auto p = plugin();
  const auto& d = p->descriptor();
  CHECK(d.name == "kubeflow.org/xgboostjob");
  CHECK(d.replica_types == std::vector<std::string>{"Master", "Worker"});
  CHECK(d.default_container == "xgboost");
  CHECK(d.default_port_name == "xgboostjob-port");
  CHECK(d.default_port == 9999);
  CHECK(d.controller_name == "xgboostjob-controller");
  Document job = yaml(kRabit);
  p->set_defaults(job);
  CHECK(json::get_string(job.root(), "/spec/xgbReplicaSpecs/Master/restartPolicy") == "Never");
  CHECK(json::get_int(job.root(), "/spec/xgbReplicaSpecs/Master/replicas") == 1);
  CHECK(json::dump(*json::find(job.root(), "/spec/xgbReplicaSpecs/Master/template/spec/containers/0/ports")) ==
        R"([{"name":"xgboostjob-port","containerPort":9999}])");
}

TEST_CASE("xgboost: env on all containers, exactly") {
  auto p = plugin();
  Document job = yaml(kRabit);
  p->set_defaults(job);
  Document master = decorated(*p, job, "Master", 0);
  CHECK(env(master, 0) ==
        R"([{"name":"USER","value":"u"},{"name":"MASTER_PORT","value":"9999"},{"name":"MASTER_ADDR","value":"xgb-master-0"},{"name":"WORLD_SIZE","value":"3"},)"
        R"({"name":"RANK","value":"0"},{"name":"PYTHONUNBUFFERED","value":"1"},{"name":"WORKER_PORT","value":"9991"},{"name":"WORKER_ADDRS","value":"xgb-worker-0,xgb-worker-1"}])");
  CHECK(env(master, 1) ==
        R"([{"name":"MASTER_PORT","value":"9999"},{"name":"MASTER_ADDR","value":"xgb-master-0"},{"name":"WORLD_SIZE","value":"3"},)"
        R"({"name":"RANK","value":"0"},{"name":"PYTHONUNBUFFERED","value":"1"},{"name":"WORKER_PORT","value":"9991"},{"name":"WORKER_ADDRS","value":"xgb-worker-0,xgb-worker-1"}])");
  CHECK(json::get_string(master.root(), "/metadata/labels/training.kubeflow.org~1job-role") == "master");
  Document worker = decorated(*p, job, "Worker", 1);
  CHECK(json::get_string(worker.root(), "/spec/containers/0/env/3/value") == "2");
  CHECK_FALSE(json::find(worker.root(), "/metadata/labels/training.kubeflow.org~1job-role"));

  Document single = yaml("metadata: {name: one}\nspec: {xgbReplicaSpecs: {Master: {template: {spec: {containers: [{name: xgboost, image: a}]}}}}}\n");
  p->set_defaults(single);
  Document only = decorated(*p, single, "Master", 0);
  CHECK(env(only, 0) ==
        R"([{"name":"MASTER_PORT","value":"9999"},{"name":"MASTER_ADDR","value":"one-master-0"},{"name":"WORLD_SIZE","value":"1"},{"name":"RANK","value":"0"},{"name":"PYTHONUNBUFFERED","value":"1"}])");

  // Without defaults the master has no xgboostjob-port: an error naming it.
  Document raw = yaml(kRabit);
  Document pod = Document::object();
  REQUIRE(json::set(pod, "/spec", json::clone(*json::find(raw.root(), "/spec/xgbReplicaSpecs/Worker/template/spec"), pod.alloc())));
  auto s = p->decorate_pod(raw.root(), {"Worker", 0}, pod);
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("xgboostjob-port") != std::string::npos);
}

TEST_CASE("xgboost: validation requires exactly one Master") {
  auto p = plugin();
  Document none = yaml("metadata: {name: x}\nspec: {xgbReplicaSpecs: {Worker: {template: {spec: {containers: [{name: xgboost, image: a}]}}}}}\n");
  auto v = p->validate(nullptr, none.root());
  REQUIRE(v.errors.size() == 1);
  CHECK(v.errors[0].to_string() == "spec.xgbReplicaSpecs[Master]: Required value: must be present");
  Document two = yaml("metadata: {name: x}\nspec: {xgbReplicaSpecs: {Master: {replicas: 2, template: {spec: {containers: [{name: xgboost, image: a}]}}}}}\n");
  v = p->validate(nullptr, two.root());
  REQUIRE(v.errors.size() == 1);
  CHECK(v.errors[0].to_string() == "spec.xgbReplicaSpecs[Master].replicas: Forbidden: must be 1");
  Document raw = yaml(kRabit);  // "master" is not a supported key on the raw object, and has nil replicas
  v = p->validate(nullptr, raw.root());
  REQUIRE(v.errors.size() == 2);
  CHECK(v.errors[0].field == "spec.xgbReplicaSpecs[master]");
  CHECK(v.errors[1].to_string() == "spec.xgbReplicaSpecs[Master]: Required value: must be present");
}

TEST_CASE("xgboost: status") {
  auto p = plugin();
  Document job = yaml(kRabit);
  p->set_defaults(job);
  std::vector<Document> pods;
  pods.push_back(pod_status("master", 0, "Running"));
  pods.push_back(pod_status("worker", 0, "Running"));
  fw::Observed o;
  for (const auto& d : pods) o.pods.push_back(&d.root());
  auto s = p->compute_status(job.root(), o);
  CHECK(conditions(s) == "Running/XGBoostJobRunning: XGBoostJob xgb is running.\n");

  pods[0] = pod_status("master", 0, "Succeeded");
  o.pods = {&pods[0].root(), &pods[1].root()};
  s = p->compute_status(job.root(), o);
  CHECK(conditions(s) == "Running/XGBoostJobRunning: XGBoostJob xgb is running.\nSucceeded/XGBoostJobSucceeded: XGBoostJob xgb is successfully completed.\n");
  CHECK(s.set_completion_time);

  pods[0] = pod_status("master", 0, "Running");
  pods[1] = pod_status("worker", 0, "Failed");
  o.pods = {&pods[0].root(), &pods[1].root()};
  s = p->compute_status(job.root(), o);
  CHECK(conditions(s) == "Running/XGBoostJobRunning: XGBoostJob xgb is running.\nFailed/XGBoostJobFailed: XGBoostJob xgb is failed because 1 Worker replica(s) failed.\n");

  REQUIRE(json::set_string(job, "/spec/xgbReplicaSpecs/Worker/restartPolicy", "ExitCode"));
  s = p->compute_status(job.root(), o);
  CHECK(conditions(s) == "Running/XGBoostJobRunning: XGBoostJob xgb is running.\nRestarting/XGBoostJobRestarting: XGBoostJob xgb is restarting because 1 Worker replica(s) failed.\n");
  CHECK_FALSE(s.set_completion_time);
}

TEST_CASE("xgboost: upstream example xgboostjob_v1_rabit_test.yaml") {
  const std::filesystem::path file = std::string(UNITRAIN_REFERENCE_EXAMPLES) + "/xgboost/xgboostjob_v1_rabit_test.yaml";
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
  Document w = decorated(*p, job, "Worker", 1);
  CHECK(env(w, 0) ==
        R"([{"name":"MASTER_PORT","value":"9991"},{"name":"MASTER_ADDR","value":"xgboost-dist-test-master-0"},{"name":"WORLD_SIZE","value":"3"},)"
        R"({"name":"RANK","value":"2"},{"name":"PYTHONUNBUFFERED","value":"1"},{"name":"WORKER_PORT","value":"9991"},)"
        R"({"name":"WORKER_ADDRS","value":"xgboost-dist-test-worker-0,xgboost-dist-test-worker-1"}])");
}

// Specs upstream accepts and then never runs: refused with field paths, the same at admission and
// in the controller. A negative Master count keeps upstream's "must be 1", reported once.
TEST_CASE("xgboost: nonsense specs are refused with their field paths") {
  auto p = plugin();
  const Document base = yaml(R"(
apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata: {name: xgb, namespace: ml}
spec:
  xgbReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: xgboost, image: x}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: xgboost, image: x}]}}}
)");
  unitrain::testing::check_refusals(*p, base, {
      {{R"({"spec":{"xgbReplicaSpecs":{"Worker":{"replicas":-1}}}})"},
       {"spec.xgbReplicaSpecs[Worker].replicas: Invalid value: -1: must be greater than or equal to 0"}},
      {{R"({"spec":{"xgbReplicaSpecs":{"Master":{"replicas":-1}}}})"},
       {"spec.xgbReplicaSpecs[Master].replicas: Forbidden: must be 1"}},
      {{R"({"spec":{"runPolicy":{"activeDeadlineSeconds":-5}}})"},
       {"spec.runPolicy.activeDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0"}},
      {{R"({"spec":{"runPolicy":{"cleanPodPolicy":""}}})"},
       {R"(spec.runPolicy.cleanPodPolicy: Unsupported value: "": supported values: "All", "None", "Running")"}},
  });
  // An empty map lacks the Master upstream requires: that is the one error.
  const auto empty = unitrain::testing::validation_views(
      *p, unitrain::testing::patched(base, {R"({"spec":{"xgbReplicaSpecs":null}})", R"({"spec":{"xgbReplicaSpecs":{}}})"}));
  CHECK(empty.admission == std::vector<std::string>{"spec.xgbReplicaSpecs[Master]: Required value: must be present"});
}
