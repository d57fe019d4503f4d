// Informers: a local, indexed cache of one resource kept current by list + watch, with
// add/update/delete notifications, in the manner of client-go's SharedInformer.
//
//  - Lists page by page (limit 500), then watches from the list's resourceVersion with
//    bookmarks; bookmarks and events advance the resourceVersion a re-watch resumes from.
//  - 410 Gone (an error or an ERROR watch event) relists, and the relist is applied to the cache
//    as a delta: adds for new objects, updates for changed resourceVersions, deletes (with
//    final_state_unknown) for objects that vanished while the watch was down.
//  - Errors back off exponentially, 800 ms doubling to 30 s, with jitter, on the injected Clock.
//  - Namespace scope: all namespaces, one, or several (one list/watch per namespace).
//  - Only the fields the controllers read are cached (`fields`, a json::FieldMask; pod_fields()
//    and service_fields() below): the client decodes just those, in one streaming pass, and the
//    cache's memory per object is a headline figure. An informer several parties share selects
//    what any of them selects, by labels or by owner (unite_selectors).
//  - Handlers run on the informer's threads, one at a time, after the cache holds the change; a
//    handler may read the cache but must not call stop().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/json/coded_text.h"
#include "core/json/field_mask.h"
#include "core/kube/client.h"
#include "core/kube/clock.h"

namespace unitrain::kube {

using ObjectPtr = std::shared_ptr<const json::Document>;
// Index values of an object (an object may have several, or none).
using IndexFunc = std::function<std::vector<std::string>(const json::Value& obj)>;

// "namespace/name", or "name" for cluster-scoped objects: the work-queue key of an object.
std::string object_key(const json::Value& obj);

// Built-in index functions.
inline constexpr const char* kNamespaceIndex = "namespace";
inline constexpr const char* kControllerUidIndex = "controller-uid";
std::vector<std::string> index_by_namespace(const json::Value& obj);
// The uid of the ownerReference with controller=true.
std::vector<std::string> index_by_controller_uid(const json::Value& obj);
// What those two read: metadata.namespace and metadata.ownerReferences.
std::shared_ptr<const json::FieldMask> builtin_index_fields();

// The fields a cache keeps (json::FieldMask). Pods keep what the core and the framework modules
// decide on and what training-operator's abnormal-pod events read: apiVersion, kind; metadata:
// name, namespace, uid, resourceVersion, generation, creationTimestamp, deletionTimestamp,
// labels, ownerReferences (apiVersion, kind, name, uid, controller); spec.nodeName; status:
// phase, reason, message (MPI's launcher failure), podIP, conditions (type, status, reason,
// message, lastTransitionTime), containerStatuses and initContainerStatuses (name, ready,
// restartCount, state and lastState: running, waiting {reason, message}, terminated {exitCode,
// reason, message}). Annotations (kubectl's last-applied copy alone can double a pod),
// managedFields, the rest of the pod spec (volumes, env, images) and the timestamps of
// terminated and waiting states are dropped.
std::shared_ptr<const json::FieldMask> pod_fields();
// Services: the metadata of pods, spec.clusterIP, spec.selector, spec.publishNotReadyAddresses
// and spec.ports (name, port).
std::shared_ptr<const json::FieldMask> service_fields();
// The other kinds a job owns (ConfigMaps, Secrets, launcher Jobs, RBAC, HPAs, PodGroups): whole,
// but metadata.managedFields. The core writes some of them back from the cache (a PodGroup's
// spec), so nothing else may be missing.
std::shared_ptr<const json::FieldMask> owned_fields();
// Jobs: whole, but metadata.managedFields and kubectl's last-applied-configuration annotation
// (the core writes a job's status only, through the status subresource, which takes nothing else).
std::shared_ptr<const json::FieldMask> job_fields();
// PriorityClasses: metadata.name and value.
std::shared_ptr<const json::FieldMask> priority_class_fields();
// metadata.resourceVersion alone: what a handler that only tells versions apart reads of the
// previous version (EventHandlers::previous_fields).
std::shared_ptr<const json::FieldMask> resource_version_fields();
// A pod / Service reduced to pod_fields() / service_fields().
json::Document project_pod(const json::Value& full);
json::Document project_service(const json::Value& full);

// What one party of a shared informer selects: objects matching `labels`, and objects whose
// controller owner reference names one of `owner_kinds` (API group and kind, any version) — how
// a party whose objects carry no constant label (upstream JobSet's children) says what it
// could own. Both empty: everything.
struct OwnerKind {
  std::string group;
  std::string kind;
};
struct PartySelector {
  PartySelector() = default;
  PartySelector(std::string labels) : labels(std::move(labels)) {}  // NOLINT: a label selector is a party
  PartySelector(std::string labels, std::vector<OwnerKind> owner_kinds)
      : labels(std::move(labels)), owner_kinds(std::move(owner_kinds)) {}
  std::string labels;
  std::vector<OwnerKind> owner_kinds;
};

// What an informer shared by several parties selects: the union of what each selects. The API
// server filters (`label_selector`) where the selector syntax can say it — every party selects
// on labels alone, on the same single key, with "=" or "in": "k in (a,b)" — and `keep` checks
// each object otherwise: a party that selects by owner makes the server send every object,
// and those no party selects are dropped before they are cached. A party that selects
// everything makes the union everything (no selector, no check). Errors name the label
// selector that does not parse.
struct Selection {
  std::string label_selector;
  std::function<bool(const json::Value& obj)> keep;  // empty: everything the server sends
};
Result<Selection> unite_selectors(const std::vector<PartySelector>& parties);

// What an Indexer write decodes of the version it replaces or removes: nothing (`decode` false),
// the fields a mask keeps, or (null) the whole object.
struct DecodePrevious {
  bool decode = true;
  const json::FieldMask* fields = nullptr;
};

// The bytes of decoded objects an Indexer keeps for its readers by default (see Indexer):
// about 25 cached pods, 60 Services or 10 PyTorchJobs (see docs/performance.md, "The watch path").
inline constexpr size_t kDecodedMemoBytes = 64 * 1024;

// A thread-safe keyed store with secondary indexes. Objects are kept as compact JSON text and
// decoded when read: a decoded pod takes about 2.5 times the bytes of its text, and an
// operator reads a job's children a few times per reconcile but holds all of them all the time.
// The strings the objects of one store repeat most (member names, label keys, the operator's
// label values, condition types) are one byte each in that text (json::CodedText): the store
// learns them from its first objects (see Tokens in informer.cpp). Being its own text, written
// from documents, it is read back without the checks text from elsewhere gets; an informer's
// watch streams write it with the store's codes as they parse each event (text_codes()).
// The objects read last, or written through a shared document (the informer's watch events),
// stay decoded until their object changes, within `memo_bytes` of their documents' pools (least
// recently used out first): an update's previous version is usually the document the store's
// last events stored. A reader that holds what it reads for as long as it needs it
// (Reading::Once: a reconcile pass's reads of a job's children, seconds after their events)
// is not remembered, so it does not push those documents out. Readers share the documents
// (they are const). The budget is fixed, so it is not part of the memory per cached object;
// the store's first objects, read once each by a resync, do not profit from it.
class Indexer {
 public:
  // `index_fields`: what the index functions read (index_by_namespace and
  // index_by_controller_uid: builtin_index_fields()); null: they may read anything.
  explicit Indexer(std::map<std::string, IndexFunc> indexers = {}, std::shared_ptr<const json::FieldMask> index_fields = nullptr,
                   size_t memo_bytes = kDecodedMemoBytes);
  ~Indexer();
  Indexer(const Indexer&) = delete;
  Indexer& operator=(const Indexer&) = delete;

