// The operator's own admission webhooks (core/webhook, every framework module) behind the local
// cluster, as kube-apiserver calls them: nonsense specs that the reference operators accept and
// then never run are refused at admission, with the field path and the API server's wording, for
// every kind; sane jobs of every kind are admitted.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/framework/registry.h"
#include "core/json/json.h"
#include "core/webhook/handler.h"
#include "frameworks/mpi/conversion/conversion.h"
#include "frameworks/mpi/v1/register.h"
#include "frameworks/mpi/v2/register.h"
#include "frameworks/mxnet/register.h"
#include "frameworks/paddle/register.h"
#include "frameworks/pytorch/register.h"
#include "frameworks/tensorflow/register.h"
#include "frameworks/xgboost/register.h"
#include "localcluster/local_cluster.h"
#include "localcluster/tls.h"
#include "tests/support/json.h"
#include "tests/support/local_cluster.h"
#include "tests/support/served_webhooks.h"

using namespace unitrain;

namespace {

// The operator's webhooks (all seven modules, both MPIJob versions side by side) served over
// HTTPS and registered with a local cluster that serves every CRD.
struct OperatorWebhooks : testing::ServedWebhooks {
  OperatorWebhooks()
      : ServedWebhooks({&frameworks::tensorflow::register_tensorflow, &frameworks::pytorch::register_pytorch,
                        &frameworks::mxnet::register_mxnet, &frameworks::xgboost::register_xgboost,
                        &frameworks::paddle::register_paddle, &frameworks::mpi::v2::register_mpi_v2,
                        &frameworks::mpi::v1::register_mpi_v1, &frameworks::mpi::conversion::register_mpi_conversion}) {
    for (const char* file : {"kubeflow.org_tfjobs.yaml", "kubeflow.org_pytorchjobs.yaml", "kubeflow.org_mxjobs.yaml",
                             "kubeflow.org_xgboostjobs.yaml", "kubeflow.org_paddlejobs.yaml", "kubeflow.org_mpijobs.yaml"}) {
      auto docs = json::parse_yaml(testing::read_text(std::string(UNITRAIN_SOURCE_DIR) + "/manifests/crds/" + file));
      REQUIRE(docs);
      for (auto& crd : *docs) {
        if (json::find(crd.root(), "/spec/conversion/webhook")) {
          json::Document convert = client_config("/convert");
          REQUIRE(json::set(crd, "/spec/conversion/webhook/clientConfig", json::clone(convert.root(), crd.alloc())));
        }
        auto r = api->send("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd.dump());
        INFO(file << ": " << r.body);
        REQUIRE(r.status == 201);
      }
    }
    register_configuration(webhook::WebhookType::Validating);
    register_configuration(webhook::WebhookType::Mutating);
  }

  // POSTs `job` (JSON) to its kind's collection in namespace default.
  kube::http::Response create(const std::string& api_version, const std::string& plural, const std::string& job) {
    return api->send("POST", fmt::format("/apis/{}/namespaces/default/{}", api_version, plural), job);
  }
};

struct Kind {
  std::string api_version, kind, plural, replica_specs, hook;
  std::string replica_spec(std::string_view container, int replicas) const {
    return fmt::format(R"({{"replicas":{},"template":{{"spec":{{"containers":[{{"name":"{}","image":"img"}}]}}}}}})", replicas,
                       container);
  }
};

}  // namespace

TEST_CASE("admission webhooks refuse nonsense specs of every kind with the field path, sane jobs are admitted") {
  OperatorWebhooks w;
  const Kind tf{"kubeflow.org/v1", "TFJob", "tfjobs", "tfReplicaSpecs", "validator.tfjob.training-operator.kubeflow.org"};
  const Kind pt{"kubeflow.org/v1", "PyTorchJob", "pytorchjobs", "pytorchReplicaSpecs", "validator.pytorchjob.training-operator.kubeflow.org"};
  const Kind mx{"kubeflow.org/v1", "MXJob", "mxjobs", "mxReplicaSpecs", "validator.mxjob.training-operator.kubeflow.org"};
  const Kind xgb{"kubeflow.org/v1", "XGBoostJob", "xgboostjobs", "xgbReplicaSpecs", "validator.xgboostjob.training-operator.kubeflow.org"};
  const Kind pd{"kubeflow.org/v1", "PaddleJob", "paddlejobs", "paddleReplicaSpecs", "validator.paddlejob.training-operator.kubeflow.org"};
  const Kind mpi1{"kubeflow.org/v1", "MPIJob", "mpijobs", "mpiReplicaSpecs", "validator.mpijob-v1.training-operator.kubeflow.org"};
  const Kind mpi2{"kubeflow.org/v2beta1", "MPIJob", "mpijobs", "mpiReplicaSpecs", "validator.mpijob-v2beta1.training-operator.kubeflow.org"};

  struct Case {
    const Kind* kind;
    std::string name;
    std::string spec;   // the job's spec, JSON
    std::string error;  // the one field error; empty: admitted
  };
  const std::vector<Case> cases = {
      {&tf, "tf-ok", fmt::format(R"({{"tfReplicaSpecs":{{"Worker":{}}}}})", tf.replica_spec("tensorflow", 2)), ""},
      {&tf, "tf-negative", fmt::format(R"({{"tfReplicaSpecs":{{"Worker":{}}}}})", tf.replica_spec("tensorflow", -2)),
       "spec.tfReplicaSpecs[Worker].replicas: Invalid value: -2: must be greater than or equal to 0"},
      {&tf, "tf-empty", R"({"tfReplicaSpecs":{}})", "spec.tfReplicaSpecs: Required value: must have at least one replica spec"},
      {&pt, "pt-ok", fmt::format(R"({{"pytorchReplicaSpecs":{{"Master":{}}}}})", pt.replica_spec("pytorch", 1)), ""},
      {&pt, "pt-elastic",
       fmt::format(R"({{"elasticPolicy":{{"minReplicas":4,"maxReplicas":2}},"pytorchReplicaSpecs":{{"Worker":{}}}}})",
                   pt.replica_spec("pytorch", 2)),
       "spec.elasticPolicy.maxReplicas: Invalid value: 2: must be greater than or equal to minReplicas (4)"},
      {&pt, "pt-deadline",
       fmt::format(R"({{"runPolicy":{{"activeDeadlineSeconds":-30}},"pytorchReplicaSpecs":{{"Master":{}}}}})",
                   pt.replica_spec("pytorch", 1)),
       "spec.runPolicy.activeDeadlineSeconds: Invalid value: -30: must be greater than or equal to 0"},
      {&mx, "mx-ok", fmt::format(R"({{"jobMode":"MXTrain","mxReplicaSpecs":{{"Scheduler":{}}}}})", mx.replica_spec("mxnet", 1)), ""},
      {&mx, "mx-negative",
       fmt::format(R"({{"jobMode":"MXTrain","mxReplicaSpecs":{{"Scheduler":{},"Worker":{}}}}})", mx.replica_spec("mxnet", 1),
                   mx.replica_spec("mxnet", -1)),
       "spec.mxReplicaSpecs[Worker].replicas: Invalid value: -1: must be greater than or equal to 0"},
      {&xgb, "xgb-ok", fmt::format(R"({{"xgbReplicaSpecs":{{"Master":{}}}}})", xgb.replica_spec("xgboost", 1)), ""},
      {&xgb, "xgb-negative",
       fmt::format(R"({{"xgbReplicaSpecs":{{"Master":{},"Worker":{}}}}})", xgb.replica_spec("xgboost", 1),
                   xgb.replica_spec("xgboost", -3)),
       "spec.xgbReplicaSpecs[Worker].replicas: Invalid value: -3: must be greater than or equal to 0"},
      {&pd, "pd-ok", fmt::format(R"({{"paddleReplicaSpecs":{{"Worker":{}}}}})", pd.replica_spec("paddle", 2)), ""},
      {&pd, "pd-clean",
       fmt::format(R"({{"runPolicy":{{"cleanPodPolicy":"Sometimes"}},"paddleReplicaSpecs":{{"Worker":{}}}}})",
                   pd.replica_spec("paddle", 2)),
       R"(spec.runPolicy.cleanPodPolicy: Unsupported value: "Sometimes": supported values: "All", "None", "Running")"},
      {&mpi1, "mpi1-ok",
       fmt::format(R"({{"mpiReplicaSpecs":{{"Launcher":{},"Worker":{}}}}})", mpi1.replica_spec("mpi", 1), mpi1.replica_spec("mpi", 2)),
       ""},
      {&mpi1, "mpi1-negative",
       fmt::format(R"({{"mpiReplicaSpecs":{{"Launcher":{},"Worker":{}}}}})", mpi1.replica_spec("mpi", 1), mpi1.replica_spec("mpi", -1)),
       "spec.mpiReplicaSpecs[Worker].replicas: Invalid value: -1: must be greater than or equal to 0"},
      {&mpi1, "mpi1-backoff",
       fmt::format(R"({{"runPolicy":{{"backoffLimit":-1}},"mpiReplicaSpecs":{{"Launcher":{}}}}})", mpi1.replica_spec("mpi", 1)),
       "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0"},
      {&mpi2, "mpi2-ok",
       fmt::format(R"({{"mpiReplicaSpecs":{{"Launcher":{},"Worker":{}}}}})", mpi2.replica_spec("l", 1), mpi2.replica_spec("w", 2)), ""},
      {&mpi2, "mpi2-negative",
       fmt::format(R"({{"mpiReplicaSpecs":{{"Launcher":{},"Worker":{}}}}})", mpi2.replica_spec("l", 1), mpi2.replica_spec("w", -2)),
       "spec.mpiReplicaSpecs[Worker].replicas: Invalid value: -2: must be greater than or equal to 1"},
  };
  for (const auto& c : cases) {
    INFO(c.kind->kind << " " << c.kind->api_version << " " << c.name);
    const std::string job = fmt::format(R"({{"apiVersion":"{}","kind":"{}","metadata":{{"name":"{}"}},"spec":{}}})",
                                        c.kind->api_version, c.kind->kind, c.name, c.spec);
    auto r = w.create(c.kind->api_version, c.kind->plural, job);
    INFO(r.body);
    if (c.error.empty()) {
      CHECK(r.status == 201);
      continue;
    }
    CHECK(r.status == 422);
    auto status = testing::doc(r.body);
    CHECK(json::get_string(status.root(), "/reason") == std::string_view("Invalid"));
    CHECK(json::string_at(status.root(), "/message") ==
          fmt::format(R"(admission webhook "{}" denied the request: {}.kubeflow.org "{}" is invalid: {})", c.kind->hook,
                      c.kind->kind, c.name, c.error));
    CHECK(json::string_at(status.root(), "/details/causes/0/field") == c.error.substr(0, c.error.find(':')));
    // Nothing was stored.
    CHECK(w.api->send("GET", fmt::format("/apis/{}/namespaces/default/{}/{}", c.kind->api_version, c.kind->plural, c.name)).status ==
          404);
  }
}
