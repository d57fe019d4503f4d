#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "localcluster/builtin_resources.h"
#include "localcluster/openapi.h"
#include "localcluster/protobuf_wire.h"
#include "tests/support/json.h"

namespace lc = unitrain::localcluster;
namespace json = unitrain::json;
using unitrain::testing::doc;

namespace {

std::vector<lc::OpenApiResource> sample_resources() {
  std::vector<lc::OpenApiResource> out;
  for (const auto& r : lc::builtin_resources()) {
    if (r.resource == "configmaps") out.push_back({r, json::Document()});
  }
  lc::ResourceInfo widget;
  widget.group = "e2e.unitrain.io";
  widget.version = "v1";
  widget.resource = "widgets";
  widget.kind = "Widget";
  widget.namespaced = true;
  out.push_back({widget, doc(R"({"type":"object","properties":{"spec":{"type":"object","description":"the spec",
      "properties":{"size":{"type":"integer","minimum":1,"nullable":true},
                    "port":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]},
                    "tags":{"type":"array","items":{"type":"string","enum":["a","b"]}}},
      "required":["size"]}}})")});
  return out;
}

// The fields of a protobuf message, by number, as (number, bytes-or-varint text) pairs in order.
std::vector<std::pair<uint32_t, std::string>> fields(std::string_view message) {
  std::vector<std::pair<uint32_t, std::string>> out;
  lc::proto::WireReader r(message);
  for (;;) {
    auto f = r.next();
    REQUIRE(f);
    if (!*f) break;
    out.emplace_back((*f)->number, (*f)->type == lc::proto::WireType::Bytes ? std::string((*f)->bytes)
                                                                             : std::to_string((*f)->value));
  }
  return out;
}

std::string field(std::string_view message, uint32_t number) {
  for (auto& [n, v] : fields(message)) {
    if (n == number) return v;
  }
  FAIL("no field " << number);
  return {};
}

}  // namespace

TEST_CASE("OpenAPI v2 covers built-in kinds and CRD schemas as v2 can say them") {
  auto d = lc::openapi_v2_document(sample_resources(), "v1.32.0");
  const auto& root = d.root();
  CHECK(json::string_at(root, "/swagger") == "2.0");
  // A PATCH with fieldValidation per kind: kubectl then validates on the server.
  const auto* patch = json::find(root, "/paths/~1api~1v1~1namespaces~1{namespace}~1configmaps~1{name}/patch");
  REQUIRE(patch != nullptr);
  CHECK(json::string_at(*patch, "/x-kubernetes-group-version-kind/kind") == "ConfigMap");
  CHECK(json::dump(*json::find(*patch, "/parameters/2")) ==
        R"({"name":"fieldValidation","in":"query","type":"string","uniqueItems":true})");
  // Built-in kinds: field names and types from the generated protobuf tables, $ref to shared types.
  const auto* cm = json::find(root, "/definitions/io.k8s.api.core.v1.ConfigMap");
  REQUIRE(cm != nullptr);
  CHECK(json::dump(*json::find(*cm, "/x-kubernetes-group-version-kind")) ==
        R"([{"group":"","version":"v1","kind":"ConfigMap"}])");
  CHECK(json::dump(*json::find(*cm, "/properties")) ==
        R"({"apiVersion":{"type":"string"},"kind":{"type":"string"},)"
        R"("metadata":{"$ref":"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},)"
        R"("data":{"type":"object","additionalProperties":{"type":"string"}},)"
        R"("binaryData":{"type":"object","additionalProperties":{"type":"string","format":"byte"}},)"
        R"("immutable":{"type":"boolean"}})");
  CHECK(json::dump(*json::find(root, "/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Time")) ==
        R"({"type":"string","format":"date-time"})");
  // v2 keeps patch extensions next to a $ref, as kube-apiserver's v2 document does.
  CHECK(json::dump(*json::find(root, "/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta/properties/"
                                     "ownerReferences")) ==
        R"({"type":"array","items":{"$ref":"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference"},)"
        R"("x-kubernetes-patch-merge-key":"uid","x-kubernetes-patch-strategy":"merge"})");
  const auto* widget = json::find(root, "/definitions/io.unitrain.e2e.v1.Widget");
  REQUIRE(widget != nullptr);
  CHECK(json::dump(*json::find(*widget, "/properties/spec/properties")) ==
        R"({"size":{"type":"integer","minimum":1},"port":{"x-kubernetes-int-or-string":true},)"
        R"("tags":{"type":"array","items":{"type":"string","enum":["a","b"]}}})");
  CHECK(json::string_at(*widget, "/properties/kind/type") == "string");
}

