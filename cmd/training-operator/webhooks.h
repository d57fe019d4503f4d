// The operator's webhook side: the HTTPS server for admission and conversion reviews, the
// certificates it serves (kept in a Secret, rotated before expiry) and, with --embedded-cluster,
// the webhook configurations that point the local API server at it. Every replica runs this,
// leader or not: the API server may call any of them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "cmd/training-operator/http_server.h"
#include "core/framework/registry.h"
#include "core/kube/client.h"
#include "core/manager/manager.h"
#include "core/webhook/cert_manager.h"
#include "core/webhook/handler.h"

namespace unitrain::operator_cmd {

struct WebhookOptions {
  std::string host;  // "" every interface
  uint16_t port = 9443;
  webhook::CertManagerOptions certs;  // the CRDs that get the caBundle follow from the handler
  webhook::HandlerOptions handler;
  // Create the Secret's namespace when missing (an embedded cluster starts without it).
  bool create_secret_namespace = false;
  // Told about every request, on the server's thread (controller_runtime_webhook_* metrics).
  std::function<void(std::string_view path)> request_started;
  std::function<void(std::string_view path, int status, std::chrono::steady_clock::duration took)> request_finished;
};

class OperatorWebhooks final : public manager::Runnable {
 public:
  // `plugins` are the enabled modules' plugins, the very objects the controllers run (they must
  // outlive this); nothing serves before start().
  OperatorWebhooks(kube::Client& client, std::vector<const framework::FrameworkPlugin*> plugins,
                   const framework::Registry& registry, WebhookOptions options);
  ~OperatorWebhooks() override;
  OperatorWebhooks(const OperatorWebhooks&) = delete;
  OperatorWebhooks& operator=(const OperatorWebhooks&) = delete;

  // Starts serving and keeping the certificates; the TLS handshake succeeds once the first
  // certificates are in hand.
  Status start(std::stop_token stopping) override;
  void stop() override;

  // True once a certificate is served and its CA is in the webhook configurations and CRDs (put
  // there by this replica or, the same CA, by another): only then can the API server call us.
  bool certificates_ready() const { return ready_.load(); }
  // Why the certificates could not be obtained or installed the last time ("" after a success).
  std::string last_failure() const;
  // The /readyz check: fails until certificates_ready(), naming last_failure() when there is one.
  Status readiness() const;
  // Waits until certificates_ready(); fails after `timeout` or when `stopping` is requested.
  Status wait_ready(std::stop_token stopping, std::chrono::seconds timeout) const;
  uint16_t port() const { return server_ ? server_->port() : 0; }
  const webhook::Handler& handler() const { return handler_; }
  // The CA the served certificate chains to (PEM); empty before certificates_ready().
  std::string ca_cert() const;
  // When the served certificate expires; nullopt before certificates_ready().
  std::optional<webhook::SystemTime> certificate_not_after() const;
  // Every path the server answers reviews on (the admission webhooks' and /convert).
  std::vector<std::string> paths() const;
  // `server` (HTTPS, outliving this) serves the webhook certificate too, from now on and after
  // every rotation.
  void share_certificate(HttpServer& server);
  void stop_sharing(HttpServer& server);

 private:
  void keep_certificates();
  // The client config of a hook added to a configuration that has none of ours to copy.
  json::Document fallback_client_config() const;

  kube::Client& client_;
  WebhookOptions options_;
  webhook::Handler handler_;
  std::unique_ptr<webhook::CertManager> certs_;
  std::unique_ptr<HttpServer> server_;
  std::atomic<bool> ready_{false};
  mutable std::mutex mu_;
  mutable std::condition_variable_any cv_;
  bool stopping_ = false;
  webhook::CertBundle current_;
  std::vector<HttpServer*> sharing_;  // share_certificate()
  std::string last_failure_;
  std::thread thread_;
};

// Creates or updates the Validating/MutatingWebhookConfigurations of `handler` so the API server
// calls `url` (e.g. "https://127.0.0.1:43121"), trusting `ca_cert`.
Status register_webhook_configurations(kube::Client& client, const webhook::Handler& handler, const std::string& url,
                                       const std::string& ca_cert);

}  // namespace unitrain::operator_cmd
