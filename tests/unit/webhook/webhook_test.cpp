#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/kube/config.h"
#include "core/kube/fake_client.h"
#include "core/webhook/cert_manager.h"
#include "core/webhook/certs.h"
#include "core/webhook/handler.h"
#include "frameworks/mpi/conversion/conversion.h"
#include "frameworks/jobset/register.h"
#include "frameworks/mpi/v2/register.h"
#include "frameworks/pytorch/register.h"

using namespace unitrain;
using namespace std::chrono_literals;

namespace {

json::Document parse(std::string_view text) {
  auto d = json::Document::parse(text);
  REQUIRE(d);
  return std::move(*d);
}

const std::chrono::system_clock::time_point kNow = std::chrono::system_clock::from_time_t(1'800'000'000);

webhook::CertOptions cert_options(std::chrono::seconds validity = std::chrono::hours(24 * 365)) {
  webhook::CertOptions o;
  o.service_name = "training-operator";
  o.service_namespace = "kubeflow";
  o.validity = validity;
  return o;
}

// A second module for MPIJob at kubeflow.org/v1: the webhook routes by (kind, version) and the
// managedBy values of whatever module serves a version.
class MpiV1Stand final : public framework::FrameworkPlugin {
 public:
  MpiV1Stand() {
    d_.name = "kubeflow.org/mpijob@v1";
    d_.group = "kubeflow.org";
    d_.version = "v1";
    d_.kind = "MPIJob";
    d_.plural = "mpijobs";
    d_.kind_alias_default = false;
    d_.managed_by = {"kubeflow.org/training-operator"};
  }
  const framework::FrameworkDescriptor& descriptor() const override { return d_; }
  void set_defaults(json::Document&) const override {}
  framework::Validation validate(const json::Value*, const json::Value& job) const override {
    framework::Validation v;
    if (json::find(job, "/spec/mpiReplicaSpecs/Launcher") == nullptr)
      v.errors.push_back(api::FieldError::required(api::FieldPath("spec").child("mpiReplicaSpecs").key("Launcher"),
                                                   "must be present"));
    return v;
  }
  std::vector<framework::PodSlot> pod_slots(const json::Value&) const override { return {}; }
  Status decorate_pod(const json::Value&, const framework::PodSlot&, json::Document&) const override { return {}; }
  Result<std::vector<framework::DesiredObject>> desired_objects(const json::Value&, const framework::Observed&) const override {
    return std::vector<framework::DesiredObject>{};
  }
  framework::StatusProposal compute_status(const json::Value&, const framework::Observed&) const override { return {}; }

 private:
  framework::FrameworkDescriptor d_;
};

struct Fixture {
  framework::Registry registry;
  std::vector<std::unique_ptr<framework::FrameworkPlugin>> owned;
  std::vector<const framework::FrameworkPlugin*> plugins;

  explicit Fixture(bool with_v1 = true) {
    REQUIRE(frameworks::pytorch::register_pytorch(registry));
    REQUIRE(frameworks::mpi::v2::register_mpi_v2(registry));
    REQUIRE(frameworks::mpi::conversion::register_mpi_conversion(registry));
    for (const char* name : {"kubeflow.org/pytorchjob", "kubeflow.org/mpijob@v2beta1"}) {
      auto p = registry.instantiate(name, {});
      REQUIRE(p);
      owned.push_back(std::move(*p));
    }
    if (with_v1) {
      // Registered too: the webhooks know a kind is shared from the registry.
      framework::Registration v1;
      v1.descriptor = MpiV1Stand().descriptor();
      v1.factory = [](const framework::PluginConfig&) -> std::unique_ptr<framework::FrameworkPlugin> {
        return std::make_unique<MpiV1Stand>();
      };
      REQUIRE(registry.add(std::move(v1)));
      owned.push_back(std::make_unique<MpiV1Stand>());
    }
    for (const auto& p : owned) plugins.push_back(p.get());
  }
};

// An AdmissionReview as kube-apiserver sends it: request.kind and request.resource name the kind
// of the object (or, on DELETE, of the old object) at its version.
std::string review(std::string_view operation, std::string_view object, std::string_view old_object = "null") {
  auto typed = parse(object);
  if (!typed.root().IsObject()) typed = parse(old_object);
  const std::string api_version(json::get_string(typed.root(), "/apiVersion").value_or("kubeflow.org/v1"));
  const std::string kind(json::get_string(typed.root(), "/kind").value_or(""));
  const auto slash = api_version.find('/');
  const std::string group = api_version.substr(0, slash), version = api_version.substr(slash + 1);
  std::string plural;
  for (char c : kind) plural += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return fmt::format(R"({{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u-1",)"
                     R"("kind":{{"group":"{0}","version":"{1}","kind":"{2}"}},)"
                     R"("resource":{{"group":"{0}","version":"{1}","resource":"{3}s"}},)"
                     R"("operation":"{4}","name":"job","namespace":"default","object":{5},"oldObject":{6}}}}})",
                     group, version, kind, plural, operation, object, old_object);
}

constexpr std::string_view kGoodPyTorch =
    R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"job","namespace":"default"},)"
    R"("spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":{"spec":{"containers":[{"name":"pytorch","image":"x"}]}}}}}})";

}  // namespace

