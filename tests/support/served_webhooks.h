#pragma once
// The operator's admission and conversion webhooks (core/webhook's Handler over the modules a test
// registers) served over HTTPS, and a local cluster to register them with: what the tests that
// drive the operator's webhooks through the API server share. Each test then installs the CRDs
// and the configurations it needs, pointing them at url() with ca_bundle().

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/framework/registry.h"
#include "core/json/json.h"
#include "core/webhook/handler.h"
#include "localcluster/local_cluster.h"
#include "localcluster/tls.h"
#include "tests/support/hook_server.h"
#include "tests/support/json.h"

namespace unitrain::testing {

struct ServedWebhooks {
  framework::Registry registry;
  std::vector<std::unique_ptr<framework::FrameworkPlugin>> plugins;
  std::unique_ptr<webhook::Handler> handler;
  localcluster::TlsMaterial tls;
  std::unique_ptr<HookServer> server;
  std::unique_ptr<localcluster::LocalCluster> cluster;
  std::unique_ptr<Api> api;

  // Every framework and conversion the `modules` register is enabled, each framework with its
  // default options.
  explicit ServedWebhooks(std::initializer_list<framework::RegisterFunction> modules) {
    for (auto register_module : modules) REQUIRE(register_module(registry));
    std::vector<const framework::FrameworkPlugin*> enabled;
    for (const auto& r : registry.all()) {
      auto p = registry.instantiate(r.descriptor.name, {});
      REQUIRE(p);
      enabled.push_back(p->get());
      plugins.push_back(std::move(*p));
    }
    handler = std::make_unique<webhook::Handler>(enabled, registry);
    auto material = localcluster::make_self_signed_tls("IP:127.0.0.1");
    REQUIRE(material);
    tls = std::move(*material);
    // Runs on the server's threads: no Catch2 assertions here.
    server = std::make_unique<HookServer>(tls, [this](const std::string& path, const json::Document& review) {
      auto reply = handler->handle(path, review.dump());
      auto body = json::Document::parse(reply.body);
      return body ? std::move(*body) : json::Document::object();
    });
    localcluster::LocalClusterOptions o;
    o.threads = 4;
    cluster = std::make_unique<localcluster::LocalCluster>(std::move(o));
    REQUIRE(cluster->start());
    api = std::make_unique<Api>(*cluster);
  }

  std::string url() const { return fmt::format("https://127.0.0.1:{}", server->port()); }
  std::string ca_bundle() const { return webhook::base64_encode(tls.ca_cert_pem); }
  // The WebhookClientConfig that calls `path` on the server.
  json::Document client_config(std::string_view path = "") const {
    return doc(fmt::format(R"({{"url":"{}{}","caBundle":"{}"}})", url(), path, ca_bundle()));
  }

  // Creates the handler's configuration of `type` in the cluster, its hooks called on the server.
  void register_configuration(webhook::WebhookType type) {
    const char* plural = type == webhook::WebhookType::Validating ? "validatingwebhookconfigurations"
                                                                   : "mutatingwebhookconfigurations";
    auto r = api->send("POST", std::string("/apis/admissionregistration.k8s.io/v1/") + plural,
                       handler->configuration_for(type, client_config().root()).dump());
    INFO(r.body);
    REQUIRE(r.status == 201);
  }
};

}  // namespace unitrain::testing
