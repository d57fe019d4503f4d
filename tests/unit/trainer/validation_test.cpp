// The validating and defaulting webhooks' rules, with upstream's paths and details.
#include <catch2/catch.hpp>

#include "frameworks/trainer/validation.h"
#include "tests/unit/trainer/fixtures.h"

namespace json = unitrain::json;
namespace tr = unitrain::frameworks::trainer;
using unitrain::testing::yaml;
using unitrain::testing::trainer::shipped_runtime;

namespace {
std::vector<std::string> messages(const tr::WebhookVerdict& v) {
  std::vector<std::string> out;
  for (const auto& e : v.errors) out.push_back(e.field + " | " + e.detail);
  return out;
}
tr::WebhookVerdict check(const json::Document& tj, const json::Document* runtime, const json::Value* old = nullptr,
                         const json::Value* jobset = nullptr) {
  return tr::validate_trainjob({.old_trainjob = old, .trainjob = tj.root(), .runtime = runtime ? &runtime->root() : nullptr,
                                .runtime_error = "clustertrainingruntimes.trainer.kubeflow.org \"x\" not found",
                                .jobset = jobset,
                                .jobset_error = {},
                                .priority_class_error = {}});
}
}  // namespace

TEST_CASE("TrainJob webhook: unsupported runtime kinds and missing runtimes") {
  auto tj = yaml("metadata: {name: a, namespace: ns}\nspec: {runtimeRef: {name: x, apiGroup: example.com, kind: Runtime}}");
  auto v = check(tj, nullptr);
  REQUIRE(v.denial);
  CHECK(*v.denial == "unsupported runtime: Runtime.example.com");

  auto missing = yaml("metadata: {name: a, namespace: ns}\nspec: {runtimeRef: {name: x, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}}");
  auto m = check(missing, nullptr);
  REQUIRE(m.errors.size() == 1);
  CHECK(m.errors[0].field == "spec.RuntimeRef");  // upstream's capital R for ClusterTrainingRuntime
  CHECK(m.errors[0].detail ==
        "clustertrainingruntimes.trainer.kubeflow.org \"x\" not found: specified clusterTrainingRuntime must be created before the TrainJob is created");
}

TEST_CASE("TrainJob webhook: reserved env of Torch, MPI and XGBoost, deprecation warning") {
  auto runtime = shipped_runtime("torch-distributed.yaml");
  auto tj = yaml(R"(
metadata: {name: a, namespace: ns}
spec:
  runtimeRef: {name: torch-distributed, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}
  trainer: {env: [{name: PET_NODE_RANK, value: "1"}, {name: OK, value: x}, {name: PET_MASTER_ADDR, value: y}]}
)");
  CHECK(messages(check(tj, &runtime)) ==
        std::vector<std::string>{"spec.trainer.env | must not have reserved envs, invalid envs configured: [PET_MASTER_ADDR PET_NODE_RANK]"});
  REQUIRE(json::set_string(runtime, "/metadata/labels/trainer.kubeflow.org~1support", "deprecated"));
  auto warned = check(tj, &runtime);
  REQUIRE(warned.warnings.size() == 1);
  CHECK(warned.warnings[0] ==
        "Referenced ClusterTrainingRuntime \"torch-distributed\" is deprecated and will be removed in a future release of "
        "Kubeflow Trainer. See runtime deprecation policy: "
        "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy");

  auto mpi = shipped_runtime("deepspeed-distributed.yaml");
  auto mtj = yaml(R"(
metadata: {name: a, namespace: ns}
spec:
  runtimeRef: {name: deepspeed-distributed, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}
  trainer: {env: [{name: OMPI_MCA_plm_rsh_args, value: x}]}
)");
  CHECK(messages(check(mtj, &mpi)) ==
        std::vector<std::string>{"spec.trainer.env | must not have reserved envs, invalid envs configured: [OMPI_MCA_plm_rsh_args]"});

  auto xgb = shipped_runtime("xgboost-distributed.yaml");
  auto xtj = yaml(R"(
metadata: {name: a, namespace: ns}
spec:
  runtimeRef: {name: xgboost-distributed, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}
  trainer: {env: [{name: A, value: x}, {name: DMLC_TASK_ID, value: x}]}
)");
  auto xv = check(xtj, &xgb);
  REQUIRE(xv.errors.size() == 1);
  CHECK(xv.errors[0].to_string() == "spec.trainer.env[1]: Forbidden: DMLC_TASK_ID is reserved for the XGBoost runtime");
}

