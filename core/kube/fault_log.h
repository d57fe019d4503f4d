// Failed API calls, said once per cause and with the cause. Everything the operator asks of the
// API server goes through a ReportingClient (below) or reports its connection attempts
// (RestClientOptions::on_attempt); the FaultLog turns a failure into what an administrator needs
// to act on (the server's certificate and the CA that was expected, the credentials that were
// rejected, the verb and resource that are forbidden, the URL that refuses connections, the CRD
// that is not installed and the command that installs it) and logs it at most once per interval
// with a repeat count (core/log/throttle.h), so a persistent fault is one line per interval, not
// a flood. The reads that fail now are kept per source (a controller) for /readyz.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/kube/client.h"
#include "core/kube/clock.h"
#include "core/kube/config.h"
#include "core/kube/http.h"
#include "core/log/log.h"
#include "core/log/throttle.h"

namespace unitrain::kube {

// One API call, as logs name it.
struct ApiCall {
  std::string_view verb;  // list, watch, get, create, update, patch, delete, deletecollection
  const GroupVersionResource& resource;
  std::string_view ns;
  std::string_view name = {};
  std::string_view subresource = {};
  bool read() const { return verb == "list" || verb == "watch"; }
};
// "list pods in all namespaces", "create pods in namespace default", "update pytorchjobs.kubeflow.org default/x (status)".
std::string describe(const ApiCall& call);

// How this process reaches the API server, for the causes that are about the connection.
struct ApiServerAccess {
  std::string server_url;   // "https://10.0.0.1:6443"
  std::string credentials;  // describe_credentials()
};
// "the bearer token in /var/run/secrets/.../token", "the client certificate \"CN=admin\"", ...
std::string describe_credentials(const RestConfig& config);

// What an operator part needs the API server to serve, and how to install it: the cause of a
// 404 on listing or watching that resource.
struct RequiredResource {
  std::string what;     // "the CustomResourceDefinition pytorchjobs.kubeflow.org"
  std::string install;  // "install it with: kubectl apply --server-side -f manifests/crds/kubeflow.org_pytorchjobs.yaml"
};

struct Fault {
  std::string key;    // failures with one key have one cause: logged together
  std::string cause;  // why, for people
};
// nullopt for outcomes callers handle as normal operation: 409 Conflict, AlreadyExists on a
// create, NotFound on get/update/patch/delete, 410 Gone on a read, a cancelled request.
std::optional<Fault> classify(const ApiCall& call, const ApiError& e, const ApiServerAccess& access,
                              const RequiredResource* required);
// A request that got no HTTP response at all.
Fault classify_connection(std::string_view transport_message, const ApiServerAccess& access);

class FaultLog {
 public:
  FaultLog(Clock& clock, ApiServerAccess access, std::chrono::seconds interval = std::chrono::seconds(30));
  FaultLog(const FaultLog&) = delete;
  FaultLog& operator=(const FaultLog&) = delete;

  // Before use: what a 404 on reading `resource` means.
  void require(const GroupVersionResource& resource, RequiredResource required);

  // The outcome of one call made for `source` ("pytorchjob-controller", "webhooks"); `fields` are
  // the source's log context.
  void failed(const std::string& source, const log::Fields& fields, const ApiCall& call, const ApiError& e);
  void succeeded(const std::string& source, const log::Fields& fields, const ApiCall& call);

  // The connection level (every attempt, before retries): no response at all, or a response.
  void connection_failed(std::string_view transport_message);
  void connection_ok();

  // Why the reads of `source` fail now (one entry per cause, unreachable server first); empty
  // when nothing is known to fail.
  std::vector<std::string> causes(const std::string& source) const;
  const ApiServerAccess& access() const { return access_; }

 private:
  struct ReadFault {
    std::string key;
    std::string cause;
    std::string what;  // describe(call), for the recovery line
  };
  void report(const Fault& fault, std::string_view what, const log::Fields& fields);
  bool key_in_use_locked(const std::string& key) const;

  Clock& clock_;
  ApiServerAccess access_;
  log::Throttle throttle_;
  mutable std::mutex mu_;
  std::map<std::string, RequiredResource> required_;                    // by "resource.group/version"
  std::map<std::string, std::map<std::string, ReadFault>> reads_;        // source -> "verb resource ns" -> fault
  std::optional<Fault> connection_;                                      // the server cannot be reached
};

// A Client decorator that reports every call's outcome to a FaultLog under one source.
class ReportingClient final : public Client {
 public:
  ReportingClient(Client& inner, FaultLog& faults, std::string source, log::Fields fields = {})
      : inner_(inner), faults_(faults), source_(std::move(source)), fields_(std::move(fields)) {}

  ApiResult<json::Document> get(const GroupVersionResource& r, std::string_view ns, std::string_view name) override;
  ApiResult<json::Document> list(const GroupVersionResource& r, std::string_view ns, const ListOptions& opts) override;
  ApiResult<json::Document> create(const GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                   const WriteOptions& opts = {}) override;
  std::vector<CreateOutcome> create_all(const GroupVersionResource& r, std::span<const json::Document> objects,
                                        const WriteOptions& opts = {}) override;
  ApiResult<json::Document> update(const GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                   const WriteOptions& opts = {}) override;
  ApiResult<json::Document> update_status(const GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                          const WriteOptions& opts = {}) override;
  ApiResult<json::Document> patch(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                                  PatchType type, std::string_view body, const PatchOptions& opts = {},
                                  std::string_view subresource = {}) override;
  ApiResult<json::Document> remove(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                                   const DeleteOptions& opts = {}) override;
  ApiResult<json::Document> delete_collection(const GroupVersionResource& r, std::string_view ns,
                                              const ListOptions& selector, const DeleteOptions& opts = {}) override;
  ApiResult<std::unique_ptr<WatchStream>> watch(const GroupVersionResource& r, std::string_view ns,
                                                const WatchOptions& opts) override;

 private:
  template <class T>
  ApiResult<T> outcome(const ApiCall& call, ApiResult<T> result);

  Client& inner_;
  FaultLog& faults_;
  std::string source_;
  log::Fields fields_;
};

}  // namespace unitrain::kube