  // The object as stored (decoded, or the decoded document other readers share); null when
  // there is none.
  ObjectPtr get(const std::string& key) const;
  // Whether `key` is held with metadata.uid `uid`, without decoding it (a probabilistic check: a
  // 64-bit hash of the uid is kept per object).
  bool holds(const std::string& key, std::string_view uid) const;
  std::vector<ObjectPtr> list() const;
  std::vector<std::string> keys() const;
  // How a reader uses what it reads: `Again` (it may come back for it soon: a document
  // decoded for it is remembered, see the class comment), or `Once` (it holds what it got for
  // as long as it needs it: nothing is remembered for it, so the documents remembered for
  // others stay). Both get a remembered document when there is one.
  enum class Reading { Again, Once };
  // Objects whose index `index` yields `value`, in key order; empty for an unknown index.
  std::vector<ObjectPtr> by_index(const std::string& index, const std::string& value, Reading reading = Reading::Again) const;
  std::vector<std::string> index_keys(const std::string& index, const std::string& value) const;
  bool has_index(const std::string& index) const { return indexers_.count(index) > 0; }
  size_t size() const;
  // Bytes of the objects' text (what the store holds beyond its bookkeeping).
  size_t text_bytes() const;

  // At least what `fields` keeps (decoded through it, unless the whole object is at hand
  // decoded); null when there is none.
  ObjectPtr get(const std::string& key, const json::FieldMask& fields) const;