TEST_CASE("TrainJob webhook: Flux needs at least one task per node and keeps its installer init container") {
  auto runtime = yaml(R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: flux-runtime}
spec:
  mlPolicy: {numNodes: 2, flux: {numProcPerNode: 0}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              template:
                spec:
                  initContainers: [{name: flux-installer, image: own-view}]
                  containers: [{name: node, image: hpc}]
)");
  auto tj = yaml(R"(
metadata: {name: a, namespace: ns}
spec:
  runtimeRef: {name: flux-runtime, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}
  trainer: {numNodes: 2}
)");
  // The policy's 0 tasks is the effective value when the TrainJob sets none.
  CHECK(messages(check(tj, &runtime)) ==
        std::vector<std::string>{"spec.trainer.numProcPerNode | must be greater than or equal to 1 for Flux TrainJob",
                                 "spec.trainer.initContainers | InitContainer 'flux-installer' is reserved"});
  // The TrainJob's own numProcPerNode wins over the policy's; without the runtime's installer, nothing is left.
  REQUIRE(json::set_int(tj, "/spec/trainer/numProcPerNode", 4));
  REQUIRE(json::remove(runtime, "/spec/template/spec/replicatedJobs/0/template/spec/template/spec/initContainers"));
  CHECK(check(tj, &runtime).errors.empty());
}

TEST_CASE("TrainJob webhook: initializers need their Job, container and mount, runtimePatches their targets") {
  auto runtime = shipped_runtime("torch-distributed.yaml");
  auto tj = yaml(R"(
metadata: {name: a, namespace: ns}
spec:
  runtimeRef: {name: torch-distributed, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}
  initializer: {dataset: {storageUri: "hf://d"}}
  runtimePatches:
    - manager: kueue.k8s.io/
      trainingRuntimeSpec:
        template:
          spec:
            replicatedJobs:
              - name: launcher
              - name: node
                template: {spec: {template: {spec: {containers: [{name: node, env: [{name: A, value: b}]}, {name: extra}]}}}}
)");
  CHECK(messages(check(tj, &runtime)) == std::vector<std::string>{
                                             "spec.runtimeRef | must have dataset-initializer job when trainJob is configured with input datasetConfig",
                                             "spec.runtimePatches.manager | must be a domain-prefixed path (such as \"acme.io/foo\")",
                                             "spec.runtimePatches | must not have replicated job that doesn't exist in the runtime job template",
                                             "spec.runtimePatches | must not have envs for the dataset-initializer, model-initializer, node containers",
                                             "spec.runtimePatches | must not have container that doesn't exist in the runtime job node",
                                         });
  auto tune = shipped_runtime("torchtune-llama3.2-1b.yaml");
  auto ok = yaml(R"(
metadata: {name: a, namespace: ns}
spec:
  runtimeRef: {name: torchtune-llama3.2-1b, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}
  initializer: {dataset: {storageUri: "hf://d"}, model: {storageUri: "hf://m"}}
)");
  CHECK(check(ok, &tune).ok());
}

TEST_CASE("TrainJob webhook: runtimePatches change only around a suspension and with no active Job") {
  auto runtime = shipped_runtime("torch-distributed.yaml");
  auto old = yaml(R"(
metadata: {name: a, namespace: ns}
spec: {runtimeRef: {name: torch-distributed, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}, suspend: false}
)");
  auto changed = json::Document::copy_of(old.root());
  REQUIRE(unitrain::testing::trainer::set_yaml(changed, "/spec/runtimePatches", "[{manager: kueue.x-k8s.io/manager}]"));
  CHECK(messages(check(changed, &runtime, &old.root())) ==
        std::vector<std::string>{"spec.runtimePatches | RuntimePatches can only be modified when the TrainJob is suspended before or after the update"});
  REQUIRE(json::set_bool(changed, "/spec/suspend", true));
  auto active = yaml("status: {replicatedJobsStatus: [{name: node, active: 1}, {name: init, active: 0}]}");
  CHECK(messages(check(changed, &runtime, &old.root(), &active.root())) ==
        std::vector<std::string>{"spec.runtimePatches | RuntimePatches cannot be modified when the JobSet's ReplicatedJob node is still active"});
  CHECK(check(changed, &runtime, &old.root()).ok());
}

