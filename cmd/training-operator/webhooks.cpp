#include "cmd/training-operator/webhooks.h"

#include <algorithm>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/log/throttle.h"
#include "core/webhook/registration.h"

namespace unitrain::operator_cmd {

OperatorWebhooks::OperatorWebhooks(kube::Client& client, std::vector<const framework::FrameworkPlugin*> plugins,
                                   const framework::Registry& registry, WebhookOptions options)
    : client_(client), options_(std::move(options)), handler_(std::move(plugins), registry, options_.handler) {
  options_.certs.crds = handler_.conversion_crds();
  certs_ = std::make_unique<webhook::CertManager>(client_, options_.certs);
}

OperatorWebhooks::~OperatorWebhooks() { stop(); }

Status OperatorWebhooks::start(std::stop_token) {
  if (options_.create_secret_namespace) {
    auto ns = json::Document::parse(fmt::format(R"({{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{}"}}}})",
                                                options_.certs.secret_namespace));
    auto created = client_.create({"", "v1", "namespaces"}, "", ns->root());
    if (!created && !created.error().is(kube::ApiError::Reason::AlreadyExists))
      return fail(fmt::format("namespace {} for the webhook Secret: {}", options_.certs.secret_namespace,
                              created.error().to_string()));
  }
  // Out of a cluster the Secret's namespace may well not exist; no retry creates it, so say once
  // what would, and stop. Other failures pass (an API server still starting, RBAC being applied):
  // keep_certificates() retries them.
  if (auto first = certs_->ensure(std::chrono::system_clock::now()); !first && first.error().namespace_missing)
    return fail(fmt::format("webhook certificates: {}: create it (kubectl create namespace {}), or set "
                            "--webhook-namespace (or $MY_POD_NAMESPACE) to the namespace of the Service {}, or run "
                            "with --disable-webhooks",
                            first.error().message, options_.certs.secret_namespace,
                            options_.certs.cert.service_name));
  const webhook::Handler* handler = &handler_;
  auto server = HttpServer::start_tls(options_.host, options_.port, [handler, this](const HttpRequest& r) -> HttpReply {
    if (r.method != "POST") return HttpReply{405, "text/plain; charset=utf-8", "method not allowed\n"};
    const auto started = std::chrono::steady_clock::now();
    if (options_.request_started) options_.request_started(r.path);
    auto reply = handler->handle(r.path, r.body);
    if (options_.request_finished) options_.request_finished(r.path, reply.status, std::chrono::steady_clock::now() - started);
    return HttpReply{reply.status, reply.content_type, std::move(reply.body)};
  });
  if (!server) return fail(fmt::format("--webhook-server-port: {}", server.error().message));
  server_ = std::move(*server);
  spdlog::info("--webhook-server-port serving HTTPS on port {}", server_->port());
  thread_ = std::thread([this] { keep_certificates(); });
  return {};
}

void OperatorWebhooks::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (server_) server_->stop();
}

Status OperatorWebhooks::wait_ready(std::stop_token stopping, std::chrono::seconds timeout) const {
  std::unique_lock lock(mu_);
  if (cv_.wait_for(lock, stopping, timeout, [&] { return ready_.load() || stopping_; }) && ready_.load()) return {};
  if (stopping.stop_requested() || stopping_) return fail("stopped while waiting for the webhook certificates");
  return fail(fmt::format("webhook certificates are not ready after {} s", timeout.count()));
}

std::string OperatorWebhooks::ca_cert() const {
  std::lock_guard lock(mu_);
  return current_.ca_cert;
}

std::string OperatorWebhooks::last_failure() const {
  std::lock_guard lock(mu_);
  return last_failure_;
}

Status OperatorWebhooks::readiness() const {
  if (certificates_ready()) return {};
  const std::string why = last_failure();
  return fail(why.empty() ? std::string("certificates are not ready") : "certificates are not ready: " + why);
}

std::optional<webhook::SystemTime> OperatorWebhooks::certificate_not_after() const {
  std::lock_guard lock(mu_);
  if (current_.cert.empty()) return std::nullopt;
  auto end = webhook::not_after(current_.cert);
  return end ? std::optional<webhook::SystemTime>(*end) : std::nullopt;
}

std::vector<std::string> OperatorWebhooks::paths() const {
  std::vector<std::string> out;
  for (const auto& e : handler_.endpoints()) out.push_back(e.path);
  if (!handler_.conversion_crds().empty()) out.push_back(std::string(webhook::kConvertPath));
  return out;
}

void OperatorWebhooks::share_certificate(HttpServer& server) {
  std::lock_guard lock(mu_);
  sharing_.push_back(&server);
  if (current_.cert.empty()) return;
  if (auto s = server.set_certificate(current_.cert, current_.key); !s) {
    spdlog::error("serving the webhook certificate on port {}: {}", server.port(), s.error().message);
  }
}

