#include "cmd/training-operator/module_endpoints.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace unitrain::operator_cmd {

ModuleEndpoints::ModuleEndpoints(kube::Client& client, std::vector<const framework::FrameworkPlugin*> plugins,
                                 OperatorWebhooks* webhooks)
    : client_(client), webhooks_(webhooks) {
  for (const auto* p : plugins) {
    if (const auto* e = p->capabilities().endpoint) endpoints_.push_back(e);
  }
}

ModuleEndpoints::~ModuleEndpoints() { stop(); }

Status ModuleEndpoints::start(std::stop_token) {
  for (const auto* endpoint : endpoints_) {
    if (webhooks_ == nullptr) {
      return fail(fmt::format("the {} serves HTTPS with the webhook certificate: it needs the webhooks (drop "
                              "--disable-webhooks, or turn off what enables it)",
                              endpoint->endpoint_name()));
    }
    kube::Client& client = client_;
    auto server = HttpServer::start_tls("", endpoint->port(), [endpoint, &client](const HttpRequest& r) -> HttpReply {
      auto reply = endpoint->serve({r.method, r.path, r.authorization, r.body}, client);
      return HttpReply{reply.status, std::move(reply.content_type), std::move(reply.body)};
    });
    if (!server) return fail(fmt::format("{}: {}", endpoint->port_flag(), server.error().message));
    spdlog::info("{} serving on port {} ({}, HTTPS)", endpoint->port_flag(), (*server)->port(), endpoint->endpoint_name());
    webhooks_->share_certificate(**server);
    servers_.push_back(std::move(*server));
  }
  return {};
}

void ModuleEndpoints::stop() {
  for (auto& server : servers_) {
    if (webhooks_ != nullptr) webhooks_->stop_sharing(*server);
    server->stop();
  }
}

}  // namespace unitrain::operator_cmd
