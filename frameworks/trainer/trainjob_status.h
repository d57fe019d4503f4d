// The TrainJobStatus plugin (upstream's alpha gate `TrainJobStatus`, off by default): the trainer
// pods get the status server's URL, its CA and a service-account token bound to the TrainJob's
// status, so the training code can report progress (the status server, status_server.h, writes it into
// status.trainerStatus). Pure, as build.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/result.h"
#include "core/json/json.h"

namespace unitrain::frameworks::trainer {

inline constexpr std::string_view kTrainJobStatusGate = "TrainJobStatus";
inline constexpr int kDefaultStatusServerPort = 10443;
inline constexpr std::string_view kTrainerTokenVolume = "kubeflow-trainer-token";
inline constexpr std::string_view kTrainerTokenDir = "/var/run/secrets/kubeflow/trainer";
inline constexpr int64_t kTrainerTokenExpirationSeconds = 3600;
inline constexpr std::string_view kTlsConfigSuffix = "-tls-config";

// Where the status server is reached and which Secret holds its certificate (the webhook one).
struct StatusServerConfig {
  std::string service_name;        // the operator's Service
  std::string operator_namespace;  // where the Service and the Secret are
  std::string certificate_secret;  // the webhook certificate Secret, key ca.crt
  int port = kDefaultStatusServerPort;
};

// "trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status": the audience of the
// pods' token and the status server's check.
std::string status_token_audience(std::string_view ns, std::string_view name);
// "/apis/" + the audience: the status server's route for one TrainJob.
std::string status_path(std::string_view ns, std::string_view name);
// https://<service>.<operator ns>.svc:<port><status_path>
std::string status_server_url(const StatusServerConfig& config, std::string_view ns, std::string_view name);

// Env (KUBEFLOW_TRAINER_SERVER_URL, _CA_CERT, _TOKEN) and the token mount on every container of
// the trainer PodSet's pod spec; the projected volume (token + ca.crt) on the pod spec.
void enforce_trainjob_status(const StatusServerConfig& config, std::string_view ns, std::string_view name,
                             json::Value& trainer_pod_spec, json::Allocator& a);

// ConfigMap <trainjob>-tls-config, key ca.crt, copied from the webhook certificate Secret:
// `secret` is the Secret read (null when the read failed, `secret_error` then says why).
Result<json::Document> status_tls_config_map(std::string_view ns, std::string_view name, const json::Value* secret,
                                             std::string_view secret_error);

}  // namespace unitrain::frameworks::trainer
