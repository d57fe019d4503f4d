#include <catch2/catch.hpp>

#include "localcluster/body_validation.h"
#include "localcluster/builtin_resources.h"
#include "localcluster/builtin_types.h"
#include "tests/support/json.h"

namespace lc = unitrain::localcluster;
namespace json = unitrain::json;
using unitrain::testing::doc;

namespace {

const lc::ResourceInfo& builtin_resource(std::string_view resource) {
  for (const auto& r : lc::builtin_resources()) {
    if (r.group.empty() && r.resource == resource) return r;
  }
  FAIL("no built-in " << resource);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("fieldValidation: Warn by default, Ignore and Strict, anything else is 422") {
  CHECK(*lc::field_validation({}, "CreateOptions") == lc::FieldValidation::Warn);
  CHECK(*lc::field_validation({{"fieldValidation", "Ignore"}}, "CreateOptions") == lc::FieldValidation::Ignore);
  CHECK(*lc::field_validation({{"fieldValidation", "Strict"}}, "CreateOptions") == lc::FieldValidation::Strict);
  auto bad = lc::field_validation({{"fieldValidation", "Bogus"}}, "PatchOptions");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == 422);
  CHECK(bad.error().message == "PatchOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: "
                               "\"Bogus\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"");
}

TEST_CASE("undeclared fields: Strict refuses with kube-apiserver's text, Warn warns per field, Ignore is silent") {
  auto schema = doc(R"({"type": "object", "properties": {"spec": {"type": "object", "properties": {
      "runPolicy": {"type": "object", "properties": {"cleanPodPolicy": {"type": "string"}}}}}}})");
  auto body = doc(R"({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j", "labelz": {}},
                      "spec": {"runPolicy": {"cleanPodPolicyy": "All"}}})");
  auto fields = lc::undeclared_fields(body.root(), schema.root());
  CHECK(fields == std::vector<std::string>{"metadata.labelz", "spec.runPolicy.cleanPodPolicyy"});

  std::vector<std::string> warnings;
  auto strict = lc::enforce_field_validation(lc::FieldValidation::Strict, fields, warnings);
  REQUIRE(strict);
  CHECK(strict->code == 400);
  CHECK(strict->reason == "BadRequest");
  CHECK(strict->message ==
        "strict decoding error: unknown field \"metadata.labelz\", unknown field \"spec.runPolicy.cleanPodPolicyy\"");
  CHECK(warnings.empty());
  lc::ResourceInfo jobs;
  jobs.version = "v1";
  jobs.kind = "PyTorchJob";
  auto on_create = lc::enforce_field_validation(lc::FieldValidation::Strict, {"spec.x"}, warnings,
                                                lc::decode_error_context(jobs));
  REQUIRE(on_create);
  CHECK(on_create->message ==
        "PyTorchJob in version \"v1\" cannot be handled as a PyTorchJob: strict decoding error: unknown field \"spec.x\"");

  CHECK_FALSE(lc::enforce_field_validation(lc::FieldValidation::Warn, fields, warnings));
  CHECK(warnings == std::vector<std::string>{"unknown field \"metadata.labelz\"",
                                             "unknown field \"spec.runPolicy.cleanPodPolicyy\""});
  warnings.clear();
  CHECK_FALSE(lc::enforce_field_validation(lc::FieldValidation::Ignore, fields, warnings));
  CHECK(warnings.empty());

  // A kind with neither schema nor message: only metadata is checked; strategic-merge directives pass.
  static const json::Value no_schema;
  auto cm = doc(R"({"metadata": {"name": "c", "$setElementOrder/finalizers": [], "labelz": {}}, "data": {"x": "y"}})");
  CHECK(lc::undeclared_fields(cm.root(), no_schema) == std::vector<std::string>{"metadata.labelz"});
}