TEST_CASE("certs: a CA and a serving certificate for the Service's DNS names") {
  auto b = webhook::generate_certs(cert_options(), kNow);
  REQUIRE(b);
  CHECK(b->ca_cert.rfind("-----BEGIN CERTIFICATE-----", 0) == 0);
  CHECK(b->key.rfind("-----BEGIN PRIVATE KEY-----", 0) == 0);
  CHECK(webhook::dns_names(cert_options()) ==
        std::vector<std::string>{"training-operator", "training-operator.kubeflow", "training-operator.kubeflow.svc",
                                 "training-operator.kubeflow.svc.cluster.local"});
  CHECK(webhook::check_certs(*b, cert_options(), kNow, 24h));
  auto end = webhook::not_after(b->cert);
  REQUIRE(end);
  CHECK(*end == kNow + std::chrono::hours(24 * 365));
}

TEST_CASE("certs: check names the reason a bundle cannot serve") {
  auto b = webhook::generate_certs(cert_options(10s), kNow);
  REQUIRE(b);
  auto expiring = webhook::check_certs(*b, cert_options(10s), kNow, 20s);
  REQUIRE_FALSE(expiring);
  CHECK(expiring.error().message == "ca.crt expires within 20 s");
  auto other = cert_options();
  other.service_name = "elsewhere";
  auto wrong_name = webhook::check_certs(*b, other, kNow, 1s);
  REQUIRE_FALSE(wrong_name);
  CHECK(wrong_name.error().message == "tls.crt is not valid for elsewhere.kubeflow.svc");
  auto local = cert_options(10s);
  local.ip_addresses = {"127.0.0.1"};
  auto no_ip = webhook::check_certs(*b, local, kNow, 1s);
  REQUIRE_FALSE(no_ip);
  CHECK(no_ip.error().message == "tls.crt is not valid for 127.0.0.1");
  auto with_ip = webhook::generate_certs(local, kNow);
  REQUIRE(with_ip);
  CHECK(webhook::check_certs(*with_ip, local, kNow, 1s));
  auto c = webhook::generate_certs(cert_options(), kNow);
  REQUIRE(c);
  auto mixed = *b;
  mixed.ca_cert = c->ca_cert;
  mixed.ca_key = c->ca_key;
  auto unsigned_by_ca = webhook::check_certs(mixed, cert_options(10s), kNow, 1s);
  REQUIRE_FALSE(unsigned_by_ca);
  CHECK(unsigned_by_ca.error().message.rfind("tls.crt is not signed by ca.crt", 0) == 0);
  mixed = *b;
  mixed.key = c->key;
  auto wrong_key = webhook::check_certs(mixed, cert_options(10s), kNow, 1s);
  REQUIRE_FALSE(wrong_key);
  CHECK(wrong_key.error().message.rfind("tls.key does not match tls.crt", 0) == 0);
  mixed.key = "garbage";
  CHECK(webhook::check_certs(mixed, cert_options(), kNow, 1s).error().message == "tls.key is not a PEM private key");
}

