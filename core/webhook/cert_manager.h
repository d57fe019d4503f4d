// Keeps the webhook certificates in a Secret and their CA in every place the API server reads
// it from: generated when the Secret is missing or unusable, reused across restarts and by every
// replica, replaced before expiry, and the caBundle patched into the webhook configurations and
// the CRDs whose conversion webhook the operator serves.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "core/kube/client.h"
#include "core/webhook/certs.h"

namespace unitrain::webhook {

struct CertManagerOptions {
  CertOptions cert;
  std::string secret_namespace = "kubeflow";
  std::string secret_name = "training-operator-webhook-cert";
  // Replace the certificates when less than this remains (cert-controller: 90 days of 10 years).
  std::chrono::seconds lookahead{std::chrono::hours(24 * 90)};
  std::vector<std::string> validating_configurations;  // names whose webhooks get the caBundle
  std::vector<std::string> mutating_configurations;
  std::vector<std::string> crds;  // "<plural>.<group>" with spec.conversion.strategy Webhook
};

// Rotation lookahead for a validity: a quarter of it, at most 90 days (so a short validity in
// tests still rotates well before expiry).
std::chrono::seconds default_lookahead(std::chrono::seconds validity);

// Why ensure() failed. `namespace_missing`: the Secret's namespace does not exist, which only a
// person can fix (create it, or point the operator at another); every other failure may pass.
struct CertFailure {
  std::string message;
  bool namespace_missing = false;
};

class CertManager {
 public:
  CertManager(kube::Client& client, CertManagerOptions options);

  // Reads the Secret; when it is missing or its certificates cannot serve past now + lookahead,
  // generates new ones and writes them (another replica's concurrent write wins: on a conflict
  // the Secret is read again). Returns the certificates to serve.
  Result<CertBundle, CertFailure> ensure(SystemTime now);

  // Sets caBundle to `ca_cert` in the configured webhook configurations and CRDs; objects that do
  // not exist are skipped, objects already right are not written. Separate from ensure(): a
  // replica that may not patch them (RBAC) still serves with the certificates of the Secret.
  Status inject_ca(const std::string& ca_cert);

  const CertManagerOptions& options() const { return options_; }

 private:
  kube::Client& client_;
  CertManagerOptions options_;
};

}  // namespace unitrain::webhook
