// What kube-apiserver does between the REST handler and storage: admission webhooks
// (admission.h) and CRD conversion webhooks (conversion.h), in the order of a write. ApiFront
// wraps a Store with the same verbs; the HTTP layer calls it instead of the Store. Webhook calls
// happen here, never under the store's lock: the front reads, calls the webhooks, then writes
// with the resourceVersion it read (a conflicting write in between makes patches retry, as
// kube-apiserver's GuaranteedUpdate does).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/json/json.h"
#include "localcluster/admission.h"
#include "localcluster/store.h"
#include "localcluster/webhook_client.h"

namespace unitrain::localcluster {

class ApiFront {
 public:
  ApiFront(Store& store, WebhookOptions options);
  ~ApiFront();
  ApiFront(const ApiFront&) = delete;
  ApiFront& operator=(const ApiFront&) = delete;

  StoreResult<json::Document> get(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                  std::string_view subresource = {});
  StoreResult<std::string> list(const ResourceInfo& r, std::string_view ns, const ListRequest& req);
  // `field_manager` names the writer in managedFields; `force` overrides apply conflicts.
  StoreResult<json::Document> create(const ResourceInfo& r, std::string_view ns, json::Document obj, bool dry_run,
                                     CallNotes& notes, std::string_view field_manager = {});
  StoreResult<json::Document> update(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                     json::Document obj, std::string_view subresource, bool dry_run, CallNotes& notes,
                                     std::string_view field_manager = {});
  StoreResult<json::Document> patch(const ResourceInfo& r, std::string_view ns, std::string_view name, PatchKind kind,
                                    std::string_view body, std::string_view subresource, std::string_view field_manager,
                                    bool dry_run, CallNotes& notes, bool force = false);
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
