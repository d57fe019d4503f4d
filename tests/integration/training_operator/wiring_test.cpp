// The parts cmd/training-operator wires together, built from a command line as main() builds
// them, with a framework that exists only in this test and reports the configuration its plugin
// was built with.
#include <catch2/catch.hpp>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "cmd/training-operator/controllers.h"
#include "cmd/training-operator/flags.h"
#include "cmd/training-operator/webhooks.h"
#include "core/framework/registry.h"
#include "core/kube/clock.h"
#include "core/kube/fake_client.h"
#include "core/kube/fault_log.h"
#include "tests/support/eventually.h"
#include "tests/support/forwarding_client.h"

namespace fw = unitrain::framework;
namespace json = unitrain::json;
namespace kube = unitrain::kube;
namespace op = unitrain::operator_cmd;
using unitrain::testing::eventually;

namespace {

const kube::GroupVersionResource kConfigJobs{"test.unitrain.io", "v1", "configjobs"};
const kube::GroupVersionResource kPods{"", "v1", "pods"};
constexpr const char* kSeenAnnotation = "test.unitrain.io/plugin";

fw::FrameworkDescriptor config_descriptor() {
  fw::FrameworkDescriptor d;
  d.name = "test.unitrain.io/configjob";
  d.group = "test.unitrain.io";
  d.version = "v1";
  d.kind = "ConfigJob";
  d.plural = "configjobs";
  d.singular = "configjob";
  d.replica_specs_field = "configReplicaSpecs";
  d.replica_types = {"Worker"};
  d.default_container = "main";
  d.controller_name = "configjob-controller";
  d.managed_by = {"kubeflow.org/training-operator"};
  return d;
}

// Says which object it is and what it was built with, through both paths: a validation warning
// (webhooks) and a pod annotation (controller).
class ConfigEchoPlugin final : public fw::FrameworkPlugin, public fw::PipelineDepartures {
 public:
  ConfigEchoPlugin(fw::FrameworkDescriptor d, const fw::PluginConfig& c)
      : d_(std::move(d)),
        seen_(fmt::format("plugin {} image={} gang={} domain={}", static_cast<const void*>(this),
                          c.option("configjob-image"), c.gang_scheduler_name, c.cluster_domain)) {}
  const fw::FrameworkDescriptor& descriptor() const override { return d_; }
  fw::Capabilities capabilities() const override { return {.departures = this}; }
  bool gang_holds_pod_creation() const override { return false; }  // no Volcano here to admit the PodGroup
  void set_defaults(json::Document&) const override {}
  fw::Validation validate(const json::Value*, const json::Value&) const override {
    fw::Validation v;
    v.warnings.push_back(seen_);
    return v;
  }
  std::vector<fw::PodSlot> pod_slots(const json::Value&) const override { return {{"Worker", 0}}; }
  unitrain::Status decorate_pod(const json::Value&, const fw::PodSlot&, json::Document& pod) const override {
    return json::set_string(pod, "/metadata/annotations/" + json::escape_pointer_token(kSeenAnnotation), seen_);
  }
  unitrain::Result<std::vector<fw::DesiredObject>> desired_objects(const json::Value&, const fw::Observed&) const override {
    return std::vector<fw::DesiredObject>{};
  }
  fw::StatusProposal compute_status(const json::Value&, const fw::Observed&) const override { return {}; }

 private:
  fw::FrameworkDescriptor d_;
  std::string seen_;
};

constexpr std::string_view kJob =
    R"({"apiVersion":"test.unitrain.io/v1","kind":"ConfigJob","metadata":{"name":"job","namespace":"default"},)"
    R"("spec":{"configReplicaSpecs":{"Worker":{"replicas":1,"template":{"spec":{"containers":[{"name":"main","image":"x"}]}}}}}})";

// The API server, where writing the webhook CA into the ValidatingWebhookConfiguration (an
// update that carries a caBundle) is refused with 403 or held until release().
class CaInjectionGate final : public unitrain::testing::ForwardingClient {
 public:
  enum class Mode { Refuse, Hold };
  CaInjectionGate(kube::Client& inner, Mode mode) : ForwardingClient(inner), mode_(mode) {}

