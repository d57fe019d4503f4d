// Where two modules serve one kind (MPIJob v1 and v2beta1): a job is judged by the module that owns
// it whichever version it is edited through; the owner annotation the operator pins is kept and
// immutable; a disabled sibling's managedBy is no error; and the webhook configurations hold
// exactly the hooks the operator serves.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/framework/ownership.h"
#include "core/kube/config.h"
#include "core/kube/fake_client.h"
#include "core/webhook/handler.h"
#include "core/webhook/registration.h"
#include "frameworks/mpi/conversion/conversion.h"
#include "frameworks/mpi/v1/register.h"
#include "frameworks/mpi/v2/register.h"
#include "frameworks/pytorch/register.h"

using namespace unitrain;

namespace {

json::Document doc_of(std::string_view text) {
  auto d = json::Document::parse(text);
  REQUIRE(d);
  return std::move(*d);
}

// The real modules; `enabled` names the ones the operator runs (all are registered).
struct MpiModules {
  framework::Registry registry;
  std::vector<std::unique_ptr<framework::FrameworkPlugin>> owned;
  std::vector<const framework::FrameworkPlugin*> plugins;

  explicit MpiModules(std::vector<std::string_view> enabled) {
    REQUIRE(frameworks::pytorch::register_pytorch(registry));
    REQUIRE(frameworks::mpi::v1::register_mpi_v1(registry));
    REQUIRE(frameworks::mpi::v2::register_mpi_v2(registry));
    REQUIRE(frameworks::mpi::conversion::register_mpi_conversion(registry));
    for (auto name : enabled) {
      auto p = registry.instantiate(name, {});
      REQUIRE(p);
      owned.push_back(std::move(*p));
    }
    for (const auto& p : owned) plugins.push_back(p.get());
  }
};

std::string admission_review(std::string_view operation, std::string_view object, std::string_view old_object) {
  auto typed = doc_of(object);
  const std::string api_version(json::get_string(typed.root(), "/apiVersion").value_or(""));
  const std::string version = api_version.substr(api_version.find('/') + 1);
  return fmt::format(R"({{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u-2",)"
                     R"("kind":{{"group":"kubeflow.org","version":"{0}","kind":"MPIJob"}},)"
                     R"("resource":{{"group":"kubeflow.org","version":"{0}","resource":"mpijobs"}},)"
                     R"("operation":"{1}","name":"job","namespace":"default","object":{2},"oldObject":{3}}}}})",
                     version, operation, object, old_object);
}

// An MPIJob in `api_version` with `run_policy`, `metadata_extra` and a launcher of `launcher_replicas`
// whose restartPolicy is `restart`.
std::string mpijob(std::string_view api_version, std::string_view run_policy, std::string_view restart = "Never",
                   int launcher_replicas = 1, std::string_view metadata_extra = "") {
  return fmt::format(R"({{"apiVersion":"kubeflow.org/{}","kind":"MPIJob","metadata":{{"name":"job","namespace":"default"{}}},)"
                     R"("spec":{{"slotsPerWorker":1,"runPolicy":{},"mpiReplicaSpecs":{{)"
                     R"("Launcher":{{"replicas":{},"restartPolicy":"{}","template":{{"spec":{{"containers":[{{"name":"l","image":"x"}}]}}}}}},)"
                     R"("Worker":{{"replicas":1,"template":{{"spec":{{"containers":[{{"name":"w","image":"x"}}]}}}}}}}}}}}})",
                     api_version, metadata_extra, run_policy, launcher_replicas, restart);
}

json::Document admit(const webhook::Handler& h, std::string_view path, std::string_view operation, const std::string& object,
                     const std::string& old_object = "null") {
  auto reply = h.handle(path, admission_review(operation, object, old_object));
  REQUIRE(reply.status == 200);
  return doc_of(reply.body);
}

bool allowed(const json::Document& review) { return json::get_bool(review.root(), "/response/allowed") == true; }
std::string message(const json::Document& review) {
  return std::string(json::get_string(review.root(), "/response/status/message").value_or(""));
}

constexpr std::string_view kV1Owner = R"({"managedBy":"kubeflow.org/training-operator"})";
constexpr std::string_view kV2Owner = R"({"managedBy":"kubeflow.org/mpi-operator"})";
const std::string kPinnedToV1 = R"(,"annotations":{"unitrain.io/managed-by":"kubeflow.org/training-operator"})";

}  // namespace