TEST_CASE("OpenAPI v2 as gnostic protobuf: document, paths, operations and schemas by field number") {
  auto d = lc::openapi_v2_document(sample_resources(), "v1.32.0");
  std::string pb = lc::openapi_v2_protobuf(d.root());
  CHECK(field(pb, 1) == "2.0");
  CHECK(field(field(pb, 2), 2) == "v1.32.0");
  // Definitions (9) -> NamedSchema (1) {name 1, Schema 2}.
  std::vector<std::string> names;
  std::string widget;
  for (auto& [n, named] : fields(field(pb, 9))) {
    REQUIRE(n == 1);
    names.push_back(field(named, 1));
    if (names.back() == "io.unitrain.e2e.v1.Widget") widget = field(named, 2);
  }
  CHECK(std::count(names.begin(), names.end(), "io.k8s.api.core.v1.ConfigMap") == 1);
  CHECK(std::count(names.begin(), names.end(), "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta") == 1);
  CHECK(std::count(names.begin(), names.end(), "io.unitrain.e2e.v1.Widget") == 1);
  CHECK(field(field(widget, 22), 1) == "object");  // type
  // vendor_extension (31): NamedAny {name, Any{yaml}} with the GVK list as JSON (which is YAML).
  std::string gvk;
  for (auto& [n, v] : fields(widget)) {
    if (n == 31 && field(v, 1) == "x-kubernetes-group-version-kind") gvk = field(field(v, 2), 2);
  }
  CHECK(gvk == R"([{"group":"e2e.unitrain.io","version":"v1","kind":"Widget"}])");
  // properties (25) -> spec -> required (19) and size's minimum (9, a double).
  std::string spec;
  for (auto& [n, named] : fields(field(widget, 25))) {
    if (field(named, 1) == "spec") spec = field(named, 2);
  }
  CHECK(field(spec, 4) == "the spec");
  CHECK(field(spec, 19) == "size");
  // Paths (8) -> NamedPathItem (2) -> PathItem.patch (8) -> Operation.parameters (8).
  bool found = false;
  for (auto& [n, named] : fields(field(pb, 8))) {
    if (n != 2 || field(named, 1) != "/api/v1/namespaces/{namespace}/configmaps/{name}") continue;
    std::string patch = field(field(named, 2), 8);
    std::vector<std::string> params;
    for (auto& [pn, item] : fields(patch)) {
      if (pn != 8) continue;
      // ParametersItem.parameter (1) -> Parameter.non_body (2) -> query sub-schema (3) -> name (4).
      params.push_back(field(field(field(field(item, 1), 2), 3), 4));
    }
    CHECK(params == std::vector<std::string>{"dryRun", "fieldManager", "fieldValidation"});
    found = true;
  }
  CHECK(found);
}

namespace {

lc::ResourceInfo builtin(std::string_view group, std::string_view resource) {
  for (const auto& r : lc::builtin_resources()) {
    if (r.group == group && r.resource == resource) return r;
  }
  FAIL("no built-in " << resource);
  return {};
}

std::string schema_at(const json::Document& d, std::string_view name, std::string_view pointer = {}) {
  const auto* s = json::find(d.root(), "/components/schemas/" + std::string(name) + std::string(pointer));
  REQUIRE(s != nullptr);
  return json::dump(*s);
}

}  // namespace

TEST_CASE("OpenAPI v3 schemas of built-in kinds come from the protobuf tables: refs, patch metadata, special types") {
  auto apps = doc(lc::openapi_v3_group_version({{builtin("apps", "deployments"), json::Document()}}));
  CHECK(schema_at(apps, "io.k8s.api.apps.v1.Deployment", "/x-kubernetes-group-version-kind") ==
        R"([{"group":"apps","version":"v1","kind":"Deployment"}])");
  CHECK(schema_at(apps, "io.k8s.api.apps.v1.Deployment", "/properties/spec") ==
        R"({"$ref":"#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"})");
  // A $ref with patch extensions is wrapped in allOf: v3 ignores siblings of $ref.
  CHECK(schema_at(apps, "io.k8s.api.apps.v1.DeploymentSpec", "/properties/strategy") ==
        R"({"allOf":[{"$ref":"#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"}],)"
        R"("x-kubernetes-patch-strategy":"retainKeys"})");
  CHECK(schema_at(apps, "io.k8s.api.apps.v1.DeploymentStrategy", "/properties/type") == R"({"type":"string"})");
  CHECK(schema_at(apps, "io.k8s.api.apps.v1.RollingUpdateDeployment", "/properties/maxSurge") ==
        R"({"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString"})");
  CHECK(schema_at(apps, "io.k8s.apimachinery.pkg.util.intstr.IntOrString") ==
        R"({"oneOf":[{"type":"integer"},{"type":"string"}],"format":"int-or-string"})");
  CHECK(schema_at(apps, "io.k8s.apimachinery.pkg.api.resource.Quantity") ==
        R"({"oneOf":[{"type":"string"},{"type":"number"}]})");
  CHECK(schema_at(apps, "io.k8s.api.apps.v1.DeploymentSpec", "/properties/replicas") ==
        R"({"type":"integer","format":"int32"})");
  // The pod template's types are reached: containers keyed by name, ports by containerPort.
  CHECK(schema_at(apps, "io.k8s.api.core.v1.PodSpec", "/properties/containers") ==
        R"({"type":"array","items":{"$ref":"#/components/schemas/io.k8s.api.core.v1.Container"},)"
        R"("x-kubernetes-patch-merge-key":"name","x-kubernetes-patch-strategy":"merge"})");
  CHECK(schema_at(apps, "io.k8s.api.core.v1.Container", "/properties/ports/x-kubernetes-patch-merge-key") ==
        R"("containerPort")");
  CHECK(schema_at(apps, "io.k8s.api.core.v1.ContainerPort", "/properties/containerPort") ==
        R"({"type":"integer","format":"int32"})");
  // json:",inline" fields are the parent's: a Volume's source kinds are its own properties.
  CHECK(schema_at(apps, "io.k8s.api.core.v1.Volume", "/properties/emptyDir") ==
        R"({"$ref":"#/components/schemas/io.k8s.api.core.v1.EmptyDirVolumeSource"})");
  CHECK(schema_at(apps, "io.k8s.api.core.v1.Volume", "/properties/name") == R"({"type":"string"})");
  // Only the kinds carry apiVersion and kind.
  CHECK(json::find(apps.root(), "/components/schemas/io.k8s.api.core.v1.PodSpec/properties/kind") == nullptr);
}
