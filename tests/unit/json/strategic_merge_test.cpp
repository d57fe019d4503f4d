#include <catch2/catch.hpp>

#include "core/json/json.h"
#include "tests/support/json.h"

using unitrain::json::Document;
namespace json = unitrain::json;

namespace {

using unitrain::testing::doc;

const char* kPod = R"({
  "apiVersion":"v1","kind":"Pod",
  "metadata":{"name":"train-0","namespace":"ml","labels":{"app":"train","tier":"gpu"},
              "finalizers":["a.example.com/x","b.example.com/y"],
              "ownerReferences":[{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","name":"train","uid":"u1","controller":true}]},
  "spec":{
    "containers":[
      {"name":"pytorch","image":"pytorch:1","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
       "ports":[{"containerPort":23456,"name":"pytorchjob-port"}],
       "volumeMounts":[{"name":"data","mountPath":"/data"},{"name":"cache","mountPath":"/cache"}],
       "resources":{"limits":{"nvidia.com/gpu":"1"}}},
      {"name":"sidecar","image":"busybox","x-unknown":{"keep":true}}
    ],
    "volumes":[{"name":"data","emptyDir":{}},{"name":"cache","emptyDir":{"medium":"Memory"}}],
    "tolerations":[{"key":"gpu","operator":"Exists"}],
    "imagePullSecrets":[{"name":"reg"}]
  },
  "status":{"phase":"Running","conditions":[{"type":"Ready","status":"False"},{"type":"PodScheduled","status":"True"}]}
})";

Document smp(std::string_view target, std::string_view patch) {
  Document t = doc(target);
  auto r = json::apply_strategic_merge_patch(t, doc(patch).root(), json::kubernetes_merge_key);
  INFO("patch " << patch);
  if (!r) FAIL(r.error().message);
  return t;
}

}  // namespace

TEST_CASE("strategic merge: kubectl patch of one container's image merges containers by name") {
  Document pod = smp(kPod, R"({"spec":{"containers":[{"name":"pytorch","image":"pytorch:2"}]}})");
  CHECK(json::get_string(pod.root(), "/spec/containers/0/image") == "pytorch:2");
  CHECK(json::get_string(pod.root(), "/spec/containers/0/env/1/value") == "2");
  CHECK(json::get_string(pod.root(), "/spec/containers/1/name") == "sidecar");
  CHECK(json::find(pod.root(), "/spec/containers/1/x-unknown/keep") != nullptr);
  // Everything else is untouched, in the same member order.
  Document expected = doc(kPod);
  REQUIRE(json::set_string(expected, "/spec/containers/0/image", "pytorch:2"));
  CHECK(pod.dump() == expected.dump());
}

TEST_CASE("strategic merge: env by name, ports by containerPort, volumeMounts by mountPath, volumes by name") {
  Document pod = smp(kPod, R"({"spec":{
      "containers":[{"name":"pytorch",
                     "env":[{"name":"B","value":"two"},{"name":"C","value":"3"}],
                     "ports":[{"containerPort":23456,"protocol":"TCP"},{"containerPort":8080}],
                     "volumeMounts":[{"mountPath":"/cache","readOnly":true}]}],
      "volumes":[{"name":"cache","emptyDir":null,"configMap":{"name":"c"}}]}})");
  CHECK(json::dump(*json::find(pod.root(), "/spec/containers/0/env")) ==
        R"([{"name":"A","value":"1"},{"name":"B","value":"two"},{"name":"C","value":"3"}])");
  CHECK(json::dump(*json::find(pod.root(), "/spec/containers/0/ports")) ==
        R"([{"containerPort":23456,"name":"pytorchjob-port","protocol":"TCP"},{"containerPort":8080}])");
  CHECK(json::dump(*json::find(pod.root(), "/spec/containers/0/volumeMounts")) ==
        R"([{"name":"data","mountPath":"/data"},{"name":"cache","mountPath":"/cache","readOnly":true}])");
  CHECK(json::dump(*json::find(pod.root(), "/spec/volumes")) ==
        R"([{"name":"data","emptyDir":{}},{"name":"cache","configMap":{"name":"c"}}])");
}

