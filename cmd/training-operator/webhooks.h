// The operator's webhook side: the HTTPS server for admission and conversion reviews, the
// certificates it serves (kept in a Secret, rotated before expiry) and, with --embedded-cluster,
// the webhook configurations that point the local API server at it. Every replica runs this,
// leader or not: the API server may call any of them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cmd/training-operator/http_server.h"
#include "core/framework/registry.h"
#include "core/kube/client.h"
#include "core/webhook/cert_manager.h"
#include "core/webhook/handler.h"

namespace unitrain::operator_cmd {

struct WebhookOptions {
  std::string host;  // "" every interface
  uint16_t port = 9443;
  webhook::CertManagerOptions certs;
  webhook::HandlerOptions handler;
};

class OperatorWebhooks {
 public:
  // Starts serving at once; the TLS handshake succeeds once the first certificates are in hand.
  static Result<std::unique_ptr<OperatorWebhooks>> start(kube::Client& client,
                                                         std::vector<std::unique_ptr<framework::FrameworkPlugin>> plugins,
                                                         const framework::Registry& registry, WebhookOptions options);
  ~OperatorWebhooks();
  OperatorWebhooks(const OperatorWebhooks&) = delete;
  OperatorWebhooks& operator=(const OperatorWebhooks&) = delete;

  bool certificates_ready() const { return ready_.load(); }
  bool wait_ready(std::chrono::milliseconds timeout) const;
  uint16_t port() const { return server_->port(); }
  const webhook::Handler& handler() const { return *handler_; }
  // The CA the served certificate chains to (PEM); empty before certificates_ready().
  std::string ca_cert() const;

 private:
  OperatorWebhooks(kube::Client& client, WebhookOptions options);
  void run();

  WebhookOptions options_;
  std::vector<std::unique_ptr<framework::FrameworkPlugin>> plugins_;
  std::unique_ptr<webhook::Handler> handler_;
  std::unique_ptr<webhook::CertManager> certs_;
  std::unique_ptr<HttpServer> server_;
  std::atomic<bool> ready_{false};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool stopping_ = false;
  webhook::CertBundle current_;
  std::thread thread_;
};

// Creates or updates the Validating/MutatingWebhookConfigurations of `handler` so the API server
// calls `url` (e.g. "https://127.0.0.1:43121"), trusting `ca_cert`.
Status register_webhook_configurations(kube::Client& client, const webhook::Handler& handler, const std::string& url,
                                       const std::string& ca_cert);

}  // namespace unitrain::operator_cmd
