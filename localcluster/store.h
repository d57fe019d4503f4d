// The local cluster's object store interface: every API semantic that does not depend on HTTP
// (resourceVersion, optimistic concurrency, generateName, selectors, paging, watch windows,
// patches, status subresources, generation, finalizers and graceful deletion, CRD-defined
// resources). The HTTP layer only routes, decodes and encodes; controllers in-process (garbage
// collector, Job controller, scheduler, kubelet) use a Store directly. The implementation is
// make_memory_store (memory_store.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"
#include "localcluster/api_errors.h"
#include "localcluster/resource_info.h"

namespace unitrain::localcluster {

struct ListRequest {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;
  std::string continue_token;
  std::string resource_version;
  std::string resource_version_match;
};

struct WatchRequest {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // "" or "0": start with synthetic ADDED events for the current state
  bool allow_bookmarks = false;
  bool send_initial_events = false;
};

struct DeleteRequest {
  std::optional<std::string> propagation_policy;
  std::optional<int64_t> grace_period_seconds;
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  bool dry_run = false;
};

enum class PatchKind { Merge, JSON, Strategic, Apply };

// How often a read-modify-write done outside the store (a patch that webhooks or a conversion
// see first) is redone when another write came in between, as kube-apiserver's GuaranteedUpdate.
inline constexpr int kPatchConflictRetries = 5;

// A watch event, serialized once and shared by every watcher that receives it.
struct WatchEvent {
  std::string type;  // ADDED MODIFIED DELETED BOOKMARK ERROR
  std::shared_ptr<const std::string> object;  // compact JSON of the object (or Status)
};

// One open watch. Events are queued by the store; `notify` (set by the consumer) is called from
// the writer's thread when the queue becomes non-empty or the watch is closed, so an Asio-based
// consumer can post to its own executor instead of blocking a thread. It is called without the
// store's lock held; once stop() (or the destructor) returns it is not running and is not called
// again.
class Watcher {
 public:
  virtual ~Watcher() = default;
  // Takes everything queued so far. `closed` becomes true once the store ends the watch (e.g.
  // the watcher fell too far behind) after the final events.
  virtual std::vector<WatchEvent> drain(bool& closed) = 0;
  virtual void set_notify(std::function<void()> notify) = 0;
  virtual void stop() = 0;  // idempotent
  // Queues a BOOKMARK carrying the store's current resourceVersion when the watch was opened
  // with allow_bookmarks (otherwise nothing). Every event up to that resourceVersion has been
  // queued before it, so a client may resume from it. The HTTP layer calls this periodically
  // (kube-apiserver sends one about every minute) and before closing on timeoutSeconds.
  virtual void request_bookmark() {}
};

class Store {
 public:
  virtual ~Store() = default;

  // Resources currently served (built-ins plus established CRD versions), for discovery.
  virtual std::vector<ResourceInfo> resources() const = 0;
  virtual std::optional<ResourceInfo> find_resource(std::string_view group, std::string_view version,
                                                    std::string_view resource) const = 0;

  // `subresource` is "" or "status" / "scale" where the resource has it. `field_manager` (the
  // request's fieldManager) is recorded in metadata.managedFields (managed_fields.h); writes
  // without one (the in-process controllers) leave managedFields as they are.
  virtual StoreResult<json::Document> create(const ResourceInfo& r, std::string_view ns, json::Document obj,
                                             bool dry_run = false, std::string_view field_manager = {}) = 0;
  virtual StoreResult<json::Document> get(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                          std::string_view subresource = {}) const = 0;
  // A List object (kind <Kind>List, metadata.resourceVersion, metadata.continue) in JSON.
  virtual StoreResult<std::string> list(const ResourceInfo& r, std::string_view ns, const ListRequest& req) const = 0;
  virtual StoreResult<json::Document> update(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                             json::Document obj, std::string_view subresource = {},
                                             bool dry_run = false, std::string_view field_manager = {}) = 0;
  virtual StoreResult<json::Document> patch(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                            PatchKind kind, std::string_view body, std::string_view subresource = {},
                                            std::string_view field_manager = {}, bool dry_run = false,
                                            bool force = false) = 0;  // force: apply conflicts overridden
  // The deleted object, or the object still present with deletionTimestamp (finalizers, grace).
  virtual StoreResult<json::Document> remove(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                             const DeleteRequest& req) = 0;
  virtual StoreResult<std::string> remove_collection(const ResourceInfo& r, std::string_view ns,
                                                     const ListRequest& selector, const DeleteRequest& req) = 0;
  virtual StoreResult<std::unique_ptr<Watcher>> watch(const ResourceInfo& r, std::string_view ns,
                                                      const WatchRequest& req) = 0;

  // The additionalPrinterColumns array of a custom resource version (for table output), or a
  // null document for built-in resources and versions without columns.
  virtual json::Document printer_columns(const ResourceInfo& r) const {
    (void)r;
    return json::Document();
  }
  // The newest resourceVersion handed out (decimal string).
  virtual std::string resource_version() const { return "0"; }
};

}  // namespace unitrain::localcluster
