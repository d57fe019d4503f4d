// The TrainJob plugin: CRD defaults in memory, the runtime-free webhook rules, and one workload
// plan per pass (no pods of its own: its child is a JobSet).
#include <tuple>

#include <fmt/format.h>

#include "core/api/time.h"
#include "core/framework/module_plugin.h"
#include "core/framework/job_labels.h"
#include "core/framework/json_members.h"
#include "core/ssh/ssh_key.h"
#include "frameworks/trainer/names.h"
#include "frameworks/trainer/plan.h"
#include "frameworks/trainer/register.h"
#include "frameworks/trainer/status_server.h"
#include "frameworks/trainer/trainer_options.h"
#include "frameworks/trainer/validation.h"

namespace unitrain::frameworks::trainer {

namespace {

namespace jm = framework::json_members;

Result<BuildInput::SshKeys> fresh_ssh_keys() {
  auto key = ssh::generate_ssh_key();
  if (!key) return fail(key.error());
  return BuildInput::SshKeys{key->private_key_pem, key->authorized_key};
}

class TrainJobPlugin final : public framework::WorkloadModulePlugin,
                             public framework::PipelineDepartures,
                             public framework::CompanionValidator {
 public:
  TrainJobPlugin(framework::FrameworkDescriptor descriptor, const framework::PluginConfig& config,
                 std::optional<StatusServerConfig> status_server = std::nullopt)
      : WorkloadModulePlugin(std::move(descriptor), config),
        status_server_(std::move(status_server)),
        endpoint_(static_cast<uint16_t>(status_server_ ? status_server_->port : 0)) {}

  // The status server is served only with the TrainJobStatus gate on.
  framework::Capabilities capabilities() const override {
    return {.departures = this,
            .workloads = this,
            .companions = this,
            .endpoint = status_server_ ? &endpoint_ : nullptr};
  }

  // The CRD's defaults, for a TrainJob that reached us without them.
  void set_defaults(json::Document& job) const override {
    auto& a = job.alloc();
    if (!job.root().IsObject()) return;
    json::Value& spec = jm::ensure_object(job.root(), "spec", a);
    json::Value& ref = jm::ensure_object(spec, "runtimeRef", a);
    if (jm::member(&ref, "apiGroup") == nullptr) jm::put(ref, "apiGroup", kGroup, a);
    if (jm::member(&ref, "kind") == nullptr) jm::put(ref, "kind", kClusterTrainingRuntime, a);
    if (jm::member(&spec, "suspend") == nullptr) jm::put(spec, "suspend", json::Value(false), a);
    if (jm::member(&spec, "managedBy") == nullptr) jm::put(spec, "managedBy", kControllerManager, a);
  }

  // What the webhook can check without the runtime; the runtime's rules run on each pass
  // against the runtime the job is pinned to (plan.h).
  framework::Validation validate(const json::Value*, const json::Value& job) const override {
    framework::Validation out;
    out.errors = validate_runtime_patch_managers(job);
    return out;
  }

  // The runtime webhooks (TrainingRuntime, ClusterTrainingRuntime).
  framework::Validation validate_companion(std::string_view, const json::Value* old_runtime,
                                           const json::Value& runtime) const override {
    WebhookVerdict verdict = validate_runtime(old_runtime, runtime);
    return {std::move(verdict.errors), std::move(verdict.warnings)};
  }

  framework::WorkloadPlan plan_at(const json::Value& job, const framework::Observed& observed,
                                  api::TimePoint now) const override {
    return trainer::plan(job, observed, now, &fresh_ssh_keys, status_server_ ? &*status_server_ : nullptr);
  }

  // Upstream's TrainJob controller records no events about the objects it applies.
  framework::CoreWording child_event(framework::ChildEvent, const json::Value&, const framework::ChildSubject&) const override {
    return {};
  }
  framework::CoreWording foreign_object_wording(const json::Value&, const framework::ForeignObject& object) const override {
    return {"TrainJobResourcesCreationFailed",
            resources_failed_message(fmt::format("{} \"{}\" already exists and is not owned by the TrainJob", object.resource, object.name)),
            "Warning"};
  }

  // Its JobSet's and ConfigMaps' creates and deletes matter (a JobSet deleted by hand).
  bool reconciles_on_any_child() const override { return true; }

 private:
  std::optional<StatusServerConfig> status_server_;  // the TrainJobStatus gate on
  StatusServer endpoint_;
};

framework::FrameworkDescriptor make_descriptor() {
  framework::FrameworkDescriptor d;
  d.name = "trainer.kubeflow.org/trainjob";
  d.aliases = {"trainjob", "trainer"};
  d.group = std::string(kGroup);
  d.version = std::string(kVersion);
  d.kind = std::string(kTrainJob);
  d.plural = "trainjobs";
  d.singular = "trainjob";
  d.controller_name = "trainjob-controller";
  d.metrics_framework = "trainer";
  // spec.managedBy (not runPolicy's) is the plan's business.
  d.owns_unset_managed_by = true;
  d.owned_resources = {kJobSets, kConfigMaps, kSecrets};
  d.optional_owned_resources = {kCoschedulingPodGroups, kVolcanoPodGroups};
  d.unserved_owned_warning = "PodGroup CRDs must be installed in advance";
  d.child_label_selector = fmt::format("{}={}", framework::job_labels::kOperatorName, d.controller_name);
  // Its JobSet's Jobs run the pods and the JobSet makes the Service: none of the core's kinds.
  d.core_children = {.pods = false, .services = false};
  return d;
}

}  // namespace

Status register_trainer(framework::Registry& registry) {
  auto r = framework::registration_of<TrainJobPlugin>(make_descriptor(), trainer_options());
  // A bad --feature-gates or --status-server-port stops the start with the flag's message.
  r.factory = [descriptor = r.descriptor](const framework::PluginConfig& config) -> Result<std::unique_ptr<framework::FrameworkPlugin>> {
    auto status_server = status_server_config(config);
    if (!status_server) return fail(status_server.error());
    return std::unique_ptr<framework::FrameworkPlugin>(std::make_unique<TrainJobPlugin>(descriptor, config, std::move(*status_server)));
  };
  r.permissions = {
      {{"jobset.x-k8s.io"}, {"jobsets"}, {"get", "list", "watch", "create", "update", "delete"}, "TrainJob: its JobSet."},
      {{""}, {"configmaps", "secrets"}, {"get", "list", "watch", "create", "update"},
       "TrainJob: the runtime snapshot, MPI's hostfile and SSH key."},
      {{"trainer.kubeflow.org"}, {"trainingruntimes", "clustertrainingruntimes"}, {"get", "list", "watch", "patch"},
       "TrainJob: the runtime it names; Trainer v2.0-v2.2's finalizer taken off runtimes."},
      {{"scheduling.x-k8s.io", "scheduling.volcano.sh"}, {"podgroups"}, {"get", "list", "watch", "create", "update"},
       "TrainJob: the PodGroup of a runtime's podGroupPolicy, applied again while the TrainJob is suspended."},
      {{"authentication.k8s.io"}, {"tokenreviews"}, {"create"},
       "TrainJob status server (--feature-gates TrainJobStatus=true): checks the trainer pods' tokens."}};
  r.webhooks.validate = {"CREATE", "UPDATE"};
  // Trainer's validators return plain errors: controller-runtime denies them with 403 Forbidden.
  r.webhooks.denials_forbidden = true;
  for (const auto& [resource, kind, cluster] : {std::tuple{kTrainingRuntimes, kTrainingRuntime, false},
                                                std::tuple{kClusterTrainingRuntimes, kClusterTrainingRuntime, true}}) {
    framework::CompanionKind c;
    c.resource = resource;
    c.kind = std::string(kind);
    c.cluster_scoped = cluster;
    c.validate = {"CREATE", "UPDATE"};
    c.skip_label = std::string(kWebhookValidationLabel);
    c.skip_values = {"disabled"};
    c.released_finalizers = {std::string(kResourceInUseFinalizer)};
    r.companions.push_back(std::move(c));
  }
  return registry.add(std::move(r));
}

}  // namespace unitrain::frameworks::trainer
