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
}  // namespace

Result<std::unique_ptr<Controllers>> Controllers::create(const framework::Registry& registry, const Flags& flags,
                                                         kube::Client& client, kube::Clock& clock,
                                                         const std::string& identity) {
  std::unique_ptr<Controllers> out(new Controllers());
  std::shared_ptr<const gang::Backend> gang = gang::make_backend(flags.gang_scheduler_name);
  std::vector<const framework::FrameworkDescriptor*> modules;
  for (const auto& name : flags.enabled) {
    const framework::Registration* reg = registry.find(name);
    if (reg == nullptr) return fail(fmt::format("{}: not a registered framework", name));
    if (auto labels = controller::child_labels(reg->descriptor); !labels) return fail(labels.error().message);
    modules.push_back(&reg->descriptor);
  }
  out->caches_ = std::make_unique<controller::SharedCaches>(client, clock, modules, flags.namespaces, gang.get());
  for (const auto& name : flags.enabled) {
    const framework::Registration* reg = registry.find(name);
    auto plugin = registry.instantiate(name, plugin_config(flags, *reg));
    if (!plugin) return fail(fmt::format("{}: {}", name, plugin.error().message));
    Framework fw{name, reg->descriptor.controller_name, plugin->get(), nullptr, nullptr, nullptr};
    fw.recorder = std::make_unique<kube::EventRecorder>(
        client, clock, kube::EventRecorderOptions{.component = reg->descriptor.controller_name, .host = identity});
    fw.events = std::make_unique<RecorderSink>(*fw.recorder);
    auto options = controller_options(flags, registry, name);
    options.gang = gang;
    fw.controller = std::make_unique<controller::JobController>(client, clock, *fw.events, std::move(*plugin),
                                                               std::move(options), *out->caches_);
    out->frameworks_.push_back(std::move(fw));
  }
  return out;
}

std::vector<const framework::FrameworkPlugin*> Controllers::plugins() const {
  std::vector<const framework::FrameworkPlugin*> out;
  for (const auto& fw : frameworks_) out.push_back(fw.plugin);
  return out;
}

}  // namespace unitrain::operator_cmd
