#include <catch2/catch.hpp>

#include "core/api/field_errors.h"

namespace api = unitrain::api;
namespace json = unitrain::json;
using api::FieldError;
using api::FieldPath;
using api::FieldValue;

TEST_CASE("field path builder") {
  CHECK(FieldPath("spec").child("replicaSpecs").key("Worker").index(0).str() == "spec.replicaSpecs[Worker][0]");
  CHECK(FieldPath().child("metadata").child("name").str() == "metadata.name");
  CHECK(FieldPath("spec").child("template").child("spec").child("containers").index(3).child("image").str() ==
        "spec.template.spec.containers[3].image");
  CHECK(FieldPath().empty());
}

TEST_CASE("field errors print like k8s field.Error") {
  FieldPath rp = FieldPath("spec").child("runPolicy");
  CHECK(FieldError::invalid(rp.child("backoffLimit"), -1, "must be greater than or equal to 0").to_string() ==
        "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0");
  CHECK(FieldError::invalid(rp.child("backoffLimit"), "x", "must be an integer").to_string() ==
        R"(spec.runPolicy.backoffLimit: Invalid value: "x": must be an integer)");
  CHECK(FieldError::required(FieldPath("spec").child("x")).to_string() == "spec.x: Required value");
  CHECK(FieldError::required(FieldPath("spec").child("x"), "must be required").to_string() ==
        "spec.x: Required value: must be required");
  CHECK(FieldError::not_supported(FieldPath("spec").child("y"), "z", {"a", "b"}).to_string() ==
        R"(spec.y: Unsupported value: "z": supported values: "a", "b")");
  CHECK(FieldError::forbidden(FieldPath("spec").child("tfReplicaSpecs"), "must not have more than 1 Chief or Master role")
            .to_string() == "spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role");
  CHECK(FieldError::duplicate(FieldPath("spec").child("d"), "v").to_string() == R"(spec.d: Duplicate value: "v")");
  CHECK(FieldError::not_found(FieldPath("spec").child("d"), "v").to_string() == R"(spec.d: Not found: "v")");
  CHECK(FieldError::too_long(FieldPath("metadata").child("name"), "xxxx", 3).to_string() ==
        "metadata.name: Too long: may not be longer than 3");
  CHECK(FieldError::too_many(FieldPath("spec").child("l"), 5, 3).to_string() == "spec.l: Too many: 5: must have at most 3 items");
  CHECK(FieldError::too_many(FieldPath("spec").child("l"), -1, 3).to_string() == "spec.l: Too many: must have at most 3 items");
  CHECK(FieldError::internal(FieldPath("spec"), "boom").to_string() == "spec: Internal error: boom");
  CHECK(FieldError::invalid(FieldPath("a"), true, "x").to_string() == "a: Invalid value: true: x");
  CHECK(FieldError::invalid(FieldPath("a"), 1.5, "x").to_string() == "a: Invalid value: 1.5: x");
  CHECK(FieldValue(-1.0).text() == "-1");
  CHECK(FieldValue(123456.5).text() == "123456.5");
  CHECK(FieldValue(1000000.0).text() == "1e+06");
  CHECK(FieldValue(1.25e-7).text() == "1.25e-07");
  CHECK(FieldValue(0.0001).text() == "0.0001");
  CHECK(FieldError::invalid(FieldPath("a"), FieldValue::null(), "x").to_string() == R"(a: Invalid value: "null": x)");
  CHECK(FieldError::invalid(FieldPath("a"), FieldValue(), "x").to_string() == "a: Invalid value: x");
  CHECK(FieldError::invalid(FieldPath("a"), "q\"\n\\", "x").to_string() == R"(a: Invalid value: "q\"\n\\": x)");
}

TEST_CASE("field values from JSON") {
  auto doc = json::Document::parse(R"({"s":"x","i":-3,"u":18446744073709551615,"d":2.5,"b":false,"n":null,"o":{"k":[1]}})")
                 .value();
  auto v = [&](const char* p) { return FieldValue::of_json(*json::find(doc.root(), p)).text(); };
  CHECK(v("/s") == "\"x\"");
  CHECK(v("/i") == "-3");
  CHECK(v("/u") == "18446744073709551615");
  CHECK(v("/d") == "2.5");
  CHECK(v("/b") == "false");
  CHECK(v("/n") == "\"null\"");
  CHECK(v("/o") == R"({"k":[1]})");
}

TEST_CASE("field error aggregation and the Invalid status") {
  api::FieldErrorList errs{
      FieldError::required(FieldPath("spec").child("x")),
      FieldError::forbidden(FieldPath("spec").child("y"), "no"),
      FieldError::required(FieldPath("spec").child("x")),
  };
  CHECK(api::aggregate({}) == "");
  CHECK(api::aggregate({errs[0]}) == "spec.x: Required value");
  CHECK(api::aggregate(errs) == "[spec.x: Required value, spec.y: Forbidden: no]");
  CHECK(api::invalid_message("kubeflow.org", "PyTorchJob", "job", {errs[0]}) ==
        R"(PyTorchJob.kubeflow.org "job" is invalid: spec.x: Required value)");
  CHECK(api::invalid_message("kubeflow.org", "TFJob", "job", errs) ==
        R"(TFJob.kubeflow.org "job" is invalid: [spec.x: Required value, spec.y: Forbidden: no])");
  CHECK(api::invalid_message("", "Pod", "p", {}) == R"(Pod "p" is invalid)");

  auto causes = api::causes_json({errs[0], FieldError::invalid(FieldPath("spec").child("n"), -1, "bad")});
  CHECK(causes.dump() ==
        R"([{"reason":"FieldValueRequired","message":"Required value","field":"spec.x"},)"
        R"({"reason":"FieldValueInvalid","message":"Invalid value: -1: bad","field":"spec.n"}])");
  auto status = api::invalid_status("kubeflow.org", "TFJob", "job", {errs[1]});
  CHECK(status.dump() ==
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
        R"("message":"TFJob.kubeflow.org \"job\" is invalid: spec.y: Forbidden: no","reason":"Invalid",)"
        R"("details":{"name":"job","group":"kubeflow.org","kind":"TFJob","causes":[)"
        R"({"reason":"FieldValueForbidden","message":"Forbidden: no","field":"spec.y"}]},"code":422})");
  CHECK(api::cause_type(api::FieldErrorType::NotSupported) == "FieldValueNotSupported");
  CHECK(api::cause_type(api::FieldErrorType::Internal) == "InternalError");
}
