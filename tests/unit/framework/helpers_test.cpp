// The pieces core/framework offers every module: JSON member access and editing, ASCII case,
// child-object skeletons and the training-operator kinds' pod decoration.
#include <catch2/catch.hpp>

#include "core/framework/ascii.h"
#include "core/framework/child_objects.h"
#include "core/framework/descriptor.h"
#include "core/framework/job_spec.h"
#include "core/framework/json_members.h"
#include "core/framework/pod_decoration.h"
#include "core/json/json.h"
#include "tests/support/json.h"

namespace fw = unitrain::framework;
namespace json = unitrain::json;
namespace members = unitrain::framework::json_members;

TEST_CASE("json members: a null member reads as absent, as Go reads null into a pointer") {
  auto doc = unitrain::testing::doc(R"({"a":1,"n":null,"s":"x"})");
  CHECK(members::member(&doc.root(), "a")->GetInt() == 1);
  CHECK(members::member(&doc.root(), "n") == nullptr);
  CHECK(members::member(&doc.root(), "missing") == nullptr);
  CHECK(members::member(members::member(&doc.root(), "s"), "x") == nullptr);
  const json::Value* none = nullptr;
  CHECK(members::member(none, "a") == nullptr);
}

TEST_CASE("json members: ensure and put replace a member of the wrong type in place, never duplicate it") {
  auto doc = unitrain::testing::doc(R"({"env":null,"ports":"x","keep":{"a":1},"last":true})");
  auto& a = doc.alloc();
  members::ensure_array(doc.root(), "env", a).PushBack(1, a);
  members::ensure_array(doc.root(), "ports", a);
  members::ensure_object(doc.root(), "keep", a).AddMember("b", 2, a);
  members::ensure_object(doc.root(), "new", a);
  members::put(doc.root(), "last", "now", a);
  members::put(doc.root(), "added", json::Value(3), a);
  CHECK(doc.dump() == R"({"env":[1],"ports":[],"keep":{"a":1,"b":2},"last":"now","new":{},"added":3})");
}

TEST_CASE("ascii: case folds only ASCII letters") {
  CHECK(fw::ascii::lower("PyTorchJob-V2") == "pytorchjob-v2");
  CHECK(fw::ascii::lower("\xc3\x84") == "\xc3\x84");
  CHECK(fw::ascii::iequals("Volcano", "volcano"));
  CHECK_FALSE(fw::ascii::iequals("volcano", "volcano2"));
}

TEST_CASE("child objects: apiVersion, kind and metadata in upstream's member order") {
  CHECK(fw::child_object("v1", "ConfigMap", "pi-config", "default", {{"app", "pi"}}).dump() ==
        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pi-config","namespace":"default","labels":{"app":"pi"}}})");
  CHECK(fw::child_object("v1", "Secret", "s", "", {}).dump() == R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}})");
}

TEST_CASE("pod decoration: master label, default port, env after the user's, nothing added for no env") {
  const fw::FrameworkDescriptor d =
      fw::kubeflow_v1_descriptor("XJob", "xReplicaSpecs", {"Master", "Worker"}, "x", "xjob-port", 1234, "x");
  auto pod = unitrain::testing::doc(R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"side"},{"name":"x","env":[{"name":"U"}]}]}})");
  REQUIRE(fw::decorate_replica_pod(d, pod, true, {{"A", "1"}, {"IP", "", "status.podIP"}}, std::string_view("x")));
  CHECK(pod.dump() ==
        R"({"metadata":{"name":"p","labels":{"training.kubeflow.org/job-role":"master"}},"spec":{"containers":[{"name":"side"},)"
        R"({"name":"x","env":[{"name":"U"},{"name":"A","value":"1"},{"name":"IP","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}}],)"
        R"("ports":[{"name":"xjob-port","containerPort":1234}]}]}})");
  auto plain = unitrain::testing::doc(R"({"spec":{"containers":[{"name":"x"}]}})");
  REQUIRE(fw::decorate_replica_pod(d, plain, false, {}));
  CHECK(plain.dump() == R"({"spec":{"containers":[{"name":"x","ports":[{"name":"xjob-port","containerPort":1234}]}]}})");
  auto empty = unitrain::testing::doc(R"({"metadata":{"name":"p"},"spec":{}})");
  auto failed = fw::decorate_replica_pod(d, empty, false, {});
  REQUIRE_FALSE(failed);
  CHECK(failed.error().message == "pod p: spec.containers is missing");
}

TEST_CASE("job spec: a null or negative replica spec gives no pod slots") {
  const fw::FrameworkDescriptor d = fw::kubeflow_v1_descriptor("XJob", "xReplicaSpecs", {"Master", "Worker"}, "x", "", 0, "x");
  auto job = unitrain::testing::doc(R"({"spec":{"xReplicaSpecs":{"Master":null,"Worker":{"replicas":2}}}})");
  auto slots = fw::pod_slots(d, job.root());
  REQUIRE(slots.size() == 2);
  CHECK(slots[1].replica_type == "Worker");
  CHECK(slots[1].index == 1);
  auto negative = unitrain::testing::doc(R"({"spec":{"xReplicaSpecs":{"Worker":{"replicas":-3}}}})");
  CHECK(fw::pod_slots(d, negative.root()).empty());
}
