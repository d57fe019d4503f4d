// Self-managed webhook certificates: a CA and a serving certificate for the webhook Service,
// made with OpenSSL (what open-policy-agent/cert-controller does for training-operator).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace unitrain::webhook {

using SystemTime = std::chrono::system_clock::time_point;

struct CertOptions {
  std::string service_name = "training-operator";
  std::string service_namespace = "kubeflow";
  std::string ca_name = "training-operator-ca";
  std::string organization = "training-operator";
  std::chrono::seconds validity{std::chrono::hours(24 * 365 * 10)};
  // Extra IP subject alternative names ("127.0.0.1" when an API server on this host calls a url).
  std::vector<std::string> ip_addresses;
};

// PEM texts, stored in the Secret under ca.crt, ca.key, tls.crt, tls.key.
struct CertBundle {
  std::string ca_cert, ca_key, cert, key;
  friend bool operator==(const CertBundle&, const CertBundle&) = default;
};

// "<svc>", "<svc>.<ns>", "<svc>.<ns>.svc", "<svc>.<ns>.svc.cluster.local".
std::vector<std::string> dns_names(const CertOptions& options);

// A new CA (EC P-256) and a serving certificate signed by it for dns_names(), valid from a
// minute before `now` (clock skew) for options.validity.
Result<CertBundle> generate_certs(const CertOptions& options, SystemTime now);

// Fails with the reason when the bundle cannot serve until `now + lookahead`: unparsable PEM,
// a key that does not match its certificate, a serving certificate not signed by the CA or not
// naming "<svc>.<ns>.svc" and every ip_addresses entry, or either certificate expiring before then.
Status check_certs(const CertBundle& bundle, const CertOptions& options, SystemTime now,
                   std::chrono::seconds lookahead);

// The notAfter of a PEM certificate.
Result<SystemTime> not_after(std::string_view cert_pem);

}  // namespace unitrain::webhook