  kube::ApiResult<json::Document> update(const kube::GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                         const kube::WriteOptions& opts = {}) override {
    if (r == unitrain::webhook::kValidatingConfigurations &&
        !json::string_at(obj, "/webhooks/0/clientConfig/caBundle").empty()) {
      std::unique_lock lock(mu_);
      if (mode_ == Mode::Refuse && !released_) {
        kube::ApiError e;
        e.reason = kube::ApiError::Reason::Forbidden;
        e.code = 403;
        e.message = "cannot update validatingwebhookconfigurations";
        return unitrain::fail(std::move(e));
      }
      held_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
    }
    return inner_.update(r, ns, obj, opts);
  }

  // Whether an injection waits in update() (Mode::Hold).
  bool holding() {
    std::lock_guard lock(mu_);
    return held_ && !released_;
  }
  // Lets every injection through from now on.
  void release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  const Mode mode_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  bool released_ = false;
};

}  // namespace

TEST_CASE("webhooks and controllers share each framework's one plugin, built with the whole configuration") {
  fw::Registry registry;
  REQUIRE(registry.add(fw::registration_of<ConfigEchoPlugin>(
      config_descriptor(), {{"configjob-image", "default-image", "the image of ConfigJob pods"}})));
  REQUIRE(setenv("CUSTOM_CLUSTER_DOMAIN", "cluster.example", 1) == 0);
  const char* argv[] = {"training-operator", "--gang-scheduler-name", "volcano", "--configjob-image", "my-image"};
  auto flags = op::parse_flags(5, argv, registry);
  REQUIRE(flags);
  REQUIRE(flags->enabled == std::vector<std::string>{"test.unitrain.io/configjob"});

  kube::FakeClient client;
  kube::RealClock clock;
  kube::FaultLog faults(clock, {"https://fake", "no credentials"});
  auto controllers = op::Controllers::create(registry, *flags, client, client, clock, faults);
  REQUIRE(controllers);
  REQUIRE((*controllers)->all().size() == 1);
  op::OperatorWebhooks webhooks(client, (*controllers)->plugins(), registry, op::webhook_options(*flags, false));

  // The webhook path: the validating webhook's warning.
  std::string validate_path;
  for (const auto& e : webhooks.handler().endpoints())
    if (e.type == unitrain::webhook::WebhookType::Validating) validate_path = e.path;
  REQUIRE_FALSE(validate_path.empty());
  auto reply = webhooks.handler().handle(
      validate_path, fmt::format(R"({{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{)"
                                 R"("uid":"u-1","kind":{{"group":"test.unitrain.io","version":"v1","kind":"ConfigJob"}},)"
                                 R"("resource":{{"group":"test.unitrain.io","version":"v1","resource":"configjobs"}},)"
                                 R"("operation":"CREATE","name":"job","namespace":"default","object":{}}}}})",
                                 kJob));
  REQUIRE(reply.status == 200);
  auto review = json::Document::parse(reply.body);
  REQUIRE(review);
  const std::string webhook_saw(json::get_string(review->root(), "/response/warnings/0").value_or(""));
  CHECK_THAT(webhook_saw, Catch::EndsWith("image=my-image gang=volcano domain=cluster.example"));

  // The controller path: the annotation on the pod it created.
  REQUIRE(client.seed(kConfigJobs, json::Document::parse(kJob)->root()).root().IsObject());
  auto& controller = *(*controllers)->all().front().controller;
  // As main() runs them: the process's caches first, then the controller's workers.
  (*controllers)->caches().start();
  controller.start();
  std::string controller_saw;
  REQUIRE(eventually([&] {
    auto pods = client.list(kPods, "default", {});
    if (!pods) return false;
    const json::Value* items = json::find(pods->root(), "/items");
    if (items == nullptr || !items->IsArray() || items->Empty()) return false;
    controller_saw = std::string(
        json::get_string((*items)[0], "/metadata/annotations/" + json::escape_pointer_token(kSeenAnnotation)).value_or(""));
    return true;
  }));
  controller.stop();
  (*controllers)->caches().stop();
  // The same object (its address is in the text) with the same configuration.
  CHECK(controller_saw == webhook_saw);
}

