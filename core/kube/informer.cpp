#include "core/kube/informer.h"

#include <algorithm>
#include <cmath>
#include <random>

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

std::vector<std::string> index_by_controller_uid(const json::Value& obj) {
  const auto* refs = json::find(obj, "/metadata/ownerReferences");
  if (!refs || !refs->IsArray()) return {};
  for (const auto& ref : refs->GetArray()) {
    if (json::get_bool(ref, "/controller").value_or(false)) {
      if (auto uid = json::get_string(ref, "/uid")) return {std::string(*uid)};
    }
  }
  return {};
}

// ---- projections -----------------------------------------------------------------------------

namespace {

void copy_member(const json::Value& from, json::Value& to, const char* name, json::Allocator& a) {
  auto it = from.FindMember(name);
  if (it != from.MemberEnd() && !it->value.IsNull()) to.AddMember(json::Value(name, a), json::Value(it->value, a), a);
}

void copy_members(const json::Value& from, json::Value& to, std::initializer_list<const char*> names,
                  json::Allocator& a) {
  if (!from.IsObject()) return;
  for (const char* n : names) copy_member(from, to, n, a);
}

json::Value project_metadata(const json::Value& full, json::Allocator& a) {
  json::Value meta(rapidjson::kObjectType);
  const auto* m = json::find(full, "/metadata");
  if (!m || !m->IsObject()) return meta;
  copy_members(*m, meta,
               {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
                "labels"},
               a);
  if (const auto* refs = json::find(*m, "/ownerReferences"); refs && refs->IsArray()) {
    json::Value out(rapidjson::kArrayType);
    for (const auto& ref : refs->GetArray()) {
      json::Value r(rapidjson::kObjectType);
      copy_members(ref, r, {"apiVersion", "kind", "name", "uid", "controller"}, a);
      out.PushBack(r, a);
    }
    meta.AddMember("ownerReferences", out, a);
  }
  return meta;
}

json::Value project_container_state(const json::Value& state, json::Allocator& a) {
  json::Value out(rapidjson::kObjectType);
  if (!state.IsObject()) return out;
  // A state written through a merge patch may carry the previous state as null (the way a
  // patch clears it); only an object member is the container's state.
  auto present = [&](std::string_view key) -> const json::Value* {
    const json::Value* v = json::find(state, "/" + std::string(key));
    return v != nullptr && v->IsObject() ? v : nullptr;
  };
  if (present("running")) {
    out.AddMember("running", json::Value(rapidjson::kObjectType), a);
  } else if (const auto* w = present("waiting")) {
    json::Value v(rapidjson::kObjectType);
    copy_members(*w, v, {"reason", "message"}, a);
    out.AddMember("waiting", v, a);
  } else if (const auto* t = present("terminated")) {
    json::Value v(rapidjson::kObjectType);
    copy_members(*t, v, {"exitCode", "reason", "message"}, a);
    out.AddMember("terminated", v, a);
  }
  return out;
}

// A projection is built member by member, and RapidJSON gives every object built that way room
// for 16 members (512 bytes) in the pool, which never frees: a projected pod cost more than the
// whole parsed pod. A copy allocates each object at its exact size.
json::Document compact(const json::Document& built) { return json::Document::copy_of(built.root()); }

void start_object(json::Document& d, const json::Value& full) {
  auto& a = d.alloc();
  d.root().SetObject();
  copy_members(full, d.root(), {"apiVersion", "kind"}, a);
  d.root().AddMember("metadata", project_metadata(full, a), a);
}

}  // namespace

