#include <catch2/catch.hpp>

#include "localcluster/body_validation.h"
#include "localcluster/builtin_resources.h"
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

  // Built-in kinds (no schema here): only metadata is checked; strategic-merge directives pass.
  static const json::Value no_schema;
  auto cm = doc(R"({"metadata": {"name": "c", "$setElementOrder/finalizers": []}, "data": {"x": "y"}})");
  CHECK(lc::undeclared_fields(cm.root(), no_schema).empty());
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
