// The TrainJobStatus gate: its flags, the env, projected volume and mounts of the trainer pods,
// the <trainjob>-tls-config ConfigMap and the Secret read that feeds it.
#include <catch2/catch.hpp>

#include "core/base/base64.h"
#include "frameworks/trainer/build.h"
#include "frameworks/trainer/plan.h"
#include "frameworks/trainer/trainer_options.h"
#include "tests/unit/trainer/fixtures.h"

namespace json = unitrain::json;
namespace fw = unitrain::framework;
namespace tr = unitrain::frameworks::trainer;
using unitrain::testing::yaml;
using unitrain::testing::trainer::at;
using unitrain::testing::trainer::named;
using unitrain::testing::trainer::same_as_yaml;
using unitrain::testing::trainer::shipped_runtime;

namespace {

const tr::StatusServerConfig kServer{.service_name = "kubeflow-trainer-controller-manager",
                                     .operator_namespace = "kubeflow-system",
                                     .certificate_secret = "kubeflow-trainer-webhook-cert",
                                     .port = 10443};

json::Document webhook_secret(std::string_view ca) {
  auto s = yaml("apiVersion: v1\nkind: Secret\nmetadata: {name: kubeflow-trainer-webhook-cert, namespace: kubeflow-system}\n");
  auto& a = s.alloc();
  json::Value data(rapidjson::kObjectType);
  data.AddMember("ca.crt", json::str(unitrain::base64_encode(ca), a), a);
  data.AddMember("tls.crt", "eA==", a);
  s.root().AddMember("data", std::move(data), a);
  return s;
}

fw::PluginConfig config_with(std::string gates, std::string port = "10443") {
  fw::PluginConfig c;
  c.options[std::string(tr::kFeatureGatesOption)] = std::move(gates);
  c.options[std::string(tr::kStatusServerPortOption)] = std::move(port);
  c.service_name = "svc";
  c.service_namespace = "ops";
  c.certificate_secret = "cert";
  return c;
}

json::Document status_demo() {
  return yaml(R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: demo, namespace: ns, uid: U1, creationTimestamp: "2026-03-01T00:00:00Z"}
spec:
  runtimeRef: {name: torch-distributed, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}
  suspend: false
  managedBy: trainer.kubeflow.org/trainjob-controller
  trainer: {numNodes: 2, command: [torchrun, train.py]}
)");
}

}  // namespace

TEST_CASE("trainer flags: feature gates off by default, TrainJobStatus=true turns the gate on, the status server port checked") {
  auto off = tr::status_server_config(config_with(""));
  REQUIRE(off);
  CHECK_FALSE(off->has_value());
  auto also_off = tr::status_server_config(config_with("TrainJobStatus=false"));
  REQUIRE(also_off);
  CHECK_FALSE(also_off->has_value());
  auto on = tr::status_server_config(config_with(" TrainJobStatus=true ", "12000"));
  REQUIRE(on);
  REQUIRE(on->has_value());
  CHECK((*on)->service_name == "svc");
  CHECK((*on)->operator_namespace == "ops");
  CHECK((*on)->certificate_secret == "cert");
  CHECK((*on)->port == 12000);

  auto unknown = tr::status_server_config(config_with("Other=true"));
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().message == "--feature-gates: unrecognized feature gate: Other (known: TrainJobStatus)");
  auto not_bool = tr::status_server_config(config_with("TrainJobStatus=yes"));
  REQUIRE_FALSE(not_bool);
  CHECK(not_bool.error().message == "--feature-gates: invalid value of TrainJobStatus=yes, err: want true or false");
  auto bad_port = tr::status_server_config(config_with("TrainJobStatus=true", "70000"));
  REQUIRE_FALSE(bad_port);
  CHECK(bad_port.error().message == "--status-server-port: \"70000\" is not a port in 0..65535");
}

