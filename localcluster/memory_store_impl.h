// The memory store's state and class, shared by its implementation files (memory_store*.cpp);
// nothing outside the store includes this. One mutex guards all state; the per-watch mutexes
// (watch_cache.h) are only ever taken after it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/api/labels.h"
#include "localcluster/crd.h"
#include "localcluster/field_selector.h"
#include "localcluster/memory_store.h"
#include "localcluster/persistence.h"
#include "localcluster/watch_cache.h"

namespace unitrain::localcluster {

// One object: parsed (selectors, read-modify-write) and as compact JSON (a list is a
// concatenation, a watch event is serialized once).
struct StoredObject {
  DocPtr doc;
  TextPtr text;
};

using ObjectMap = std::map<std::string, StoredObject, std::less<>>;

// The objects of one storage key ("<group>/<plural>": a built-in resource, or a CRD's resource
// at all its versions), keyed by object_key().
struct Table {
  ObjectMap objects;
  uint64_t last_change_rv = 0;
  WatchCache watch;
};

// How one group/version/resource is served.
struct Served {
  ResourceInfo info;
  std::string storage_key;
  std::shared_ptr<const CrdDefinition> crd;  // null for built-ins
  const CrdVersion* version = nullptr;       // into *crd
};

struct StoreState {
  mutable std::mutex mu;
  StoreOptions options;
  uint64_t rv = 0;  // the newest resourceVersion handed out
  std::map<std::string, Table> tables;    // storage key -> objects
  std::map<std::string, Served> served;   // group/version/resource -> how it is served
  std::map<std::string, std::shared_ptr<const CrdDefinition>> crds;  // CRD name -> definition
  std::mt19937_64 rng{std::random_device{}()};
  std::unique_ptr<PersistentLog> log;
};

// Who writes, for managedFields: the request's fieldManager and, for an apply patch, its
// configuration and whether conflicts are forced.
struct FieldOwner {
  std::string_view manager;
  const json::Value* apply_config = nullptr;
  bool force = false;
};

class MemoryStore final : public Store {
 public:
  explicit MemoryStore(const StoreOptions& options);
  Status init();  // replays the state directory, creates the default namespaces

  std::vector<ResourceInfo> resources() const override;
  std::optional<ResourceInfo> find_resource(std::string_view group, std::string_view version,
                                            std::string_view resource) const override;
  json::Document printer_columns(const ResourceInfo& r) const override;
  std::string resource_version() const override;

  StoreResult<json::Document> create(const ResourceInfo& r, std::string_view ns, json::Document obj,
                                     bool dry_run, std::string_view field_manager) override;
  StoreResult<json::Document> get(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                  std::string_view subresource) const override;
  StoreResult<std::string> list(const ResourceInfo& r, std::string_view ns, const ListRequest& req) const override;
  StoreResult<json::Document> update(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                     json::Document obj, std::string_view subresource, bool dry_run,
                                     std::string_view field_manager) override;
  StoreResult<json::Document> patch(const ResourceInfo& r, std::string_view ns, std::string_view name, PatchKind kind,
                                    std::string_view body, std::string_view subresource,
                                    std::string_view field_manager, bool dry_run, bool force) override;
  StoreResult<json::Document> remove(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                     const DeleteRequest& req) override;
  StoreResult<std::string> remove_collection(const ResourceInfo& r, std::string_view ns, const ListRequest& selector,
                                             const DeleteRequest& req) override;
  StoreResult<std::unique_ptr<Watcher>> watch(const ResourceInfo& r, std::string_view ns,
                                              const WatchRequest& req) override;

 private:
  using Iter = ObjectMap::const_iterator;

