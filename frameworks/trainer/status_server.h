// Kubeflow Trainer's status server (gate TrainJobStatus): the training code POSTs
// {"trainerStatus": {...}} to /apis/trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status
// with the projected token its pod got (trainjob_status.h); the server checks the token and
// writes only status.trainerStatus (server-side apply on the status subresource, field manager
// trainer-status). Errors are metav1 Status bodies.
//
// The token is checked through the TokenReview API (audience = the TrainJob's status audience,
// then the namespace of the token's service account = the TrainJob's), where upstream verifies it
// by OIDC against the cluster's issuer: the API server is the one authority both ways.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/framework/module_endpoint.h"
#include "core/json/json.h"

namespace unitrain::frameworks::trainer {

inline constexpr size_t kStatusBodyLimit = 64 * 1024;
inline constexpr std::string_view kStatusFieldManager = "trainer-status";

struct StatusRoute {
  std::string namespace_name;
  std::string name;
};
// The TrainJob a path names, or nullopt for any other path.
std::optional<StatusRoute> status_route(std::string_view path);

// The metav1 Status body of an error reply.
std::string status_error_body(int code, std::string_view reason, std::string_view message);

// The request body checked as the server decodes it: a JSON object whose trainerStatus, when
// present, has upstream's field types; the error is why not.
Result<json::Document> parse_status_request(std::string_view body);

// Whether a TokenReview answer lets the token write the status of `route`: authenticated, the
// audience granted, and a service account of the TrainJob's namespace.
bool token_review_allows(const json::Value& review, const StatusRoute& route);

class StatusServer final : public framework::ModuleEndpoint {
 public:
  explicit StatusServer(uint16_t port) : port_(port) {}
  std::string_view endpoint_name() const override { return "status server"; }
  std::string_view port_flag() const override { return "--status-server-port"; }
  uint16_t port() const override { return port_; }
  framework::EndpointReply serve(const framework::EndpointRequest& request, kube::Client& client) const override;

 private:
  uint16_t port_;
};

}  // namespace unitrain::frameworks::trainer