  // What a write hands back of the object it replaced or removed: whether there was one and,
  // when asked (DecodePrevious), its decoded copy (at least the fields asked for: the whole
  // object when it is at hand decoded). A write decodes the previous version anyway, to move
  // the object between index values, but only through `index_fields` when that is all it is
  // needed for; a caller that asks for some fields names a mask that keeps index_fields().
  struct Previous {
    bool existed = false;
    ObjectPtr object;  // null unless asked for
    explicit operator bool() const { return existed; }
  };
  // Writers (the informer). An object handed over as a shared document is what readers get
  // until it changes (nothing to decode).
  Previous upsert(const std::string& key, const json::Value& obj, DecodePrevious previous = {});
  // `written`: the object's text, kept as it is when written with this store's current codes
  // (text_codes()), else written again from `obj`.
  Previous upsert(const std::string& key, ObjectPtr obj, DecodePrevious previous = {}, json::WrittenText written = {});
  Previous erase(const std::string& key, DecodePrevious previous = {});
  // The codes this store writes its text with now (see WatchOptions::text_codes).
  std::shared_ptr<const json::CurrentCodes> text_codes() const;
  // What the index functions read; null: the whole object (or no index at all).
  const json::FieldMask* index_fields() const { return indexers_.empty() ? nullptr : index_fields_.get(); }

 private:
  struct Entry {
    json::CodedText text;
    uint64_t uid_hash = 0;
  };
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Items = std::unordered_map<std::string, Entry, KeyHash, std::equal_to<>>;
  using Item = Items::value_type;
  // An index value's objects: the items themselves (node-based: their addresses are stable),
  // ordered by key, so a reader by index neither hashes nor looks up a key per object.
  struct ByKey {
    using is_transparent = void;
    bool operator()(const Item* a, const Item* b) const { return a->first < b->first; }
    bool operator()(const Item* a, std::string_view b) const { return a->first < b; }
    bool operator()(std::string_view a, const Item* b) const { return a < b->first; }
  };
  using IndexedItems = std::set<const Item*, ByKey>;
  struct Tokens;
  class Memo;
  ObjectPtr decode(const Entry& e, const json::FieldMask* fields = nullptr) const;
  // The object of `item` for a reader: the memo's document, else decoded (and remembered when
  // `remember` and decoded whole).
  ObjectPtr read(const Item& item, const json::FieldMask* fields, bool remember) const;
  Previous write(const std::string& key, const json::Value& obj, ObjectPtr shared, DecodePrevious previous,
                 json::WrittenText written);
  // Moves `item` from the index values of `before` to those of `after` (either may be null),
  // touching only the values that differ. An item leaves every index before it is erased.
  void reindex_locked(const Item& item, const json::Value* before, const json::Value* after);
  // The previous version as a write needs it: what the caller asked for, else what unindexing
  // reads (nothing without indexes).
  ObjectPtr previous_for(const Item& item, DecodePrevious previous) const;
  // The objects stored as plain text before the store learnt its codes, coded.
  void recode_locked();

