// Runtime resolution: runtimeRef keys and the runtime snapshot ConfigMap's checks.
#include <catch2/catch.hpp>

#include "frameworks/trainer/runtime.h"
#include "tests/unit/trainer/fixtures.h"

namespace json = unitrain::json;
namespace tr = unitrain::frameworks::trainer;
using unitrain::testing::yaml;
using unitrain::testing::trainer::shipped_runtime;

namespace {
json::Document trainjob(std::string_view ref) {
  return yaml(std::string("metadata: {name: demo, namespace: ns, uid: U1}\nspec: {runtimeRef: ") + std::string(ref) + "}");
}
json::Document owned(json::Document cm, std::string_view uid) {
  auto refs = yaml(std::string("[{apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob, name: demo, uid: ") +
                   std::string(uid) + ", controller: true}]");
  REQUIRE(json::set(cm, "/metadata/ownerReferences", json::clone(refs.root(), cm.alloc())));
  return cm;
}
}  // namespace

TEST_CASE("runtimeRef: GK keys and the two supported kinds") {
  auto tj = trainjob("{name: torch-distributed, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}");
  auto ref = tr::runtime_ref(tj.root());
  CHECK(tr::gk_key(ref) == "ClusterTrainingRuntime.trainer.kubeflow.org");
  CHECK(tr::supported(ref));
  CHECK_FALSE(tr::namespaced(ref));
  CHECK(tr::gk_key(tr::runtime_ref(trainjob("{name: x, apiGroup: '', kind: Runtime}").root())) == "Runtime");
  CHECK_FALSE(tr::supported(tr::runtime_ref(trainjob("{name: x, apiGroup: example.com, kind: TrainingRuntime}").root())));
  CHECK(tr::runtime_fetch_error(ref, "nope") == "not found ClusterTrainingRuntime specified in TrainJob: nope");
  CHECK(tr::runtime_fetch_error({"x", "trainer.kubeflow.org", "TrainingRuntime"}, "nope") ==
        "TrainingRuntime specified in TrainJob is not found: nope");
}

TEST_CASE("runtime snapshot: written as YAML under `runtime`, read back when owned and matching") {
  auto tj = trainjob("{name: torch-distributed, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}");
  auto runtime = shipped_runtime("torch-distributed.yaml");
  REQUIRE(unitrain::testing::trainer::set_yaml(runtime, "/metadata/managedFields", "[{manager: kubectl}]"));
  auto cm = tr::snapshot_configmap(tj.root(), runtime.root());
  CHECK(json::string_at(cm.root(), "/metadata/name") == "demo-runtime-snapshot");
  CHECK(json::string_at(cm.root(), "/metadata/namespace") == "ns");
  CHECK(json::find(cm.root(), "/metadata/labels") == nullptr);
  auto back = tr::runtime_from_snapshot(tj.root(), owned(cm, "U1").root());
  REQUIRE(back);
  CHECK(json::find(back->root(), "/metadata/managedFields") == nullptr);
  CHECK(json::equal(*json::find(back->root(), "/spec"), *json::find(runtime.root(), "/spec")));
  CHECK(json::string_at(back->root(), "/kind") == "ClusterTrainingRuntime");
}

TEST_CASE("runtime snapshot: upstream's four refusals") {
  auto tj = trainjob("{name: torch-distributed, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}");
  auto cm = tr::snapshot_configmap(tj.root(), shipped_runtime("torch-distributed.yaml").root());
  auto error = [&](const json::Document& c) {
    auto r = tr::runtime_from_snapshot(tj.root(), c.root());
    REQUIRE_FALSE(r);
    return r.error().message;
  };
  CHECK(error(cm) == "invalid runtime snapshot: a snapshot configmap exists but is owned by another object");
  CHECK(error(owned(cm, "other")) == "invalid runtime snapshot: a snapshot configmap exists but is owned by another object");
  auto no_key = owned(cm, "U1");
  json::remove(no_key, "/data/runtime");
  CHECK(error(no_key) == "invalid runtime snapshot: snapshot ConfigMap missing \"runtime\" data key");
  auto bad_yaml = owned(cm, "U1");
  REQUIRE(json::set_string(bad_yaml, "/data/runtime", "a: [b"));
  CHECK(error(bad_yaml).rfind("invalid runtime snapshot: unable to unmarshal the snapshot: ", 0) == 0);
  auto other = trainjob("{name: deepspeed-distributed, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}");
  auto r = tr::runtime_from_snapshot(other.root(), owned(cm, "U1").root());
  REQUIRE_FALSE(r);
  CHECK(r.error().message ==
        "invalid runtime snapshot: the snapshot refers to the wrong runtime: expecting a runtime with name, api group and "
        "kind of \"deepspeed-distributed\", \"trainer.kubeflow.org\", \"ClusterTrainingRuntime\" but found runtime with "
        "name, api group and kind of \"torch-distributed\", \"trainer.kubeflow.org\", \"ClusterTrainingRuntime\"");
}
