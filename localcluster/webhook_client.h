// Calling admission and conversion webhooks as kube-apiserver does: resolving a clientConfig
// (url, or a Service mapped to where this process reaches its endpoints), verifying TLS against the caBundle
// with the Service's DNS name, POSTing the review with ?timeout=, and wording failures the way
// Go's url.Error reads (`Post "<url>": <reason>`). Connections are kept per endpoint and CA.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"
#include "core/kube/config.h"

namespace unitrain::kube {
class Transport;
}

namespace unitrain::localcluster {

struct WebhookOptions {
  // A local cluster has no pod network: a webhook's `service` {namespace, name, port} is reached
  // at the host:ports given here, keyed "namespace/name:port" -- one per replica behind the
  // Service. TLS is still verified against the caBundle with the name <name>.<namespace>.svc, as
  // kube-apiserver does.
  std::map<std::string, std::vector<std::string>, std::less<>> service_endpoints;
};

// Adds "ns/name:port=host:port" (":port" may be left out for 443) to `options`; adding a Service
// again gives it one more endpoint.
Status add_service_endpoint(WebhookOptions& options, std::string_view spec);

// How a webhook is reached: the URL kube-apiserver would post to (for messages) and where this
// process connects: one place for a url, every endpoint of a Service, tried in order.
struct WebhookEndpoint {
  std::string url;  // as in kube's error texts: https://<name>.<ns>.svc:<port><path>
  std::vector<kube::RestConfig> backends;
  std::string target;  // path + query
};

class WebhookCaller {
 public:
  explicit WebhookCaller(const WebhookOptions& options);
  ~WebhookCaller();
  WebhookCaller(const WebhookCaller&) = delete;
  WebhookCaller& operator=(const WebhookCaller&) = delete;

  // Resolves a clientConfig (admissionregistration or apiextensions: same shape).
  Result<WebhookEndpoint> endpoint(const json::Value& client_config, std::chrono::seconds timeout) const;
  // POSTs `body` and returns the decoded response. A backend that cannot be reached (refused,
  // reset, gone, or dropping the TLS handshake as a replica without its certificate does) passes
  // the review to the next: a Service routes to the replicas that are up and Ready (a killed one
  // drops out of its endpoints), and kube-apiserver retries a webhook call that failed on a
  // connection error. Every other failure, a certificate that fails verification included, is
  // the answer.
  Result<json::Document> post(const WebhookEndpoint& ep, const std::string& body, std::chrono::milliseconds timeout);

 private:
  Result<kube::Transport*> transport_for(const kube::RestConfig& cfg);

  const WebhookOptions& options_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<kube::Transport>> transports_;
};

}  // namespace unitrain::localcluster