  // ---- serving (memory_store.cpp) ----
  static std::string storage_key(const ResourceInfo& r) { return r.group + "/" + r.resource; }
  static bool is_crd(const ResourceInfo& r);
  const Served* lookup(const ResourceInfo& r) const;
  // Any served entry of a storage key (built-in or a CRD's storage version).
  const Served* served_for_storage(const std::string& skey) const;
  static void register_crd(StoreState& c, CrdDefinition def);
  // Objects of a custom resource are stored at the storage version; reads at another served
  // version get that apiVersion and that version's defaults (conversion strategy None).
  json::Document present(const Served& s, const json::Document& stored) const;
  TextPtr text_of(const Served& s, const StoredObject& o) const;
  // The objects of namespace `ns` (all of them for "" or a cluster-scoped resource).
  static std::pair<Iter, Iter> range(const ResourceInfo& r, const Table& t, const std::string& ns);
  // Gives `obj` the next resourceVersion, logs it, stores it (or removes it for DELETED), and
  // queues the event for watchers.
  StoreResult<DocPtr> commit(const Served& s, Table& t, const std::string& key, json::Document obj, const char* type,
                             PendingNotifications& p);
  void maybe_compact();

  // ---- create and update (memory_store_write.cpp) ----
  StoreResult<void> check_namespace(const Served& s, std::string_view ns, json::Document& obj) const;
  // LimitRange and ResourceQuota admission of a pod or PersistentVolumeClaim being created.
  StoreResult<void> admit_with_namespace_policies(const ResourceInfo& r, const std::string& ns,
                                                  const std::string& name, json::Document& obj);
  // Defaulting and validation every create and update get: schema pruning, defaults and
  // validation (with x-kubernetes-validations rules) for custom resources, built-in defaulting
  // otherwise; label and annotation syntax for every kind. `name` names the errors; `old` is the
  // stored object on update (transition rules compare with it), null on create.
  StoreResult<void> default_and_validate(const Served& s, json::Document& obj, const std::string& name,
                                         const json::Value* old);
  // A CRD being written: defaulted, validated, its status set; registered once committed.
  StoreResult<std::shared_ptr<const CrdDefinition>> prepare_crd(const Served& s, json::Document& obj,
                                                                const std::string& name);
  // managedFields of a write (managed_fields.h): an Update by `owner.manager`, or an Apply of
  // `owner.apply_config`. Nothing is recorded without a manager.
  StoreResult<void> record_fields(const Served& s, const json::Value* old, json::Document& next,
                                  std::string_view subresource, const FieldOwner& owner) const;
  StoreResult<json::Document> create_locked(const ResourceInfo& r, std::string_view ns_in, json::Document obj,
                                            bool dry_run, PendingNotifications& p, const FieldOwner& owner = {});
  StoreResult<json::Document> update_locked(const Served& s, Table& t, const std::string& key, DocPtr existing,
                                            json::Document obj, std::string_view subresource, bool dry_run,
                                            PendingNotifications& p, const FieldOwner& owner = {});

  // ---- patch and scale (memory_store_patch.cpp) ----
  StoreResult<json::Document> patch_locked(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                           PatchKind kind, std::string_view body, std::string_view subresource,
                                           bool dry_run, PendingNotifications& p, const FieldOwner& owner);
  StoreResult<json::Document> scale_of(const Served& s, const json::Document& obj) const;
  StoreResult<json::Document> update_scale(const Served& s, std::string_view ns, std::string_view name,
                                           const json::Document& scale, bool dry_run, PendingNotifications& p);

  // ---- delete (memory_store_delete.cpp) ----
  StoreResult<json::Document> delete_now(const Served& s, Table& t, const std::string& key, json::Document obj,
                                         PendingNotifications& p);
  StoreResult<json::Document> remove_locked(const Served& s, std::string_view ns, std::string_view name,
                                            const DeleteRequest& req, PendingNotifications& p);

  // ---- list (memory_store_list.cpp) ----
  static StoreResult<void> parse_selectors(const ResourceInfo& r, const std::string& label_text,
                                           const std::string& field_text, api::LabelSelector& labels,
                                           FieldSelector& fields);
  // With `targets`, also collects the namespace and name of every object listed.
  StoreResult<std::string> list_locked(const ResourceInfo& r, std::string_view ns_in, const ListRequest& req,
                                       std::vector<std::pair<std::string, std::string>>* targets) const;

  std::shared_ptr<StoreState> state_;
};

}  // namespace unitrain::localcluster
