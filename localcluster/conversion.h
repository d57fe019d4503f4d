// CRD conversion webhooks (spec.conversion.strategy Webhook). Objects are stored at the storage
// version; ConvertingStore offers the Store's verbs at any served version, converting what is
// read, written and watched through one ConversionReview v1 per call. Only labels and
// annotations of the converted metadata are kept, as kube-apiserver does. Versions of CRDs with
// strategy None are served by the Store itself (it relabels apiVersion).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"
#include "localcluster/object_meta.h"
#include "localcluster/store.h"
#include "localcluster/webhook_client.h"

namespace unitrain::localcluster {

// How one served version of a custom resource is converted: through its CRD's webhook.
struct Conversion {
  ResourceInfo storage;  // the storage version of the same resource
  json::Document client_config;
  std::string kind;
};

class ConvertingStore {
 public:
  ConvertingStore(Store& store, WebhookCaller& caller, UuidSource& uuids);

  Store& store() const { return store_; }
  // The conversion for `r` when it is a non-storage version of a CRD with strategy Webhook.
  std::optional<Conversion> conversion_for(const ResourceInfo& r) const;
  // Converts every object of `objects` that is not at `desired` (an apiVersion) in one
  // ConversionReview. A failure is a 500 `conversion webhook for <gvk> failed: <reason>`.
  StoreResult<void> convert(const Conversion& c, std::vector<json::Document*> objects, const std::string& desired);
  StoreResult<void> convert_one(const Conversion& c, json::Document& d, const std::string& desired);

  // The Store's verbs at `r`'s version. A patch at a converted version is applied here to the
  // converted object and written back with the resourceVersion read (retried on a conflict).
  StoreResult<json::Document> get(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                  std::string_view subresource);
  StoreResult<std::string> list(const ResourceInfo& r, std::string_view ns, const ListRequest& req);
  StoreResult<json::Document> create(const ResourceInfo& r, std::string_view ns, json::Document obj, bool dry_run,
                                     std::string_view field_manager = {});
  StoreResult<json::Document> update(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                     json::Document obj, std::string_view subresource, bool dry_run,
                                     std::string_view field_manager = {});
  StoreResult<json::Document> patch(const ResourceInfo& r, std::string_view ns, std::string_view name, PatchKind kind,
                                    std::string_view body, std::string_view subresource,
                                    std::string_view field_manager, bool dry_run, bool force = false);
  StoreResult<json::Document> remove(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                     const DeleteRequest& req);
  StoreResult<std::string> remove_collection(const ResourceInfo& r, std::string_view ns, const ListRequest& selector,
                                             const DeleteRequest& req);
  // Events are converted as they are drained, on the draining thread (never under the store's
  // lock); an object the webhook cannot convert ends the watch with an ERROR event.
  StoreResult<std::unique_ptr<Watcher>> watch(const ResourceInfo& r, std::string_view ns, const WatchRequest& req);

 private:
  StoreResult<void> convert_list_text(const Conversion& c, std::string& text, const std::string& desired);
  // The object written at `r`'s version, converted to the storage version (and the result back).
  template <class Write>
  StoreResult<json::Document> write_at_version(const ResourceInfo& r, std::string_view sub, json::Document obj,
                                               Write&& write);

  Store& store_;
  WebhookCaller& caller_;
  UuidSource& uuids_;
};

}  // namespace unitrain::localcluster
