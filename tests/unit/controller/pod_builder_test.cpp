#include <catch2/catch.hpp>

#include "core/api/meta.h"
#include "core/controller/pod_builder.h"

namespace c = unitrain::controller;
namespace json = unitrain::json;

namespace {

unitrain::framework::FrameworkDescriptor pytorch_like() {
  unitrain::framework::FrameworkDescriptor d;
  d.name = "kubeflow.org/pytorchjob";
  d.group = "kubeflow.org";
  d.version = "v1";
  d.kind = "PyTorchJob";
  d.plural = "pytorchjobs";
  d.replica_specs_field = "pytorchReplicaSpecs";
  d.replica_types = {"Master", "Worker"};
  d.controller_name = "pytorchjob-controller";
  return d;
}

json::Document job() {
  return json::Document::parse(R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob",
    "metadata":{"name":"mnist","namespace":"team","uid":"u-1"},
    "spec":{"pytorchReplicaSpecs":{
      "Master":{"replicas":1,"restartPolicy":"ExitCode","template":{"metadata":{"labels":{"app":"x"},"annotations":{"a":"b"},"name":"ignored"},
        "spec":{"restartPolicy":"Always","containers":[{"name":"pytorch","image":"img"}]}}},
      "Worker":{"restartPolicy":"OnFailure","template":{"spec":{"containers":[{"name":"pytorch","image":"img"}]}}}}}})").value();
}

}  // namespace

TEST_CASE("pod names, labels and selectors follow training-operator") {
  auto d = pytorch_like();
  CHECK(c::replica_name("mnist", "Worker", 3) == "mnist-worker-3");
  auto labels = c::replica_labels(d, "mnist", "Worker", 0);
  CHECK(labels.dump() == R"({"training.kubeflow.org/operator-name":"pytorchjob-controller","training.kubeflow.org/job-name":"mnist",)"
                         R"("training.kubeflow.org/replica-type":"worker","training.kubeflow.org/replica-index":"0"})");
  CHECK(c::selector_string(c::replica_labels(d, "mnist", "Worker", -1).root()) ==
        "training.kubeflow.org/job-name=mnist,training.kubeflow.org/operator-name=pytorchjob-controller,"
        "training.kubeflow.org/replica-type=worker");
}

TEST_CASE("build_pod copies the template, overrides restartPolicy and adds ownership") {
  auto d = pytorch_like();
  auto j = job();
  auto master = c::build_pod(d, j.root(), "Master", 0);
  REQUIRE(master);
  CHECK(master->template_restart_policy_overridden);
  CHECK(master->pod.dump() ==
        R"({"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"x","training.kubeflow.org/operator-name":"pytorchjob-controller",)"
        R"("training.kubeflow.org/job-name":"mnist","training.kubeflow.org/replica-type":"master","training.kubeflow.org/replica-index":"0"},)"
        R"("annotations":{"a":"b"},"name":"mnist-master-0","namespace":"team","ownerReferences":[{"apiVersion":"kubeflow.org/v1",)"
        R"("kind":"PyTorchJob","name":"mnist","uid":"u-1","controller":true,"blockOwnerDeletion":true}]},)"
        R"("spec":{"containers":[{"name":"pytorch","image":"img"}],"restartPolicy":"Never"}})");
  auto worker = c::build_pod(d, j.root(), "Worker", 2);
  REQUIRE(worker);
  CHECK_FALSE(worker->template_restart_policy_overridden);
  CHECK(json::get_string(worker->pod.root(), "/spec/restartPolicy") == "OnFailure");
  CHECK(unitrain::api::is_controlled_by(worker->pod.root(), "u-1"));
  CHECK_FALSE(unitrain::api::is_controlled_by(worker->pod.root(), "u-2"));
  CHECK(c::replicas_of(d, j.root(), "Worker") == 1);
  auto missing = c::build_pod(d, j.root(), "Chief", 0);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message == "spec.pytorchReplicaSpecs[Chief]: replica spec missing");
}

TEST_CASE("exit code comes from the named container's terminated state") {
  auto pod = json::Document::parse(R"({"status":{"containerStatuses":[
    {"name":"sidecar","state":{"terminated":{"exitCode":3}}},
    {"name":"pytorch","state":{"running":{}},"lastState":{"terminated":{"exitCode":137}}}]}})").value();
  CHECK(c::container_exit_code(pod.root(), "pytorch") == 137);
  CHECK(c::container_exit_code(pod.root(), "sidecar") == 3);
  CHECK_FALSE(c::container_exit_code(pod.root(), "other"));
  // ExitedWithCode reads the current state only: a restarted, running container has not exited.
  CHECK_FALSE(c::terminated_exit_code(pod.root(), "pytorch"));
  CHECK(c::terminated_exit_code(pod.root(), "sidecar") == 3);
}