void OperatorWebhooks::stop_sharing(HttpServer& server) {
  std::lock_guard lock(mu_);
  std::erase(sharing_, &server);
}

void OperatorWebhooks::keep_certificates() {
  // Check often enough that a rotation lands well inside the lookahead window.
  const auto interval = std::clamp<std::chrono::seconds>(options_.certs.lookahead / 4, std::chrono::seconds(1),
                                                         std::chrono::hours(12));
  // A failure retried every few seconds is said once per cause and interval.
  log::Throttle failures(std::chrono::seconds(30));
  auto say = [this, &failures](const std::string& what) {
    {
      std::lock_guard lock(mu_);
      last_failure_ = what;
    }
    if (auto report = failures.occur(what, std::chrono::steady_clock::now())) spdlog::error("{}{}", what, report->suffix());
  };
  for (;;) {
    auto bundle = certs_->ensure(std::chrono::system_clock::now());
    std::chrono::seconds wait = interval;
    if (!bundle) {
      say("webhook certificates: " + bundle.error().message);
      wait = std::chrono::seconds(2);
    } else {
      std::string previous_ca;
      bool changed = false;
      {
        std::lock_guard lock(mu_);
        changed = !(current_ == *bundle);
        if (changed) previous_ca = current_.ca_cert;
      }
      // Hooks only of what this operator serves (a disabled module's would fail every write of
      // its version), then the caBundle in all of them.
      if (auto s = webhook::sync_webhook_configurations(client_, handler_, fallback_client_config().root()); !s) {
        spdlog::error("webhook configurations: {}", s.error().message);
        wait = std::min<std::chrono::seconds>(wait, std::chrono::seconds(10));
      }
      auto serve = [&] {
        if (auto s = server_->set_certificate(bundle->cert, bundle->key); !s) {
          say("webhook certificates: " + s.error().message);
          wait = std::chrono::seconds(2);
        } else {
          auto end = webhook::not_after(bundle->cert);
          spdlog::info("webhook server serving a certificate for {} valid until {}",
                       webhook::dns_names(options_.certs.cert)[2],
                       end ? fmt::format("{:%FT%TZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(*end)))
                           : std::string("?"));
          std::lock_guard lock(mu_);
          current_ = *bundle;
          last_failure_.clear();
          for (HttpServer* other : sharing_) {
            if (auto s = other->set_certificate(bundle->cert, bundle->key); !s) spdlog::error("serving the webhook certificate on port {}: {}", other->port(), s.error().message);
          }
        }
        cv_.notify_all();
      };
      // The first certificate is served before its CA is announced: once the caBundle names it
      // (another replica may have put it there already), the API server calls this replica too,
      // and a server without a certificate fails the handshake.
      const bool first = changed && previous_ca.empty();
      if (first) serve();
      // While the served certificate changes, the API server trusts both CAs, so no call fails
      // between the caBundle update and the swap; the next check drops the old CA.
      if (auto s = certs_->inject_ca(previous_ca + bundle->ca_cert); !s) {
        say("webhook caBundle: " + s.error().message);
        wait = std::min<std::chrono::seconds>(wait, std::chrono::seconds(10));
      } else {
        // Ready once the API server trusts what this replica serves: a replica that served its
        // certificate but had not yet announced the CA was Ready while every call to it failed
        // verification (a fresh install's first job refused).
        std::lock_guard lock(mu_);
        if (!current_.cert.empty() && !ready_.exchange(true)) cv_.notify_all();
      }
      if (changed && !first) serve();
    }
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, wait, [&] { return stopping_; })) return;
  }
}

json::Document OperatorWebhooks::fallback_client_config() const {
  // The Service the manifests put in front of the webhook server (port 443 → the server's port).
  json::Document cc = json::Document::object();
  (void)json::set_string(cc, "/service/namespace", options_.certs.cert.service_namespace);
  (void)json::set_string(cc, "/service/name", options_.certs.cert.service_name);
  (void)json::set(cc, "/service/port", json::Value(443));
  return cc;
}

Status register_webhook_configurations(kube::Client& client, const webhook::Handler& handler, const std::string& url,
                                       const std::string& ca_cert) {
  json::Document client_config = json::Document::object();
  auto& a = client_config.alloc();
  client_config.root().AddMember("url", json::str(url, a), a);
  client_config.root().AddMember("caBundle", json::str(webhook::base64_encode(ca_cert), a), a);
  for (auto [r, doc] : {std::pair{webhook::kValidatingConfigurations, handler.validating_configuration(client_config.root())},
                        std::pair{webhook::kMutatingConfigurations, handler.mutating_configuration(client_config.root())}}) {
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
