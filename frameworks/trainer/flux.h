// The Flux ML policy (`mlPolicy.flux`): every trainer pod runs a Flux broker, the brokers form
// one instance over the JobSet's DNS names, and the broker of rank 0 runs the training command
// across them with `flux run`. Pure: the caller hands in the pieces of the runtime info it owns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"

namespace unitrain::frameworks::trainer {

inline constexpr std::string_view kFluxDefaultViewImage = "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy";
inline constexpr std::string_view kFluxDefaultNetworkDevice = "eth0";
inline constexpr std::string_view kFluxDefaultQueuePolicy = "fcfs";
inline constexpr std::string_view kFluxInstaller = "flux-installer";
inline constexpr std::string_view kFluxConfigDir = "/etc/flux-config";

// The broker settings, read from the trainer container's env (the TrainJob's env already won
// over the runtime's), defaulted.
struct FluxSettings {
  std::string view_image{kFluxDefaultViewImage};
  std::string network_device{kFluxDefaultNetworkDevice};
  std::string queue_policy{kFluxDefaultQueuePolicy};
};
FluxSettings flux_settings(const json::Value* container_env);

struct FluxScripts {
  std::string entrypoint;  // entrypoint.sh: the trainer container's command
  std::string init;        // init.sh: the flux-installer init container's
};
struct FluxLayout {
  std::string trainjob;   // the TrainJob's name
  std::string subdomain;  // the JobSet's network subdomain
  int32_t nodes = 1;
  int32_t tasks_per_node = 1;
  int64_t gpus = 0;  // per node
};
// "<trainjob>-node-0-[0-<nodes-1>]"
std::string flux_hostlist(const FluxLayout& layout);
// "-N <nodes> -n <tasks x nodes>", then "-g <gpus>" with GPUs.
std::string flux_task_flags(const FluxLayout& layout);
FluxScripts flux_scripts(const FluxLayout& layout, const FluxSettings& settings);

struct FluxTarget {
  std::string_view trainjob;   // name
  std::string_view namespace_name;
  std::string_view uid;
  std::string_view subdomain;  // the JobSet's network subdomain ("" means the TrainJob's name)
  const json::Value* trainer = nullptr;  // spec.trainer, null when absent
  const json::Value* ml_policy = nullptr;  // the runtime's mlPolicy
  int64_t gpus = 0;  // per node
};
struct FluxEdits {
  std::vector<std::string> command;  // the trainer container's command; its args are cleared
  std::vector<json::Document> objects;  // ConfigMap <trainjob>-flux-entrypoint, Secret <trainjob>-flux-curve
};
// Adds the installer init container and the volumes to `node_pod_spec` (the pod spec of the
// replicated Job `node`), the mounts to `trainer_container` (the trainer's `node` container).
// Upstream dereferences spec.trainer.numNodes without a check; here its absence is an error.
Result<FluxEdits> enforce_flux(const FluxTarget& target, json::Value& node_pod_spec, json::Value& trainer_container,
                               json::Allocator& a);

}  // namespace unitrain::frameworks::trainer