TEST_CASE("undeclared fields of built-in kinds: every level of the type, from the protobuf tables") {
  static const json::Value no_schema;
  const auto* pod = lc::builtin_message("v1", "Pod");
  REQUIRE(pod != nullptr);
  auto body = doc(R"({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": "p", "labelz": {}, "ownerReferences": [{"uid": "u", "controllr": true}]},
      "spec": {"containers": [{"name": "c", "image": "i", "foo": 1, "ports": [{"containerPort": 80, "hostPrt": 1}],
                               "resources": {"limits": {"cpu": "1", "memory": 5}}, "env": [{"name": "A", "value": "b"}]}],
               "volumes": [{"name": "v", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}, "bogus": {}}],
               "$setElementOrder/containers": [{"name": "c"}],
               "nodeSelectr": {"a": "b"}},
      "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}})");
  CHECK(lc::undeclared_fields(body.root(), no_schema, pod) ==
        std::vector<std::string>{"metadata.labelz", "metadata.ownerReferences[0].controllr", "spec.containers[0].foo",
                                 "spec.containers[0].ports[0].hostPrt", "spec.volumes[0].bogus", "spec.nodeSelectr"});
  const auto* deployment = lc::builtin_message("apps/v1", "Deployment");
  REQUIRE(deployment != nullptr);
  auto d = doc(R"({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxSurje": 1}},
                            "template": {"metadata": {"labels": {"a": "b"}, "x": 1}, "spec": {"containers": []}}}})");
  CHECK(lc::undeclared_fields(d.root(), no_schema, deployment) ==
        std::vector<std::string>{"spec.strategy.rollingUpdate.maxSurje", "spec.template.metadata.x"});
  // A CRD's schema is JSONSchemaProps all the way down; default, items and additionalProperties
  // take any JSON.
  const auto* crd = lc::builtin_message("apiextensions.k8s.io/v1", "CustomResourceDefinition");
  REQUIRE(crd != nullptr);
  auto c = doc(R"({"spec": {"group": "g", "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object",
      "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "default": {"a": 1},
        "properties": {"n": {"type": "integer", "minimun": 1}, "l": {"type": "array", "items": {"type": "string"}}},
        "additionalProperties": false}}}}, "servd": true}]}})");
  CHECK(lc::undeclared_fields(c.root(), no_schema, crd) ==
        std::vector<std::string>{"spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.n.minimun",
                                 "spec.versions[0].servd"});
  CHECK(lc::builtin_message("kubeflow.org/v1", "PyTorchJob") == nullptr);
}

TEST_CASE("a body's kind and apiVersion must be the URL's") {
  const auto& configmaps = builtin_resource("configmaps");
  auto pod_body = doc(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})");
  auto wrong_kind = lc::check_type_meta(configmaps, pod_body.root(), "p", false);
  REQUIRE(wrong_kind);
  CHECK(wrong_kind->code == 400);
  CHECK(wrong_kind->message ==
        "Pod in version \"v1\" cannot be handled as a ConfigMap: converting (v1.Pod) to (core.ConfigMap): unknown "
        "conversion");

  auto wrong_version = lc::check_type_meta(configmaps, doc(R"({"apiVersion": "apps/v1", "kind": "ConfigMap"})").root(),
                                           "c", false);
  REQUIRE(wrong_version);
  CHECK(wrong_version->message ==
        "the API version in the data (apps/v1) does not match the expected API version (v1)");

  CHECK_FALSE(lc::check_type_meta(configmaps, doc(R"({"metadata": {"name": "c"}})").root(), "c", false));
  CHECK_FALSE(lc::check_type_meta(configmaps, doc(R"({"apiVersion": "v1", "kind": "ConfigMap"})").root(), "c", false));

  lc::ResourceInfo jobs;
  jobs.group = "kubeflow.org";
  jobs.version = "v1";
  jobs.resource = "pytorchjobs";
  jobs.kind = "PyTorchJob";
  jobs.namespaced = true;
  auto cr = lc::check_type_meta(jobs, doc(R"({"apiVersion": "kubeflow.org/v1", "kind": "TFJob"})").root(), "j", true);
  REQUIRE(cr);
  CHECK(cr->code == 422);
  CHECK(cr->message == "TFJob.kubeflow.org \"j\" is invalid: kind: Invalid value: \"TFJob\": must be PyTorchJob");
}
