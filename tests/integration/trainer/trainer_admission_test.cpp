// Kubeflow Trainer v2's admission webhooks behind the local cluster, as kube-apiserver calls
// them: the TrainingRuntime and ClusterTrainingRuntime validators (companion kinds of the trainer
// module) on create and on spec updates, skipped for runtimes labelled
// trainer.kubeflow.org/webhook-validation=disabled; every denial 403 Forbidden with upstream's
// field errors. And Trainer v2.0-v2.2's finalizer taken off runtimes, so they can be deleted.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/controller/finalizer_release.h"
#include "core/framework/registry.h"
#include "core/json/json.h"
#include "core/kube/clock.h"
#include "core/kube/rest_client.h"
#include "core/webhook/handler.h"
#include "frameworks/trainer/register.h"
#include "localcluster/local_cluster.h"
#include "localcluster/tls.h"
#include "tests/support/eventually.h"
#include "tests/support/json.h"
#include "tests/support/local_cluster.h"
#include "tests/support/served_webhooks.h"

using namespace unitrain;

namespace {

constexpr const char* kCtrPath = "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes";
constexpr const char* kTrPath = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainingruntimes";

// The trainer module's webhooks served over HTTPS and registered with a local cluster that
// serves its CRDs.
struct TrainerWebhooks : testing::ServedWebhooks {
  TrainerWebhooks() : ServedWebhooks({&frameworks::trainer::register_trainer}) {
    auto crd_client = kube::RestClient::create(testing::rest_config_of(*cluster));
    REQUIRE(crd_client);
    for (const char* file : {"trainer.kubeflow.org_trainjobs.yaml", "trainer.kubeflow.org_trainingruntimes.yaml",
                             "trainer.kubeflow.org_clustertrainingruntimes.yaml"}) {
      auto installed = testing::install_crds(**crd_client, std::string(UNITRAIN_SOURCE_DIR) + "/manifests/crds/" + file);
      if (!installed) FAIL(installed.error().message);
    }
    register_configuration(webhook::WebhookType::Validating);
  }
};

// A runtime whose one Job is the trainer ancestor with `replicas` and a container `container`.
std::string runtime(std::string_view kind, std::string_view name, int replicas, std::string_view container,
                    std::string_view labels = "{}") {
  return fmt::format(
      R"({{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"{}","metadata":{{"name":"{}","labels":{}}},)"
      R"("spec":{{"mlPolicy":{{"numNodes":1}},"template":{{"spec":{{"replicatedJobs":[{{"name":"node","replicas":{},)"
      R"("template":{{"metadata":{{"labels":{{"trainer.kubeflow.org/trainjob-ancestor-step":"trainer"}}}},)"
      R"("spec":{{"template":{{"spec":{{"containers":[{{"name":"{}","image":"img"}}]}}}}}}}}}}]}}}}}}}})",
      kind, name, labels, replicas, container);
}

// The webhook denied the request with 403 Forbidden and `message` after the hook's name.
void check_forbidden(const kube::http::Response& r, std::string_view hook, std::string_view message) {
  INFO(r.body);
  CHECK(r.status == 403);
  auto status = testing::doc(r.body);
  CHECK(json::string_at(status.root(), "/reason") == "Forbidden");
  CHECK(json::string_at(status.root(), "/message") ==
        fmt::format(R"(admission webhook "{}" denied the request: {})", hook, message));
}

constexpr const char* kCtrHook = "validator.clustertrainingruntime.training-operator.kubeflow.org";
constexpr const char* kTrHook = "validator.trainingruntime.training-operator.kubeflow.org";

}  // namespace

TEST_CASE("runtime webhooks: create and spec updates checked with upstream's messages, 403 Forbidden") {
  TrainerWebhooks w;
  // ClusterTrainingRuntime CREATE: both rules, aggregated.
  check_forbidden(w.api->send("POST", kCtrPath, runtime("ClusterTrainingRuntime", "bad", 2, "main")), kCtrHook,
                  "[spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must be 1, "
                  "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers: Invalid value: "
                  "[{\"name\":\"main\",\"image\":\"img\"}]: must contain the required container for the ancestor: trainer]");
  CHECK(w.api->send("GET", std::string(kCtrPath) + "/bad").status == 404);
  CHECK(w.api->send("POST", kCtrPath, runtime("ClusterTrainingRuntime", "good", 1, "node")).status == 201);

  // TrainingRuntime CREATE, then UPDATE: a spec change is checked (upstream leaves it unchecked),
  // a metadata-only change is not.
  check_forbidden(w.api->send("POST", kTrPath, runtime("TrainingRuntime", "bad", 3, "node")), kTrHook,
                  "spec.template.spec.replicatedJobs[0].replicas: Invalid value: 3: always must be 1");
  REQUIRE(w.api->send("POST", kTrPath, runtime("TrainingRuntime", "tr", 1, "node")).status == 201);
  check_forbidden(w.api->send("PATCH", std::string(kTrPath) + "/tr",
                              R"({"spec":{"template":{"spec":{"replicatedJobs":[{"name":"node","replicas":2,)"
                              R"("template":{"metadata":{"labels":{"trainer.kubeflow.org/trainjob-ancestor-step":"trainer"}},)"
                              R"("spec":{"template":{"spec":{"containers":[{"name":"node","image":"img"}]}}}}}]}}}})",
                              "application/merge-patch+json"),
                  kTrHook, "spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must be 1");
  CHECK(w.api->send("PATCH", std::string(kTrPath) + "/tr", R"({"metadata":{"labels":{"team":"a"}}})",
                    "application/merge-patch+json")
            .status == 200);

  // Runtimes labelled webhook-validation=disabled (the shipped ones) are not sent to the hook.
  const std::string disabled = R"({"trainer.kubeflow.org/webhook-validation":"disabled"})";
  CHECK(w.api->send("POST", kCtrPath, runtime("ClusterTrainingRuntime", "unchecked", 2, "main", disabled)).status == 201);
  // Once the label is gone, a metadata-only update still passes: only spec changes are judged.
  CHECK(w.api->send("PATCH", std::string(kCtrPath) + "/unchecked",
                    R"({"metadata":{"labels":{"trainer.kubeflow.org/webhook-validation":null}}})",
                    "application/merge-patch+json")
            .status == 200);
}