json::Document project_pod(const json::Value& full) {
  json::Document d;
  start_object(d, full);
  auto& a = d.alloc();
  if (const auto* spec = json::find(full, "/spec"); spec && spec->IsObject()) {
    json::Value s(rapidjson::kObjectType);
    copy_members(*spec, s, {"nodeName"}, a);
    d.root().AddMember("spec", s, a);
  }
  const auto* status = json::find(full, "/status");
  if (!status || !status->IsObject()) return compact(d);
  json::Value st(rapidjson::kObjectType);
  copy_members(*status, st, {"phase", "reason", "podIP"}, a);
  const auto* cs = json::find(*status, "/containerStatuses");
  const bool containers_started = cs && cs->IsArray() && !cs->Empty();
  if (const auto* conds = json::find(*status, "/conditions"); conds && conds->IsArray()) {
    json::Value out(rapidjson::kArrayType);
    for (const auto& c : conds->GetArray()) {
      json::Value v(rapidjson::kObjectType);
      // Before any container status, the latest condition is what an abnormal pod's event says.
      if (containers_started) copy_members(c, v, {"type", "status"}, a);
      else copy_members(c, v, {"type", "status", "reason", "message", "lastTransitionTime"}, a);
      out.PushBack(v, a);
    }
    st.AddMember("conditions", out, a);
  }
  auto statuses = [&](const json::Value& list) {
    json::Value out(rapidjson::kArrayType);
    for (const auto& c : list.GetArray()) {
      json::Value v(rapidjson::kObjectType);
      copy_members(c, v, {"name", "ready", "restartCount"}, a);
      if (const auto* s = json::find(c, "/state")) v.AddMember("state", project_container_state(*s, a), a);
      if (const auto* s = json::find(c, "/lastState"); s && s->IsObject() && s->MemberCount() > 0) {
        v.AddMember("lastState", project_container_state(*s, a), a);
      }
      out.PushBack(v, a);
    }
    return out;
  };
  if (containers_started) {
    st.AddMember("containerStatuses", statuses(*cs), a);
  } else if (const auto* init = json::find(*status, "/initContainerStatuses"); init && init->IsArray()) {
    st.AddMember("initContainerStatuses", statuses(*init), a);
  }
  d.root().AddMember("status", st, a);
  return compact(d);
}

json::Document project_service(const json::Value& full) {
  json::Document d;
  start_object(d, full);
  auto& a = d.alloc();
  if (const auto* spec = json::find(full, "/spec"); spec && spec->IsObject()) {
    json::Value s(rapidjson::kObjectType);
    // selector and publishNotReadyAddresses: what controllers keep in sync on their Services.
    copy_members(*spec, s, {"clusterIP", "selector", "publishNotReadyAddresses"}, a);
    if (const auto* ports = json::find(*spec, "/ports"); ports && ports->IsArray()) {
      json::Value out(rapidjson::kArrayType);
      for (const auto& p : ports->GetArray()) {
        json::Value v(rapidjson::kObjectType);
        copy_members(p, v, {"name", "port"}, a);
        out.PushBack(v, a);
      }
      s.AddMember("ports", out, a);
    }
    d.root().AddMember("spec", s, a);
  }
  return compact(d);
}

// ---- Indexer ---------------------------------------------------------------------------------

Indexer::Indexer(std::map<std::string, IndexFunc> indexers) : indexers_(std::move(indexers)) {}

