// The embedded cluster as one object: a Store, the HTTP server in front of it, optional TLS and a
// kubeconfig for clients. Tests and the operator's --embedded-cluster start it in-process; the
// `localcluster` binary is a thin CLI around it. Stops in its destructor.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "localcluster/container_log.h"
#include "localcluster/faults.h"
#include "localcluster/metrics.h"
#include "localcluster/store.h"
#include "localcluster/webhook_client.h"

namespace unitrain::localcluster {

class ApiServer;

struct LocalClusterOptions {
  std::string listen = "127.0.0.1:0";
  bool tls = false;
  // Required bearer token; generated when `tls` is set and none is given.
  std::optional<std::string> token;
  // Persist objects (and the TLS material and token) here; in memory only when unset.
  std::optional<std::string> state_dir;
  // Where to write the kubeconfig; nothing is written when unset.
  std::optional<std::string> kubeconfig_out;
  int threads = 2;
  // Serve a non-loopback address without TLS (see check_exposure); a warning is logged instead.
  bool insecure_allow_remote = false;
  // Where webhook Services are reached (see add_service_endpoint).
  WebhookOptions webhooks;
  // Faults the server injects from the start (see faults.h); changeable later through faults()
  // or `PUT /unitrain/faults`.
  FaultConfig faults;
  // Things that use the store in-process, such as the controllers (controllers.h), which hold
  // it by reference: made once the store is open, destroyed before it closes (stop, restart).
  std::function<std::shared_ptr<void>(Store&)> attach;
};

// Whether `listen` may be served as configured. The cluster holds every Secret and answers
// anyone who reaches it: a non-loopback address (0.0.0.0, ::, a LAN address) needs TLS (which
// always comes with a bearer token) unless `insecure_allow_remote` accepts the exposure, which
// is then a warning; a token sent over plain HTTP travels in clear, which is a warning too.
struct Exposure {
  std::optional<std::string> refusal;  // why the address must not be served
  std::vector<std::string> warnings;
};
Exposure check_exposure(const LocalClusterOptions& options);
// 127.0.0.0/8, ::1, ::ffff:127.x.x.x and "localhost"; `host` as in --listen, brackets allowed.
bool is_loopback_host(std::string_view host);

class LocalCluster {
 public:
  explicit LocalCluster(LocalClusterOptions options);
  ~LocalCluster();  // stop()
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  // Opens the store, starts serving and writes the kubeconfig.
  Status start();
  void stop();  // idempotent
  // A full restart: the attached users and the server stop, every connection and watch ends,
  // the store is reopened from the state directory (without one, the in-memory store is kept),
  // and the server serves again on the same port. Clients see what a restarted kube-apiserver
  // gives them: broken connections, then 410 for watches from an old resourceVersion.
  // `POST /unitrain/restart` does the same from outside the process.
  Status restart();

  std::string url() const;    // "http://127.0.0.1:PORT"; empty before start()
  uint16_t port() const;
  const std::string& kubeconfig_path() const;  // empty when no kubeconfig is written
  const std::optional<std::string>& token() const { return token_; }
  const std::string& ca_pem() const { return ca_pem_; }  // empty without TLS

  // For in-process controllers (garbage collector, scheduler, kubelet) and tests.
  Store& store();
  // Container output for `kubectl logs` (the kubelet's log sink: see kubelet_log_sink).
  void append_pod_log(const ContainerLogLine& line);
  void clear_pod_log(std::string_view ns, std::string_view pod, std::string_view container);
  const RequestMetrics& metrics() const;
  FaultInjector& faults() { return *faults_; }
  // From now on only `token` is accepted (also after a restart), as when a bound
  // service-account token rotates; the kubeconfig written at start is not rewritten.
  void rotate_token(std::string token);

 private:
  Status open_store();
  Status start_server(const std::string& listen);

  LocalClusterOptions options_;
  std::optional<std::string> token_;
  std::string ca_pem_;
  std::string kubeconfig_path_;
  std::shared_ptr<FaultInjector> faults_;
  std::unique_ptr<Store> store_;
  std::shared_ptr<void> attached_;     // after store_: destroyed first
  std::unique_ptr<ApiServer> server_;  // after store_: destroyed first
  RequestMetrics no_metrics_;

  // Restarts asked for over HTTP run here: the server cannot stop itself from its own thread.
  void run_requested_restarts();
  void stop_server();  // with lifecycle_mu_ held
  std::mutex lifecycle_mu_;  // start, restart and stop, one at a time
  std::mutex restart_mu_;
  std::condition_variable restart_cv_;
  bool restart_wanted_ = false;
  bool restarter_stopping_ = false;
  std::thread restarter_;
};

}  // namespace unitrain::localcluster
