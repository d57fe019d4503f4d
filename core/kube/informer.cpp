// Kept whole: the cache's compact storage, its indexes and the list/watch loop that fills it share
// the Indexer's private representation.
#include "core/kube/informer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <utility>

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "core/api/labels.h"
#include "core/api/meta.h"

namespace unitrain::kube {

std::string object_key(const json::Value& obj) {
  auto name = json::get_string(obj, "/metadata/name").value_or("");
  auto ns = json::get_string(obj, "/metadata/namespace").value_or("");
  if (ns.empty()) return std::string(name);
  std::string key;
  key.reserve(ns.size() + 1 + name.size());
  key.append(ns).append("/").append(name);
  return key;
}

std::vector<std::string> index_by_namespace(const json::Value& obj) {
  auto ns = json::get_string(obj, "/metadata/namespace");
  if (!ns) return {};
  return {std::string(*ns)};
}

std::shared_ptr<const json::FieldMask> builtin_index_fields() {
  static const auto fields =
      std::make_shared<const json::FieldMask>(json::FieldMask::parse("metadata{namespace,ownerReferences}").value());
  return fields;
}

std::vector<std::string> index_by_controller_uid(const json::Value& obj) {
  const auto* refs = json::find(obj, "/metadata/ownerReferences");
  if (!refs || !refs->IsArray()) return {};
  for (const auto& ref : refs->GetArray()) {
    if (json::get_bool(ref, "/controller").value_or(false)) {
      if (auto uid = json::get_string(ref, "/uid")) {
        // Built in place: a braced list would copy the uid string once more (a uid is longer
        // than the short-string buffer, so that is an allocation per index call).
        std::vector<std::string> values;
        values.emplace_back(*uid);
        return values;
      }
    }
  }
  return {};
}

// ---- projections -----------------------------------------------------------------------------

namespace {

std::shared_ptr<const json::FieldMask> mask(const std::string& text) {
  auto m = json::FieldMask::parse(text);
  // The masks below are constants: one that does not parse is a bug (the unit tests parse each).
  if (!m) throw std::logic_error(m.error().message);
  return std::make_shared<const json::FieldMask>(std::move(*m));
}

// What the core reads of every child's metadata.
constexpr std::string_view kChildMetadata =
    "metadata{name,namespace,uid,resourceVersion,generation,creationTimestamp,deletionTimestamp,labels,"
    "ownerReferences{apiVersion,kind,name,uid,controller}}";

// A container state as the abnormal-pod events and the exit-code rules read it.
constexpr std::string_view kContainerState = "{running,waiting{reason,message},terminated{exitCode,reason,message}}";

}  // namespace

std::shared_ptr<const json::FieldMask> pod_fields() {
  const std::string container_statuses =
      fmt::format("{{name,ready,restartCount,state{0},lastState{0}}}", kContainerState);
  static const auto fields = mask(fmt::format(
      "apiVersion,kind,{},spec{{nodeName}},status{{phase,reason,message,podIP,"
      "conditions{{type,status,reason,message,lastTransitionTime}},containerStatuses{},initContainerStatuses{}}}",
      kChildMetadata, container_statuses, container_statuses));
  return fields;
}

std::shared_ptr<const json::FieldMask> service_fields() {
  static const auto fields =
      mask("apiVersion,kind," + std::string(kChildMetadata) + ",spec{clusterIP,selector,publishNotReadyAddresses,ports{name,port}}");
  return fields;
}

std::shared_ptr<const json::FieldMask> owned_fields() {
  static const auto fields = mask("*,metadata{*,!managedFields}");
  return fields;
}

std::shared_ptr<const json::FieldMask> job_fields() {
  static const auto fields =
      mask("*,metadata{*,!managedFields,annotations{*,!kubectl.kubernetes.io/last-applied-configuration}}");
  return fields;
}

std::shared_ptr<const json::FieldMask> priority_class_fields() {
  static const auto fields = mask("apiVersion,kind,metadata{name,uid,resourceVersion},value");
  return fields;
}

std::shared_ptr<const json::FieldMask> resource_version_fields() {
  static const auto fields = mask("metadata{resourceVersion}");
  return fields;
}

json::Document project_pod(const json::Value& full) { return json::Document::project(full, *pod_fields()); }
json::Document project_service(const json::Value& full) { return json::Document::project(full, *service_fields()); }

Result<Selection> unite_selectors(const std::vector<PartySelector>& parties) {
  std::vector<api::LabelSelector> by_labels;
  std::vector<OwnerKind> by_owner;
  for (const auto& party : parties) {
    auto s = api::LabelSelector::parse(party.labels);
    if (!s) return fail(s.error());
    if (s->empty() && party.owner_kinds.empty()) return Selection{};  // someone wants everything
    if (!s->empty()) by_labels.push_back(std::move(*s));
    by_owner.insert(by_owner.end(), party.owner_kinds.begin(), party.owner_kinds.end());
  }
  if (by_labels.empty() && by_owner.empty()) return Selection{};
  // Labels alone, one key, = or in, for every party: "key in (union of values)" says it to the server.
  std::string key;
  std::set<std::string> values;
  bool one_key = by_owner.empty();
  for (const auto& s : by_labels) {
    if (!one_key) break;
    const auto& reqs = s.requirements();
    if (reqs.size() != 1 || (reqs[0].op != api::Requirement::Op::Equals && reqs[0].op != api::Requirement::Op::In) ||
        (!key.empty() && reqs[0].key != key)) {
      one_key = false;
      break;
    }
    key = reqs[0].key;
    values.insert(reqs[0].values.begin(), reqs[0].values.end());
  }
  if (one_key) {
    api::Requirement r;
    r.key = key;
    r.op = values.size() == 1 ? api::Requirement::Op::Equals : api::Requirement::Op::In;
    r.values.assign(values.begin(), values.end());
    return Selection{api::to_string(r), {}};
  }
  return Selection{"", [by_labels = std::move(by_labels), by_owner = std::move(by_owner)](const json::Value& obj) {
                     const json::Value* labels = json::find(obj, "/metadata/labels");
                     static const json::Value kNone;
                     const json::Value& l = labels ? *labels : kNone;
                     if (std::any_of(by_labels.begin(), by_labels.end(), [&](const auto& s) { return s.matches(l); })) return true;
                     if (by_owner.empty()) return false;
                     auto owner = api::controller_of(obj);
                     if (!owner) return false;
                     const std::string_view api_version = owner->api_version;
                     const auto slash = api_version.find('/');
                     const std::string_view group = slash == std::string_view::npos ? std::string_view() : api_version.substr(0, slash);
                     return std::any_of(by_owner.begin(), by_owner.end(),
                                        [&](const OwnerKind& k) { return k.kind == owner->kind && k.group == group; });
                   }};
}

// ---- Indexer ---------------------------------------------------------------------------------

namespace {

uint64_t hash_uid(std::string_view uid) { return uid.empty() ? 0 : std::hash<std::string_view>{}(uid) | 1; }

}  // namespace

// The strings an Indexer codes (json::StringCodes): the objects of one resource repeat the same
// member names, label keys and values, owner kinds and condition types. It counts what coding
// each string would have saved over the first objects stored, then keeps the best for good; text
// stored before that is plain (and read with the codes all the same: it holds none).
struct Indexer::Tokens {
  static constexpr size_t kLearnFrom = 200;  // objects

