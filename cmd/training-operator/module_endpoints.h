// The HTTPS endpoints modules serve beside the webhooks (framework::ModuleEndpoint, e.g. the
// TrainJob status server): one server per endpoint, on every replica, with the webhook
// certificate (so they need the webhooks enabled).
#pragma once

#include <memory>
#include <stop_token>
#include <vector>

#include "cmd/training-operator/http_server.h"
#include "cmd/training-operator/webhooks.h"
#include "core/framework/plugin.h"
#include "core/kube/client.h"
#include "core/manager/manager.h"

namespace unitrain::operator_cmd {

class ModuleEndpoints final : public manager::Runnable {
 public:
  // `plugins` are the enabled modules' plugins; those without an endpoint are skipped.
  // `webhooks` is null with --disable-webhooks: an endpoint then fails the start.
  ModuleEndpoints(kube::Client& client, std::vector<const framework::FrameworkPlugin*> plugins,
                  OperatorWebhooks* webhooks);
  ~ModuleEndpoints() override;
  ModuleEndpoints(const ModuleEndpoints&) = delete;
  ModuleEndpoints& operator=(const ModuleEndpoints&) = delete;

  bool empty() const { return endpoints_.empty(); }
  Status start(std::stop_token) override;
  void stop() override;

 private:
  kube::Client& client_;
  std::vector<const framework::ModuleEndpoint*> endpoints_;
  OperatorWebhooks* webhooks_;
  std::vector<std::unique_ptr<HttpServer>> servers_;
};

}  // namespace unitrain::operator_cmd
