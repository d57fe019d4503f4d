// Structure of the TFJob, XGBoostJob, PaddleJob and MXJob CRDs, each in its module's folder: names,
// subresources, printer columns, required fields and the typed parts the controllers rely on.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "core/json/json.h"

namespace json = unitrain::json;
using json::Document;

namespace {

// `path` under the source tree: "frameworks/<module>/<group>_<plural>.yaml".
Document load(const std::string& path) {
  std::ifstream in(std::string(UNITRAIN_SOURCE_DIR) + "/" + path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  auto docs = json::parse_yaml(ss.str());
  if (!docs) FAIL(docs.error().message);
  REQUIRE(docs->size() == 1);
  return (*docs)[0];
}

std::string str(const Document& d, std::string_view pointer) {
  auto s = json::get_string(d.root(), pointer);
  return s ? std::string(*s) : std::string("<missing>");
}

const std::string kSchema = "/spec/versions/0/schema/openAPIV3Schema";

// The facts every training-operator kind shares; returns the replica-spec schema pointer.
std::string check_common(const Document& crd, const std::string& kind, const std::string& plural, const std::string& field) {
  CHECK(str(crd, "/apiVersion") == "apiextensions.k8s.io/v1");
  CHECK(str(crd, "/metadata/name") == plural + ".kubeflow.org");
  CHECK(str(crd, "/spec/scope") == "Namespaced");
  CHECK(json::dump(*json::find(crd.root(), "/spec/names")) ==
        R"({"kind":")" + kind + R"(","listKind":")" + kind + R"(List","plural":")" + plural + R"(","singular":")" +
            plural.substr(0, plural.size() - 1) + R"("})");
  REQUIRE(json::find(crd.root(), "/spec/versions")->Size() == 1);
  CHECK(str(crd, "/spec/versions/0/name") == "v1");
  CHECK(json::get_bool(crd.root(), "/spec/versions/0/storage") == true);
  CHECK(json::find(crd.root(), "/spec/versions/0/subresources/status")->IsObject());
  CHECK(json::dump(*json::find(crd.root(), "/spec/versions/0/additionalPrinterColumns")) ==
        R"([{"name":"State","type":"string","jsonPath":".status.conditions[-1:].type"},{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}])");
  const std::string rp = kSchema + "/properties/spec/properties/runPolicy/properties";
  CHECK(json::get_bool(crd.root(), rp + "/suspend/default") == false);
  CHECK(str(crd, rp + "/cleanPodPolicy/type") == "string");
  const std::string rs = kSchema + "/properties/spec/properties/" + field + "/additionalProperties/properties";
  CHECK(str(crd, rs + "/replicas/format") == "int32");
  CHECK(json::dump(*json::find(crd.root(), rs + "/restartPolicy/enum")) == R"(["Always","OnFailure","Never","ExitCode"])");
  CHECK(json::get_bool(crd.root(), rs + "/template/x-kubernetes-preserve-unknown-fields") == true);
  CHECK(str(crd, kSchema + "/properties/status/properties/conditions/items/properties/lastTransitionTime/format") == "date-time");
  return rs;
}

}  // namespace

TEST_CASE("crd: TFJob") {
  Document crd = load("frameworks/tensorflow/kubeflow.org_tfjobs.yaml");
  check_common(crd, "TFJob", "tfjobs", "tfReplicaSpecs");
  CHECK_FALSE(json::find(crd.root(), "/spec/versions/0/subresources/scale"));
  CHECK(json::dump(*json::find(crd.root(), kSchema + "/properties/spec/required")) == R"(["tfReplicaSpecs"])");
  CHECK(json::dump(*json::find(crd.root(), kSchema + "/properties/spec/properties/successPolicy/enum")) == R"(["","AllWorkers"])");
  CHECK(str(crd, kSchema + "/properties/spec/properties/enableDynamicWorker/type") == "boolean");
}

TEST_CASE("crd: XGBoostJob") {
  Document crd = load("frameworks/xgboost/kubeflow.org_xgboostjobs.yaml");
  check_common(crd, "XGBoostJob", "xgboostjobs", "xgbReplicaSpecs");
  CHECK_FALSE(json::find(crd.root(), "/spec/versions/0/subresources/scale"));
  CHECK(json::dump(*json::find(crd.root(), kSchema + "/properties/spec/required")) == R"(["xgbReplicaSpecs"])");
}

TEST_CASE("crd: PaddleJob with the scale subresource") {
  Document crd = load("frameworks/paddle/kubeflow.org_paddlejobs.yaml");
  check_common(crd, "PaddleJob", "paddlejobs", "paddleReplicaSpecs");
  CHECK(json::dump(*json::find(crd.root(), "/spec/versions/0/subresources/scale")) ==
        R"({"specReplicasPath":".spec.paddleReplicaSpecs.Worker.replicas","statusReplicasPath":".status.replicaStatuses.Worker.active","labelSelectorPath":".status.replicaStatuses.Worker.selector"})");
  CHECK(str(crd, kSchema + "/properties/spec/properties/elasticPolicy/properties/maxReplicas/format") == "int32");
  CHECK(str(crd, kSchema + "/properties/status/properties/replicaStatuses/additionalProperties/properties/selector/type") == "string");
}

TEST_CASE("crd: MXJob requires jobMode") {
  Document crd = load("frameworks/mxnet/kubeflow.org_mxjobs.yaml");
  check_common(crd, "MXJob", "mxjobs", "mxReplicaSpecs");
  CHECK(json::dump(*json::find(crd.root(), kSchema + "/properties/spec/required")) == R"(["mxReplicaSpecs","jobMode"])");
  CHECK(json::dump(*json::find(crd.root(), kSchema + "/properties/spec/properties/jobMode/enum")) == R"(["MXTrain","MXTune"])");
}