TEST_CASE("ownership: a v1 job edited through v2beta1 is judged by the v1 module, and the reverse") {
  MpiModules m({"kubeflow.org/mpijob@v1", "kubeflow.org/mpijob@v2beta1"});
  webhook::Handler h(m.plugins, m.registry);
  // ExitCode is a v1 restart policy (v2beta1 allows Never and OnFailure only).
  const std::string v1_job_as_v2 = mpijob("v2beta1", kV1Owner, "ExitCode");
  auto ok = admit(h, "/validate-kubeflow-org-v2beta1-mpijob", "UPDATE", v1_job_as_v2, v1_job_as_v2);
  INFO(message(ok));
  CHECK(allowed(ok));
  // What the v1 module refuses is refused, in its words.
  const std::string two_launchers = mpijob("v2beta1", kV1Owner, "ExitCode", 2);
  auto refused = admit(h, "/validate-kubeflow-org-v2beta1-mpijob", "UPDATE", two_launchers, v1_job_as_v2);
  CHECK_FALSE(allowed(refused));
  CHECK(message(refused) == R"(MPIJob.kubeflow.org "job" is invalid: spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: 2: )"
                            R"(MPIReplicaSpec is not valid: There must be only 1 launcher replica)");

  const std::string v2_job_as_v1 = mpijob("v1", kV2Owner, "OnFailure");
  CHECK(allowed(admit(h, "/validate-kubeflow-org-v1-mpijob", "UPDATE", v2_job_as_v1, v2_job_as_v1)));
  const std::string bad_v2 = mpijob("v1", kV2Owner, "OnFailure", 2);
  auto refused_v2 = admit(h, "/validate-kubeflow-org-v1-mpijob", "UPDATE", bad_v2, v2_job_as_v1);
  CHECK(message(refused_v2) == R"(MPIJob.kubeflow.org "job" is invalid: spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: 2: must be 1)");

  // The owner annotation says the same when managedBy is unset.
  const std::string pinned = mpijob("v2beta1", "{}", "ExitCode", 1, kPinnedToV1);
  CHECK(allowed(admit(h, "/validate-kubeflow-org-v2beta1-mpijob", "UPDATE", pinned, pinned)));
  // managedBy still cannot change, whichever version says so.
  auto moved = admit(h, "/validate-kubeflow-org-v2beta1-mpijob", "UPDATE", mpijob("v2beta1", kV2Owner), v1_job_as_v2);
  CHECK(message(moved).find("spec.runPolicy.managedBy: Invalid value: \"kubeflow.org/mpi-operator\": field is immutable") !=
        std::string::npos);
}

TEST_CASE("ownership: the owner annotation is set once, kept by a replace that leaves it out, and immutable") {
  MpiModules m({"kubeflow.org/mpijob@v1", "kubeflow.org/mpijob@v2beta1"});
  webhook::Handler h(m.plugins, m.registry);
  const std::string unpinned = mpijob("v1", "{}");
  const std::string pinned = mpijob("v1", "{}", "Never", 1, kPinnedToV1);
  // The operator pins it: allowed.
  CHECK(allowed(admit(h, "/validate-kubeflow-org-v1-mpijob", "UPDATE", pinned, unpinned)));
  // A replace without it gets it back from the defaulting webhook...
  auto mutated = admit(h, "/mutate-kubeflow-org-v1-mpijob", "UPDATE", unpinned, pinned);
  INFO(mutated.dump());
  CHECK(kube::base64_decode(*json::get_string(mutated.root(), "/response/patch")).value_or("") ==
        std::string(R"([{"op":"add","path":"/metadata/annotations","value":{"unitrain.io/managed-by":"kubeflow.org/training-operator"}}])"));
  // ...and without the defaulting webhook the validating one refuses to lose or change it.
  auto lost = admit(h, "/validate-kubeflow-org-v1-mpijob", "UPDATE", unpinned, pinned);
  CHECK(message(lost) == R"(MPIJob.kubeflow.org "job" is invalid: metadata.annotations[unitrain.io/managed-by]: )"
                         R"(Invalid value: "null": field is immutable)");
  const std::string repinned = mpijob("v1", "{}", "Never", 1, R"(,"annotations":{"unitrain.io/managed-by":"kubeflow.org/mpi-operator"})");
  CHECK_FALSE(allowed(admit(h, "/validate-kubeflow-org-v1-mpijob", "UPDATE", repinned, pinned)));
}

