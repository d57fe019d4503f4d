// Structure of the CRDs under manifests/crds: names, versions, subresources, printer columns and
// the typed parts of the schema the controllers rely on.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "core/json/json.h"

namespace json = unitrain::json;
using json::Document;

namespace {

Document load(const std::string& file) {
  std::ifstream in(std::string(UNITRAIN_SOURCE_DIR) + "/manifests/crds/" + file);
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

void check_printer_columns(const Document& crd) {
  CHECK(json::dump(*json::find(crd.root(), "/spec/versions/0/additionalPrinterColumns")) ==
        R"([{"name":"State","type":"string","jsonPath":".status.conditions[-1:].type"},{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}])");
}

// MPIJob (both versions): which module runs a job shows next to its state.
void check_mpi_printer_columns(const Document& crd) {
  CHECK(json::dump(*json::find(crd.root(), "/spec/versions/0/additionalPrinterColumns")) ==
        R"([{"name":"State","type":"string","jsonPath":".status.conditions[-1:].type"},)"
        R"({"name":"Managed-By","type":"string","description":"The controller that runs the job (spec.runPolicy.managedBy).",)"
        R"("jsonPath":".spec.runPolicy.managedBy"},{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}])");
}

void check_run_policy(const Document& crd, std::string_view schema) {
  const std::string rp = std::string(schema) + "/properties/spec/properties/runPolicy/properties";
  CHECK(str(crd, rp + "/cleanPodPolicy/type") == "string");
  CHECK(str(crd, rp + "/activeDeadlineSeconds/format") == "int64");
  CHECK(str(crd, rp + "/backoffLimit/format") == "int32");
  CHECK(str(crd, rp + "/ttlSecondsAfterFinished/format") == "int32");
  CHECK(json::get_bool(crd.root(), rp + "/suspend/default") == false);
  CHECK(str(crd, rp + "/schedulingPolicy/properties/queue/x-kubernetes-validations/0/message") ==
        "spec.runPolicy.schedulingPolicy.queue is immutable");
  CHECK(json::get_bool(crd.root(), rp + "/schedulingPolicy/properties/minResources/additionalProperties/x-kubernetes-int-or-string") == true);
}

}  // namespace

TEST_CASE("crd: PyTorchJob names, version, status and scale subresources, printer columns") {
  Document crd = load("kubeflow.org_pytorchjobs.yaml");
  CHECK(str(crd, "/apiVersion") == "apiextensions.k8s.io/v1");
  CHECK(str(crd, "/kind") == "CustomResourceDefinition");
  CHECK(str(crd, "/metadata/name") == "pytorchjobs.kubeflow.org");
  CHECK(str(crd, "/spec/group") == "kubeflow.org");
  CHECK(str(crd, "/spec/scope") == "Namespaced");
  CHECK(json::dump(*json::find(crd.root(), "/spec/names")) ==
        R"({"kind":"PyTorchJob","listKind":"PyTorchJobList","plural":"pytorchjobs","singular":"pytorchjob"})");
  REQUIRE(json::find(crd.root(), "/spec/versions")->Size() == 1);
  CHECK(str(crd, "/spec/versions/0/name") == "v1");
  CHECK(json::get_bool(crd.root(), "/spec/versions/0/served") == true);
  CHECK(json::get_bool(crd.root(), "/spec/versions/0/storage") == true);
  CHECK(json::find(crd.root(), "/spec/versions/0/subresources/status")->IsObject());
  CHECK(json::dump(*json::find(crd.root(), "/spec/versions/0/subresources/scale")) ==
        R"({"specReplicasPath":".spec.pytorchReplicaSpecs.Worker.replicas","statusReplicasPath":".status.replicaStatuses.Worker.active","labelSelectorPath":".status.replicaStatuses.Worker.selector"})");
  check_printer_columns(crd);
  const std::string schema = "/spec/versions/0/schema/openAPIV3Schema";
  CHECK(json::dump(*json::find(crd.root(), schema + "/properties/spec/required")) == R"(["pytorchReplicaSpecs"])");
  check_run_policy(crd, schema);
  const std::string rs = schema + "/properties/spec/properties/pytorchReplicaSpecs/additionalProperties/properties";
  CHECK(str(crd, rs + "/replicas/type") == "integer");
  CHECK(json::dump(*json::find(crd.root(), rs + "/restartPolicy/enum")) == R"(["Always","OnFailure","Never","ExitCode"])");
  CHECK(json::get_bool(crd.root(), rs + "/template/x-kubernetes-preserve-unknown-fields") == true);
  CHECK(str(crd, schema + "/properties/spec/properties/nprocPerNode/type") == "string");
  CHECK(str(crd, schema + "/properties/status/properties/replicaStatuses/additionalProperties/properties/selector/type") == "string");
}

TEST_CASE("crd: MPIJob v2beta1 names, status subresource, defaults and enums") {
  Document crd = load("kubeflow.org_mpijobs_v2beta1.yaml");
  CHECK(str(crd, "/metadata/name") == "mpijobs.kubeflow.org");
  CHECK(json::dump(*json::find(crd.root(), "/spec/names")) ==
        R"({"kind":"MPIJob","listKind":"MPIJobList","plural":"mpijobs","singular":"mpijob"})");
  REQUIRE(json::find(crd.root(), "/spec/versions")->Size() == 1);
  CHECK(str(crd, "/spec/versions/0/name") == "v2beta1");
  CHECK(json::get_bool(crd.root(), "/spec/versions/0/storage") == true);
  CHECK(json::dump(*json::find(crd.root(), "/spec/versions/0/subresources")) == R"({"status":{}})");
  check_mpi_printer_columns(crd);
  const std::string schema = "/spec/versions/0/schema/openAPIV3Schema";
  const std::string spec = schema + "/properties/spec/properties";
  // No enum on a replica's restartPolicy (as mpi-operator's CRD): the webhook's message counts.
  CHECK(json::find(crd.root(), spec + "/mpiReplicaSpecs/additionalProperties/properties/restartPolicy/enum") == nullptr);
  CHECK(json::dump(*json::find(crd.root(), schema + "/properties/spec/required")) == R"(["mpiReplicaSpecs"])");
  CHECK(json::get_int(crd.root(), spec + "/slotsPerWorker/default") == 1);
  CHECK(json::get_bool(crd.root(), spec + "/runLauncherAsWorker/default") == false);
  CHECK(str(crd, spec + "/sshAuthMountPath/default") == "/root/.ssh");
  CHECK(str(crd, spec + "/launcherCreationPolicy/default") == "AtStartup");
  CHECK(json::dump(*json::find(crd.root(), spec + "/mpiImplementation/enum")) == R"(["OpenMPI","Intel","MPICH"])");
  CHECK(str(crd, spec + "/mpiImplementation/default") == "OpenMPI");
  check_run_policy(crd, schema);
  CHECK(json::get_bool(crd.root(), spec + "/mpiReplicaSpecs/additionalProperties/properties/template/x-kubernetes-preserve-unknown-fields") == true);
  CHECK(str(crd, schema + "/properties/status/properties/conditions/items/properties/lastTransitionTime/format") == "date-time");
}

TEST_CASE("crd: MPIJob in both versions, stored as v2beta1, converted by the webhook") {
  Document both = load("kubeflow.org_mpijobs.yaml");
  Document v2 = load("kubeflow.org_mpijobs_v2beta1.yaml");
  Document v1 = load("kubeflow.org_mpijobs_v1.yaml");
  CHECK(str(both, "/metadata/name") == "mpijobs.kubeflow.org");
  CHECK(json::equal(*json::find(both.root(), "/spec/names"), *json::find(v2.root(), "/spec/names")));
  REQUIRE(json::find(both.root(), "/spec/versions")->Size() == 2);
  CHECK(str(both, "/spec/conversion/strategy") == "Webhook");
  CHECK(json::dump(*json::find(both.root(), "/spec/conversion/webhook")) ==
        R"({"conversionReviewVersions":["v1"],"clientConfig":{"service":{"namespace":"kubeflow",)"
        R"("name":"training-operator","path":"/convert","port":443}}})");
  // Each version entry is the single-version file's, v1 not stored.
  CHECK(json::equal(*json::find(both.root(), "/spec/versions/0"), *json::find(v2.root(), "/spec/versions/0")));
  CHECK(json::get_bool(both.root(), "/spec/versions/0/storage") == true);
  Document v1_entry = Document::copy_of(*json::find(v1.root(), "/spec/versions/0"));
  REQUIRE(json::set_bool(v1_entry, "/storage", false));
  CHECK(json::equal(*json::find(both.root(), "/spec/versions/1"), v1_entry.root()));
}
