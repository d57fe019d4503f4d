// The operator's plain-HTTP endpoints: /healthz and /livez (the manager's health checks), /readyz
// (its readiness checks) and /metrics, on --health-probe-bind-address and --metrics-bind-address
// (one server when both name the same port; "0" disables one).
#pragma once

#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "cmd/training-operator/http_server.h"
#include "cmd/training-operator/operator_metrics.h"
#include "core/manager/manager.h"

namespace unitrain::operator_cmd {

class Endpoints final : public manager::Runnable {
 public:
  struct Address {
    std::string flag;   // for messages and the "<flag> serving on port N" log line
    std::string value;  // "host:port", "0" to disable
  };
  Endpoints(std::vector<Address> addresses, const manager::Manager& manager, const OperatorMetrics& metrics);

  Status start(std::stop_token) override;
  void stop() override;

  // The reply to a GET of `path`.
  HttpReply serve(std::string_view path) const;

 private:
  std::vector<Address> addresses_;
  const manager::Manager& manager_;
  const OperatorMetrics& metrics_;
  std::vector<std::unique_ptr<HttpServer>> servers_;
};

}  // namespace unitrain::operator_cmd
