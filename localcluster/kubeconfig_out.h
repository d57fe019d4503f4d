// Writes the kubeconfig that points kubectl and the client libraries at the local cluster.
#pragma once

#include <optional>
#include <string>

#include "core/base/result.h"

namespace unitrain::localcluster {

struct KubeconfigSpec {
  std::string server;                  // "https://127.0.0.1:6443"
  std::optional<std::string> ca_pem;   // becomes certificate-authority-data
  std::optional<std::string> token;    // bearer token of the single user
  std::string name = "unitrain-local"; // cluster, user and context name
};

// The kubeconfig as YAML text.
std::string render_kubeconfig(const KubeconfigSpec& spec);
// Writes it with mode 0600 through a temporary file and rename, so a reader never sees half a file.
Status write_kubeconfig(const std::string& path, const KubeconfigSpec& spec);

// 32 random bytes as lowercase hex: the generated bearer token when `--tls` is given without one.
std::string random_token();

}  // namespace unitrain::localcluster