  size_t seen = 0;
  std::unordered_map<std::string, uint64_t> saving;  // while learning
  // Shared: text written with them elsewhere (a watch event's) is stored as it is.
  std::shared_ptr<const json::StringCodes> codes = std::make_shared<const json::StringCodes>();
  std::shared_ptr<json::CurrentCodes> current = std::make_shared<json::CurrentCodes>(codes);
  // The text writer's output buffer, kept between calls (the store writes under its write lock).
  rapidjson::StringBuffer scratch;

  bool fixed() const { return seen >= kLearnFrom; }

  void count(const json::Value& v) {
    if (v.IsString()) {
      if (json::StringCodes::codable(json::view(v))) saving[std::string(json::view(v))] += v.GetStringLength() + 1;
    } else if (v.IsObject()) {
      for (const auto& m : v.GetObject()) {
        if (json::StringCodes::codable(json::view(m.name))) saving[std::string(json::view(m.name))] += m.name.GetStringLength() + 1;
        count(m.value);
      }
    } else if (v.IsArray()) {
      for (const auto& e : v.GetArray()) count(e);
    }
  }

  void learn(const json::Value& obj) {
    count(obj);
    if (++seen < kLearnFrom) return;
    std::vector<std::pair<uint64_t, std::string>> best;
    for (auto& [s, n] : saving) best.emplace_back(n, s);
    const size_t n = std::min(best.size(), json::StringCodes::kMaxCodes);
    std::partial_sort(best.begin(), best.begin() + static_cast<std::ptrdiff_t>(n), best.end(), std::greater<>());
    std::vector<std::string> table;
    for (size_t i = 0; i < n; ++i) table.push_back(std::move(best[i].second));
    codes = std::make_shared<const json::StringCodes>(std::move(table));
    current->set(codes);
    saving = {};
  }

