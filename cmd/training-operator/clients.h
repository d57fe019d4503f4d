// The operator's API clients: one shared by the controllers, informers and webhooks, one for
// leader election alone and one for events alone, each with its own client-side rate limit; every
// attempt of each is reported (OperatorMetrics counts and times them, the FaultLog watches the
// connection). Events never take the object writes' budget: under a
// backlog the main client's --kube-api-qps goes to pods, services and status, while events queue
// (and, past the recorder's queue, are dropped and counted) behind --events-qps.
#pragma once

#include <functional>
#include <memory>
#include <stop_token>
#include <vector>

#include "core/base/passkey.h"
#include "core/base/result.h"
#include "core/kube/config.h"
#include "core/kube/rest_client.h"

namespace unitrain::operator_cmd {

struct ApiClientOptions {
  kube::RestConfig rest;  // server, credentials and the main client's --kube-api-qps / --kube-api-burst
  double events_qps = 20;
  int events_burst = 30;
  // Once requested, a failed request is no longer retried, and the main and events clients'
  // requests in flight or waiting for their rate limit end at once (Cancelled): a stopping
  // operator is not held up by an API server that is gone or does not answer. The leader
  // election client is left alone: it releases the Lease last.
  std::stop_token stopping;
  // Every attempt of every client (latency metrics, connection faults); must not block.
  std::function<void(const kube::AttemptReport&)> on_attempt;
};

class ApiClients {
 public:
  static Result<std::unique_ptr<ApiClients>> create(ApiClientOptions options);

  kube::Client& main() { return *main_; }
  kube::Client& election() { return *election_; }
  kube::Client& events() { return *events_; }

  // Only create() can make the key; public so std::make_unique can call it.
  ApiClients(PassKey<ApiClients>, std::unique_ptr<kube::RestClient> main, std::unique_ptr<kube::RestClient> election,
             std::unique_ptr<kube::RestClient> events)
      : main_(std::move(main)), election_(std::move(election)), events_(std::move(events)) {}

 private:

  std::unique_ptr<kube::RestClient> main_;
  std::unique_ptr<kube::RestClient> election_;
  std::unique_ptr<kube::RestClient> events_;
};

}  // namespace unitrain::operator_cmd
