// TrainJob + runtime -> JobSet and the objects beside it, as Kubeflow Trainer v2.3.0 builds them.
//
// Pure functions over JSON: the caller hands in the TrainJob (CRD-defaulted), the runtime object
// it resolved (runtime.h) and what it observed, and gets the objects to write back. The plugin
// order upstream leaves to a Go map is fixed here: PlainML, Torch, MPI, JAX, XGBoost (ML
// policies), Flux, TrainJobStatus, then CoScheduling, Volcano (pod groups), then the JobSet
// builder; the objects come as MPI's, Flux's, the PodGroups, TrainJobStatus's ConfigMap.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"
#include "frameworks/trainer/trainjob_status.h"

namespace unitrain::frameworks::trainer {

// One replicated Job of the runtime as the plugins see it (upstream's PodSet).
struct PodSet {
  std::string name;
  std::string ancestor;  // the ancestor label of the Job template, "" when absent
  int32_t count = 1;     // pods of one Job: parallelism and completions
};

// The runtime after the TrainJob's patches and resources were merged into it (upstream's
// runtime.Info), before any ML policy ran.
struct RuntimeInfo {
  json::Document labels = json::Document::object();       // JobSet metadata.labels
  json::Document annotations = json::Document::object();  // JobSet metadata.annotations
  json::Document ml_policy;                               // null when the runtime has none
  json::Document pod_group_policy;                        // null when none
  json::Document jobset_spec = json::Document::object();  // the merged JobSetSpec
  std::vector<PodSet> pod_sets;                           // one per replicated Job, in order
};

// Labels, runtimePatches, the resources merge and the PodSets (upstream's newRuntimeInfo):
// what the validating webhook sees too. Errors name the patch that does not apply.
Result<RuntimeInfo> runtime_info(const json::Value& trainjob, const json::Value& runtime);

// The resources one node (pod of the trainer) gets: the TrainJob's resourcesPerNode as given,
// else the runtime's `node` container of the first `node` or trainer replicated Job.
json::Document resources_per_node(const json::Value& trainjob, const RuntimeInfo& info);
// The first resource whose name contains "gpu" (any case): requests, else limits; rounded up.
int64_t gpu_count(const json::Value& resources);
// requests.cpu, else limits.cpu, else 0; rounded up.
int64_t cpu_count(const json::Value& resources);

struct Built {
  json::Document jobset;  // null when the JobSet exists and neither side is suspended
  // The objects beside it, in apply order: MPI's SSH Secret (only when `ssh_secret_exists` is
  // false) and hostfile ConfigMap, the PodGroups. None carries ownerReferences.
  std::vector<json::Document> objects;
};

struct BuildInput {
  const json::Value* existing_jobset = nullptr;  // the observed JobSet <trainjob>, if any
  bool ssh_secret_exists = false;                // <trainjob>-mpi-ssh-auth exists
  bool pod_group_exists = false;                 // the PodGroup <trainjob> exists
  // Generates MPI's SSH key pair {private PEM, authorized_keys line} when the Secret is needed.
  struct SshKeys {
    std::string private_key_pem;
    std::string authorized_key;
  };
  Result<SshKeys> (*generate_ssh_keys)() = nullptr;
  // The TrainJobStatus gate: set when it is on. The webhook certificate Secret as read: null when
  // the read failed, `status_tls_secret_error` then says why.
  const StatusServerConfig* status_server = nullptr;
  const json::Value* status_tls_secret = nullptr;
  std::string status_tls_secret_error{};
};

// torchtune (trainer.command ["tune", "run"]): the model a runtime name such as
// "torchtune-llama3.2-1b" names ("llama3_2/1B"; "" unless the name has three dash-separated parts).
std::string torchtune_model(std::string_view runtime_name);
struct TorchtuneRecipe {
  std::string recipe;         // "full_finetune_distributed", ...
  std::string config_suffix;  // "_full", "_lora_single_device", ...
  bool lora = false, qlora = false;
};
TorchtuneRecipe torchtune_recipe(const json::Value* args, int32_t num_nodes, std::string_view nproc, int64_t gpus);
// Torch's processes per node: trainer.numProcPerNode, else "auto" with GPUs, else max(1, CPUs).
std::string torch_nproc(const json::Value& trainjob, const json::Value& resources_per_node);

// Everything the TrainJob owns but the runtime snapshot, built from the resolved runtime.
// Errors are upstream's build errors ("envInjection target podSet ...", "MPI implementation ...").
Result<Built> build(const json::Value& trainjob, const json::Value& runtime, const BuildInput& input);

}  // namespace unitrain::frameworks::trainer