TEST_CASE("strategic merge: $patch delete and replace inside lists, null deletes") {
  Document deleted = smp(kPod, R"({"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}})");
  CHECK(json::find(deleted.root(), "/spec/containers")->Size() == 1);
  CHECK(json::get_string(deleted.root(), "/spec/containers/0/name") == "pytorch");

  Document replaced = smp(kPod, R"({"spec":{"containers":[{"name":"only","image":"x"},{"$patch":"replace"}]}})");
  CHECK(json::dump(*json::find(replaced.root(), "/spec/containers")) == R"([{"name":"only","image":"x"}])");

  Document nulls = smp(kPod, R"({"metadata":{"labels":{"tier":null}},
                                 "spec":{"containers":[{"name":"pytorch","resources":null}]}})");
  CHECK(json::dump(*json::find(nulls.root(), "/metadata/labels")) == R"({"app":"train"})");
  CHECK(json::find(nulls.root(), "/spec/containers/0/resources") == nullptr);

  Document map_replace = smp(kPod, R"({"metadata":{"labels":{"$patch":"replace","new":"1"}}})");
  CHECK(json::dump(*json::find(map_replace.root(), "/metadata/labels")) == R"({"new":"1"})");
  Document map_delete = smp(kPod, R"({"spec":{"containers":[{"name":"pytorch","resources":{"$patch":"delete"}}]}})");
  CHECK(json::find(map_delete.root(), "/spec/containers/0/resources") == nullptr);
}

TEST_CASE("strategic merge: tolerations are replaced, finalizers merge as a set") {
  Document pod = smp(kPod, R"({"spec":{"tolerations":[{"key":"other","operator":"Exists"}]},
                               "metadata":{"finalizers":["b.example.com/y","c.example.com/z"],
                                           "$deleteFromPrimitiveList/finalizers":["a.example.com/x"]}})");
  CHECK(json::dump(*json::find(pod.root(), "/spec/tolerations")) == R"([{"key":"other","operator":"Exists"}])");
  CHECK(json::dump(*json::find(pod.root(), "/metadata/finalizers")) == R"(["b.example.com/y","c.example.com/z"])");
}

TEST_CASE("strategic merge: status conditions by type and ownerReferences by uid") {
  Document pod = smp(kPod, R"({"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Initialized","status":"True"}]},
                               "metadata":{"ownerReferences":[{"uid":"u1","blockOwnerDeletion":true}]}})");
  CHECK(json::dump(*json::find(pod.root(), "/status/conditions")) ==
        R"([{"type":"Ready","status":"True"},{"type":"PodScheduled","status":"True"},{"type":"Initialized","status":"True"}])");
  CHECK(json::get_bool(pod.root(), "/metadata/ownerReferences/0/blockOwnerDeletion") == true);
  CHECK(json::get_string(pod.root(), "/metadata/ownerReferences/0/name") == "train");
}

TEST_CASE("strategic merge: the patch kubectl apply sends ($setElementOrder, last-applied)") {
  // kubectl apply after the user added container "logger" between the two and env C before A.
  Document pod = smp(kPod, R"({
    "metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"kind\":\"Pod\"}\n"}},
    "spec":{"$setElementOrder/containers":[{"name":"pytorch"},{"name":"logger"},{"name":"sidecar"}],
            "containers":[{"$setElementOrder/env":[{"name":"C"},{"name":"A"},{"name":"B"}],
                           "env":[{"name":"C","value":"3"}],"name":"pytorch"},
                          {"image":"fluentbit","name":"logger"}]}})");
  auto names = [&](std::string_view list, std::string_view field) {
    std::string out;
    for (const auto& e : json::find(pod.root(), list)->GetArray()) out += std::string(e[field.data()].GetString()) + ",";
    return out;
  };
  CHECK(names("/spec/containers", "name") == "pytorch,logger,sidecar,");
  CHECK(names("/spec/containers/0/env", "name") == "C,A,B,");
  CHECK(json::get_string(pod.root(), "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration") ==
        "{\"kind\":\"Pod\"}\n");
  // A $setElementOrder alone reorders the live list.
  Document reordered = smp(kPod, R"({"spec":{"$setElementOrder/volumes":[{"name":"cache"},{"name":"data"}]}})");
  CHECK(json::get_string(reordered.root(), "/spec/volumes/0/name") == "cache");
}

TEST_CASE("strategic merge: $retainKeys clears fields not listed (deployment strategy switch)") {
  Document d = smp(R"({"spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}},"replicas":2}})",
                   R"({"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}})");
  CHECK(d.dump() == R"({"spec":{"strategy":{"type":"Recreate"},"replicas":2}})");
}