TEST_CASE("cert manager: creates the Secret, reuses it, rotates it before expiry and patches every caBundle") {
  kube::FakeClient client;
  const kube::GroupVersionResource secrets{"", "v1", "secrets"};
  const kube::GroupVersionResource vwc{"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"};
  const kube::GroupVersionResource crds{"apiextensions.k8s.io", "v1", "customresourcedefinitions"};
  client.seed(vwc, parse(R"({"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration",)"
                         R"("metadata":{"name":"validator.training-operator.kubeflow.org"},"webhooks":[)"
                         R"({"name":"a","clientConfig":{"url":"https://127.0.0.1:9443/a"}},)"
                         R"({"name":"b","clientConfig":{"service":{"namespace":"kubeflow","name":"training-operator"}}}]})")
                       .root());
  client.seed(crds, parse(R"({"metadata":{"name":"mpijobs.kubeflow.org"},"spec":{"conversion":{"strategy":"Webhook",)"
                          R"("webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"https://x/convert"}}}}})")
                        .root());
  client.seed(crds, parse(R"({"metadata":{"name":"tfjobs.kubeflow.org"},"spec":{"conversion":{"strategy":"None"}}})").root());

  webhook::CertManagerOptions o;
  o.cert = cert_options(std::chrono::hours(100));
  o.lookahead = webhook::default_lookahead(o.cert.validity);
  CHECK(o.lookahead == std::chrono::hours(25));
  o.validating_configurations = {"validator.training-operator.kubeflow.org"};
  o.mutating_configurations = {"defaulter.training-operator.kubeflow.org"};  // not installed: skipped
  o.crds = {"mpijobs.kubeflow.org", "tfjobs.kubeflow.org"};
  webhook::CertManager manager(client, o);

  auto first = manager.ensure(kNow);
  REQUIRE(first);
  REQUIRE(manager.inject_ca(first->ca_cert));
  auto secret = client.get(secrets, "kubeflow", "training-operator-webhook-cert");
  REQUIRE(secret);
  CHECK(kube::base64_decode(*json::get_string(secret->root(), "/data/tls.crt")).value_or("") == first->cert);
  CHECK(kube::base64_decode(*json::get_string(secret->root(), "/data/ca.key")).value_or("") == first->ca_key);
  const std::string bundle = webhook::base64_encode(first->ca_cert);
  auto config = client.get(vwc, "", "validator.training-operator.kubeflow.org");
  CHECK(json::get_string(config->root(), "/webhooks/0/clientConfig/caBundle") == std::string_view(bundle));
  CHECK(json::get_string(config->root(), "/webhooks/1/clientConfig/caBundle") == std::string_view(bundle));
  auto mpi = client.get(crds, "", "mpijobs.kubeflow.org");
  CHECK(json::get_string(mpi->root(), "/spec/conversion/webhook/clientConfig/caBundle") == std::string_view(bundle));
  auto tf = client.get(crds, "", "tfjobs.kubeflow.org");
  CHECK(json::find(tf->root(), "/spec/conversion/webhook") == nullptr);

  // A restart (or another replica) well within validity reuses the Secret and writes nothing.
  client.clear_writes();
  webhook::CertManager restarted(client, o);
  auto again = restarted.ensure(kNow + 50h);
  REQUIRE(again);
  REQUIRE(restarted.inject_ca(again->ca_cert));
  CHECK(*again == *first);
  CHECK(client.write_count() == 0);

  // Inside the lookahead the certificates are replaced and every caBundle follows.
  auto rotated = restarted.ensure(kNow + 80h);
  REQUIRE(rotated);
  REQUIRE(restarted.inject_ca(rotated->ca_cert));
  CHECK_FALSE(rotated->ca_cert == first->ca_cert);
  CHECK(webhook::check_certs(*rotated, o.cert, kNow + 80h, o.lookahead));
  auto stored = client.get(secrets, "kubeflow", "training-operator-webhook-cert");
  CHECK(kube::base64_decode(*json::get_string(stored->root(), "/data/tls.crt")).value_or("") == rotated->cert);
  config = client.get(vwc, "", "validator.training-operator.kubeflow.org");
  CHECK(json::get_string(config->root(), "/webhooks/1/clientConfig/caBundle") ==
        std::string_view(webhook::base64_encode(rotated->ca_cert)));
  mpi = client.get(crds, "", "mpijobs.kubeflow.org");
  CHECK(json::get_string(mpi->root(), "/spec/conversion/webhook/clientConfig/caBundle") ==
        std::string_view(webhook::base64_encode(rotated->ca_cert)));
}

