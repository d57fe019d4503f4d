// The memory store's core: construction and replay of persisted state, which resources are served
// (built-ins and CRD versions) and how a custom resource is presented at each served version, and
// commit, the one place every write goes through (resourceVersion, write-ahead log, watch
// fan-out, compaction). The verbs' semantics live in memory_store_{write,patch,delete,list,watch}.cpp.
#include <spdlog/spdlog.h>

#include "localcluster/builtin_resources.h"
#include "localcluster/memory_store_impl.h"
#include "localcluster/object_meta.h"

namespace unitrain::localcluster {
namespace {

using json::Document;
using json::Value;

constexpr std::string_view kCrdGroup = "apiextensions.k8s.io";
constexpr std::string_view kCrdResource = "customresourcedefinitions";

std::string served_key(std::string_view g, std::string_view v, std::string_view r) {
  return std::string(g) + "/" + std::string(v) + "/" + std::string(r);
}

const ResourceInfo* find_builtin(std::string_view group, std::string_view resource) {
  for (const ResourceInfo& r : builtin_resources()) {
    if (r.group == group && r.resource == resource) return &r;
  }
  return nullptr;
}

}  // namespace

MemoryStore::MemoryStore(const StoreOptions& options) : state_(std::make_shared<StoreState>()) {
  state_->options = options;
}

Status MemoryStore::init() {
  StoreState& c = *state_;
  PersistedState state;
  if (c.options.state_dir) {
    auto log = PersistentLog::open(*c.options.state_dir, c.options.compact_log_bytes, state);
    if (!log) return fail("local cluster state: " + log.error().message);
    c.log = std::move(*log);
  }
  for (const ResourceInfo& r : builtin_resources()) {
    c.served[served_key(r.group, r.version, r.resource)] = Served{r, storage_key(r), nullptr, nullptr};
    c.tables[storage_key(r)];
  }
  c.rv = state.resource_version;
  for (auto& [skey, objects] : state.objects) {
    Table& t = c.tables[skey];
    for (auto& [key, text] : objects) {
      auto doc = Document::parse(text);
      if (!doc) return fail("local cluster state: " + skey + " " + key + ": " + doc.error().message);
      t.objects[key] = StoredObject{std::make_shared<const Document>(std::move(*doc)),
                                    std::make_shared<const std::string>(std::move(text))};
    }
  }
  // CRDs first, so their resources are served before anything else is looked at.
  for (auto& [key, obj] : c.tables[std::string(kCrdGroup) + "/" + std::string(kCrdResource)].objects) {
    auto def = parse_crd(obj.doc->root());
    if (!def) {
      spdlog::warn("local cluster state: CRD {} is not valid any more; its resources are not served", key);
      continue;
    }
    register_crd(c, std::move(*def));
  }
  for (auto& [skey, t] : c.tables) {
    t.watch.evicted_rv = c.rv;
    t.last_change_rv = c.rv;
  }
  if (c.tables["/namespaces"].objects.empty()) {
    const ResourceInfo& ns_info = *find_builtin("", "namespaces");
    for (const char* name : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
      Document ns = Document::object();
      (void)json::set_string(ns, "/metadata/name", name);
      PendingNotifications p;
      auto r = create_locked(ns_info, "", std::move(ns), false, p);
      if (!r) return fail("creating namespace " + std::string(name) + ": " + r.error().message);
    }
  }
  return {};
}

std::vector<ResourceInfo> MemoryStore::resources() const {
  std::lock_guard l(state_->mu);
  std::vector<ResourceInfo> out = builtin_resources();
  for (const auto& [name, def] : state_->crds) {
    for (ResourceInfo& r : def->resources()) out.push_back(std::move(r));
  }
  return out;
}

std::optional<ResourceInfo> MemoryStore::find_resource(std::string_view group, std::string_view version,
                                                      std::string_view resource) const {
  std::lock_guard l(state_->mu);
  auto it = state_->served.find(served_key(group, version, resource));
  if (it == state_->served.end()) return std::nullopt;
  return it->second.info;
}

Document MemoryStore::printer_columns(const ResourceInfo& r) const {
  std::lock_guard l(state_->mu);
  auto it = state_->served.find(served_key(r.group, r.version, r.resource));
  if (it == state_->served.end() || it->second.version == nullptr) return Document();
  return it->second.version->printer_columns;
}

std::string MemoryStore::resource_version() const {
  std::lock_guard l(state_->mu);
  return std::to_string(state_->rv);
}

StoreResult<Document> MemoryStore::create(const ResourceInfo& r, std::string_view ns, Document obj, bool dry_run,
                                          std::string_view field_manager) {
  PendingNotifications p;
  StoreResult<Document> out = [&]() -> StoreResult<Document> {
    std::lock_guard l(state_->mu);
    return create_locked(r, ns, std::move(obj), dry_run, p, FieldOwner{field_manager});
  }();
  p.fire();
  return out;
}

StoreResult<Document> MemoryStore::get(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                       std::string_view subresource) const {
  std::lock_guard l(state_->mu);
  const Served* s = lookup(r);
  if (s == nullptr) return fail(errors::resource_not_found());
  const Table& t = state_->tables.at(s->storage_key);
  auto it = t.objects.find(object_key(s->info, ns, name));
  if (it == t.objects.end()) return fail(errors::not_found(s->info, name));
  Document out = present(*s, *it->second.doc);
  if (subresource == "scale") return scale_of(*s, out);
  return out;
}

StoreResult<std::string> MemoryStore::list(const ResourceInfo& r, std::string_view ns, const ListRequest& req) const {
  std::lock_guard l(state_->mu);
  return list_locked(r, ns, req, nullptr);
}

StoreResult<Document> MemoryStore::patch(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                         PatchKind kind, std::string_view body, std::string_view subresource,
                                         std::string_view field_manager, bool dry_run, bool force) {
  PendingNotifications p;
  StoreResult<Document> out = [&]() -> StoreResult<Document> {
    std::lock_guard l(state_->mu);
    return patch_locked(r, ns, name, kind, body, subresource, dry_run, p, FieldOwner{field_manager, nullptr, force});
  }();
  p.fire();
  return out;
}

StoreResult<Document> MemoryStore::remove(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                          const DeleteRequest& req) {
  PendingNotifications p;
  StoreResult<Document> out = [&]() -> StoreResult<Document> {
    std::lock_guard l(state_->mu);
    const Served* s = lookup(r);
    if (s == nullptr) return fail(errors::resource_not_found());
    return remove_locked(*s, ns, name, req, p);
  }();
  p.fire();
  return out;
}

bool MemoryStore::is_crd(const ResourceInfo& r) { return r.group == kCrdGroup && r.resource == kCrdResource; }

const Served* MemoryStore::lookup(const ResourceInfo& r) const {
  auto it = state_->served.find(served_key(r.group, r.version, r.resource));
  return it == state_->served.end() ? nullptr : &it->second;
}

const Served* MemoryStore::served_for_storage(const std::string& skey) const {
  const Served* any = nullptr;
  for (const auto& [k, s] : state_->served) {
    if (s.storage_key != skey) continue;
    if (s.crd == nullptr || s.info.version == s.crd->storage_version) return &s;
    any = &s;
  }
  return any;
}

void MemoryStore::register_crd(StoreState& c, CrdDefinition def) {
  auto shared = std::make_shared<const CrdDefinition>(std::move(def));
  // Drop versions no longer served.
  for (auto it = c.served.begin(); it != c.served.end();) {
    if (it->second.crd != nullptr && it->second.crd->name == shared->name) it = c.served.erase(it);
    else ++it;
  }
  for (const ResourceInfo& r : shared->resources()) {
    c.served[served_key(r.group, r.version, r.resource)] =
        Served{r, shared->storage_key(), shared, shared->version(r.version)};
  }
  if (c.tables.find(shared->storage_key()) == c.tables.end()) {
    Table& t = c.tables[shared->storage_key()];
    t.watch.evicted_rv = c.rv;
    t.last_change_rv = c.rv;
  }
  c.crds[shared->name] = shared;
}

Document MemoryStore::present(const Served& s, const Document& stored) const {
  if (s.crd == nullptr || s.info.version == s.crd->storage_version) return stored;
  Document d = stored;
  set_member(d, "apiVersion", Value(s.info.api_version().c_str(), d.alloc()));
  if (s.version != nullptr && s.version->schema_has_defaults) {
    apply_defaults(d.root(), s.version->schema.root(), d.alloc());
  }
  return d;
}

TextPtr MemoryStore::text_of(const Served& s, const StoredObject& o) const {
  if (s.crd == nullptr || s.info.version == s.crd->storage_version) return o.text;
  return std::make_shared<const std::string>(present(s, *o.doc).dump());
}

std::pair<MemoryStore::Iter, MemoryStore::Iter> MemoryStore::range(const ResourceInfo& r, const Table& t,
                                                                 const std::string& ns) {
  if (!r.namespaced || ns.empty()) return {t.objects.begin(), t.objects.end()};
  std::string lo = ns + "/";
  std::string hi = ns + "0";  // '0' follows '/' in ASCII
  return {t.objects.lower_bound(lo), t.objects.lower_bound(hi)};
}

StoreResult<DocPtr> MemoryStore::commit(const Served& s, Table& t, const std::string& key, Document obj,
                                        const char* type, PendingNotifications& p) {
  StoreState& c = *state_;
  uint64_t rv = c.rv + 1;
  meta_set_string(obj, "resourceVersion", std::to_string(rv));
  auto text = std::make_shared<const std::string>(obj.dump());
  bool deleted = std::string_view(type) == "DELETED";
  if (c.log) {
    auto st = deleted ? c.log->append_delete(s.storage_key, key, rv) : c.log->append_put(s.storage_key, key, rv, *text);
    if (!st) return fail(errors::internal("persisting the write failed: " + st.error().message));
  }
  c.rv = rv;
  auto doc = std::make_shared<const Document>(std::move(obj));
  DocPtr prev;
  auto it = t.objects.find(key);
  if (it != t.objects.end()) prev = it->second.doc;
  if (deleted) {
    if (it != t.objects.end()) t.objects.erase(it);
  } else if (it != t.objects.end()) {
    it->second = StoredObject{doc, text};
  } else {
    t.objects.emplace(key, StoredObject{doc, text});
  }
  ChangeEvent e{rv, type, json::string_at(doc->root(), "/metadata/namespace"), doc, deleted ? nullptr : prev, text};
  t.last_change_rv = rv;
  t.watch.publish(std::move(e), c.options.watch_window, p);
  maybe_compact();
  return doc;
}

void MemoryStore::maybe_compact() {
  StoreState& c = *state_;
  if (!c.log || !c.log->wants_compaction()) return;
  std::vector<PersistentLog::SnapshotItem> items;
  for (const auto& [skey, t] : c.tables) {
    for (const auto& [key, o] : t.objects) items.push_back({skey, key, *o.text});
  }
  auto st = c.log->compact(c.rv, items);
  if (!st) spdlog::warn("local cluster state: compaction failed, the log keeps growing: {}", st.error().message);
}

Result<std::unique_ptr<Store>> make_memory_store(const StoreOptions& options) {
  auto store = std::make_unique<MemoryStore>(options);
  auto st = store->init();
  if (!st) return fail(st.error().message);
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace unitrain::localcluster
