// How to reach and authenticate to an API server: kubeconfig files (merged as kubectl merges
// them) or the in-cluster service account. The result is a plain value the transport consumes;
// certificates are loaded into memory here so the transport never touches the filesystem except
// to re-read a rotating token file.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/base/base64.h"
#include "core/base/result.h"

namespace unitrain::kube {

struct RestConfig {
  // Server URL parts: "https://10.0.0.1:6443/prefix" -> scheme https, host 10.0.0.1, port 6443,
  // path_prefix "/prefix" (no trailing slash, "" when the server has no path).
  std::string scheme = "https";
  std::string host;
  uint16_t port = 443;
  std::string path_prefix;

  std::string ca_pem;           // empty: the system trust store
  std::string client_cert_pem;  // client certificate chain (PEM), with client_key_pem
  std::string client_key_pem;
  std::string bearer_token;       // static token
  std::string bearer_token_file;  // re-read when it changes (takes precedence over bearer_token)
  bool insecure = false;          // insecure-skip-tls-verify
  std::string tls_server_name;    // SNI and verification name instead of host
  std::string namespace_ = "default";

  // Client-side rate limit, client-go's defaults. qps < 0 disables the limiter.
  double qps = 5;
  int burst = 10;
  // Per request (connect + write + read of a whole non-streaming response).
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};

  // "https://host:port" (IPv6 hosts in brackets), plus the path prefix.
  std::string server_url() const;
};

// Splits an absolute http(s) URL into the server fields of `cfg`.
Status parse_server_url(std::string_view url, RestConfig& cfg);

struct KubeconfigOptions {
  // Files in KUBECONFIG order. Missing files are skipped (like kubectl) unless none exists.
  std::vector<std::string> paths;
  std::string context;  // --context override; empty: current-context
};

// Loads and merges kubeconfig files: for every named cluster/user/context and every map key the
// first file that defines it wins; current-context comes from the first file that sets it.
// Errors name the file and the key: "kubeconfig /x/config: users[0].user.token-file: ...".
Result<RestConfig> load_kubeconfig(const KubeconfigOptions& opts);

// Splits a KUBECONFIG value on ':' and drops empty entries (duplicates keep the first).
std::vector<std::string> split_kubeconfig_env(std::string_view value);

// The in-cluster configuration from the pod's environment and service-account directory
// (normally /var/run/secrets/kubernetes.io/serviceaccount). `getenv` is injectable for tests.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
Result<RestConfig> in_cluster_config(const std::string& service_account_dir = kServiceAccountDir,
                                     const EnvLookup& getenv = {});

// What kubectl and controller-runtime do: explicit --kubeconfig path, else KUBECONFIG, else
// in-cluster when KUBERNETES_SERVICE_HOST is set, else ~/.kube/config.
Result<RestConfig> load_default_config(const std::string& kubeconfig_flag, const std::string& context,
                                       const EnvLookup& getenv = {});

// kubeconfig *-data fields are standard base64 (core/base/base64.h).
using unitrain::base64_decode;

}  // namespace unitrain::kube