  std::map<std::string, IndexFunc> indexers_;
  std::shared_ptr<const json::FieldMask> index_fields_;
  mutable std::shared_mutex mu_;
  Items items_;
  std::map<std::string, std::unordered_map<std::string, IndexedItems>> indices_;
  size_t text_bytes_ = 0;
  std::unique_ptr<Tokens> tokens_;
  std::unique_ptr<Memo> memo_;  // its own lock: readers fill it under the shared lock
};

struct EventHandlers {
  std::function<void(const json::Value& obj)> on_add;
  std::function<void(const json::Value& old_obj, const json::Value& new_obj)> on_update;
  // `final_state_unknown`: the deletion was inferred by a relist, `last_known` is the state the
  // cache had, not the object's final state.
  std::function<void(const json::Value& last_known, bool final_state_unknown)> on_delete;
  // The fields of `old_obj` on_update reads; null: the whole object. The cache keeps objects as
  // text, so the previous version is decoded for on_update alone: decoding only these is cheaper.
  std::shared_ptr<const json::FieldMask> previous_fields;
};

struct InformerOptions {
  GroupVersionResource resource;
  std::vector<std::string> namespaces;  // empty: all namespaces (or a cluster-scoped resource)
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  // The fields cached (the client decodes only those); null: whole objects.
  std::shared_ptr<const json::FieldMask> fields;
  // Objects the server sends but the cache does not want (see Selection); empty: all. One that
  // stops matching is removed like a deleted one.
  std::function<bool(const json::Value& obj)> keep;
  std::map<std::string, IndexFunc> indexers{{kNamespaceIndex, index_by_namespace}};
  // What `indexers` read of an object (Indexer): builtin_index_fields() for the built-in ones;
  // null: anything (the previous version of an object is then decoded whole to unindex it).
  std::shared_ptr<const json::FieldMask> index_fields;
  // The bytes of decoded objects the cache keeps for its readers (Indexer); 0: none, every
  // read decodes.
  size_t memo_bytes = kDecodedMemoBytes;
  std::chrono::milliseconds backoff_initial{800};
  std::chrono::milliseconds backoff_max{30000};
  double backoff_jitter = 1.0;  // a delay d becomes d + random[0, jitter * d), capped at backoff_max
  // Server-side watch timeout; client-go picks 5..10 minutes at random so watches do not all
  // reconnect at once. nullopt: a random value in that range. The informer waits for the next
  // event until that timeout plus watch_grace has passed (the server should have ended the watch
  // by then: a stream silent that long is taken for a dead connection and re-watched); it does
  // not wake up in between. stop() cancels the stream instead of waiting for it.
  std::optional<int64_t> watch_timeout_seconds;
  std::chrono::milliseconds watch_grace{std::chrono::seconds(30)};
  uint64_t seed = 0;  // jitter randomness; 0: from std::random_device
};

struct InformerStats {
  uint64_t lists = 0;         // list requests (pages)
  uint64_t relists = 0;       // full lists after the first (410 or errors)
  uint64_t watches = 0;       // watch requests
  uint64_t events = 0;        // watch events applied (not bookmarks)
  uint64_t bookmarks = 0;
  uint64_t errors = 0;        // failed requests and error events
  uint64_t synthesized_deletes = 0;
};

class Informer {
 public:
  Informer(Client& client, Clock& clock, InformerOptions options);
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;
  ~Informer();  // stop()

  // Handlers added after objects are cached get on_add for each of them first.
  void add_handlers(EventHandlers handlers);
  // Starts one thread per namespace scope. Calling it twice does nothing.
  void start();
  // Cancels the watches, ends the backoff waits and joins the threads: a thread waiting for
  // watch events ends at once (no poll), one in a handler or a list request when that returns.
  void stop();

  bool has_synced() const;
  // Blocks (real time) until every scope finished its first list, or the timeout passes.
  bool wait_for_sync(std::chrono::milliseconds timeout) const;

  const Indexer& cache() const { return cache_; }
  // The resourceVersion the watch of `ns` resumes from ("" scope for all namespaces).
  std::string resource_version(const std::string& ns = "") const;
  InformerStats stats() const;

 private:
  struct Scope;
  void run(Scope& scope);
  bool list_and_replace(Scope& scope);
  // Returns true when the next step is a relist (410), false for a re-watch.
  bool watch_once(Scope& scope);
  bool backoff(Scope& scope);  // false when stopping
  bool wanted(const json::Value& obj) const { return !opts_.keep || opts_.keep(obj); }
  void apply_upsert(const std::string& key, ObjectPtr obj, json::WrittenText text);
  // `last`: the object's final state when known (a DELETED event), else the cached one is told.
  void apply_delete(const std::string& key, const json::Value* last, bool final_state_unknown);
  bool stopping() const;

  Client& client_;
  Clock& clock_;
  InformerOptions opts_;
  Indexer cache_;

  mutable std::mutex mu_;  // scopes' resource versions, stop flag, streams, stats
  std::condition_variable cv_;
  mutable std::condition_variable synced_cv_;
  bool started_ = false;
  bool stopping_ = false;
  std::vector<std::unique_ptr<Scope>> scopes_;
  InformerStats stats_;

  std::mutex dispatch_mu_;  // serializes cache writes + handler calls across scopes
  std::vector<EventHandlers> handlers_;
  // What of the previous version the handlers read: nothing without an on_update; the union of
  // their previous_fields, or the whole object when one of them names none.
  bool decode_previous_ = false;
  bool previous_whole_ = false;
  std::optional<json::FieldMask> previous_fields_;
  // `shared`: `obj`'s document, when the cache may keep it as it is (a watch event's).
  // `text`: `shared`'s coded text, when the watch stream wrote it.
  void upsert_and_notify(const std::string& key, const json::Value& obj, ObjectPtr shared = nullptr,
                         json::WrittenText text = {});  // dispatch_mu_ held
};

}  // namespace unitrain::kube