TEST_CASE("cert manager: a missing Secret namespace is its own failure, other write failures are not") {
  kube::FakeClient client;
  webhook::CertManagerOptions o;
  o.cert = cert_options();
  o.secret_namespace = "nowhere";
  webhook::CertManager manager(client, o);
  kube::ApiError missing;
  missing.reason = kube::ApiError::Reason::NotFound;
  missing.code = 404;
  missing.message = "namespaces \"nowhere\" not found";
  client.fail_next(kube::FakeClient::Verb::Create, missing);
  auto b = manager.ensure(kNow);
  REQUIRE_FALSE(b);
  CHECK(b.error().namespace_missing);
  CHECK(b.error().message == "namespace \"nowhere\" for the Secret training-operator-webhook-cert does not exist");
  kube::ApiError forbidden;
  forbidden.reason = kube::ApiError::Reason::Forbidden;
  forbidden.code = 403;
  forbidden.message = "no";
  client.fail_next(kube::FakeClient::Verb::Create, forbidden);
  auto denied = manager.ensure(kNow);
  REQUIRE_FALSE(denied);
  CHECK_FALSE(denied.error().namespace_missing);
  CHECK(denied.error().message.find("writing Secret nowhere/training-operator-webhook-cert: Forbidden (403)") == 0);
  CHECK(manager.ensure(kNow));
}

TEST_CASE("cert manager: a Secret with unusable data is replaced") {
  kube::FakeClient client;
  const kube::GroupVersionResource secrets{"", "v1", "secrets"};
  client.seed(secrets, parse(R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"training-operator-webhook-cert",)"
                             R"("namespace":"kubeflow"},"data":{"ca.crt":"bm9wZQ=="}})").root());
  webhook::CertManagerOptions o;
  o.cert = cert_options();
  webhook::CertManager manager(client, o);
  auto b = manager.ensure(kNow);
  REQUIRE(b);
  CHECK(webhook::check_certs(*b, o.cert, kNow, o.lookahead));
  auto stored = client.get(secrets, "kubeflow", "training-operator-webhook-cert");
  CHECK(kube::base64_decode(*json::get_string(stored->root(), "/data/ca.crt")).value_or("") == b->ca_cert);
}

TEST_CASE("json patch diff: member adds, removes and replaces, arrays whole") {
  auto from = parse(R"({"a":1,"b":{"c":"x","d/e":[1,2]},"gone":true})");
  auto to = parse(R"({"a":2,"b":{"c":"x","d/e":[1,3],"new":{"k":null}}})");
  CHECK(webhook::json_patch_diff(from.root(), to.root()).dump() ==
        R"([{"op":"remove","path":"/gone"},{"op":"replace","path":"/a","value":2},)"
        R"({"op":"replace","path":"/b/d~1e","value":[1,3]},{"op":"add","path":"/b/new","value":{"k":null}}])");
  CHECK(webhook::json_patch_diff(from.root(), from.root()).dump() == "[]");
}