TEST_CASE("TrainJob webhook denials are 403 Forbidden with the aggregated field errors") {
  TrainerWebhooks w;
  const std::string tj =
      R"({"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"tj"},)"
      R"("spec":{"runtimeRef":{"name":"torch-distributed"},"runtimePatches":[{"manager":"kueue.k8s.io/"}]}})";
  check_forbidden(w.api->send("POST", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs", tj),
                  "validator.trainjob.training-operator.kubeflow.org",
                  R"(spec.runtimePatches.manager: Invalid value: "kueue.k8s.io/": must be a domain-prefixed path (such as "acme.io/foo"))");
}

TEST_CASE("runtime finalizers: Trainer v2.0-v2.2's resource-in-use finalizer is removed, the runtime can go") {
  TrainerWebhooks w;
  const framework::Registration* reg = w.registry.find("trainer");
  REQUIRE(reg != nullptr);
  kube::RestConfig cfg;
  REQUIRE(kube::parse_server_url(w.cluster->url(), cfg));
  cfg.qps = -1;
  auto client = kube::RestClient::create(cfg);
  REQUIRE(client);
  kube::RealClock clock;

  // Stored before the release runs: one of each kind with the finalizer (and another finalizer
  // that stays), the ClusterTrainingRuntime one that the webhook would now refuse.
  const std::string finalizers = R"(,"finalizers":["trainer.kubeflow.org/resource-in-use","example.com/keep"])";
  auto with_finalizers = [&](std::string body, std::string_view labels) {
    const std::string needle = fmt::format(R"("labels":{})", labels);
    body.insert(body.find(needle) + needle.size(), finalizers);
    return body;
  };
  REQUIRE(w.api->send("POST", kCtrPath,
                      with_finalizers(runtime("ClusterTrainingRuntime", "old", 2, "main",
                                              R"({"trainer.kubeflow.org/webhook-validation":"disabled"})"),
                                      R"({"trainer.kubeflow.org/webhook-validation":"disabled"})"))
              .status == 201);
  REQUIRE(w.api->send("PATCH", std::string(kCtrPath) + "/old",
                      R"({"metadata":{"labels":{"trainer.kubeflow.org/webhook-validation":null}}})",
                      "application/merge-patch+json")
              .status == 200);
  REQUIRE(w.api->send("POST", kTrPath, with_finalizers(runtime("TrainingRuntime", "old", 1, "node"), "{}")).status == 201);
  // Deleting now only marks them.
  REQUIRE(w.api->send("DELETE", std::string(kCtrPath) + "/old").status == 200);
  REQUIRE(w.api->send("DELETE", std::string(kTrPath) + "/old").status == 200);

  std::vector<std::unique_ptr<controller::FinalizerRelease>> releases;
  for (const auto& c : reg->companions) {
    INFO(c.kind);
    CHECK(c.released_finalizers == std::vector<std::string>{"trainer.kubeflow.org/resource-in-use"});
    releases.push_back(std::make_unique<controller::FinalizerRelease>(**client, clock, c.resource,
                                                                      c.released_finalizers, std::vector<std::string>{}));
    releases.back()->start();
  }
  REQUIRE(releases.size() == 2);
  for (const char* path : {kCtrPath, kTrPath}) {
    INFO(path);
    REQUIRE(testing::eventually([&] {
      auto r = w.api->send("GET", std::string(path) + "/old");
      return r.status == 200 && json::dump(*json::find(testing::doc(r.body).root(), "/metadata/finalizers")) ==
                                    R"(["example.com/keep"])";
    }));
    // The other finalizer's owner lets go: the runtime is gone.
    REQUIRE(w.api->send("PATCH", std::string(path) + "/old", R"({"metadata":{"finalizers":null}})",
                        "application/merge-patch+json")
                .status == 200);
    REQUIRE(testing::eventually([&] { return w.api->send("GET", std::string(path) + "/old").status == 404; }));
  }
  for (auto& r : releases) r->stop();
}
