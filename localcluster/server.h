// The local cluster's HTTP front: Kubernetes REST paths over HTTP/1.1 (optionally TLS + bearer
// token) on top of a Store. It routes, negotiates content types, encodes Status errors, Tables and
// discovery documents, streams watches and pod logs; every object semantic is the Store's.
// Boost.Asio/Beast stay inside server.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/passkey.h"
#include "core/base/result.h"
#include "localcluster/container_log.h"
#include "localcluster/faults.h"
#include "localcluster/metrics.h"
#include "localcluster/store.h"
#include "localcluster/tls.h"
#include "localcluster/webhook_client.h"

namespace unitrain::localcluster {

struct ServerOptions {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free one
  std::optional<TlsMaterial> tls;      // serve HTTPS with this certificate
  std::optional<std::string> token;    // required as "Authorization: Bearer <token>" when set
  int threads = 2;
  std::string git_version = "v1.32.0";  // what /version reports (kubectl warns on skew > 1 minor)
  // Watches without timeoutSeconds end after a random time in [min, max], as kube-apiserver's do,
  // so clients re-list and long-lived connections spread out.
  std::chrono::seconds default_watch_min{300};
  std::chrono::seconds default_watch_max{600};
  // Watches with allowWatchBookmarks get a BOOKMARK this often (kube-apiserver: about a minute).
  std::chrono::seconds bookmark_interval{60};
  size_t max_log_lines_per_pod = 10000;
  // How admission and conversion webhooks given as a Service are reached.
  WebhookOptions webhooks;
  // Faults to inject (null: none); `GET`/`PUT /unitrain/faults` read and replace its
  // configuration at runtime. Shared so it outlives a restart of the server.
  std::shared_ptr<FaultInjector> faults;
  // `POST /unitrain/restart` calls this once its 202 reply is written (null: the endpoint is 404).
  // It runs on a server thread, so it only asks for the restart, which stops this server.
  std::function<void()> request_restart;
};

class ApiServer {
 public:
  // Binds, starts the worker threads and returns once the socket accepts connections.
  static Result<std::unique_ptr<ApiServer>> start(Store& store, ServerOptions options);
  ~ApiServer();  // stop()
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Closes the listener and every connection, ends open watches and joins the threads. Idempotent.
  void stop();

  uint16_t port() const;
  std::string url() const;  // "http://127.0.0.1:PORT" or "https://..."

  // The container output `kubectl logs` shows, kept per pod (the newest max_log_lines_per_pod
  // lines); `?follow=true` readers get appended lines as they arrive.
  void append_pod_log(const ContainerLogLine& line);
  void clear_pod_log(std::string_view ns, std::string_view pod, std::string_view container);

  const RequestMetrics& metrics() const;
  // Replaces the bearer token clients must send (a rotated service-account token).
  void set_token(std::string token);

 private:
  struct Impl;

 public:
  // Only start() can make the key; public so std::make_unique can call it.
  ApiServer(PassKey<ApiServer>, std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace unitrain::localcluster
