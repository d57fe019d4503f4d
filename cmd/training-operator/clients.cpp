#include "cmd/training-operator/clients.h"

#include <fmt/format.h>

namespace unitrain::operator_cmd {

Result<std::unique_ptr<ApiClients>> ApiClients::create(ApiClientOptions o) {
  const kube::RestConfig& rest = o.rest;
  kube::RestClientOptions main_options;
  // Stopping cancels what the reconcilers, informers and certificate keeper have in flight or
  // waiting for the rate limit, as controller-runtime cancels their context: a pass blocked on an
  // API server that does not answer, or queued behind a backlog's writes at --kube-api-qps, would
  // otherwise outlast the 30 s graceful stop. The pass is cut short; the next leader's informers
  // list every job again.
  main_options.stop = o.stopping;
  main_options.stop_ends_rate_limit_wait = true;
  main_options.transport.cancel = o.stopping;
  main_options.on_attempt = o.on_attempt;
  auto main = kube::RestClient::create(rest, main_options);
  if (!main) return fail(fmt::format("API client for {}: {}", rest.server_url(), main.error().message));
  // Leader election gets its own client without retries (controller-runtime also gives it a
  // separate one): a renewal that waits out the shared client's backoff against an unreachable
  // server would hold up the lease's release, and a failed attempt is simply tried again next
  // retry period.
  kube::RestClientOptions election_options;
  election_options.retry.max_retries = 0;
  election_options.transport.connect_timeout = std::chrono::seconds(2);
  election_options.on_attempt = o.on_attempt;
  kube::RestConfig election_rest = rest;
  election_rest.timeout = std::chrono::seconds(5);
  auto election = kube::RestClient::create(election_rest, election_options);
  if (!election) return fail(fmt::format("API client for {}: {}", rest.server_url(), election.error().message));
  // Events: a token bucket of their own. The recorder retries on its own terms.
  kube::RestClientOptions events_options;
  events_options.stop = o.stopping;
  events_options.stop_ends_rate_limit_wait = true;  // a stopping operator gives queued events up
  events_options.transport.cancel = o.stopping;
  events_options.retry.max_retries = 0;
  events_options.on_attempt = o.on_attempt;
  kube::RestConfig events_rest = rest;
  events_rest.qps = o.events_qps;
  events_rest.burst = o.events_burst;
  auto events = kube::RestClient::create(events_rest, events_options);
  if (!events) return fail(fmt::format("API client for {}: {}", rest.server_url(), events.error().message));
  return std::make_unique<ApiClients>(PassKey<ApiClients>{}, std::move(*main), std::move(*election), std::move(*events));
}

}  // namespace unitrain::operator_cmd