TEST_CASE("ownership: kubectl apply of a v2beta1 manifest over a v1 job of that name: AlreadyExists") {
  MpiModules m({"kubeflow.org/mpijob@v1", "kubeflow.org/mpijob@v2beta1"});
  webhook::Handler h(m.plugins, m.registry);
  auto last_applied = [](std::string_view api_version, bool with_uid = false) {
    return fmt::format(R"(,"annotations":{{"kubectl.kubernetes.io/last-applied-configuration":)"
                       R"("{{\"apiVersion\":\"kubeflow.org/{}\",\"kind\":\"MPIJob\",\"metadata\":{{\"name\":\"job\"{}}}}}"}})",
                       api_version, with_uid ? R"(,\"uid\":\"u\")" : "");
  };
  const std::string v1_applied = mpijob("v2beta1", kV1Owner, "Never", 1, last_applied("v1"));
  const std::string v2_manifest_applied = mpijob("v2beta1", "{}", "Never", 1, last_applied("v2beta1"));
  auto refused = admit(h, "/validate-kubeflow-org-v2beta1-mpijob", "UPDATE", v2_manifest_applied, v1_applied);
  CHECK_FALSE(allowed(refused));
  CHECK(json::dump(*json::find(refused.root(), "/response/status")) ==
        R"({"status":"Failure","message":"mpijobs.kubeflow.org \"job\" already exists","reason":"AlreadyExists",)"
        R"("details":{"name":"job","group":"kubeflow.org","kind":"mpijobs"},"code":409})");
  // Never applied before: the owner's version decides.
  const std::string v1_created = mpijob("v2beta1", kV1Owner);
  CHECK_FALSE(allowed(admit(h, "/validate-kubeflow-org-v2beta1-mpijob", "UPDATE", v2_manifest_applied, v1_created)));
  // Not an apply of the other version: re-applying the v1 manifest, or an edit (kubectl edit
  // rewrites the annotation with the whole object, uid included).
  const std::string v1_again = mpijob("v1", kV1Owner, "Never", 1, last_applied("v1"));
  CHECK(allowed(admit(h, "/validate-kubeflow-org-v1-mpijob", "UPDATE", v1_again, mpijob("v1", kV1Owner, "Never", 1, last_applied("v1")))));
  const std::string edited = mpijob("v2beta1", kV1Owner, "Never", 1, last_applied("v2beta1", true));
  CHECK(allowed(admit(h, "/validate-kubeflow-org-v2beta1-mpijob", "UPDATE", edited, v1_applied)));
}

TEST_CASE("ownership: with the v2 module disabled, a v2beta1 write of its jobs is no managedBy error") {
  MpiModules m({"kubeflow.org/mpijob@v1"});
  webhook::Handler h(m.plugins, m.registry);
  const std::string v2_job_as_v1 = mpijob("v1", kV2Owner);
  CHECK(allowed(admit(h, "/validate-kubeflow-org-v1-mpijob", "UPDATE", v2_job_as_v1, v2_job_as_v1)));
  // A value no module knows still is.
  const std::string unknown = mpijob("v1", R"({"managedBy":"example.com/other"})");
  CHECK(message(admit(h, "/validate-kubeflow-org-v1-mpijob", "CREATE", unknown)).find("Unsupported value") != std::string::npos);
}

