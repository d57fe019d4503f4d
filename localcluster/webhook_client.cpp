#include "localcluster/webhook_client.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "core/base/base64.h"
#include "core/kube/transport.h"

namespace unitrain::localcluster {

using json::Document;
using json::Value;

Status add_service_endpoint(WebhookOptions& options, std::string_view spec) {
  size_t eq = spec.find('=');
  size_t slash = spec.find('/');
  if (eq == std::string_view::npos || slash == std::string_view::npos || slash > eq) {
    return fail(fmt::format("--service-endpoint {}: expected NAMESPACE/NAME[:PORT]=HOST:PORT", spec));
  }
  std::string key(spec.substr(0, eq));
  std::string target(spec.substr(eq + 1));
  if (key.find(':') == std::string::npos) key += ":443";
  size_t colon = target.rfind(':');
  if (colon == std::string::npos || colon + 1 == target.size()) {
    return fail(fmt::format("--service-endpoint {}: the target must be HOST:PORT", spec));
  }
  options.service_endpoints[key].push_back(std::move(target));
  return {};
}

WebhookCaller::WebhookCaller(const WebhookOptions& options) : options_(options) {}
WebhookCaller::~WebhookCaller() = default;

Result<WebhookEndpoint> WebhookCaller::endpoint(const Value& client_config, std::chrono::seconds timeout) const {
  WebhookEndpoint ep;
  std::string ca_pem;
  std::string query = fmt::format("?timeout={}s", timeout.count());
  if (auto ca = json::get_string(client_config, "/caBundle"); ca && !ca->empty()) {
    auto pem = base64_decode(*ca);
    if (!pem) return fail("caBundle is not valid base64");
    ca_pem = std::move(*pem);
  }
  if (auto url = json::get_string(client_config, "/url")) {
    kube::RestConfig cfg;
    cfg.ca_pem = ca_pem;
    if (auto s = kube::parse_server_url(*url, cfg); !s) return fail("url: " + s.error().message);
    ep.target = (cfg.path_prefix.empty() ? "/" : cfg.path_prefix) + query;
    cfg.path_prefix.clear();
    ep.url = std::string(*url) + query;
    ep.backends.push_back(std::move(cfg));
    return ep;
  }
  const Value* svc = json::find(client_config, "/service");
  if (svc == nullptr || !svc->IsObject()) return fail("clientConfig has neither url nor service");
  std::string ns = json::string_at(*svc, "/namespace"), name = json::string_at(*svc, "/name");
  std::string path = json::string_at(*svc, "/path");
  int64_t port = json::get_int(*svc, "/port").value_or(443);
  if (path.empty()) path = "/";
  std::string host = fmt::format("{}.{}.svc", name, ns);
  ep.url = fmt::format("https://{}:{}{}{}", host, port, path, query);
  ep.target = path + query;
  auto it = options_.service_endpoints.find(fmt::format("{}/{}:{}", ns, name, port));
  if (it == options_.service_endpoints.end()) {
    // What the dialer reports when the service name does not resolve.
    return fail(fmt::format("dial tcp: lookup {}: no such host (the local cluster has no pod network; map the "
                            "service with --service-endpoint {}/{}:{}=HOST:PORT)",
                            host, ns, name, port));
  }
  for (const auto& target : it->second) {
    kube::RestConfig cfg;
    cfg.ca_pem = ca_pem;
    if (auto s = kube::parse_server_url("https://" + target, cfg); !s) {
      return fail("service endpoint " + target + ": " + s.error().message);
    }
    cfg.tls_server_name = host;
    ep.backends.push_back(std::move(cfg));
  }
  return ep;
}

Result<json::Document> WebhookCaller::post(const WebhookEndpoint& ep, const std::string& body,
                                           std::chrono::milliseconds timeout) {
  kube::http::Request req;
  req.method = "POST";
  req.target = ep.target;
  req.headers.push_back({"Content-Type", "application/json"});
  req.headers.push_back({"Accept", "application/json, */*"});
  req.body = body;
  using K = kube::http::TransportError::Kind;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::optional<Result<kube::http::Response, kube::http::TransportError>> res;
  for (const auto& backend : ep.backends) {
    auto transport = transport_for(backend);
    if (!transport) return fail(fmt::format("Post \"{}\": {}", ep.url, transport.error().message));
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    res = (*transport)->send(req, std::max(left, std::chrono::milliseconds(1)));
    if (*res) break;
    const K kind = res->error().kind;
    // Refused, reset, or a handshake the server dropped (a replica without its certificate yet,
    // which would not be Ready): the next replica. A certificate that fails verification is not
    // a replica being down, and is the answer.
    if (kind != K::Connect && kind != K::ConnectionLost && kind != K::Resolve && kind != K::Tls) break;
  }
  if (!res) return fail(fmt::format("Post \"{}\": the service has no endpoints", ep.url));
  if (!*res) {
    const auto& e = res->error();
    std::string reason;
    switch (e.kind) {
      case K::Timeout:
        reason = "context deadline exceeded";
        break;
      case K::TlsVerify:
        reason = "tls: failed to verify certificate: " + e.message;
        break;
      default:
        reason = e.message;
    }
    return fail(fmt::format("Post \"{}\": {}", ep.url, reason));
  }
  const kube::http::Response& response = **res;
  if (response.status < 200 || response.status > 299) {
    return fail(fmt::format("an error on the server (\"{}\") has prevented the request from succeeding",
                            response.body.substr(0, 256)));
  }
  auto doc = Document::parse(response.body);
  if (!doc) return fail("couldn't decode the webhook response: " + doc.error().message);
  return std::move(*doc);
}

Result<kube::Transport*> WebhookCaller::transport_for(const kube::RestConfig& cfg) {
  std::string key = fmt::format("{}|{}|{}|{}", cfg.host, cfg.port, cfg.tls_server_name, cfg.ca_pem);
  std::lock_guard lock(mu_);
  auto it = transports_.find(key);
  if (it != transports_.end()) return it->second.get();
  auto t = kube::Transport::create(cfg);
  if (!t) return fail(t.error());
  auto* raw = t->get();
  transports_.emplace(std::move(key), std::move(*t));
  return raw;
}

}  // namespace unitrain::localcluster
