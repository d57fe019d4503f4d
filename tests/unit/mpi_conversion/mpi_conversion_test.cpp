#include <catch2/catch.hpp>

#include "core/framework/registry.h"
#include "frameworks/mpi/conversion/conversion.h"

using namespace unitrain;
namespace conv = unitrain::frameworks::mpi::conversion;

namespace {

json::Document parse(std::string_view text) {
  auto d = json::Document::parse(text);
  REQUIRE(d);
  return std::move(*d);
}

std::string convert(std::string_view text, std::string_view to) {
  auto doc = parse(text);
  auto out = conv::convert(doc.root(), to);
  REQUIRE(out);
  return out->dump();
}

// A v1 job using both v1-only fields, in an order that differs from the v2beta1 field order.
constexpr std::string_view kV1Job =
    R"({"apiVersion":"kubeflow.org/v1","kind":"MPIJob","metadata":{"name":"tf","namespace":"default"},)"
    R"("spec":{"slotsPerWorker":2,"cleanPodPolicy":"Running","runPolicy":{"backoffLimit":3},"mainContainer":"mpi",)"
    R"("mpiReplicaSpecs":{"Launcher":{"replicas":1},"Worker":{"replicas":2}}},"status":{"conditions":[]}})";

}  // namespace

TEST_CASE("v1 -> v2beta1 moves the v1-only spec fields into an annotation") {
  CHECK(convert(kV1Job, "kubeflow.org/v2beta1") ==
        R"({"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"tf","namespace":"default",)"
        R"("annotations":{"conversion.unitrain.io/mpijob-v1-fields":"{\"order\":[\"slotsPerWorker\",\"cleanPodPolicy\",)"
        R"(\"runPolicy\",\"mainContainer\",\"mpiReplicaSpecs\"],\"fields\":{\"cleanPodPolicy\":\"Running\",)"
        R"(\"mainContainer\":\"mpi\"}}"}},)"
        R"("spec":{"slotsPerWorker":2,"runPolicy":{"backoffLimit":3},)"
        R"("mpiReplicaSpecs":{"Launcher":{"replicas":1},"Worker":{"replicas":2}}},"status":{"conditions":[]}})");
}

TEST_CASE("v1 -> v2beta1 -> v1 is byte-identical") {
  const std::string v2 = convert(kV1Job, "kubeflow.org/v2beta1");
  CHECK(convert(v2, "kubeflow.org/v1") == parse(kV1Job).dump());
}

TEST_CASE("v2beta1 -> v1 -> v2beta1 is byte-identical") {
  constexpr std::string_view v2 =
      R"({"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"pi","annotations":{"team":"a"}},)"
      R"("spec":{"slotsPerWorker":1,"runLauncherAsWorker":false,"runPolicy":{"cleanPodPolicy":"None"},)"
      R"("sshAuthMountPath":"/home/mpiuser/.ssh","mpiImplementation":"Intel","launcherCreationPolicy":"WaitForWorkersReady",)"
      R"("mpiReplicaSpecs":{"Launcher":{"replicas":1}}}})";
  const std::string v1 = convert(v2, "kubeflow.org/v1");
  CHECK(v1 ==
        R"({"apiVersion":"kubeflow.org/v1","kind":"MPIJob","metadata":{"name":"pi","annotations":{"team":"a",)"
        R"("conversion.unitrain.io/mpijob-v2beta1-fields":"{\"order\":[\"slotsPerWorker\",\"runLauncherAsWorker\",)"
        R"(\"runPolicy\",\"sshAuthMountPath\",\"mpiImplementation\",\"launcherCreationPolicy\",\"mpiReplicaSpecs\"],)"
        R"(\"fields\":{\"runLauncherAsWorker\":false,\"sshAuthMountPath\":\"/home/mpiuser/.ssh\",)"
        R"(\"mpiImplementation\":\"Intel\",\"launcherCreationPolicy\":\"WaitForWorkersReady\"}}"}},)"
        R"("spec":{"slotsPerWorker":1,"runPolicy":{"cleanPodPolicy":"None"},"mpiReplicaSpecs":{"Launcher":{"replicas":1}}}})");
  CHECK(convert(v1, "kubeflow.org/v2beta1") == parse(v2).dump());
}

TEST_CASE("a job with only shared fields converts without an annotation") {
  constexpr std::string_view v1 =
      R"({"apiVersion":"kubeflow.org/v1","kind":"MPIJob","metadata":{"name":"a"},)"
      R"("spec":{"slotsPerWorker":1,"runPolicy":{"managedBy":"kubeflow.org/training-operator"},"mpiReplicaSpecs":{}}})";
  CHECK(convert(v1, "kubeflow.org/v2beta1") ==
        R"({"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"a"},)"
        R"("spec":{"slotsPerWorker":1,"runPolicy":{"managedBy":"kubeflow.org/training-operator"},"mpiReplicaSpecs":{}}})");
}

