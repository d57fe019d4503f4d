#include "core/controller/finalizer_release.h"

#include <algorithm>

#include <fmt/format.h>

namespace unitrain::controller {

namespace {

bool releasable(const json::Value& finalizer, const std::vector<std::string>& finalizers) {
  return finalizer.IsString() &&
         std::find(finalizers.begin(), finalizers.end(), json::view(finalizer)) != finalizers.end();
}

kube::InformerOptions informer_options(const kube::GroupVersionResource& resource, std::vector<std::string> namespaces) {
  kube::InformerOptions o;
  o.resource = resource;
  o.namespaces = std::move(namespaces);
  return o;
}

}  // namespace

std::string finalizer_release_patch(const json::Value& object, const std::vector<std::string>& finalizers) {
  const json::Value* held = json::find(object, "/metadata/finalizers");
  if (held == nullptr || !held->IsArray()) return {};
  json::Document patch = json::Document::object();
  auto& a = patch.alloc();
  json::Value kept(rapidjson::kArrayType);
  bool released = false;
  for (const auto& f : held->GetArray()) {
    if (releasable(f, finalizers)) released = true;
    else kept.PushBack(json::Value(f, a), a);
  }
  if (!released) return {};
  json::Value metadata(rapidjson::kObjectType);
  // A merge patch replaces the whole list; null removes it (what a merge patch from the object
  // without its last finalizer says).
  if (kept.Empty()) metadata.AddMember("finalizers", json::Value(), a);
  else metadata.AddMember("finalizers", kept, a);
  patch.root().AddMember("metadata", metadata, a);
  return patch.dump();
}

FinalizerRelease::FinalizerRelease(kube::Client& client, kube::Clock& clock, kube::GroupVersionResource resource,
                                   std::vector<std::string> finalizers, std::vector<std::string> namespaces)
    : client_(client),
      resource_(resource),
      finalizers_(std::move(finalizers)),
      informer_(client, clock, informer_options(resource, std::move(namespaces))),
      queue_(clock),
      log_(log::Fields{{log::key::kController, fmt::format("{}-finalizers", resource.group_resource())}}) {
  kube::EventHandlers handlers;
  handlers.on_add = [this](const json::Value& o) { enqueue_if_held(o); };
  handlers.on_update = [this](const json::Value&, const json::Value& o) { enqueue_if_held(o); };
  informer_.add_handlers(std::move(handlers));
}

FinalizerRelease::~FinalizerRelease() { stop(); }

void FinalizerRelease::enqueue_if_held(const json::Value& object) {
  if (!finalizer_release_patch(object, finalizers_).empty()) queue_.add(kube::object_key(object));
}

void FinalizerRelease::start() {
  if (worker_.joinable()) return;
  informer_.start();
  worker_ = std::thread([this] { worker_loop(); });
}

void FinalizerRelease::stop() {
  queue_.shut_down();
  if (worker_.joinable()) worker_.join();
  informer_.stop();
}

void FinalizerRelease::worker_loop() {
  while (auto key = queue_.get()) {
    kube::ObjectPtr object = informer_.cache().get(*key);
    const std::string patch = object ? finalizer_release_patch(object->root(), finalizers_) : std::string();
    if (!patch.empty()) {
      const std::string ns(json::get_string(object->root(), "/metadata/namespace").value_or(""));
      const std::string name(json::get_string(object->root(), "/metadata/name").value_or(""));
      auto patched = client_.patch(resource_, ns, name, kube::PatchType::Merge, patch);
      if (!patched && patched.error().reason != kube::ApiError::Reason::NotFound) {
        log_.warn("removing the finalizers of {} {}: {}", resource_.group_resource(), *key, patched.error().to_string());
        queue_.add_rate_limited(*key);
        queue_.done(*key);
        continue;
      }
      if (patched) log_.info("released the finalizers of {} {}", resource_.group_resource(), *key);
    }
    queue_.forget(*key);
    queue_.done(*key);
  }
}

}  // namespace unitrain::controller
