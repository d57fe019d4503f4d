#include "core/webhook/registration.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

namespace unitrain::webhook {

namespace {

using json::Value;


bool ours(std::string_view name) {
  return name.size() > kOwnHookSuffix.size() && name.substr(name.size() - kOwnHookSuffix.size()) == kOwnHookSuffix;
}

// A client config for the hook at `path`: `model`'s service (path replaced) or url (path replaced
// after the host), with its caBundle.
Value client_config_for(const Value& model, std::string_view path, json::Allocator& a) {
  Value cc(model, a);
  if (auto service = cc.FindMember("service"); service != cc.MemberEnd() && service->value.IsObject()) {
    service->value.EraseMember("path");
    service->value.AddMember("path", json::str(path, a), a);
  } else if (auto url = cc.FindMember("url"); url != cc.MemberEnd() && url->value.IsString()) {
    std::string u = url->value.GetString();
    const auto host_start = u.find("://");
    const auto path_start = u.find('/', host_start == std::string::npos ? 0 : host_start + 3);
    if (path_start != std::string::npos) u.erase(path_start);
    url->value = json::str(u + std::string(path), a);
  }
  return cc;
}

}  // namespace

json::Document synced_webhooks(const Value& configuration, const Handler& handler, WebhookType type,
                               const Value& fallback_client_config) {
  json::Document out = json::Document::array();
  auto& a = out.alloc();
  const Value* hooks = json::find(configuration, "/webhooks");
  std::vector<std::string> present;
  const Value* model = nullptr;
  if (hooks != nullptr && hooks->IsArray()) {
    for (const auto& hook : hooks->GetArray()) {
      const std::string name(json::get_string(hook, "/name").value_or(""));
      if (ours(name) && model == nullptr) model = json::find(hook, "/clientConfig");
      const bool served = std::any_of(handler.endpoints().begin(), handler.endpoints().end(),
                                      [&](const Endpoint& e) { return e.type == type && e.name == name; });
      if (ours(name) && !served) continue;
      present.push_back(name);
      out.root().PushBack(Value(hook, a), a);
    }
  }
  if (model == nullptr) model = &fallback_client_config;
  // The generated configuration has every served hook with the fields we set; the missing ones
  // the API server needs to call are added, reaching the operator the way the others do.
  const json::Document generated = handler.configuration_for(type, fallback_client_config);
  for (const auto& hook : json::find(generated.root(), "/webhooks")->GetArray()) {
    const std::string name(json::get_string(hook, "/name").value_or(""));
    if (std::find(present.begin(), present.end(), name) != present.end() || !handler.registration_needed(name)) continue;
    const auto endpoint = std::find_if(handler.endpoints().begin(), handler.endpoints().end(),
                                       [&](const Endpoint& e) { return e.name == name; });
    Value added(hook, a);
    added.EraseMember("clientConfig");
    added.AddMember("clientConfig", client_config_for(*model, endpoint->path, a), a);
    out.root().PushBack(added, a);
  }
  return out;
}

Status sync_webhook_configurations(kube::Client& client, const Handler& handler, const Value& fallback_client_config) {
  for (auto [resource, name, type] : {std::tuple{kValidatingConfigurations, kValidatingConfigurationName, WebhookType::Validating},
                                      std::tuple{kMutatingConfigurations, kMutatingConfigurationName, WebhookType::Mutating}}) {
    for (int attempt = 0;; ++attempt) {
      auto current = client.get(resource, "", name);
      if (!current) {
        if (current.error().is(kube::ApiError::Reason::NotFound)) break;
        return fail(fmt::format("reading {} {}: {}", resource.group_resource(), name, current.error().to_string()));
      }
      json::Document hooks = synced_webhooks(current->root(), handler, type, fallback_client_config);
      const Value* before = json::find(current->root(), "/webhooks");
      if (before != nullptr && json::equal(*before, hooks.root())) break;
      if (before == nullptr && hooks.root().Empty()) break;
      auto& a = current->alloc();
      current->root().EraseMember("webhooks");
      current->root().AddMember("webhooks", Value(hooks.root(), a), a);
      auto written = client.update(resource, "", current->root());
      if (written) break;
      if (!written.error().is(kube::ApiError::Reason::Conflict) || attempt == 4)
        return fail(fmt::format("updating the webhooks of {} {}: {}", resource.group_resource(), name,
                                written.error().to_string()));
    }
  }
  return {};
}

}  // namespace unitrain::webhook