TEST_CASE("admission: endpoints per enabled framework, versioned names where two modules share a kind") {
  Fixture f;
  webhook::Handler h(f.plugins, f.registry);
  std::vector<std::string> got;
  for (const auto& e : h.endpoints()) got.push_back(e.path + " " + e.name);
  CHECK(got == std::vector<std::string>{
                   "/validate-kubeflow-org-v1-pytorchjob validator.pytorchjob.training-operator.kubeflow.org",
                   "/mutate-kubeflow-org-v1-pytorchjob defaulter.pytorchjob.training-operator.kubeflow.org",
                   "/validate-kubeflow-org-v2beta1-mpijob validator.mpijob-v2beta1.training-operator.kubeflow.org",
                   "/mutate-kubeflow-org-v2beta1-mpijob defaulter.mpijob-v2beta1.training-operator.kubeflow.org",
                   "/validate-kubeflow-org-v1-mpijob validator.mpijob-v1.training-operator.kubeflow.org",
                   "/mutate-kubeflow-org-v1-mpijob defaulter.mpijob-v1.training-operator.kubeflow.org"});
  CHECK(h.conversion_crds() == std::vector<std::string>{"mpijobs.kubeflow.org"});
  Fixture pytorch_only;
  pytorch_only.plugins.erase(pytorch_only.plugins.begin() + 1, pytorch_only.plugins.end());
  CHECK(webhook::Handler(pytorch_only.plugins, pytorch_only.registry).conversion_crds().empty());
}

TEST_CASE("admission: an invalid job is denied with the reference field paths as an Invalid status") {
  Fixture f;
  webhook::Handler h(f.plugins, f.registry);
  auto reply = h.handle("/validate-kubeflow-org-v1-pytorchjob",
                        review("CREATE", R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"job"},"spec":{}})"));
  CHECK(reply.status == 200);
  CHECK(reply.body ==
        R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":false,)"
        R"("status":{"metadata":{},"status":"Failure","message":"PyTorchJob.kubeflow.org \"job\" is invalid: )"
        R"(spec.pytorchReplicaSpecs: Required value: must be required","reason":"Invalid","details":{"name":"job",)"
        R"("group":"kubeflow.org","kind":"PyTorchJob","causes":[{"reason":"FieldValueRequired",)"
        R"("message":"Required value: must be required","field":"spec.pytorchReplicaSpecs"}]},"code":422}}})");
  auto ok = h.handle("/validate-kubeflow-org-v1-pytorchjob", review("CREATE", kGoodPyTorch));
  CHECK(ok.body == R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true}})");
}