  json::CodedText write(const json::Value& obj) { return json::CodedText::write(obj, *codes, scratch); }
};

// The decoded documents an Indexer keeps for its readers (see Indexer), within a budget of
// their pools' bytes and at most kMaxKept of them, the least recently used out first. A few
// dozen: a flat array searched by hash allocates nothing per call, where a map and a list would
// allocate a node per write. Keyed by views of the keys in Indexer::items_: an entry is dropped
// before its item is erased, and the Indexer's items outlive its memo.
class Indexer::Memo {
 public:
  static constexpr size_t kMaxKept = 64;

  explicit Memo(size_t budget_bytes) : budget_(budget_bytes) { kept_.reserve(kMaxKept); }

  ObjectPtr find(std::string_view key) {
    if (budget_ == 0) return nullptr;
    const size_t hash = std::hash<std::string_view>{}(key);
    std::lock_guard g(mu_);
    Kept* k = locate(key, hash);
    if (!k) return nullptr;
    k->used = ++clock_;
    return k->doc;
  }

  void put(std::string_view key, ObjectPtr doc) {
    if (budget_ == 0) return;
    const size_t hash = std::hash<std::string_view>{}(key);
    const size_t bytes = doc->allocated_bytes();
    ObjectPtr released;  // the replaced document, freed once the lock is released
    std::lock_guard g(mu_);
    if (Kept* k = locate(key, hash)) {
      used_bytes_ -= k->bytes;
      released = std::exchange(k->doc, nullptr);
      remove(static_cast<size_t>(k - kept_.data()));
    }
    if (bytes > budget_) return;
    while (!kept_.empty() && (used_bytes_ + bytes > budget_ || kept_.size() >= kMaxKept)) {
      size_t oldest = 0;
      for (size_t i = 1; i < kept_.size(); ++i)
        if (kept_[i].used < kept_[oldest].used) oldest = i;
      used_bytes_ -= kept_[oldest].bytes;
      remove(oldest);
    }
    kept_.push_back(Kept{key, hash, std::move(doc), bytes, ++clock_});
    used_bytes_ += bytes;
  }

  void drop(std::string_view key) {
    if (budget_ == 0) return;
    const size_t hash = std::hash<std::string_view>{}(key);
    ObjectPtr released;
    std::lock_guard g(mu_);
    if (Kept* k = locate(key, hash)) {
      used_bytes_ -= k->bytes;
      released = std::exchange(k->doc, nullptr);
      remove(static_cast<size_t>(k - kept_.data()));
    }
  }

 private:
  struct Kept {
    std::string_view key;
    size_t hash;
    ObjectPtr doc;
    size_t bytes;
    uint64_t used;  // clock_ at the last use
  };
  Kept* locate(std::string_view key, size_t hash) {
    for (auto& k : kept_)
      if (k.hash == hash && k.key == key) return &k;
    return nullptr;
  }
  void remove(size_t i) {
    if (i + 1 != kept_.size()) kept_[i] = std::move(kept_.back());
    kept_.pop_back();
  }

