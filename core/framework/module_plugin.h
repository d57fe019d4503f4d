// The bases module plugins derive from, so that no module repeats the constructor, the members
// and descriptor() that every plugin needs, and the registration that builds it.
//
//   ModulePlugin      holds the descriptor and the configuration the operator built the plugin with.
//   KubeflowV1Plugin  a training-operator (kubeflow.org/v1) kind: training-operator's defaults and
//                     webhook rules, every index of every replica type as a pod slot, one headless
//                     Service per slot. A kind overrides what it does differently and writes
//                     decorate_pod and compute_status (replica_status.h has the status walk).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/api/time.h"
#include "core/framework/descriptor.h"
#include "core/framework/plugin.h"
#include "core/framework/registry.h"
#include "core/json/json.h"

namespace unitrain::framework {

class ModulePlugin : public FrameworkPlugin {
 public:
  ModulePlugin(FrameworkDescriptor descriptor, PluginConfig config)
      : d_(std::move(descriptor)), config_(std::move(config)) {}

  const FrameworkDescriptor& descriptor() const final { return d_; }

 protected:
  const FrameworkDescriptor d_;
  const PluginConfig config_;  // options (every declared one, defaulted), gang scheduler, cluster domain
};

// A kind whose children are whole workloads (JobSets, batch Jobs) rather than pods: the core's pod
// pipeline gets nothing from it, and each pass asks plan_at() for the whole decision at the pass's
// time (core/controller/workload_pass.h).
class WorkloadModulePlugin : public ModulePlugin, public WorkloadPlanner {
 public:
  using ModulePlugin::ModulePlugin;

  std::vector<PodSlot> pod_slots(const json::Value&) const override { return {}; }
  Status decorate_pod(const json::Value&, const PodSlot&, json::Document&) const override { return {}; }
  Result<std::vector<DesiredObject>> desired_objects(const json::Value&, const Observed&) const override {
    return std::vector<DesiredObject>{};
  }
  StatusProposal compute_status(const json::Value&, const Observed&) const override { return {}; }
  // `now` as the core passes it (RFC 3339); the plugin's clock when it does not parse.
  WorkloadPlan plan(const json::Value& job, const Observed& observed, std::string_view now) const final;

 protected:
  virtual WorkloadPlan plan_at(const json::Value& job, const Observed& observed, api::TimePoint now) const = 0;
};

// What tells one training-operator kind from another: the constants of its Go API package.
struct KubeflowV1Kind {
  std::string kind;                        // "JAXJob"
  std::string replica_specs_field;         // "jaxReplicaSpecs"
  std::vector<std::string> replica_types;  // canonical, in the order the status walk visits them
  std::string container;                   // the default container: "jax"
  std::string port_name;                   // its default port: "jaxjob-port" (none: "")
  int32_t port = 0;                        // 6666 (none: 0)
  std::string restart_policy;              // a replica's default restartPolicy: "Never"
  std::string framework;                   // metrics label and --enable-scheme alias: "jax"
  std::vector<kube::GroupVersionResource> owned_resources = {};  // beyond pods and Services
  // A kind of the same shape in another API group (a module written outside this repository):
  // its name becomes "<group>/<kind lower>". managedBy stays training-operator's.
  std::string group = "kubeflow.org";
  std::string version = "v1";
};

// kubeflow_v1_descriptor over the kind's constants.
FrameworkDescriptor descriptor_of(const KubeflowV1Kind& kind);

class KubeflowV1Plugin : public ModulePlugin {
 public:
  KubeflowV1Plugin(const KubeflowV1Kind& kind, PluginConfig config)
      : ModulePlugin(descriptor_of(kind), std::move(config)), restart_policy_(kind.restart_policy) {}

  // cleanPodPolicy None, re-cased replica keys, replicas 1, the kind's restartPolicy, the default port.
  void set_defaults(json::Document& job) const override;
  // training-operator v1.9's webhook rules (name, managedBy, replica specs with the replica types
  // restricted to the kind's), then the rules every kind gets (job_validation.h).
  Validation validate(const json::Value* old_job, const json::Value& job) const override;
  // Every index of every present replica type.
  std::vector<PodSlot> pod_slots(const json::Value& job) const override;
  // One headless Service per slot (replica_services.h).
  Result<std::vector<DesiredObject>> desired_objects(const json::Value& job, const Observed& observed) const override;

 private:
  std::string restart_policy_;
};

// The Registration of `Plugin`, a KubeflowV1Plugin built as Plugin(kind, config): what a
// training-operator kind's register_<name>() adds to the registry.
template <class Plugin>
Registration kubeflow_v1_registration(const KubeflowV1Kind& kind, std::vector<OptionSpec> options = {}) {
  Registration r;
  r.descriptor = descriptor_of(kind);
  r.factory = [kind](const PluginConfig& config) -> Result<std::unique_ptr<FrameworkPlugin>> {
    return std::unique_ptr<FrameworkPlugin>(std::make_unique<Plugin>(kind, config));
  };
  r.options = std::move(options);
  return r;
}

}  // namespace unitrain::framework