TEST_CASE("the cluster domain flag reaches the modules and wins over $CUSTOM_CLUSTER_DOMAIN") {
  fw::Registry registry;
  REQUIRE(registry.add(fw::registration_of<ConfigEchoPlugin>(
      config_descriptor(), {{"configjob-image", "default-image", "the image of ConfigJob pods"}})));
  REQUIRE(setenv("CUSTOM_CLUSTER_DOMAIN", "cluster.example", 1) == 0);
  const char* from_env[] = {"training-operator"};
  auto env_only = op::parse_flags(1, from_env, registry);
  REQUIRE(env_only);
  CHECK(op::plugin_config(*env_only, *registry.find("test.unitrain.io/configjob")).cluster_domain == "cluster.example");
  const char* argv[] = {"training-operator", "--cluster-domain", "corp.example.org"};
  auto flags = op::parse_flags(3, argv, registry);
  REQUIRE(flags);
  CHECK(op::plugin_config(*flags, *registry.find("test.unitrain.io/configjob")).cluster_domain == "corp.example.org");
  REQUIRE(unsetenv("CUSTOM_CLUSTER_DOMAIN") == 0);
}

TEST_CASE("a webhook replica is Ready once its CA is in the webhook configuration and not when it first serves") {
  fw::Registry registry;
  REQUIRE(registry.add(fw::registration_of<ConfigEchoPlugin>(
      config_descriptor(), {{"configjob-image", "default-image", "the image of ConfigJob pods"}})));
  auto plugin = registry.instantiate("test.unitrain.io/configjob", {});
  REQUIRE(plugin);
  const char* argv[] = {"training-operator"};
  auto flags = op::parse_flags(1, argv, registry);
  REQUIRE(flags);
  // As with --embedded-cluster: the server on a kernel-picked port of 127.0.0.1.
  const auto options = op::webhook_options(*flags, true);
  REQUIRE(options.port == 0);

  kube::FakeClient api;
  const auto mode = GENERATE(CaInjectionGate::Mode::Refuse, CaInjectionGate::Mode::Hold);
  CaInjectionGate client(api, mode);
  op::OperatorWebhooks webhooks(client, {plugin->get()}, registry, options);
  // A failed check below must not leave the certificate thread held in update() while stop() joins it.
  struct ReleaseAtExit {
    CaInjectionGate& gate;
    ~ReleaseAtExit() { gate.release(); }
  } release_at_exit{client};
  // The configuration as installed, its caBundle still empty.
  json::Document client_config = json::Document::object();
  REQUIRE(json::set_string(client_config, "/url", "https://127.0.0.1:9443"));
  const std::string name(unitrain::webhook::kValidatingConfigurationName);
  api.seed(unitrain::webhook::kValidatingConfigurations,
           webhooks.handler().validating_configuration(client_config.root()).root());
  REQUIRE(webhooks.start({}));

  if (mode == CaInjectionGate::Mode::Refuse) {
    // The certificate is served, but the API server cannot verify it yet: not Ready, and /readyz says why.
    REQUIRE(eventually([&] { return webhooks.last_failure().find("caBundle") != std::string::npos; }));
    CHECK_FALSE(webhooks.ca_cert().empty());
    CHECK_FALSE(webhooks.certificates_ready());
    auto ready = webhooks.readiness();
    REQUIRE_FALSE(ready);
    CHECK_THAT(ready.error().message, Catch::StartsWith("certificates are not ready: webhook caBundle: patching caBundle of "
                                                        "validatingwebhookconfigurations.admissionregistration.k8s.io " +
                                                        name + ": "));
    CHECK_THAT(ready.error().message, Catch::Contains("cannot update validatingwebhookconfigurations"));
    CHECK_FALSE(webhooks.wait_ready({}, std::chrono::seconds(0)));
  } else {
    // Held while the CA is being written: already serving, not yet Ready.
    REQUIRE(eventually([&] { return client.holding(); }));
    CHECK_FALSE(webhooks.ca_cert().empty());
    CHECK_FALSE(webhooks.certificates_ready());
    CHECK_FALSE(webhooks.readiness());
    CHECK_FALSE(webhooks.wait_ready({}, std::chrono::seconds(0)));
    // Ready as soon as the write lands, with the CA the API server now has.
    client.release();
    REQUIRE(webhooks.wait_ready({}, std::chrono::seconds(30)));
    CHECK(webhooks.readiness());
    auto stored = api.get(unitrain::webhook::kValidatingConfigurations, "", name);
    REQUIRE(stored);
    CHECK(json::string_at(stored->root(), "/webhooks/0/clientConfig/caBundle") ==
          unitrain::webhook::base64_encode(webhooks.ca_cert()));
  }
  webhooks.stop();
}
