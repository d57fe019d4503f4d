// Self-signed serving material for `--tls`: a CA and a server certificate it signs, valid for
// 127.0.0.1, ::1 and localhost, so kubectl verifies the server with the CA from the kubeconfig.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/base/result.h"

namespace unitrain::localcluster {

struct TlsMaterial {
  std::string ca_cert_pem;
  std::string server_cert_pem;
  std::string server_key_pem;
};

// A fresh P-256 CA and server certificate (valid one year from now).
Result<TlsMaterial> make_self_signed_tls();
// The same for other names, in OpenSSL's subjectAltName syntax ("DNS:hook.ns.svc,IP:127.0.0.1"):
// serving material for test webhook servers.
Result<TlsMaterial> make_self_signed_tls(std::string_view subject_alt_names);

// With a state directory, the material is kept in ca.crt / server.crt / server.key there and
// reused on restart, so a kubeconfig written earlier keeps working.
Result<TlsMaterial> load_or_make_tls(const std::optional<std::string>& state_dir);

}  // namespace unitrain::localcluster
