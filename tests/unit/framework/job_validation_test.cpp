// The rules every framework gets on top of its reference operator's (core/framework/job_validation.h).
#include <catch2/catch.hpp>

#include "core/framework/descriptor.h"
#include "core/framework/job_validation.h"
#include "core/json/json.h"
#include "tests/support/json.h"

namespace api = unitrain::api;
namespace fw = unitrain::framework;
namespace json = unitrain::json;

namespace {

std::vector<std::string> lines(const api::FieldErrorList& errs) {
  std::vector<std::string> out;
  for (const auto& e : errs) out.push_back(e.to_string());
  return out;
}

const fw::FrameworkDescriptor kX = fw::kubeflow_v1_descriptor("XJob", "xReplicaSpecs", {"Worker"}, "x", "", 0, "x");

std::vector<std::string> common(std::string_view job) {
  api::FieldErrorList errs;
  fw::validate_common_spec(kX, unitrain::testing::doc(job).root(), errs);
  return lines(errs);
}

}  // namespace

TEST_CASE("common spec rules: run policy values and types") {
  CHECK(common(R"({"spec":{"runPolicy":{"cleanPodPolicy":"All","backoffLimit":0,"activeDeadlineSeconds":0,)"
               R"("ttlSecondsAfterFinished":0}}})").empty());
  CHECK(common(R"({"spec":{"runPolicy":null}})").empty());
  CHECK(common(R"({"spec":{"runPolicy":{"cleanPodPolicy":null}}})").empty());
  CHECK(common(R"({"spec":{"runPolicy":{"ttlSecondsAfterFinished":-1,"activeDeadlineSeconds":-9000000000,"backoffLimit":-1}}})") ==
        std::vector<std::string>{
            "spec.runPolicy.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0",
            "spec.runPolicy.activeDeadlineSeconds: Invalid value: -9000000000: must be greater than or equal to 0",
            "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0"});
  CHECK(common(R"({"spec":{"runPolicy":{"cleanPodPolicy":7}}})") ==
        std::vector<std::string>{"spec.runPolicy.cleanPodPolicy: Invalid value: 7: must be a string"});
  CHECK(common(R"({"spec":{"runPolicy":[]}})") ==
        std::vector<std::string>{"spec.runPolicy: Invalid value: []: must be an object"});
  CHECK(common(R"({"spec":"x"})") == std::vector<std::string>{R"(spec: Invalid value: "x": must be an object)"});
}

TEST_CASE("common spec rules: replica counts") {
  CHECK(common(R"({"spec":{"xReplicaSpecs":{"Worker":{"replicas":0}}}})").empty());
  // A missing map is the framework's own Required error; a null spec its missing containers.
  CHECK(common(R"({"spec":{}})").empty());
  CHECK(common(R"({"spec":{"xReplicaSpecs":{"Worker":null}}})").empty());
  CHECK(common(R"({"spec":{"xReplicaSpecs":{}}})") ==
        std::vector<std::string>{"spec.xReplicaSpecs: Required value: must have at least one replica spec"});
  CHECK(common(R"({"spec":{"xReplicaSpecs":{"Worker":{"replicas":-1},"Other":{"replicas":-2147483648}}}})") ==
        std::vector<std::string>{
            "spec.xReplicaSpecs[Worker].replicas: Invalid value: -1: must be greater than or equal to 0",
            "spec.xReplicaSpecs[Other].replicas: Invalid value: -2147483648: must be greater than or equal to 0"});
  CHECK(common(R"({"spec":{"xReplicaSpecs":{"Worker":{"replicas":1.5}}}})") ==
        std::vector<std::string>{"spec.xReplicaSpecs[Worker].replicas: Invalid value: 1.5: must be an integer"});
  CHECK(common(R"({"spec":{"xReplicaSpecs":{"Worker":{"replicas":4294967296}}}})").size() == 1);
  CHECK(common(R"({"spec":{"xReplicaSpecs":{"Worker":"w"}}})") ==
        std::vector<std::string>{R"(spec.xReplicaSpecs[Worker]: Invalid value: "w": must be an object)"});
  CHECK(common(R"({"spec":{"xReplicaSpecs":[1]}})") ==
        std::vector<std::string>{"spec.xReplicaSpecs: Invalid value: [1]: must be an object"});
}

TEST_CASE("common spec rules: a field the framework refused already is not refused twice") {
  api::FieldErrorList errs = {
      api::FieldError::forbidden(api::FieldPath("spec").child("xReplicaSpecs").key("Worker").child("replicas"), "must be at least 1"),
      api::FieldError::required(api::FieldPath("spec").child("yReplicaSpecs").key("Launcher"), "must be present")};
  fw::add_unreported(errs, {
      api::FieldError::invalid(api::FieldPath("spec").child("xReplicaSpecs").key("Worker").child("replicas"), -1, "negative"),
      api::FieldError::required(api::FieldPath("spec").child("yReplicaSpecs"), "empty"),
      api::FieldError::invalid(api::FieldPath("spec").child("xReplicaSpecs").key("Worker2").child("replicas"), -1, "negative"),
      api::FieldError::invalid(api::FieldPath("spec").child("runPolicy").child("backoffLimit"), -1, "negative"),
  });
  CHECK(lines(errs) == std::vector<std::string>{"spec.xReplicaSpecs[Worker].replicas: Forbidden: must be at least 1",
                                                "spec.yReplicaSpecs[Launcher]: Required value: must be present",
                                                "spec.xReplicaSpecs[Worker2].replicas: Invalid value: -1: negative",
                                                "spec.runPolicy.backoffLimit: Invalid value: -1: negative"});
}

TEST_CASE("elastic replicas: integers of at least 1, min not above max") {
  auto elastic = [](std::string_view job) {
    api::FieldErrorList errs;
    fw::validate_elastic_replicas(unitrain::testing::doc(job).root(), errs);
    return lines(errs);
  };
  CHECK(elastic(R"({"spec":{}})").empty());
  CHECK(elastic(R"({"spec":{"elasticPolicy":{"minReplicas":2,"maxReplicas":2}}})").empty());
  CHECK(elastic(R"({"spec":{"elasticPolicy":{"minReplicas":3}}})").empty());
  CHECK(elastic(R"({"spec":{"elasticPolicy":{"minReplicas":3,"maxReplicas":1}}})") ==
        std::vector<std::string>{"spec.elasticPolicy.maxReplicas: Invalid value: 1: must be greater than or equal to minReplicas (3)"});
  CHECK(elastic(R"({"spec":{"elasticPolicy":{"minReplicas":-1,"maxReplicas":"4"}}})") ==
        std::vector<std::string>{"spec.elasticPolicy.minReplicas: Invalid value: -1: must be greater than or equal to 1",
                                 R"(spec.elasticPolicy.maxReplicas: Invalid value: "4": must be an integer)"});
}
