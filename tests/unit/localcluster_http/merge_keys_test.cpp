// Strategic-merge-patch merge keys of built-in kinds come from the protobuf tables' Go tags
// (patchStrategy, patchMergeKey), the same source as the OpenAPI documents' extensions.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "localcluster/builtin_types.h"
#include "localcluster/object_patch.h"
#include "tests/support/json.h"

namespace lc = unitrain::localcluster;
namespace json = unitrain::json;
using unitrain::testing::doc;

namespace {

std::optional<std::string> key(std::string_view api_version, std::string_view kind, std::string_view list_path) {
  const auto* m = lc::builtin_message(api_version, kind);
  REQUIRE(m != nullptr);
  return lc::builtin_merge_key(*m, list_path);
}

}  // namespace

TEST_CASE("merge keys of built-in kinds come from the tables and agree with the well-known ones") {
  const std::optional<std::string> replaced;  // no merge key: a patch replaces the list whole
  struct Case {
    const char* api_version;
    const char* kind;
    const char* path;
    std::optional<std::string> want;
  };
  const Case cases[] = {
      {"v1", "Pod", "/spec/containers", "name"},
      {"v1", "Pod", "/spec/initContainers", "name"},
      {"v1", "Pod", "/spec/containers/*/ports", "containerPort"},
      {"v1", "Pod", "/spec/containers/*/env", "name"},
      {"v1", "Pod", "/spec/containers/*/volumeMounts", "mountPath"},
      {"v1", "Pod", "/spec/volumes", "name"},
      {"v1", "Pod", "/spec/imagePullSecrets", "name"},
      {"v1", "Pod", "/spec/tolerations", replaced},
      {"v1", "Pod", "/spec/containers/*/args", replaced},
      {"v1", "Pod", "/status/conditions", "type"},
      {"v1", "Pod", "/metadata/finalizers", ""},  // a primitive list merged as a set
      {"v1", "Pod", "/metadata/ownerReferences", "uid"},
      {"v1", "Service", "/spec/ports", "port"},
      {"apps/v1", "Deployment", "/spec/template/spec/containers", "name"},
      {"apps/v1", "Deployment", "/spec/template/spec/containers/*/env", "name"},
      {"apps/v1", "Deployment", "/spec/template/spec/tolerations", replaced},
      {"apps/v1", "Deployment", "/status/conditions", "type"},
      {"batch/v1", "Job", "/spec/template/spec/volumes", "name"},
      {"batch/v1", "Job", "/status/conditions", "type"},
  };
  for (const auto& c : cases) {
    INFO(c.kind << " " << c.path);
    CHECK(key(c.api_version, c.kind, c.path) == c.want);
    CHECK(json::kubernetes_merge_key(c.path) == c.want);
  }
  // Paths the kind does not have, and one under a map's value (a ConfigMap's data is strings).
  CHECK(key("v1", "Pod", "/spec/nothing") == replaced);
  CHECK(key("v1", "Pod", "/spec/containers/*/name") == replaced);
  CHECK(key("v1", "ConfigMap", "/data/k") == replaced);
  // A list the well-known keys miss: the tables know every tagged list.
  CHECK(key("v1", "Pod", "/status/resourceClaimStatuses") == "name");
  CHECK(json::kubernetes_merge_key("/status/resourceClaimStatuses") == replaced);
}

TEST_CASE("a strategic merge patch of a Deployment merges by the tables' keys and replaces atomic lists") {
  json::Document target = doc(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},
    "spec":{"template":{"spec":{
      "containers":[{"name":"main","image":"a:1","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
                     "ports":[{"containerPort":80,"name":"http"}]},
                    {"name":"side","image":"s:1"}],
      "tolerations":[{"key":"k1","operator":"Exists"},{"key":"k2","operator":"Exists"}]}}}})");
  json::Document patch = doc(R"({"spec":{"template":{"spec":{
      "containers":[{"name":"main","image":"a:2","env":[{"name":"B","value":"3"}],
                     "ports":[{"containerPort":80,"protocol":"TCP"}]}],
      "tolerations":[{"key":"k3","operator":"Exists"}]}}}})");
  lc::ResourceInfo info;
  info.group = "apps";
  info.version = "v1";
  info.resource = "deployments";
  info.kind = "Deployment";
  auto applied = lc::apply_patch(info, "d", lc::PatchKind::Strategic, patch.root(), target, false);
  REQUIRE(applied);
  CHECK(json::dump(*json::find(target.root(), "/spec/template/spec")) ==
        R"({"containers":[{"name":"main","image":"a:2","env":[{"name":"A","value":"1"},{"name":"B","value":"3"}],)"
        R"("ports":[{"containerPort":80,"name":"http","protocol":"TCP"}]},{"name":"side","image":"s:1"}],)"
        R"("tolerations":[{"key":"k3","operator":"Exists"}]})");
}