TEST_CASE("admission: managedBy is filled from the version written and cannot change") {
  Fixture f;
  webhook::Handler h(f.plugins, f.registry);
  constexpr std::string_view v1 =
      R"({"apiVersion":"kubeflow.org/v1","kind":"MPIJob","metadata":{"name":"job"},"spec":{"mpiReplicaSpecs":{}}})";
  auto mutated = h.handle("/mutate-kubeflow-org-v1-mpijob", review("CREATE", v1));
  auto doc = parse(mutated.body);
  CHECK(json::get_bool(doc.root(), "/response/allowed") == true);
  CHECK(json::get_string(doc.root(), "/response/patchType") == std::string_view("JSONPatch"));
  CHECK(kube::base64_decode(*json::get_string(doc.root(), "/response/patch")).value_or("") ==
        std::string(R"([{"op":"add","path":"/spec/runPolicy","value":{"managedBy":"kubeflow.org/training-operator"}}])"));
  constexpr std::string_view v2 =
      R"({"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"job"},"spec":{"runPolicy":{}}})";
  doc = parse(h.handle("/mutate-kubeflow-org-v2beta1-mpijob", review("CREATE", v2)).body);
  CHECK(kube::base64_decode(*json::get_string(doc.root(), "/response/patch")).value_or("") ==
        std::string(R"([{"op":"add","path":"/spec/runPolicy/managedBy","value":"kubeflow.org/mpi-operator"}])"));
  // A value the user chose (another controller's) is left alone; so is an update.
  constexpr std::string_view kueue =
      R"({"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"job"},)"
      R"("spec":{"runPolicy":{"managedBy":"kueue.x-k8s.io/multikueue"}}})";
  doc = parse(h.handle("/mutate-kubeflow-org-v2beta1-mpijob", review("CREATE", kueue)).body);
  CHECK(json::find(doc.root(), "/response/patch") == nullptr);
  doc = parse(h.handle("/mutate-kubeflow-org-v2beta1-mpijob", review("UPDATE", v2, v2)).body);
  CHECK(json::find(doc.root(), "/response/patch") == nullptr);

  constexpr std::string_view owned_v1 =
      R"({"apiVersion":"kubeflow.org/v1","kind":"MPIJob","metadata":{"name":"job"},"spec":{"mpiReplicaSpecs":{"Launcher":{}},)"
      R"("runPolicy":{"managedBy":"kubeflow.org/training-operator"}}})";
  constexpr std::string_view moved_v1 =
      R"({"apiVersion":"kubeflow.org/v1","kind":"MPIJob","metadata":{"name":"job"},"spec":{"mpiReplicaSpecs":{"Launcher":{}},)"
      R"("runPolicy":{"managedBy":"kubeflow.org/mpi-operator"}}})";
  doc = parse(h.handle("/validate-kubeflow-org-v1-mpijob", review("UPDATE", moved_v1, owned_v1)).body);
  CHECK(json::get_bool(doc.root(), "/response/allowed") == false);
  CHECK(json::get_string(doc.root(), "/response/status/message") ==
        std::string_view(R"(MPIJob.kubeflow.org "job" is invalid: spec.runPolicy.managedBy: Invalid value: )"
                         R"("kubeflow.org/mpi-operator": field is immutable)"));
  doc = parse(h.handle("/validate-kubeflow-org-v1-mpijob", review("UPDATE", owned_v1, owned_v1)).body);
  CHECK(json::get_bool(doc.root(), "/response/allowed") == true);
}

TEST_CASE("admission: with one module per kind no managedBy is filled, defaults persist only when asked") {
  Fixture f(false);
  webhook::Handler h(f.plugins, f.registry);
  constexpr std::string_view v2 =
      R"({"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"job"},"spec":{"mpiReplicaSpecs":{}}})";
  auto doc = parse(h.handle("/mutate-kubeflow-org-v2beta1-mpijob", review("CREATE", v2)).body);
  CHECK(json::find(doc.root(), "/response/patch") == nullptr);
  webhook::Handler defaulting(f.plugins, f.registry, webhook::HandlerOptions{.persist_defaults = true});
  doc = parse(defaulting.handle("/mutate-kubeflow-org-v1-pytorchjob", review("CREATE", kGoodPyTorch)).body);
  auto patch = kube::base64_decode(*json::get_string(doc.root(), "/response/patch"));
  REQUIRE(patch);
  // Applying the patch gives exactly what set_defaults makes of the job.
  auto job = parse(kGoodPyTorch);
  auto expected = parse(kGoodPyTorch);
  f.plugins[0]->set_defaults(expected);
  REQUIRE(json::apply_json_patch(job, parse(*patch).root()));
  CHECK(job.dump() == expected.dump());
  CHECK_FALSE(job.dump() == parse(kGoodPyTorch).dump());
}