  const size_t budget_;
  std::mutex mu_;
  std::vector<Kept> kept_;
  size_t used_bytes_ = 0;
  uint64_t clock_ = 0;
};

Indexer::Indexer(std::map<std::string, IndexFunc> indexers, std::shared_ptr<const json::FieldMask> index_fields,
                 size_t memo_bytes)
    : indexers_(std::move(indexers)),
      index_fields_(std::move(index_fields)),
      tokens_(std::make_unique<Tokens>()),
      memo_(std::make_unique<Memo>(memo_bytes)) {}

Indexer::~Indexer() = default;

ObjectPtr Indexer::decode(const Entry& e, const json::FieldMask* fields) const {
  // The store's own text, written from a document: read without the checks text from elsewhere
  // needs (a repeated member name), and always readable.
  auto doc = e.text.read(*tokens_->codes, fields);
  return doc ? std::make_shared<const json::Document>(std::move(*doc)) : nullptr;
}

ObjectPtr Indexer::read(const Item& item, const json::FieldMask* fields, bool remember) const {
  if (ObjectPtr hit = memo_->find(item.first)) return hit;
  ObjectPtr doc = decode(item.second, fields);
  if (remember && !fields && doc) memo_->put(item.first, doc);
  return doc;
}

ObjectPtr Indexer::get(const std::string& key) const {
  std::shared_lock g(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : read(*it, nullptr, true);
}

ObjectPtr Indexer::get(const std::string& key, const json::FieldMask& fields) const {
  std::shared_lock g(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : read(*it, &fields, false);
}

bool Indexer::holds(const std::string& key, std::string_view uid) const {
  std::shared_lock g(mu_);
  auto it = items_.find(key);
  return it != items_.end() && it->second.uid_hash == hash_uid(uid);
}

std::vector<ObjectPtr> Indexer::list() const {
  std::shared_lock g(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(items_.size());
  // Every object once: remembering them would only push out the ones readers come back to.
  for (const auto& item : items_) out.push_back(read(item, nullptr, false));
  return out;
}

std::vector<std::string> Indexer::keys() const {
  std::shared_lock g(mu_);
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& [k, v] : items_) out.push_back(k);
  return out;
}

std::vector<std::string> Indexer::index_keys(const std::string& index, const std::string& value) const {
  std::shared_lock g(mu_);
  auto idx = indices_.find(index);
  if (idx == indices_.end()) return {};
  auto it = idx->second.find(value);
  if (it == idx->second.end()) return {};
  std::vector<std::string> out;
  out.reserve(it->second.size());
  for (const Item* item : it->second) out.push_back(item->first);
  return out;
}

std::vector<ObjectPtr> Indexer::by_index(const std::string& index, const std::string& value, Reading reading) const {
  std::shared_lock g(mu_);
  std::vector<ObjectPtr> out;
  auto idx = indices_.find(index);
  if (idx == indices_.end()) return out;
  auto it = idx->second.find(value);
  if (it == idx->second.end()) return out;
  out.reserve(it->second.size());
  for (const Item* item : it->second) out.push_back(read(*item, nullptr, reading == Reading::Again));
  return out;
}

size_t Indexer::size() const {
  std::shared_lock g(mu_);
  return items_.size();
}

size_t Indexer::text_bytes() const {
  std::shared_lock g(mu_);
  return text_bytes_;
}

void Indexer::reindex_locked(const Item& item, const json::Value* before, const json::Value* after) {
  for (const auto& [name, fn] : indexers_) {
    auto& idx = indices_[name];
    std::vector<std::string> was = before ? fn(*before) : std::vector<std::string>{};
    std::vector<std::string> now = after ? fn(*after) : std::vector<std::string>{};
    for (const auto& v : was) {
      if (std::find(now.begin(), now.end(), v) != now.end()) continue;  // kept: nothing to move
      auto it = idx.find(v);
      if (it == idx.end()) continue;
      it->second.erase(&item);
      if (it->second.empty()) idx.erase(it);
    }
    for (auto& v : now) {
      if (std::find(was.begin(), was.end(), v) != was.end()) continue;
      idx[std::move(v)].insert(&item);
    }
  }
}

ObjectPtr Indexer::previous_for(const Item& item, DecodePrevious previous) const {
  if (!previous.decode && indexers_.empty()) return nullptr;
  // Usually the document the last watch event of this object stored.
  if (ObjectPtr hit = memo_->find(item.first)) return hit;
  return decode(item.second, previous.decode ? previous.fields : index_fields_.get());
}

void Indexer::recode_locked() {
  for (auto& [key, entry] : items_) {
    auto doc = entry.text.read(*tokens_->codes);
    if (!doc) continue;  // the store's own text: never
    json::CodedText coded = tokens_->write(doc->root());
    text_bytes_ = text_bytes_ - entry.text.size() + coded.size();
    entry.text = std::move(coded);
  }
}

Indexer::Previous Indexer::upsert(const std::string& key, const json::Value& obj, DecodePrevious previous) {
  return write(key, obj, nullptr, previous, {});
}

Indexer::Previous Indexer::upsert(const std::string& key, ObjectPtr obj, DecodePrevious previous, json::WrittenText written) {
  const json::Value& root = obj->root();
  return write(key, root, std::move(obj), previous, std::move(written));
}

std::shared_ptr<const json::CurrentCodes> Indexer::text_codes() const { return tokens_->current; }

Indexer::Previous Indexer::write(const std::string& key, const json::Value& obj, ObjectPtr shared, DecodePrevious previous,
                                 json::WrittenText written) {
  const uint64_t uid_hash = hash_uid(json::get_string(obj, "/metadata/uid").value_or(""));
  std::unique_lock g(mu_);
  if (!tokens_->fixed()) {
    tokens_->learn(obj);
    // The store's first objects were kept plain while it learnt; code them now (plain text
    // decodes too, but takes about a third more bytes).
    if (tokens_->fixed()) recode_locked();
  }
  // Text written with the codes the store writes with now is what it would write itself.
  json::CodedText text = written.codes == tokens_->codes && !written.text.empty() ? std::move(written.text) : tokens_->write(obj);
  auto [it, inserted] = items_.try_emplace(key);
  Previous out;
  if (!inserted) {
    out.existed = true;
    ObjectPtr old = previous_for(*it, previous);
    reindex_locked(*it, old ? &old->root() : nullptr, &obj);
    if (previous.decode) out.object = std::move(old);
    text_bytes_ -= it->second.text.size();
  } else {
    reindex_locked(*it, nullptr, &obj);
  }
  text_bytes_ += text.size();
  it->second = Entry{std::move(text), uid_hash};
  if (shared) memo_->put(it->first, std::move(shared));
  else memo_->drop(it->first);
  return out;
}

Indexer::Previous Indexer::erase(const std::string& key, DecodePrevious previous) {
  std::unique_lock g(mu_);
  auto it = items_.find(key);
  if (it == items_.end()) return {};
  Previous out;
  out.existed = true;
  ObjectPtr old = previous_for(*it, previous);
  if (old) reindex_locked(*it, &old->root(), nullptr);
  if (previous.decode) out.object = std::move(old);
  text_bytes_ -= it->second.text.size();
  memo_->drop(it->first);
  items_.erase(it);
  return out;
}

// ---- Informer --------------------------------------------------------------------------------

struct Informer::Scope {
  std::string ns;
  std::string rv;
  bool synced = false;
  bool listed_once = false;
  int failures = 0;
  std::mt19937_64 rng;
  WatchStream* stream = nullptr;  // guarded by Informer::mu_, for stop() to cancel
  std::thread thread;
};

namespace {
bool is_gone(const ApiError& e) { return e.code == 410 || e.is(ApiError::Reason::Gone) || e.is(ApiError::Reason::Expired); }
std::string rv_of(const json::Value& obj) {
  return std::string(json::get_string(obj, "/metadata/resourceVersion").value_or(""));
}

}  // namespace

Informer::Informer(Client& client, Clock& clock, InformerOptions options)
    : client_(client), clock_(clock), opts_(std::move(options)), cache_(opts_.indexers, opts_.index_fields, opts_.memo_bytes) {}

Informer::~Informer() { stop(); }

void Informer::add_handlers(EventHandlers handlers) {
  std::lock_guard g(dispatch_mu_);
  if (handlers.on_add) {
    for (const auto& obj : cache_.list()) handlers.on_add(obj->root());
  }
  if (handlers.on_update) {
    decode_previous_ = true;
    if (!handlers.previous_fields || (!cache_.index_fields() && opts_.indexers.size() > 0)) {
      previous_whole_ = true;
    } else {
      // The cache unindexes the previous version from what it decodes for the handlers.
      if (!previous_fields_) previous_fields_ = cache_.index_fields() ? *cache_.index_fields() : *handlers.previous_fields;
      previous_fields_ = previous_fields_->merged(*handlers.previous_fields);
    }
  }
  handlers_.push_back(std::move(handlers));
}

void Informer::start() {
  std::lock_guard g(mu_);
  if (started_) return;
  started_ = true;
  std::vector<std::string> namespaces = opts_.namespaces;
  if (namespaces.empty()) namespaces.push_back("");
  std::sort(namespaces.begin(), namespaces.end());
  namespaces.erase(std::unique(namespaces.begin(), namespaces.end()), namespaces.end());
  uint64_t seed = opts_.seed ? opts_.seed : std::random_device{}();
  for (const auto& ns : namespaces) {
    auto scope = std::make_unique<Scope>();
    scope->ns = ns;
    scope->rng.seed(seed++);
    scopes_.push_back(std::move(scope));
  }
  for (auto& s : scopes_) {
    Scope* scope = s.get();
    scope->thread = std::thread([this, scope] {
      // Thread entry: nothing may escape, or the process terminates.
      try {
        run(*scope);
      } catch (const std::exception&) {
        std::lock_guard g2(mu_);
        ++stats_.errors;
      }
    });
  }
}

void Informer::stop() {
  {
    std::lock_guard g(mu_);
    stopping_ = true;
    for (auto& s : scopes_) {
      if (s->stream) s->stream->cancel();
    }
    cv_.notify_all();
    synced_cv_.notify_all();
  }
  for (auto& s : scopes_) {
    if (s->thread.joinable()) s->thread.join();
  }
}

bool Informer::stopping() const {
  std::lock_guard g(mu_);
  return stopping_;
}

bool Informer::has_synced() const {
  std::lock_guard g(mu_);
  if (scopes_.empty()) return false;
  return std::all_of(scopes_.begin(), scopes_.end(), [](const auto& s) { return s->synced; });
}

bool Informer::wait_for_sync(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return synced_cv_.wait_for(lock, timeout, [&] {
    return stopping_ ||
           (!scopes_.empty() && std::all_of(scopes_.begin(), scopes_.end(), [](const auto& s) { return s->synced; }));
  }) && !stopping_;
}

std::string Informer::resource_version(const std::string& ns) const {
  std::lock_guard g(mu_);
  for (const auto& s : scopes_) {
    if (s->ns == ns) return s->rv;
  }
  return "";
}

InformerStats Informer::stats() const {
  std::lock_guard g(mu_);
  return stats_;
}

void Informer::apply_upsert(const std::string& key, ObjectPtr obj, json::WrittenText text) {
  std::lock_guard g(dispatch_mu_);
  const json::Value& root = obj->root();
  upsert_and_notify(key, root, std::move(obj), std::move(text));
}

void Informer::upsert_and_notify(const std::string& key, const json::Value& obj, ObjectPtr shared, json::WrittenText text) {
  const DecodePrevious how{decode_previous_, previous_whole_ || !previous_fields_ ? nullptr : &*previous_fields_};
  Indexer::Previous old = shared ? cache_.upsert(key, std::move(shared), how, std::move(text)) : cache_.upsert(key, obj, how);
  for (const auto& h : handlers_) {
    if (old) {
      if (h.on_update && old.object) h.on_update(old.object->root(), obj);
    } else if (h.on_add) {
      h.on_add(obj);
    }
  }
}

void Informer::apply_delete(const std::string& key, const json::Value* last, bool final_state_unknown) {
  std::lock_guard g(dispatch_mu_);
  // The cached state is decoded only when it is all a handler will be told.
  Indexer::Previous old = cache_.erase(key, {last == nullptr, nullptr});
  if (!old) return;  // never seen: nothing to tell anyone
  if (!last && !old.object) return;
  const json::Value& shown = last ? *last : old.object->root();
  for (const auto& h : handlers_) {
    if (h.on_delete) h.on_delete(shown, final_state_unknown);
  }
}

bool Informer::backoff(Scope& scope) {
  using namespace std::chrono;
  double base = static_cast<double>(opts_.backoff_initial.count()) * std::pow(2.0, std::min(scope.failures, 30));
  double cap = static_cast<double>(opts_.backoff_max.count());
  double d = std::min(base, cap);
  if (opts_.backoff_jitter > 0) {
    std::uniform_real_distribution<double> dist(0.0, opts_.backoff_jitter);
    d = std::min(cap, d + d * dist(scope.rng));
  }
  ++scope.failures;
  std::unique_lock lock(mu_);
  auto deadline = clock_.steady_now() + duration_cast<Clock::Duration>(duration<double, std::milli>(d));
  clock_.wait_until(lock, cv_, deadline, [&] { return stopping_; });
  return !stopping_;
}

bool Informer::list_and_replace(Scope& scope) {
  ListOptions o;
  o.label_selector = opts_.label_selector;
  o.field_selector = opts_.field_selector;
  o.limit = opts_.page_size;
  o.fields = opts_.fields;
  // Each page is applied as it arrives (the cache keeps its own compact copies, so a large list
  // is never held decoded all at once); deletions are known once the last page was seen.
  std::unordered_map<std::string, bool> seen;
  std::string list_rv;
  for (;;) {
    auto page = client_.list(opts_.resource, scope.ns, o);
    {
      std::lock_guard g(mu_);
      ++stats_.lists;
      if (!page) ++stats_.errors;
    }
    if (!page) return false;
    if (list_rv.empty()) list_rv = std::string(json::get_string(page->root(), "/metadata/resourceVersion").value_or(""));
    if (const auto* items = json::find(page->root(), "/items"); items && items->IsArray()) {
      std::lock_guard g(dispatch_mu_);
      for (const auto& obj : items->GetArray()) {
        if (!wanted(obj)) continue;
        std::string key = object_key(obj);
        ObjectPtr old = cache_.get(key, *resource_version_fields());
        seen.emplace(key, true);
        if (old && rv_of(old->root()) == rv_of(obj)) continue;
        upsert_and_notify(key, obj);
      }
    }
    auto cont = json::get_string(page->root(), "/metadata/continue");
    if (!cont || cont->empty()) break;
    o.continue_token = std::string(*cont);
    if (stopping()) return false;
  }

  {
    std::lock_guard g(dispatch_mu_);
    // Objects of this scope the list no longer has were deleted while we were not watching.
    std::string prefix = scope.ns.empty() ? "" : scope.ns + "/";
    uint64_t synthesized = 0;
    for (const auto& key : cache_.keys()) {
      if (!prefix.empty() && key.compare(0, prefix.size(), prefix) != 0) continue;
      if (seen.count(key)) continue;
      Indexer::Previous old = cache_.erase(key);
      if (!old.object) continue;
      ++synthesized;
      for (const auto& h : handlers_) {
        if (h.on_delete) h.on_delete(old.object->root(), true);
      }
    }
    std::lock_guard g2(mu_);
    stats_.synthesized_deletes += synthesized;
    if (scope.listed_once) ++stats_.relists;
    scope.listed_once = true;
    scope.rv = list_rv;
    scope.synced = true;
    scope.failures = 0;
    synced_cv_.notify_all();
  }
  return true;
}

bool Informer::watch_once(Scope& scope) {
  WatchOptions o;
  o.label_selector = opts_.label_selector;
  o.field_selector = opts_.field_selector;
  o.allow_bookmarks = true;
  o.fields = opts_.fields;
  // With a mask the stream can write each object's text for the cache as it parses it.
  if (opts_.fields) o.text_codes = cache_.text_codes();
  {
    std::lock_guard g(mu_);
    o.resource_version = scope.rv;
    ++stats_.watches;
  }
  if (opts_.watch_timeout_seconds) {
    o.timeout_seconds = *opts_.watch_timeout_seconds;
  } else {
    std::uniform_int_distribution<int64_t> dist(300, 600);
    o.timeout_seconds = dist(scope.rng);
  }
  // The server ends the watch after timeout_seconds (with none asked for, kube-apiserver's default
  // is at most an hour); the informer waits for events until then, plus a grace, in one wait.
  const int64_t server_timeout = *o.timeout_seconds > 0 ? *o.timeout_seconds : 3600;
  const auto watch_end = std::chrono::steady_clock::now() + std::chrono::seconds(server_timeout) + opts_.watch_grace;
  auto started = client_.watch(opts_.resource, scope.ns, o);
  if (!started) {
    {
      std::lock_guard g(mu_);
      ++stats_.errors;
    }
    if (is_gone(started.error())) return true;
    backoff(scope);
    return false;
  }
  std::unique_ptr<WatchStream> stream = std::move(*started);
  {
    std::lock_guard g(mu_);
    if (stopping_) return false;
    scope.stream = stream.get();
  }
  struct Detach {
    Informer& self;
    Scope& scope;
    ~Detach() {
      std::lock_guard g(self.mu_);
      scope.stream = nullptr;
    }
  } detach{*this, scope};

  uint64_t received = 0;
  for (;;) {
    if (stopping()) return false;
    // Real time, as the stream waits: no wake-up before an event, the end or stop()'s cancel.
    const auto now = std::chrono::steady_clock::now();
    if (now >= watch_end) return false;
    auto next = stream->next(std::chrono::ceil<std::chrono::milliseconds>(watch_end - now));
    if (!next) {
      if (stopping()) return false;  // cancelled by stop(): not an error
      {
        std::lock_guard g(mu_);
        ++stats_.errors;
      }
      if (is_gone(next.error())) return true;
      backoff(scope);
      return false;
    }
    if (!next->has_value()) {
      // Silent past the server's own timeout: a dead connection; watch again from where it was.
      if (stream->timed_out()) return false;
      // A stream that ends before delivering anything points at a server problem; do not spin.
      if (received == 0 && !stopping()) backoff(scope);
      return false;
    }
    WatchEvent& ev = **next;
    ++received;
    switch (ev.type) {
      case WatchEvent::Type::Bookmark: {
        std::lock_guard g(mu_);
        ++stats_.bookmarks;
        if (auto rv = rv_of(ev.object.root()); !rv.empty()) scope.rv = rv;
        break;
      }
      case WatchEvent::Type::Error: {
        auto code = json::get_int(ev.object.root(), "/code").value_or(0);
        {
          std::lock_guard g(mu_);
          ++stats_.errors;
        }
        if (code == 410) return true;
        backoff(scope);
        return false;
      }
      case WatchEvent::Type::Added:
      case WatchEvent::Type::Modified: {
        auto key = object_key(ev.object.root());
        auto rv = rv_of(ev.object.root());
        // An object that no longer matches what the cache wants leaves it like a deleted one.
        // The event's document becomes what the cache's readers get (nothing to decode).
        // The text the stream wrote as it parsed is stored as it is (nothing to write again).
        if (wanted(ev.object.root()))
          apply_upsert(key, std::make_shared<const json::Document>(std::move(ev.object)), std::move(ev.text));
        else apply_delete(key, &ev.object.root(), false);
        std::lock_guard g(mu_);
        ++stats_.events;
        scope.rv = rv;
        scope.failures = 0;
        break;
      }
      case WatchEvent::Type::Deleted: {
        auto key = object_key(ev.object.root());
        auto rv = rv_of(ev.object.root());
        apply_delete(key, &ev.object.root(), false);
        std::lock_guard g(mu_);
        ++stats_.events;
        scope.rv = rv;
        scope.failures = 0;
        break;
      }
    }
  }
}

void Informer::run(Scope& scope) {
  bool need_list = true;
  while (!stopping()) {
    if (need_list) {
      if (!list_and_replace(scope)) {
        if (!backoff(scope)) return;
        continue;
      }
      need_list = false;
    }
    need_list = watch_once(scope);
  }
}

}  // namespace unitrain::kube