TEST_CASE("fields added in the other version survive alongside the stashed ones") {
  // Stored as v2beta1 with the v1 stash; a v2beta1 client then sets sshAuthMountPath.
  std::string v2 = convert(kV1Job, "kubeflow.org/v2beta1");
  auto doc = parse(v2);
  REQUIRE(json::set_string(doc, "/spec/sshAuthMountPath", "/root/.ssh"));
  const std::string v1 = convert(doc.dump(), "kubeflow.org/v1");
  auto v1doc = parse(v1);
  CHECK(json::dump(*json::find(v1doc.root(), "/spec")) == json::dump(*json::find(parse(kV1Job).root(), "/spec")));
  CHECK(json::get_string(v1doc.root(), "/metadata/annotations/conversion.unitrain.io~1mpijob-v2beta1-fields") ==
        std::string(R"({"order":["slotsPerWorker","runPolicy","mpiReplicaSpecs","sshAuthMountPath"],)"
                    R"("fields":{"sshAuthMountPath":"/root/.ssh"}})"));
  CHECK(json::find(v1doc.root(), "/metadata/annotations/conversion.unitrain.io~1mpijob-v1-fields") == nullptr);
  // And back again: both stashes resolve, nothing is lost.
  const std::string again = convert(v1, "kubeflow.org/v2beta1");
  auto again_doc = parse(again);
  CHECK(json::get_string(again_doc.root(), "/spec/sshAuthMountPath") == std::string("/root/.ssh"));
  CHECK(json::get_string(again_doc.root(), "/metadata/annotations/conversion.unitrain.io~1mpijob-v1-fields").has_value());
  CHECK(json::find(again_doc.root(), "/spec/mainContainer") == nullptr);
}

TEST_CASE("same-version conversion is the identity") {
  CHECK(convert(kV1Job, "kubeflow.org/v1") == parse(kV1Job).dump());
}

TEST_CASE("conversion errors name the problem") {
  auto doc = parse(kV1Job);
  auto bad_target = conv::convert(doc.root(), "kubeflow.org/v2");
  REQUIRE_FALSE(bad_target);
  CHECK(bad_target.error().message ==
        "MPIJob: cannot convert to kubeflow.org/v2; served versions are kubeflow.org/v1 and kubeflow.org/v2beta1");
  auto broken = parse(R"({"apiVersion":"kubeflow.org/v2beta1","metadata":{"annotations":)"
                      R"({"conversion.unitrain.io/mpijob-v1-fields":"{oops"}},"spec":{}})");
  auto r = conv::convert(broken.root(), "kubeflow.org/v1");
  REQUIRE_FALSE(r);
  CHECK(r.error().message.rfind("metadata.annotations[conversion.unitrain.io/mpijob-v1-fields]: invalid JSON", 0) == 0);
  auto unversioned = parse(R"({"kind":"MPIJob"})");
  auto u = conv::convert(unversioned.root(), "kubeflow.org/v1");
  REQUIRE_FALSE(u);
  CHECK(u.error().message == "MPIJob: apiVersion (missing) is not kubeflow.org/v1 or kubeflow.org/v2beta1");
  // Found by fuzz_mpi_conversion: any kubeflow.org/v1 object converted, a TFJob included.
  auto tfjob = parse(R"({"apiVersion":"kubeflow.org/v1","kind":"TFJob","spec":{}})");
  auto t = conv::convert(tfjob.root(), "kubeflow.org/v2beta1");
  REQUIRE_FALSE(t);
  CHECK(t.error().message == "MPIJob: kind \"TFJob\" is not MPIJob");
  auto kindless = parse(R"({"apiVersion":"kubeflow.org/v1","spec":{}})");
  auto k = conv::convert(kindless.root(), "kubeflow.org/v2beta1");
  REQUIRE_FALSE(k);
  CHECK(k.error().message == "MPIJob: kind (missing) is not MPIJob");
}

TEST_CASE("the conversion registers with the framework registry once") {
  framework::Registry registry;
  REQUIRE(conv::register_mpi_conversion(registry));
  const auto* c = registry.find_conversion("kubeflow.org", "MPIJob");
  REQUIRE(c != nullptr);
  CHECK(c->plural == "mpijobs");
  CHECK(c->versions == std::vector<std::string>{"v1", "v2beta1"});
  auto again = conv::register_mpi_conversion(registry);
  REQUIRE_FALSE(again);
  CHECK(again.error().message == "conversion for MPIJob.kubeflow.org is already registered");
}