TEST_CASE("strategic merge: Kubeflow replica templates use the pod merge keys at depth") {
  const char* job = R"({"spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":2,"template":{"spec":{
      "containers":[{"name":"pytorch","image":"a","env":[{"name":"X","value":"1"}]}]}}}}}})";
  Document d = smp(job, R"({"spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":4,"template":{"spec":{
      "containers":[{"name":"pytorch","env":[{"name":"Y","value":"2"}]}]}}}}}})");
  CHECK(json::dump(*json::find(d.root(), "/spec/pytorchReplicaSpecs/Worker/template/spec/containers/0")) ==
        R"({"name":"pytorch","image":"a","env":[{"name":"X","value":"1"},{"name":"Y","value":"2"}]})");
  CHECK(json::get_int(d.root(), "/spec/pytorchReplicaSpecs/Worker/replicas") == 4);
}

TEST_CASE("strategic merge: new values are stored without directives or nulls") {
  Document d = smp(R"({"spec":{}})", R"({"spec":{"containers":[{"name":"a","image":null,"env":[{"name":"E","$patch":"merge"}]}],
                                                "extra":{"x":null,"y":1}}})");
  CHECK(d.dump() == R"({"spec":{"containers":[{"name":"a","env":[{"name":"E"}]}],"extra":{"y":1}}})");
}

TEST_CASE("strategic merge: invalid patches fail with a path and leave the target unchanged") {
  Document t = doc(kPod);
  const std::string before = t.dump();
  auto missing_key = json::apply_strategic_merge_patch(
      t, doc(R"({"spec":{"containers":[{"image":"x"}]}})").root(), json::kubernetes_merge_key);
  REQUIRE_FALSE(missing_key);
  CHECK(missing_key.error().message ==
        R"(strategic merge patch: /spec/containers: element 0 has no merge key "name")");
  auto bad_directive = json::apply_strategic_merge_patch(
      t, doc(R"({"metadata":{"labels":{"x":"1"}},"spec":{"$patch":"explode"}})").root(), json::kubernetes_merge_key);
  REQUIRE_FALSE(bad_directive);
  CHECK(bad_directive.error().message == R"(strategic merge patch: /spec: invalid $patch directive "explode")");
  CHECK(t.dump() == before);
  CHECK_FALSE(json::apply_strategic_merge_patch(t, doc("[1]").root(), json::kubernetes_merge_key));
}

TEST_CASE("strategic merge: without a merge-key lookup every list is replaced") {
  Document t = doc(kPod);
  REQUIRE(json::apply_strategic_merge_patch(t, doc(R"({"spec":{"containers":[{"name":"z"}]}})").root(), nullptr));
  CHECK(json::dump(*json::find(t.root(), "/spec/containers")) == R"([{"name":"z"}])");
}

TEST_CASE("kubernetes_merge_key: pod lists at any depth, service ports, metadata, status") {
  using json::kubernetes_merge_key;
  CHECK(kubernetes_merge_key("/spec/containers") == "name");
  CHECK(kubernetes_merge_key("/spec/template/spec/initContainers") == "name");
  CHECK(kubernetes_merge_key("/spec/jobTemplate/spec/template/spec/ephemeralContainers") == "name");
  CHECK(kubernetes_merge_key("/spec/containers/*/env") == "name");
  CHECK(kubernetes_merge_key("/spec/template/spec/containers/*/ports") == "containerPort");
  CHECK(kubernetes_merge_key("/spec/containers/*/volumeMounts") == "mountPath");
  CHECK(kubernetes_merge_key("/spec/volumes") == "name");
  CHECK(kubernetes_merge_key("/spec/imagePullSecrets") == "name");
  CHECK(kubernetes_merge_key("/spec/hostAliases") == "ip");
  CHECK(kubernetes_merge_key("/spec/ports") == "port");
  CHECK(kubernetes_merge_key("/status/conditions") == "type");
  CHECK(kubernetes_merge_key("/metadata/ownerReferences") == "uid");
  CHECK(kubernetes_merge_key("/metadata/finalizers") == "");
  CHECK_FALSE(kubernetes_merge_key("/spec/tolerations"));
  CHECK_FALSE(kubernetes_merge_key("/spec/containers/*/args"));
  CHECK_FALSE(kubernetes_merge_key("/spec/containers/*/envFrom"));
  CHECK_FALSE(kubernetes_merge_key("/subsets"));
  CHECK_FALSE(kubernetes_merge_key("/spec/template/spec/ports"));
  CHECK_FALSE(kubernetes_merge_key(""));
}