ObjectPtr Indexer::get(const std::string& key) const {
  std::shared_lock g(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> Indexer::list() const {
  std::shared_lock g(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(items_.size());
  for (const auto& [k, v] : items_) out.push_back(v);
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
  return {it->second.begin(), it->second.end()};
}

std::vector<ObjectPtr> Indexer::by_index(const std::string& index, const std::string& value) const {
  std::shared_lock g(mu_);
  std::vector<ObjectPtr> out;
  auto idx = indices_.find(index);
  if (idx == indices_.end()) return out;
  auto it = idx->second.find(value);
  if (it == idx->second.end()) return out;
  for (const auto& key : it->second) {
    if (auto obj = items_.find(key); obj != items_.end()) out.push_back(obj->second);
  }
  return out;
}

size_t Indexer::size() const {
  std::shared_lock g(mu_);
  return items_.size();
}

void Indexer::unindex_locked(const std::string& key, const json::Value& obj) {
  for (const auto& [name, fn] : indexers_) {
    auto& idx = indices_[name];
    for (const auto& v : fn(obj)) {
      auto it = idx.find(v);
      if (it == idx.end()) continue;
      it->second.erase(key);
      if (it->second.empty()) idx.erase(it);
    }
  }
}

void Indexer::index_locked(const std::string& key, const json::Value& obj) {
  for (const auto& [name, fn] : indexers_) {
    auto& idx = indices_[name];
    for (auto& v : fn(obj)) idx[std::move(v)].insert(key);
  }
}

ObjectPtr Indexer::upsert(const std::string& key, ObjectPtr obj) {
  std::unique_lock g(mu_);
  auto& slot = items_[key];
  ObjectPtr old = std::move(slot);
  if (old) unindex_locked(key, old->root());
  index_locked(key, obj->root());
  slot = std::move(obj);
  return old;
}

ObjectPtr Indexer::erase(const std::string& key) {
  std::unique_lock g(mu_);
  auto it = items_.find(key);
  if (it == items_.end()) return nullptr;
  ObjectPtr old = std::move(it->second);
  items_.erase(it);
  unindex_locked(key, old->root());
  return old;
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
    : client_(client), clock_(clock), opts_(std::move(options)), cache_(opts_.indexers) {}

Informer::~Informer() { stop(); }

void Informer::add_handlers(EventHandlers handlers) {
  std::lock_guard g(dispatch_mu_);
  if (handlers.on_add) {
    for (const auto& obj : cache_.list()) handlers.on_add(obj->root());
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

ObjectPtr Informer::make_cached(const json::Value& full) const {
  // A projection is built member by member, and RapidJSON reserves room for 16 members in every
  // object it grows; the cached copy is sized exactly (a few KiB less per pod).
  return std::make_shared<const json::Document>(
      json::Document::copy_of(opts_.projection ? opts_.projection(full).root() : full));
}

void Informer::apply_upsert(const std::string& key, ObjectPtr obj) {
  std::lock_guard g(dispatch_mu_);
  ObjectPtr old = cache_.upsert(key, obj);
  for (const auto& h : handlers_) {
    if (old) {
      if (h.on_update) h.on_update(old->root(), obj->root());
    } else if (h.on_add) {
      h.on_add(obj->root());
    }
  }
}

void Informer::apply_delete(const std::string& key, ObjectPtr last, bool final_state_unknown) {
  std::lock_guard g(dispatch_mu_);
  ObjectPtr old = cache_.erase(key);
  if (!old) return;  // never seen: nothing to tell anyone
  const json::Value& shown = last ? last->root() : old->root();
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
  std::vector<std::pair<std::string, ObjectPtr>> fresh;
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
      fresh.reserve(fresh.size() + items->Size());
      for (const auto& item : items->GetArray()) fresh.emplace_back(object_key(item), make_cached(item));
    }
    auto cont = json::get_string(page->root(), "/metadata/continue");
    if (!cont || cont->empty()) break;
    o.continue_token = std::string(*cont);
    if (stopping()) return false;
  }

  {
    std::lock_guard g(dispatch_mu_);
    std::unordered_map<std::string, bool> seen;
    seen.reserve(fresh.size());
    for (auto& [key, obj] : fresh) {
      seen.emplace(key, true);
      ObjectPtr old = cache_.get(key);
      if (old && rv_of(old->root()) == rv_of(obj->root())) continue;
      cache_.upsert(key, obj);
      for (const auto& h : handlers_) {
        if (old) {
          if (h.on_update) h.on_update(old->root(), obj->root());
        } else if (h.on_add) {
          h.on_add(obj->root());
        }
      }
    }
    // Objects of this scope the list no longer has were deleted while we were not watching.
    std::string prefix = scope.ns.empty() ? "" : scope.ns + "/";
    uint64_t synthesized = 0;
    for (const auto& key : cache_.keys()) {
      if (!prefix.empty() && key.compare(0, prefix.size(), prefix) != 0) continue;
      if (seen.count(key)) continue;
      ObjectPtr old = cache_.erase(key);
      if (!old) continue;
      ++synthesized;
      for (const auto& h : handlers_) {
        if (h.on_delete) h.on_delete(old->root(), true);
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
    auto next = stream->next(opts_.watch_poll);
    if (!next) {
      {
        std::lock_guard g(mu_);
        ++stats_.errors;
      }
      if (is_gone(next.error())) return true;
      backoff(scope);
      return false;
    }
    if (!next->has_value()) {
      if (stream->timed_out()) continue;
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
        apply_upsert(key, make_cached(ev.object.root()));
        std::lock_guard g(mu_);
        ++stats_.events;
        scope.rv = rv;
        scope.failures = 0;
        break;
      }
      case WatchEvent::Type::Deleted: {
        auto key = object_key(ev.object.root());
        auto rv = rv_of(ev.object.root());
        apply_delete(key, make_cached(ev.object.root()), false);
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