TEST_CASE("admission: a module whose reference validates the defaulted job gets it defaulted") {
  Fixture f;
  webhook::Handler h(f.plugins, f.registry);
  // mpi-operator fills restartPolicy before validating; a job that leaves it out is valid.
  constexpr std::string_view v2 =
      R"({"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"pi"},"spec":{"mpiReplicaSpecs":{)"
      R"("Launcher":{"replicas":1,"template":{"spec":{"containers":[{"name":"l","image":"x"}]}}},)"
      R"("Worker":{"replicas":1,"template":{"spec":{"containers":[{"name":"w","image":"x"}]}}}}}})";
  auto doc = parse(h.handle("/validate-kubeflow-org-v2beta1-mpijob", review("CREATE", v2)).body);
  CHECK(json::get_bool(doc.root(), "/response/allowed") == true);
  constexpr std::string_view two_launchers =
      R"({"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"pi"},"spec":{"mpiReplicaSpecs":{)"
      R"("Launcher":{"replicas":2,"template":{"spec":{"containers":[{"name":"l","image":"x"}]}}}}}})";
  doc = parse(h.handle("/validate-kubeflow-org-v2beta1-mpijob", review("CREATE", two_launchers)).body);
  CHECK(json::get_bool(doc.root(), "/response/allowed") == false);
  CHECK(json::dump(*json::find(doc.root(), "/response/status/details/causes/0")) ==
        R"({"reason":"FieldValueInvalid","message":"Invalid value: 2: must be 1","field":"spec.mpiReplicaSpecs[Launcher].replicas"})");
}

TEST_CASE("conversion review: converts every object or reports the failure") {
  Fixture f;
  webhook::Handler h(f.plugins, f.registry);
  auto reply = h.handle(webhook::kConvertPath,
                        R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"c-1",)"
                        R"("desiredAPIVersion":"kubeflow.org/v1","objects":[{"apiVersion":"kubeflow.org/v2beta1",)"
                        R"("kind":"MPIJob","metadata":{"name":"a"},"spec":{"slotsPerWorker":1}}]}})");
  CHECK(reply.body ==
        R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"c-1",)"
        R"("convertedObjects":[{"apiVersion":"kubeflow.org/v1","kind":"MPIJob","metadata":{"name":"a"},)"
        R"("spec":{"slotsPerWorker":1}}],"result":{"status":"Success"}}})");
  auto failed = h.handle(webhook::kConvertPath,
                         R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"c-2",)"
                         R"("desiredAPIVersion":"kubeflow.org/v1","objects":[{"apiVersion":"kubeflow.org/v1",)"
                         R"("kind":"TFJob","metadata":{"name":"a"}}]}})");
  CHECK(failed.body == R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"c-2",)"
                       R"("result":{"status":"Failure","message":"no conversion for kubeflow.org/v1 TFJob"}}})");
}

