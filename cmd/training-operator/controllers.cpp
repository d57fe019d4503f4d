#include "cmd/training-operator/controllers.h"

#include <fmt/format.h>

#include "core/gang/gang.h"

namespace unitrain::operator_cmd {

namespace {
// The controller's EventSink over core/kube's recorder: the controller stays independent of how
// events are written.
class RecorderSink final : public controller::EventSink {
 public:
  explicit RecorderSink(kube::EventRecorder& recorder) : recorder_(recorder) {}
  void event(const json::Value& involved_object, std::string_view type, std::string_view reason,
             std::string message) override {
    recorder_.event(involved_object, type, reason, message);
  }

 private:
  kube::EventRecorder& recorder_;
};

// The CRD a framework needs, and the manifest that installs it (manifests/crds; a kind two
// modules serve has one file per version and one serving both).
kube::RequiredResource crd_requirement(const framework::Registry& registry, const Flags& flags,
                                       const framework::FrameworkDescriptor& d) {
  int sharing = 0, enabled = 0;
  for (const auto& reg : registry.all()) {
    if (reg.descriptor.plural != d.plural || reg.descriptor.group != d.group) continue;
    ++sharing;
    if (std::find(flags.enabled.begin(), flags.enabled.end(), reg.descriptor.name) != flags.enabled.end()) ++enabled;
  }
  const std::string file = sharing > 1 && enabled == 1 ? crd_file_name(d, d.version) : crd_file_name(d, "");
  return {fmt::format("the CustomResourceDefinition {}.{}", d.plural, d.group),
          fmt::format("install it with: kubectl apply --server-side -f manifests/crds/{} (every kind: kubectl apply --server-side -k "
                      "manifests/crds)",
                      file)};
}

// The PodGroup CRD of the gang scheduler --gang-scheduler-name chose, and what installs it.
kube::RequiredResource pod_group_requirement(const gang::Backend& gang, const Flags& flags) {
  const std::string install =
      gang.name() == "volcano"
          ? "install Volcano, e.g. kubectl apply -f "
            "https://raw.githubusercontent.com/volcano-sh/volcano/master/installer/volcano-development.yaml"
          : "install scheduler-plugins' PodGroup CRD, e.g. kubectl apply --server-side -f "
            "https://raw.githubusercontent.com/kubernetes-sigs/scheduler-plugins/master/manifests/coscheduling/crd.yaml";
  return {fmt::format("the PodGroup CustomResourceDefinition {} that --gang-scheduler-name {} needs",
                      gang.resource().group_resource(), flags.gang_scheduler_name),
          install};
}
}  // namespace

std::string crd_file_name(const framework::FrameworkDescriptor& d, std::string_view version) {
  return version.empty() ? fmt::format("{}_{}.yaml", d.group, d.plural) : fmt::format("{}_{}_{}.yaml", d.group, d.plural, version);
}

Result<std::unique_ptr<Controllers>> Controllers::create(const framework::Registry& registry, const Flags& flags,
                                                         kube::Client& client, kube::Client& events_client,
                                                         kube::Clock& clock, kube::FaultLog& faults) {
  auto out = std::make_unique<Controllers>(PassKey<Controllers>{});
  std::shared_ptr<const gang::Backend> gang = gang::make_backend(flags.gang_scheduler_name);
  if (gang) faults.require(gang->resource(), pod_group_requirement(*gang, flags));
  std::vector<const framework::FrameworkDescriptor*> modules;
  for (const auto& name : flags.enabled) {
    const framework::Registration* reg = registry.find(name);
    if (reg == nullptr) return fail(fmt::format("{}: not a registered framework", name));
    if (auto labels = controller::child_labels(reg->descriptor); !labels) return fail(labels.error().message);
    modules.push_back(&reg->descriptor);
  }
  out->caches_client_ = std::make_unique<kube::ReportingClient>(
      client, faults, kCachesSource, log::Fields{{log::key::kController, kCachesSource}});
  out->caches_ =
      std::make_unique<controller::SharedCaches>(*out->caches_client_, clock, modules, flags.namespaces, gang.get());
  for (const auto& name : flags.enabled) {
    const framework::Registration* reg = registry.find(name);
    const auto& d = reg->descriptor;
    faults.require(d.resource(), crd_requirement(registry, flags, d));
    auto plugin = registry.instantiate(name, plugin_config(flags, *reg));
    if (!plugin) return fail(fmt::format("{}: {}", name, plugin.error().message));
    Framework fw{name, d.controller_name, plugin->get(), nullptr, nullptr, nullptr, nullptr};
    fw.client = std::make_unique<kube::ReportingClient>(
        client, faults, d.controller_name,
        log::Fields{{log::key::kController, d.controller_name}, {log::key::kFramework, name}});
    // Like controller-runtime's recorder (and mpi-operator's): the source names the component only.
    kube::EventRecorderOptions recorder_options;
    recorder_options.component = d.controller_name;
    fw.recorder = std::make_unique<kube::EventRecorder>(events_client, clock, std::move(recorder_options));
    fw.events = std::make_unique<RecorderSink>(*fw.recorder);
    auto options = controller_options(flags, registry, name);
    options.gang = gang;
    fw.controller = std::make_unique<controller::JobController>(*fw.client, clock, *fw.events, std::move(*plugin),
                                                                std::move(options), *out->caches_);
    out->frameworks_.push_back(std::move(fw));
    for (const auto& companion : reg->companions) {
      // A cluster-scoped kind only when the operator watches every namespace (a namespaced Role
      // cannot grant it), as PriorityClasses.
      if (companion.released_finalizers.empty() || (companion.cluster_scoped && !flags.namespaces.empty())) continue;
      const std::string source = fmt::format("{}-finalizers", companion.resource.group_resource());
      out->release_clients_.push_back(
          std::make_unique<kube::ReportingClient>(client, faults, source, log::Fields{{log::key::kController, source}}));
      out->finalizer_releases_.push_back(std::make_unique<controller::FinalizerRelease>(
          *out->release_clients_.back(), clock, companion.resource, companion.released_finalizers,
          flags.namespaces));
    }
  }
  return out;
}

std::vector<const framework::FrameworkPlugin*> Controllers::plugins() const {
  std::vector<const framework::FrameworkPlugin*> out;
  for (const auto& fw : frameworks_) out.push_back(fw.plugin);
  return out;
}

}  // namespace unitrain::operator_cmd
