// What kube-apiserver does between the REST handler and storage: admission webhooks
// (MutatingWebhookConfiguration, then ValidatingWebhookConfiguration) and CRD conversion
// webhooks. ApiFront wraps a Store with the same verbs; the HTTP layer calls it instead of the
// Store. Webhook calls happen here, never under the store's lock: the front reads, calls the
// webhooks, then writes with the resourceVersion it read (a conflicting write in between makes
// patches retry, as kube-apiserver's GuaranteedUpdate does). No Beast in this header.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"
#include "localcluster/store.h"

namespace unitrain::localcluster {

struct WebhookOptions {
  // A local cluster has no pod network: a webhook's `service` {namespace, name, port} is reached
  // at the host:port given here, keyed "namespace/name:port". TLS is still verified against the
  // caBundle with the name <name>.<namespace>.svc, as kube-apiserver does.
  std::map<std::string, std::string, std::less<>> service_endpoints;
};

// Adds "ns/name:port=host:port" (":port" may be left out for 443) to `options`.
Status add_service_endpoint(WebhookOptions& options, std::string_view spec);

// What a request produced besides its object: admission warnings, sent as Warning headers.
struct CallNotes {
  std::vector<std::string> warnings;
};

class ApiFront {
 public:
  ApiFront(Store& store, WebhookOptions options);
  ~ApiFront();
  ApiFront(const ApiFront&) = delete;
  ApiFront& operator=(const ApiFront&) = delete;

  StoreResult<json::Document> get(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                  std::string_view subresource = {});
  StoreResult<std::string> list(const ResourceInfo& r, std::string_view ns, const ListRequest& req);
  StoreResult<json::Document> create(const ResourceInfo& r, std::string_view ns, json::Document obj, bool dry_run,
                                     CallNotes& notes);
  StoreResult<json::Document> update(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                     json::Document obj, std::string_view subresource, bool dry_run, CallNotes& notes);
  StoreResult<json::Document> patch(const ResourceInfo& r, std::string_view ns, std::string_view name, PatchKind kind,
                                    std::string_view body, std::string_view subresource, std::string_view field_manager,
                                    bool dry_run, CallNotes& notes);
  StoreResult<json::Document> remove(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                     const DeleteRequest& req, CallNotes& notes);
  StoreResult<std::string> remove_collection(const ResourceInfo& r, std::string_view ns, const ListRequest& selector,
                                             const DeleteRequest& req, CallNotes& notes);
  // Events of a resource served through a conversion webhook are converted as they are drained;
  // an object the webhook cannot convert ends the watch with an ERROR event (500).
  StoreResult<std::unique_ptr<Watcher>> watch(const ResourceInfo& r, std::string_view ns, const WatchRequest& req);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace unitrain::localcluster