TEST_CASE("TrainJobStatus: env, projected token volume and mount on the trainer pods, the tls-config ConfigMap last") {
  auto secret = webhook_secret("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n");
  tr::BuildInput input;
  input.status_server = &kServer;
  input.status_tls_secret = &secret.root();
  auto out = tr::build(status_demo().root(), shipped_runtime("torch-distributed.yaml").root(), input);
  REQUIRE(out);
  const json::Value& rj = named(at(out->jobset.root(), "/spec/replicatedJobs"), "node");
  const json::Value& pod = at(rj, "/template/spec/template/spec");
  const json::Value& env = at(named(at(pod, "/containers"), "node"), "/env");
  // After Torch's variables (the plugin order).
  REQUIRE(env.Size() >= 3);
  same_as_yaml(env[env.Size() - 3], "{name: KUBEFLOW_TRAINER_SERVER_URL, value: "
                            "'https://kubeflow-trainer-controller-manager.kubeflow-system.svc:10443/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/demo/status'}");
  same_as_yaml(env[env.Size() - 2], "{name: KUBEFLOW_TRAINER_SERVER_CA_CERT, value: /var/run/secrets/kubeflow/trainer/ca.crt}");
  same_as_yaml(env[env.Size() - 1], "{name: KUBEFLOW_TRAINER_SERVER_TOKEN, value: /var/run/secrets/kubeflow/trainer/token}");
  same_as_yaml(named(at(named(at(pod, "/containers"), "node"), "/volumeMounts"), "kubeflow-trainer-token"),
       "{name: kubeflow-trainer-token, mountPath: /var/run/secrets/kubeflow/trainer, readOnly: true}");
  same_as_yaml(named(at(pod, "/volumes"), "kubeflow-trainer-token"), R"(
name: kubeflow-trainer-token
projected:
  sources:
    - serviceAccountToken: {audience: trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/demo/status, expirationSeconds: 3600, path: token}
    - configMap: {name: demo-tls-config, items: [{key: ca.crt, path: ca.crt}]}
)");
  REQUIRE_FALSE(out->objects.empty());
  same_as_yaml(out->objects.back().root(), R"(
apiVersion: v1
kind: ConfigMap
metadata: {name: demo-tls-config, namespace: ns}
data: {ca.crt: "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"}
)");

  // Gate off: none of it.
  auto plain = tr::build(status_demo().root(), shipped_runtime("torch-distributed.yaml").root(), {});
  REQUIRE(plain);
  CHECK(json::dump(plain->jobset.root()).find("KUBEFLOW_TRAINER") == std::string::npos);
  CHECK(plain->objects.empty());
}

TEST_CASE("TrainJobStatus: a missing certificate Secret or an empty ca.crt fails the build with upstream's words") {
  tr::BuildInput input;
  input.status_server = &kServer;
  input.status_tls_secret_error = "secrets \"kubeflow-trainer-webhook-cert\" not found";
  auto missing = tr::build(status_demo().root(), shipped_runtime("torch-distributed.yaml").root(), input);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message ==
        "failed to look up status server tls secret: secrets \"kubeflow-trainer-webhook-cert\" not found");
  auto empty = webhook_secret("");
  input.status_tls_secret = &empty.root();
  auto no_ca = tr::build(status_demo().root(), shipped_runtime("torch-distributed.yaml").root(), input);
  REQUIRE_FALSE(no_ca);
  CHECK(no_ca.error().message == "failed to find status server ca.crt in tls secret");
}

TEST_CASE("plan with TrainJobStatus: the runtime and the certificate Secret are read in one round") {
  auto tj = status_demo();
  auto keys = +[]() -> unitrain::Result<tr::BuildInput::SshKeys> { return tr::BuildInput::SshKeys{"P", "Q\n"}; };
  const auto now = *unitrain::api::parse_time("2026-03-01T00:00:10Z");
  auto first = tr::plan(tj.root(), {}, now, keys, &kServer);
  REQUIRE(first.fetch.size() == 2);
  CHECK(first.fetch[1].resource == tr::kSecrets);
  CHECK(first.fetch[1].namespace_name == "kubeflow-system");
  CHECK(first.fetch[1].name == "kubeflow-trainer-webhook-cert");

  fw::Observed observed;
  auto runtime = shipped_runtime("torch-distributed.yaml");
  observed.fetched.push_back({first.fetch[0], json::Document::copy_of(runtime.root()), ""});
  observed.fetched.push_back({first.fetch[1], webhook_secret("CA"), ""});
  auto second = tr::plan(tj.root(), observed, now, keys, &kServer);
  CHECK(second.fetch.empty());
  bool tls_config = false;
  for (const auto& c : second.creations) {
    if (json::string_at(c.object.root(), "/metadata/name") == "demo-tls-config") {
      tls_config = true;
      CHECK(json::string_at(c.object.root(), "/data/ca.crt") == "CA");
    }
  }
  CHECK(tls_config);

  // The Secret not found: a Warning event with upstream's message, no JobSet.
  observed.fetched[1] = {first.fetch[1], std::nullopt, "secrets \"kubeflow-trainer-webhook-cert\" not found"};
  auto failed = tr::plan(tj.root(), observed, now, keys, &kServer);
  REQUIRE(failed.events.size() == 1);
  CHECK(failed.events[0].message.find("failed to look up status server tls secret: secrets") != std::string::npos);
}