TEST_CASE("configurations: one hook per endpoint, matchPolicy Exact, url or service path per hook") {
  Fixture f;
  webhook::Handler h(f.plugins, f.registry);
  auto url = parse(R"({"url":"https://127.0.0.1:9443/"})");
  auto v = h.validating_configuration(url.root());
  CHECK(json::get_string(v.root(), "/metadata/name") == std::string_view("validator.training-operator.kubeflow.org"));
  CHECK(json::get_string(v.root(), "/webhooks/2/clientConfig/url") ==
        std::string_view("https://127.0.0.1:9443/validate-kubeflow-org-v1-mpijob"));
  CHECK(json::dump(*json::find(v.root(), "/webhooks/2/rules")) ==
        R"([{"apiGroups":["kubeflow.org"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["mpijobs"],)"
        R"("scope":"Namespaced"}])");
  CHECK(json::get_string(v.root(), "/webhooks/2/matchPolicy") == std::string_view("Exact"));
  auto service = parse(R"({"service":{"namespace":"kubeflow","name":"training-operator","port":443}})");
  auto m = h.mutating_configuration(service.root());
  CHECK(json::get_string(m.root(), "/kind") == std::string_view("MutatingWebhookConfiguration"));
  // Defaulting webhooks are registered only where they change something: MPIJob, which two
  // modules serve (managedBy from the version written); PyTorchJob's would answer "no patch".
  CHECK(json::dump(*json::find(m.root(), "/webhooks/0/clientConfig")) ==
        R"({"service":{"namespace":"kubeflow","name":"training-operator","port":443,"path":"/mutate-kubeflow-org-v2beta1-mpijob"}})");
  CHECK(json::get_string(m.root(), "/webhooks/1/name") == std::string_view("defaulter.mpijob-v1.training-operator.kubeflow.org"));
  CHECK(json::find(m.root(), "/webhooks/2") == nullptr);
  // Persisted defaults change every kind's objects: then every defaulting webhook is registered.
  webhook::Handler persisting(f.plugins, f.registry, webhook::HandlerOptions{.persist_defaults = true});
  auto all = persisting.mutating_configuration(service.root());
  CHECK(json::get_string(all.root(), "/webhooks/0/name") == std::string_view("defaulter.pytorchjob.training-operator.kubeflow.org"));
  CHECK(json::find(all.root(), "/webhooks/2") != nullptr);
}

TEST_CASE("admission: a module that persists its own defaults gets its defaulting webhook on those operations") {
  framework::Registry registry;
  REQUIRE(frameworks::jobset::register_jobset(registry));
  auto plugin = registry.instantiate("jobset", {});
  REQUIRE(plugin);
  webhook::Handler h({plugin->get()}, registry);
  auto service = parse(R"({"service":{"namespace":"kubeflow","name":"training-operator","port":443}})");
  auto m = h.mutating_configuration(service.root());
  CHECK(json::get_string(m.root(), "/webhooks/0/clientConfig/service/path") ==
        std::string_view("/mutate-jobset-x-k8s-io-v1alpha2-jobset"));
  CHECK(json::dump(*json::find(m.root(), "/webhooks/0/rules/0/operations")) == R"(["CREATE"])");
  constexpr std::string_view js =
      R"({"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"job"},"spec":{"replicatedJobs":[)"
      R"({"name":"a","template":{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}}}]}})";
  // CREATE: the defaults are written into the object; UPDATE: left as they are.
  auto created = parse(h.handle("/mutate-jobset-x-k8s-io-v1alpha2-jobset", review("CREATE", js)).body);
  auto patch = kube::base64_decode(*json::get_string(created.root(), "/response/patch"));
  REQUIRE(patch);
  auto job = parse(js);
  REQUIRE(json::apply_json_patch(job, parse(*patch).root()));
  CHECK(json::get_string(job.root(), "/spec/successPolicy/operator") == std::string_view("All"));
  CHECK(json::get_string(job.root(), "/spec/replicatedJobs/0/template/spec/completionMode") == std::string_view("Indexed"));
  auto updated = parse(h.handle("/mutate-jobset-x-k8s-io-v1alpha2-jobset", review("UPDATE", js, js)).body);
  CHECK(json::find(updated.root(), "/response/patch") == nullptr);
  // The validating webhook answers with upstream's message.
  constexpr std::string_view bad =
      R"({"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"job"},"spec":{)"
      R"("successPolicy":{"operator":"All","targetReplicatedJobs":["ghost"]},"replicatedJobs":[)"
      R"({"name":"a","template":{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}}}]}})";
  auto refused = parse(h.handle("/validate-jobset-x-k8s-io-v1alpha2-jobset", review("CREATE", bad)).body);
  CHECK(json::get_bool(refused.root(), "/response/allowed") == false);
  CHECK_THAT(json::dump(refused.root()),
             Catch::Contains("invalid replicatedJob name 'ghost' does not appear in .spec.ReplicatedJobs"));
}
