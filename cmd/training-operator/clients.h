// The operator's API clients: one shared by the controllers, informers, event recorders and
// webhooks, and one for leader election alone, each counted for rest_client_requests_total.
#pragma once

#include <memory>
#include <stop_token>
#include <vector>

#include "cmd/training-operator/counting_client.h"
#include "core/base/result.h"
#include "core/kube/config.h"
#include "core/kube/rest_client.h"

namespace unitrain::operator_cmd {

class ApiClients {
 public:
  // Once `stopping` is requested, a failed request is no longer retried: a stopping operator is
  // not held up by an API server that is gone (a request in flight ends within its timeouts).
  static Result<std::unique_ptr<ApiClients>> create(const kube::RestConfig& rest, std::stop_token stopping);

  kube::Client& main() { return main_; }
  kube::Client& election() { return election_; }
  std::vector<const CountingClient*> counted() const { return {&main_, &election_}; }

 private:
  ApiClients(std::unique_ptr<kube::RestClient> main, std::unique_ptr<kube::RestClient> election)
      : main_rest_(std::move(main)), election_rest_(std::move(election)), main_(*main_rest_), election_(*election_rest_) {}

  std::unique_ptr<kube::RestClient> main_rest_;
  std::unique_ptr<kube::RestClient> election_rest_;
  CountingClient main_;
  CountingClient election_;
};

}  // namespace unitrain::operator_cmd
