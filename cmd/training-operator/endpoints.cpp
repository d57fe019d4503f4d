#include "cmd/training-operator/endpoints.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/metrics/metrics.h"

namespace unitrain::operator_cmd {

namespace {
constexpr const char* kText = "text/plain; charset=utf-8";

HttpReply probe(const manager::ProbeResult& r) { return {r.ok ? 200 : 503, kText, r.body}; }
}  // namespace

Endpoints::Endpoints(std::vector<Address> addresses, const manager::Manager& manager, const OperatorMetrics& metrics)
    : addresses_(std::move(addresses)), manager_(manager), metrics_(metrics) {}

HttpReply Endpoints::serve(std::string_view path) const {
  if (path == "/healthz" || path == "/livez") return probe(manager_.health());
  if (path == "/readyz") return probe(manager_.readiness());
  if (path == "/metrics") return {200, std::string(metrics::kContentType), metrics_.expose()};
  return {404, kText, "not found\n"};
}

Status Endpoints::start(std::stop_token) {
  for (const auto& [flag, address] : addresses_) {
    if (address == "0") continue;  // controller-runtime: "0" disables the endpoint
    auto hp = parse_bind_address(flag, address);
    if (!hp) return fail(hp.error().message);
    // Metrics and probes on one address share one server.
    bool shared = false;
    for (const auto& s : servers_) shared |= hp->second != 0 && s->port() == hp->second;
    if (shared) continue;
    auto server = HttpServer::start(hp->first, hp->second, [this](std::string_view path) { return serve(path); });
    if (!server) return fail(fmt::format("{}: {}", flag, server.error().message));
    spdlog::info("{} serving on port {}", flag, (*server)->port());
    servers_.push_back(std::move(*server));
  }
  return {};
}

void Endpoints::stop() {
  for (auto& s : servers_) s->stop();
}

}  // namespace unitrain::operator_cmd
