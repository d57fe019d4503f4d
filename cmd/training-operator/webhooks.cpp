#include "cmd/training-operator/webhooks.h"

#include <algorithm>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace unitrain::operator_cmd {

OperatorWebhooks::OperatorWebhooks(kube::Client& client, WebhookOptions options)
    : options_(std::move(options)), certs_(std::make_unique<webhook::CertManager>(client, options_.certs)) {}

Result<std::unique_ptr<OperatorWebhooks>> OperatorWebhooks::start(
    kube::Client& client, std::vector<std::unique_ptr<framework::FrameworkPlugin>> plugins,
    const framework::Registry& registry, WebhookOptions options) {
  std::unique_ptr<OperatorWebhooks> w(new OperatorWebhooks(client, std::move(options)));
  w->plugins_ = std::move(plugins);
  std::vector<const framework::FrameworkPlugin*> raw;
  for (const auto& p : w->plugins_) raw.push_back(p.get());
  w->handler_ = std::make_unique<webhook::Handler>(raw, registry, w->options_.handler);
  const webhook::Handler* handler = w->handler_.get();
  auto server = HttpServer::start_tls(w->options_.host, w->options_.port, [handler](const HttpRequest& r) -> HttpReply {
    if (r.method != "POST") return HttpReply{405, "text/plain; charset=utf-8", "method not allowed\n"};
    auto reply = handler->handle(r.path, r.body);
    return HttpReply{reply.status, reply.content_type, std::move(reply.body)};
  });
  if (!server) return fail(fmt::format("--webhook-server-port: {}", server.error().message));
  w->server_ = std::move(*server);
  OperatorWebhooks* self = w.get();
  w->thread_ = std::thread([self] { self->run(); });
  return w;
}

OperatorWebhooks::~OperatorWebhooks() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (server_) server_->stop();
}

bool OperatorWebhooks::wait_ready(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return ready_.load() || stopping_; }) && ready_.load();
}

std::string OperatorWebhooks::ca_cert() const {
  std::lock_guard lock(mu_);
  return current_.ca_cert;
}

void OperatorWebhooks::run() {
  // Check often enough that a rotation lands well inside the lookahead window.
  const auto interval = std::clamp<std::chrono::seconds>(options_.certs.lookahead / 4, std::chrono::seconds(1),
                                                         std::chrono::hours(12));
  for (;;) {
    auto bundle = certs_->ensure(std::chrono::system_clock::now());
    std::chrono::seconds wait = interval;
    if (!bundle) {
      spdlog::error("webhook certificates: {}", bundle.error().message);
      wait = std::chrono::seconds(2);
    } else {
      std::string previous_ca;
      bool changed = false;
      {
        std::lock_guard lock(mu_);
        changed = !(current_ == *bundle);
        if (changed) previous_ca = current_.ca_cert;
      }
      // While the served certificate changes, the API server trusts both CAs, so no call fails
      // between the caBundle update and the swap; the next check drops the old CA.
      if (auto s = certs_->inject_ca(previous_ca + bundle->ca_cert); !s) {
        spdlog::error("webhook caBundle: {}", s.error().message);
        wait = std::min<std::chrono::seconds>(wait, std::chrono::seconds(10));
      }
      if (changed) {
        if (auto s = server_->set_certificate(bundle->cert, bundle->key); !s) {
          spdlog::error("webhook certificates: {}", s.error().message);
          wait = std::chrono::seconds(2);
        } else {
          auto end = webhook::not_after(bundle->cert);
          spdlog::info("webhook server serving a certificate for {} valid until {}",
                       webhook::dns_names(options_.certs.cert)[2],
                       end ? fmt::format("{:%FT%TZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(*end)))
                           : std::string("?"));
          std::lock_guard lock(mu_);
          current_ = *bundle;
          ready_ = true;
        }
        cv_.notify_all();
      }
    }
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, wait, [&] { return stopping_; })) return;
  }
}

Status register_webhook_configurations(kube::Client& client, const webhook::Handler& handler, const std::string& url,
                                       const std::string& ca_cert) {
  json::Document client_config = json::Document::object();
  auto& a = client_config.alloc();
  client_config.root().AddMember("url", json::str(url, a), a);
  client_config.root().AddMember("caBundle", json::str(webhook::base64_encode(ca_cert), a), a);
  const kube::GroupVersionResource validating{"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"};
  const kube::GroupVersionResource mutating{"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"};
  for (auto [r, doc] : {std::pair{validating, handler.validating_configuration(client_config.root())},
                        std::pair{mutating, handler.mutating_configuration(client_config.root())}}) {
    const std::string name(json::get_string(doc.root(), "/metadata/name").value_or(""));
    auto created = client.create(r, "", doc.root());
    if (created) continue;
    if (!created.error().is(kube::ApiError::Reason::AlreadyExists))
      return fail(fmt::format("registering {} {}: {}", r.group_resource(), name, created.error().to_string()));
    auto existing = client.get(r, "", name);
    if (!existing) return fail(fmt::format("reading {} {}: {}", r.group_resource(), name, existing.error().to_string()));
    if (auto rv = json::get_string(existing->root(), "/metadata/resourceVersion"))
      if (auto s = json::set_string(doc, "/metadata/resourceVersion", *rv); !s) return s;
    auto updated = client.update(r, "", doc.root());
    if (!updated) return fail(fmt::format("updating {} {}: {}", r.group_resource(), name, updated.error().to_string()));
  }
  return {};
}

}  // namespace unitrain::operator_cmd
