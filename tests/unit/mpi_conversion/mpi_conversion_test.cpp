#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "core/framework/registry.h"
#include "core/json/json.h"
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

TEST_CASE("v2beta1 -> v1 -> v2beta1 is byte-identical (a schema default travels as its place only)") {
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
        R"(\"fields\":{\"sshAuthMountPath\":\"/home/mpiuser/.ssh\",)"
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
  REQUIRE(json::set_string(doc, "/spec/sshAuthMountPath", "/home/mpiuser/.ssh"));
  const std::string v1 = convert(doc.dump(), "kubeflow.org/v1");
  auto v1doc = parse(v1);
  CHECK(json::dump(*json::find(v1doc.root(), "/spec")) == json::dump(*json::find(parse(kV1Job).root(), "/spec")));
  CHECK(json::get_string(v1doc.root(), "/metadata/annotations/conversion.unitrain.io~1mpijob-v2beta1-fields") ==
        std::string(R"({"order":["slotsPerWorker","runPolicy","mpiReplicaSpecs","sshAuthMountPath"],)"
                    R"("fields":{"sshAuthMountPath":"/home/mpiuser/.ssh"}})"));
  CHECK(json::find(v1doc.root(), "/metadata/annotations/conversion.unitrain.io~1mpijob-v1-fields") == nullptr);
  // And back again: both stashes resolve, nothing is lost.
  const std::string again = convert(v1, "kubeflow.org/v2beta1");
  auto again_doc = parse(again);
  CHECK(json::get_string(again_doc.root(), "/spec/sshAuthMountPath") == std::string("/home/mpiuser/.ssh"));
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
  auto broken = parse(R"({"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"annotations":)"
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

TEST_CASE("a job written and read as v1 carries no annotation: the API server's v2beta1 defaults stay behind") {
  // Stored as v2beta1, the API server adds the v2beta1 schema's defaults; read as v1, they are
  // left out (writing back as v1 gets them again), so nothing needs to travel.
  const std::string stored = convert(kV1Job, "kubeflow.org/v2beta1");
  auto with_defaults = parse(stored);
  for (auto [k, v] : {std::pair{"/spec/runLauncherAsWorker", R"(false)"}, std::pair{"/spec/sshAuthMountPath", R"("/root/.ssh")"},
                      std::pair{"/spec/launcherCreationPolicy", R"("AtStartup")"}, std::pair{"/spec/mpiImplementation", R"("OpenMPI")"}})
    REQUIRE(json::set(with_defaults, k, json::clone(parse(v).root(), with_defaults.alloc())));
  const std::string read_as_v1 = convert(with_defaults.dump(), "kubeflow.org/v1");
  CHECK(read_as_v1 == parse(kV1Job).dump());
  // A value other than the default still travels.
  REQUIRE(json::set_string(with_defaults, "/spec/mpiImplementation", "MPICH"));
  auto mpich = parse(convert(with_defaults.dump(), "kubeflow.org/v1"));
  auto stash = parse(json::get_string(mpich.root(), "/metadata/annotations/conversion.unitrain.io~1mpijob-v2beta1-fields").value_or(""));
  CHECK(json::dump(*json::find(stash.root(), "/fields")) == R"({"mpiImplementation":"MPICH"})");
}

TEST_CASE("the defaults left behind are exactly the v2beta1 schema's (manifests/crds/kubeflow.org_mpijobs.yaml)") {
  std::ifstream in(std::string(UNITRAIN_SOURCE_DIR) + "/manifests/crds/kubeflow.org_mpijobs.yaml");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  auto docs = json::parse_yaml(text.str());
  REQUIRE(docs);
  const json::Value* properties = nullptr;
  for (const auto& v : json::find((*docs)[0].root(), "/spec/versions")->GetArray())
    if (json::get_string(v, "/name") == "v2beta1") properties = json::find(v, "/schema/openAPIV3Schema/properties/spec/properties");
  REQUIRE(properties != nullptr);
  // A v2beta1 job holding every v2beta1-only field at its schema default converts to v1 without
  // an annotation; any other value of each would need one.
  auto job = parse(R"({"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"d"},"spec":{}})");
  int defaulted = 0;
  for (const auto& m : properties->GetObject()) {
    const std::string field = m.name.GetString();
    if (field == "slotsPerWorker" || field == "runPolicy" || field == "mpiReplicaSpecs") continue;  // shared
    const json::Value* d = json::find(m.value, "/default");
    INFO(field);
    REQUIRE(d != nullptr);  // every v2beta1-only field has a default
    REQUIRE(json::set(job, "/spec/" + field, json::clone(*d, job.alloc())));
    ++defaulted;
  }
  CHECK(defaulted == 4);
  const std::string v1 = convert(job.dump(), "kubeflow.org/v1");
  CHECK(v1.find("conversion.unitrain.io") == std::string::npos);
}