TEST_CASE("TrainJob webhook: torchtune's model, node and argument rules") {
  auto runtime = shipped_runtime("torchtune-llama3.2-1b.yaml");
  auto tj = yaml(R"(
metadata: {name: a, namespace: ns}
spec:
  runtimeRef: {name: torchtune-llama3.2-1b, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}
  trainer: {command: [tune, run], numNodes: 2, args: ['model.lora_attn_modules=[q]', output_dir=/x]}
)");
  CHECK(messages(check(tj, &runtime)) == std::vector<std::string>{
                                             "spec.trainer.numNodes | must be 1 for llama3_2/1B model",
                                             "spec.trainer.numNodes | LoRA fine-tuning is not supported for multi-node training in TorchTune",
                                             "spec.trainer.args[1] | must not set immutable config \"output_dir\" in trainer args; it is managed by the runtime",
                                         });
}

TEST_CASE("runtime webhook: ancestor Jobs need one replica and their container, on create and on spec updates of both kinds") {
  auto runtime = yaml(R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: r, labels: {trainer.kubeflow.org/support: deprecated}}
spec:
  template:
    spec:
      replicatedJobs:
        - name: n
          replicas: 2
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec: {template: {spec: {containers: [{name: main}]}}}
)");
  auto v = tr::validate_runtime(nullptr, runtime.root());
  CHECK(messages(v) == std::vector<std::string>{
                           "spec.template.spec.replicatedJobs[0].replicas | always must be 1",
                           "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers | must contain the required container for the ancestor: trainer",
                       });
  REQUIRE(v.warnings.size() == 1);
  CHECK(v.warnings[0].rfind("ClusterTrainingRuntime \"r\" is deprecated", 0) == 0);
  // Updates that change the spec are checked, for both kinds (upstream skips TrainingRuntime's);
  // one that leaves the spec alone (a label, a finalizer) is admitted as it is.
  auto edited = json::Document::copy_of(runtime.root());
  REQUIRE(json::set_string(edited, "/spec/template/spec/replicatedJobs/0/name", "n2"));
  CHECK(tr::validate_runtime(&runtime.root(), edited.root()).errors.size() == 2);
  CHECK(tr::validate_runtime(&runtime.root(), runtime.root()).ok());
  CHECK(tr::validate_runtime(&runtime.root(), runtime.root()).warnings.empty());  // the warning is CREATE's
  REQUIRE(json::set_string(runtime, "/kind", "TrainingRuntime"));
  REQUIRE(json::set_string(edited, "/kind", "TrainingRuntime"));
  CHECK(tr::validate_runtime(&runtime.root(), edited.root()).errors.size() == 2);
  CHECK(tr::validate_runtime(&runtime.root(), runtime.root()).ok());
}

TEST_CASE("defaulting webhook: runtimePatches[].time stamped on create, kept while unchanged") {
  auto tj = yaml("spec: {runtimePatches: [{manager: a.io/x}, {manager: b.io/y, time: '2026-01-01T00:00:00Z'}]}");
  CHECK(tr::default_runtime_patch_times(nullptr, tj, "2026-05-05T00:00:00Z"));
  CHECK(json::string_at(tj.root(), "/spec/runtimePatches/0/time") == "2026-05-05T00:00:00Z");
  CHECK(json::string_at(tj.root(), "/spec/runtimePatches/1/time") == "2026-01-01T00:00:00Z");
  auto updated = json::Document::copy_of(tj.root());
  REQUIRE(json::set_string(updated, "/spec/runtimePatches/0/time", "2030-01-01T00:00:00Z"));
  REQUIRE(unitrain::testing::trainer::set_yaml(updated, "/spec/runtimePatches/1/trainingRuntimeSpec", "{template: {metadata: {labels: {a: b}}}}"));
  CHECK(tr::default_runtime_patch_times(&tj.root(), updated, "2026-06-06T00:00:00Z"));
  CHECK(json::string_at(updated.root(), "/spec/runtimePatches/0/time") == "2026-05-05T00:00:00Z");  // unchanged patch
  CHECK(json::string_at(updated.root(), "/spec/runtimePatches/1/time") == "2026-06-06T00:00:00Z");  // changed patch
}