TEST_CASE("webhook configurations: exactly the served hooks of ours, the others' left alone") {
  MpiModules m({"kubeflow.org/pytorchjob", "kubeflow.org/mpijob@v1"});
  webhook::Handler h(m.plugins, m.registry);
  // As manifests/overlays/mpi-both installs them, plus someone else's hook; the v2beta1 module is off.
  auto validating = doc_of(R"({"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration",)"
                           R"("metadata":{"name":"validator.training-operator.kubeflow.org","resourceVersion":"7"},"webhooks":[)"
                           R"({"name":"validator.pytorchjob.training-operator.kubeflow.org","clientConfig":{"service":)"
                           R"({"namespace":"kubeflow","name":"training-operator","path":"/validate-kubeflow-org-v1-pytorchjob","port":443},"caBundle":"Q0E="},"sideEffects":"None"},)"
                           R"({"name":"validator.mpijob-v2beta1.training-operator.kubeflow.org","clientConfig":{"service":)"
                           R"({"namespace":"kubeflow","name":"training-operator","path":"/validate-kubeflow-org-v2beta1-mpijob","port":443}}},)"
                           R"({"name":"check.example.com","clientConfig":{"url":"https://example.com/check"}}]})");
  auto fallback = doc_of(R"({"service":{"namespace":"ns","name":"svc","port":443}})");
  auto hooks = webhook::synced_webhooks(validating.root(), h, webhook::WebhookType::Validating, fallback.root());
  std::vector<std::string> names;
  for (const auto& hook : hooks.root().GetArray()) names.emplace_back(json::get_string(hook, "/name").value_or(""));
  CHECK(names == std::vector<std::string>{"validator.pytorchjob.training-operator.kubeflow.org", "check.example.com",
                                          "validator.mpijob-v1.training-operator.kubeflow.org"});
  // The added hook reaches the same Service as ours there, at its own path, with the same CA.
  CHECK(json::dump(*json::find(hooks.root(), "/2/clientConfig")) ==
        R"({"service":{"namespace":"kubeflow","name":"training-operator","port":443,"path":"/validate-kubeflow-org-v1-mpijob"},"caBundle":"Q0E="})");
  CHECK(json::dump(*json::find(hooks.root(), "/0")) == json::dump(*json::find(validating.root(), "/webhooks/0")));
  // Nothing to change once synced.
  json::Document synced = json::Document::copy_of(validating.root());
  synced.root()["webhooks"] = json::Value(hooks.root(), synced.alloc());
  CHECK(json::equal(webhook::synced_webhooks(synced.root(), h, webhook::WebhookType::Validating, fallback.root()).root(),
                    hooks.root()));

  // Defaulting hooks: only those that fill managedBy (or persist defaults) are added; none of ours
  // there yet, so the fallback client config is used.
  auto mutating = doc_of(R"({"metadata":{"name":"defaulter.training-operator.kubeflow.org"},"webhooks":[]})");
  auto added = webhook::synced_webhooks(mutating.root(), h, webhook::WebhookType::Mutating, fallback.root());
  REQUIRE(added.root().Size() == 1);
  CHECK(json::get_string(added.root(), "/0/name") == std::string_view("defaulter.mpijob-v1.training-operator.kubeflow.org"));
  CHECK(json::dump(*json::find(added.root(), "/0/clientConfig")) ==
        R"({"service":{"namespace":"ns","name":"svc","port":443,"path":"/mutate-kubeflow-org-v1-mpijob"}})");
}

TEST_CASE("webhook configurations: written only when they differ, a missing configuration left missing") {
  MpiModules m({"kubeflow.org/mpijob@v1"});
  webhook::Handler h(m.plugins, m.registry);
  kube::FakeClient client;
  const auto& validating = webhook::kValidatingConfigurations;
  const auto& mutating = webhook::kMutatingConfigurations;
  client.seed(validating, doc_of(R"({"metadata":{"name":"validator.training-operator.kubeflow.org"},"webhooks":[)"
                                 R"({"name":"validator.mpijob-v2beta1.training-operator.kubeflow.org","clientConfig":{"url":"https://h:1/validate-kubeflow-org-v2beta1-mpijob"}}]})")
                               .root());
  auto fallback = doc_of(R"({"service":{"namespace":"ns","name":"svc","port":443}})");
  REQUIRE(webhook::sync_webhook_configurations(client, h, fallback.root()));
  auto v = client.get(validating, "", "validator.training-operator.kubeflow.org");
  REQUIRE(v);
  INFO(v->dump());
  CHECK(json::dump(*json::find(v->root(), "/webhooks")).find("mpijob-v2beta1") == std::string::npos);
  CHECK(json::get_string(v->root(), "/webhooks/0/clientConfig/url") == std::string_view("https://h:1/validate-kubeflow-org-v1-mpijob"));
  CHECK(client.get(mutating, "", "defaulter.training-operator.kubeflow.org").error().is(kube::ApiError::Reason::NotFound));
  const std::string rv(json::get_string(v->root(), "/metadata/resourceVersion").value_or(""));
  REQUIRE(webhook::sync_webhook_configurations(client, h, fallback.root()));
  CHECK(json::get_string(client.get(validating, "", "validator.training-operator.kubeflow.org")->root(), "/metadata/resourceVersion") ==
        std::string_view(rv));
}
