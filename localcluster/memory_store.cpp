// The in-memory store: one mutex over every table, one global resourceVersion counter, a
// per-resource window of events for watches, and an optional write-ahead log (persistence.h).
//
// Each stored object keeps its parsed document (for selectors and read-modify-write) and its
// compact JSON (so a list is a concatenation and a watch event is serialized once).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include <spdlog/spdlog.h>

#include "core/api/labels.h"
#include "localcluster/builtin_resources.h"
#include "localcluster/crd.h"
#include "localcluster/field_selector.h"
#include "localcluster/memory_store.h"
#include "localcluster/persistence.h"

namespace unitrain::localcluster {
namespace {

using json::Document;
using json::Value;
using DocPtr = std::shared_ptr<const Document>;
using TextPtr = std::shared_ptr<const std::string>;

constexpr std::string_view kCrdGroup = "apiextensions.k8s.io";
constexpr std::string_view kCrdResource = "customresourcedefinitions";

// ---- small helpers -----------------------------------------------------------------------------

std::string format_time(std::chrono::system_clock::time_point tp) {
  std::time_t t = std::chrono::system_clock::to_time_t(tp);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string now_text(int64_t plus_seconds = 0) {
  return format_time(std::chrono::system_clock::now() + std::chrono::seconds(plus_seconds));
}

const Value& null_value() {
  static const Value v;
  return v;
}

const Value& member_or_null(const Value& v, const char* name) {
  if (!v.IsObject()) return null_value();
  auto it = v.FindMember(name);
  return it == v.MemberEnd() ? null_value() : it->value;
}

// Replaces (or with a null `v`, removes) a top-level member.
void set_member(Document& d, const char* name, const Value& v) {
  auto& a = d.alloc();
  Value& root = d.root();
  auto it = root.FindMember(name);
  if (v.IsNull()) {
    if (it != root.MemberEnd()) root.EraseMember(it);
    return;
  }
  if (it != root.MemberEnd()) {
    it->value.CopyFrom(v, a);
  } else {
    root.AddMember(Value(name, a), Value(v, a), a);
  }
}

Value& metadata_of(Document& d) {
  Value& root = d.root();
  auto& a = d.alloc();
  auto it = root.FindMember("metadata");
  if (it == root.MemberEnd() || !it->value.IsObject()) {
    if (it != root.MemberEnd()) root.EraseMember(it);
    root.AddMember("metadata", Value(rapidjson::kObjectType), a);
    it = root.FindMember("metadata");
  }
  return it->value;
}

void meta_set_string(Document& d, const char* name, std::string_view value) {
  Value& m = metadata_of(d);
  auto& a = d.alloc();
  auto it = m.FindMember(name);
  if (it != m.MemberEnd()) {
    it->value.SetString(value.data(), static_cast<rapidjson::SizeType>(value.size()), a);
  } else {
    m.AddMember(Value(name, a), json::str(value, a), a);
  }
}

void meta_set(Document& d, const char* name, const Value& value) {
  Value& m = metadata_of(d);
  auto& a = d.alloc();
  auto it = m.FindMember(name);
  if (value.IsNull()) {
    if (it != m.MemberEnd()) m.EraseMember(it);
  } else if (it != m.MemberEnd()) {
    it->value.CopyFrom(value, a);
  } else {
    m.AddMember(Value(name, a), Value(value, a), a);
  }
}

void meta_remove(Document& d, const char* name) { meta_set(d, name, null_value()); }

std::vector<std::string> finalizers_of(const Value& obj) {
  std::vector<std::string> out;
  const Value* f = json::find(obj, "/metadata/finalizers");
  if (f == nullptr || !f->IsArray()) return out;
  for (const Value& s : f->GetArray()) {
    if (s.IsString()) out.emplace_back(s.GetString(), s.GetStringLength());
  }
  return out;
}

void set_finalizers(Document& d, const std::vector<std::string>& fins) {
  if (fins.empty()) {
    meta_remove(d, "finalizers");
    return;
  }
  Value arr(rapidjson::kArrayType);
  for (const auto& f : fins) arr.PushBack(json::str(f, d.alloc()), d.alloc());
  meta_set(d, "finalizers", arr);
}

std::string key_for(const ResourceInfo& r, std::string_view ns, std::string_view name) {
  return r.namespaced ? std::string(ns) + "/" + std::string(name) : std::string(name);
}

std::optional<uint64_t> parse_rv(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// base64url without padding, as kube-apiserver encodes continue tokens.
const char* kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string b64_encode(std::string_view in, const char* alphabet = kB64, bool pad = false) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t n = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) | uint8_t(in[i + 2]);
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    out += alphabet[(n >> 6) & 63];
    out += alphabet[n & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t n = uint32_t(uint8_t(in[i])) << 16;
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    if (pad) out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t n = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8);
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    out += alphabet[(n >> 6) & 63];
    if (pad) out += '=';
  }
  return out;
}

std::optional<std::string> b64url_decode(std::string_view in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const char* p = std::strchr(kB64, c);
    if (c == '=' ) break;
    if (c == 0 || p == nullptr) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(p - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

// ---- built-in defaulting (what kube-apiserver's defaulters and admission set) ------------------

void default_if_missing(Value& obj, const char* name, Value v, json::Allocator& a) {
  if (!obj.IsObject() || obj.HasMember(name)) return;
  obj.AddMember(Value(name, a), v, a);
}

void default_containers(Value& spec, const char* field, json::Allocator& a) {
  auto it = spec.FindMember(field);
  if (it == spec.MemberEnd() || !it->value.IsArray()) return;
  for (Value& c : it->value.GetArray()) {
    if (!c.IsObject()) continue;
    default_if_missing(c, "terminationMessagePath", Value("/dev/termination-log"), a);
    default_if_missing(c, "terminationMessagePolicy", Value("File"), a);
    if (!c.HasMember("imagePullPolicy")) {
      std::string image = json::string_at(c, "/image");
      std::string_view last = image;
      if (auto slash = last.rfind('/'); slash != std::string_view::npos) last = last.substr(slash + 1);
      bool latest = last.find('@') == std::string_view::npos &&
                    (last.find(':') == std::string_view::npos || last.substr(last.find(':')) == ":latest");
      c.AddMember("imagePullPolicy", Value(rapidjson::StringRef(latest ? "Always" : "IfNotPresent")), a);
    }
    default_if_missing(c, "resources", Value(rapidjson::kObjectType), a);
    if (auto p = c.FindMember("ports"); p != c.MemberEnd() && p->value.IsArray()) {
      for (Value& port : p->value.GetArray()) default_if_missing(port, "protocol", Value("TCP"), a);
    }
  }
}

void default_pod_spec(Value& spec, json::Allocator& a) {
  if (!spec.IsObject()) return;
  default_if_missing(spec, "restartPolicy", Value("Always"), a);
  default_if_missing(spec, "terminationGracePeriodSeconds", Value(30), a);
  default_if_missing(spec, "dnsPolicy", Value("ClusterFirst"), a);
  default_if_missing(spec, "securityContext", Value(rapidjson::kObjectType), a);
  default_if_missing(spec, "schedulerName", Value("default-scheduler"), a);
  default_if_missing(spec, "enableServiceLinks", Value(true), a);
  default_containers(spec, "containers", a);
  default_containers(spec, "initContainers", a);
}

std::string qos_class(const Value& spec) {
  bool any = false, guaranteed = true;
  const Value* cs = json::find(spec, "/containers");
  if (cs == nullptr || !cs->IsArray()) return "BestEffort";
  for (const Value& c : cs->GetArray()) {
    const Value* req = json::find(c, "/resources/requests");
    const Value* lim = json::find(c, "/resources/limits");
    bool has_req = req != nullptr && req->IsObject() && req->MemberCount() > 0;
    bool has_lim = lim != nullptr && lim->IsObject() && lim->MemberCount() > 0;
    any = any || has_req || has_lim;
    for (const char* res : {"cpu", "memory"}) {
      const Value* l = has_lim ? json::find(*lim, std::string("/") + res) : nullptr;
      const Value* r = has_req ? json::find(*req, std::string("/") + res) : nullptr;
      if (l == nullptr || (r != nullptr && !json::equal(*r, *l))) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

// Applied on every write; idempotent.
void default_builtin(const ResourceInfo& r, Document& d, std::mt19937_64& rng) {
  auto& a = d.alloc();
  Value& root = d.root();
  if (r.group.empty() && r.resource == "pods") {
    if (Value* spec = json::find(root, "/spec")) default_pod_spec(*spec, a);
  } else if (r.group.empty() && r.resource == "services") {
    Value* spec = json::find(root, "/spec");
    if (spec == nullptr || !spec->IsObject()) {
      (void)json::set(d, "/spec", Value(rapidjson::kObjectType));
      spec = json::find(d.root(), "/spec");
    }
    default_if_missing(*spec, "type", Value("ClusterIP"), a);
    default_if_missing(*spec, "sessionAffinity", Value("None"), a);
    if (!spec->HasMember("clusterIP")) {
      std::uniform_int_distribution<int> dist(1, 254);
      std::string ip = "10.96." + std::to_string(dist(rng)) + "." + std::to_string(dist(rng));
      spec->AddMember("clusterIP", json::str(ip, a), a);
    }
    if (!spec->HasMember("clusterIPs")) {
      Value ips(rapidjson::kArrayType);
      ips.PushBack(Value((*spec)["clusterIP"], a), a);
      spec->AddMember("clusterIPs", ips, a);
    }
    default_if_missing(*spec, "internalTrafficPolicy", Value("Cluster"), a);
    if (!spec->HasMember("ipFamilies")) {
      Value fam(rapidjson::kArrayType);
      fam.PushBack("IPv4", a);
      spec->AddMember("ipFamilies", fam, a);
    }
    default_if_missing(*spec, "ipFamilyPolicy", Value("SingleStack"), a);
    if (auto p = spec->FindMember("ports"); p != spec->MemberEnd() && p->value.IsArray()) {
      for (Value& port : p->value.GetArray()) {
        if (!port.IsObject()) continue;
        default_if_missing(port, "protocol", Value("TCP"), a);
        if (!port.HasMember("targetPort") && port.HasMember("port")) {
          port.AddMember("targetPort", Value(port["port"], a), a);
        }
      }
    }
  } else if (r.group.empty() && r.resource == "secrets") {
    if (!root.HasMember("type")) root.AddMember("type", "Opaque", a);
    // stringData is write-only: kube-apiserver folds it into data.
    if (auto sd = root.FindMember("stringData"); sd != root.MemberEnd()) {
      if (sd->value.IsObject()) {
        if (!root.HasMember("data") || !root["data"].IsObject()) {
          root.RemoveMember("data");
          root.AddMember("data", Value(rapidjson::kObjectType), a);
        }
        static const char* kStd = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        Value& data = root["data"];
        for (auto it = root["stringData"].MemberBegin(); it != root["stringData"].MemberEnd(); ++it) {
          if (!it->value.IsString()) continue;
          std::string enc = b64_encode(std::string_view(it->value.GetString(), it->value.GetStringLength()), kStd, true);
          data.RemoveMember(it->name);
          data.AddMember(Value(it->name, a), json::str(enc, a), a);
        }
      }
      root.RemoveMember("stringData");
    }
  } else if (r.group.empty() && r.resource == "namespaces") {
    std::string name = json::string_at(root, "/metadata/name");
    if (!name.empty()) (void)json::set_string(d, "/metadata/labels/" + json::escape_pointer_token("kubernetes.io/metadata.name"), name);
    if (json::find(d.root(), "/spec/finalizers") == nullptr) {
      Value f(rapidjson::kArrayType);
      f.PushBack("kubernetes", a);
      (void)json::set(d, "/spec/finalizers", std::move(f));
    }
  } else if (r.group == "batch" && r.resource == "jobs") {
    Value* spec = json::find(root, "/spec");
    if (spec == nullptr || !spec->IsObject()) return;
    if (!spec->HasMember("completions") && !spec->HasMember("parallelism")) spec->AddMember("completions", 1, a);
    default_if_missing(*spec, "parallelism", Value(1), a);
    default_if_missing(*spec, "backoffLimit", Value(6), a);
    default_if_missing(*spec, "completionMode", Value("NonIndexed"), a);
    default_if_missing(*spec, "suspend", Value(false), a);
    default_if_missing(*spec, "manualSelector", Value(false), a);
    default_if_missing(*spec, "podReplacementPolicy", Value("TerminatingOrFailed"), a);
    if (Value* ps = json::find(d.root(), "/spec/template/spec")) default_pod_spec(*ps, a);
  }
}

// kube-apiserver's rule for a batch/v1 Job update: the pod template is immutable, except that a
// Job that is suspended and has never started (no status.startTime) may change its scheduling
// directives: template labels and annotations, nodeSelector, tolerations, schedulingGates and
// affinity.nodeAffinity (what Kueue and mpi-operator rewrite before they unsuspend a Job).
std::vector<FieldError> job_template_update_errors(const Value& old_job, const Value& new_job) {
  const Value* before = json::find(old_job, "/spec/template");
  const Value* after = json::find(new_job, "/spec/template");
  if (before == nullptr || after == nullptr) return {};
  Document comparable = Document::copy_of(*before);
  const bool suspended = json::get_bool(old_job, "/spec/suspend").value_or(false);
  const bool started = json::find(old_job, "/status/startTime") != nullptr;
  if (suspended && !started) {
    auto take = [&](std::string_view pointer) {
      if (const Value* v = json::find(*after, pointer)) (void)json::set(comparable, pointer, Value(*v, comparable.alloc()));
      else json::remove(comparable, pointer);
    };
    for (std::string_view p : {"/metadata/labels", "/metadata/annotations", "/spec/nodeSelector", "/spec/tolerations",
                               "/spec/schedulingGates", "/spec/affinity/nodeAffinity"})
      take(p);
    // An affinity left with nothing but the node affinity may go away entirely.
    if (const Value* aff = json::find(comparable.root(), "/spec/affinity"); aff != nullptr && aff->IsObject() &&
                                                                          aff->ObjectEmpty() &&
                                                                          json::find(*after, "/spec/affinity") == nullptr)
      json::remove(comparable, "/spec/affinity");
  }
  if (json::equal(comparable.root(), *after)) return {};
  return {invalid_value(std::string("spec.template"), *after, "field is immutable")};
}

// Job selector generation needs the uid, so it runs on create only.
void default_job_selector(Document& d) {
  if (json::get_bool(d.root(), "/spec/manualSelector").value_or(false)) return;
  if (json::find(d.root(), "/spec/selector") != nullptr) return;
  std::string uid = json::string_at(d.root(), "/metadata/uid");
  std::string name = json::string_at(d.root(), "/metadata/name");
  auto esc = [](std::string_view k) { return json::escape_pointer_token(k); };
  (void)json::set_string(d, "/spec/selector/matchLabels/" + esc("batch.kubernetes.io/controller-uid"), uid);
  for (auto [k, v] : {std::pair<std::string_view, std::string>{"batch.kubernetes.io/controller-uid", uid},
                      {"batch.kubernetes.io/job-name", name},
                      {"controller-uid", uid},
                      {"job-name", name}}) {
    (void)json::set_string(d, "/spec/template/metadata/labels/" + esc(k), v);
  }
}

// ---- tables, watchers ------------------------------------------------------------------------

struct Stored {
  DocPtr doc;
  TextPtr text;
};

struct Event {
  uint64_t rv = 0;
  const char* type = "";
  std::string ns;
  DocPtr obj;   // new state (final state for DELETED)
  DocPtr prev;  // state before, for selector transitions; null for ADDED
  TextPtr text;
};

struct WatchState {
  // Fixed at creation.
  std::string ns;
  api::LabelSelector labels;
  FieldSelector fields;
  ResourceInfo info;
  std::optional<std::string> rewrite_api_version;  // CR served at a version other than storage
  bool bookmarks = false;
  uint64_t min_rv = 0;
  size_t limit = 0;
  // Guarded by mu (taken after the store mutex, never before it).
  std::mutex mu;
  std::vector<WatchEvent> queue;
  bool closed = false;
  // Held while calling notify, so once stop() returns no call is running or will start. Recursive
  // because a consumer may stop the watch from inside its notify.
  std::recursive_mutex notify_mu;
  std::function<void()> notify;

  void call_notify() {
    std::lock_guard l(notify_mu);
    if (notify) notify();
  }

  bool matches(const Document& d) const {
    const Value& root = d.root();
    if (!ns.empty() && json::string_at(root, "/metadata/namespace") != ns) return false;
    if (!labels.empty() && !labels.matches(member_or_null(member_or_null(root, "metadata"), "labels"))) return false;
    return fields.empty() || fields.matches(root);
  }
};

struct Table {
  std::map<std::string, Stored, std::less<>> objects;
  std::deque<Event> window;
  uint64_t evicted_rv = 0;  // a watch can resume from any resourceVersion >= this
  uint64_t last_change_rv = 0;
  std::vector<std::shared_ptr<WatchState>> watchers;
};

struct Served {
  ResourceInfo info;
  std::string storage_key;
  std::shared_ptr<const CrdDefinition> crd;  // null for built-ins
  const CrdVersion* version = nullptr;       // into *crd
};

std::string served_key(std::string_view g, std::string_view v, std::string_view r) {
  return std::string(g) + "/" + std::string(v) + "/" + std::string(r);
}

// Watchers to notify once the store mutex is released.
struct Pending {
  std::vector<std::shared_ptr<WatchState>> states;
  void fire() {
    for (auto& st : states) st->call_notify();
    states.clear();
  }
};

struct Core {
  mutable std::mutex mu;
  StoreOptions options;
  uint64_t rv = 0;
  std::map<std::string, Table> tables;    // storage key -> objects
  std::map<std::string, Served> served;   // group/version/resource -> how it is served
  std::map<std::string, std::shared_ptr<const CrdDefinition>> crds;  // CRD name -> definition
  std::mt19937_64 rng{std::random_device{}()};
  std::unique_ptr<PersistentLog> log;
};

std::string new_uid(std::mt19937_64& rng) {
  uint64_t hi = rng(), lo = rng();
  hi = (hi & 0xFFFFFFFFFFFF0FFFull) | 0x0000000000004000ull;  // version 4
  lo = (lo & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;  // RFC 4122 variant
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFFF),
                static_cast<unsigned>(lo >> 48), static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFull));
  return buf;
}

std::string random_suffix(std::mt19937_64& rng) {
  static constexpr std::string_view alphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::uniform_int_distribution<size_t> dist(0, alphabet.size() - 1);
  std::string s;
  for (int i = 0; i < 5; ++i) s += alphabet[dist(rng)];
  return s;
}

TextPtr rewrite_api_version(const Document& d, const std::string& api_version) {
  Document copy = d;
  set_member(copy, "apiVersion", Value(api_version.c_str(), copy.alloc()));
  return std::make_shared<const std::string>(copy.dump());
}

std::string bookmark_text(const ResourceInfo& r, uint64_t rv, bool initial_events_end) {
  std::string s = "{\"kind\":\"" + r.kind + "\",\"apiVersion\":\"" + r.api_version() +
                  "\",\"metadata\":{\"resourceVersion\":\"" + std::to_string(rv) + "\"";
  if (initial_events_end) s += ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}";
  return s + "}}";
}

// Queues one event for a watcher, translating selector transitions the way the watch cache does.
// Returns true when the watcher must be notified.
bool offer(WatchState& st, const Event& e, bool enforce_limit) {
  if (e.rv <= st.min_rv) return false;
  bool cur = st.matches(*e.obj);
  bool prev = e.prev != nullptr && st.matches(*e.prev);
  const char* type = e.type;
  if (std::string_view(type) == "MODIFIED") {
    if (cur && !prev) type = "ADDED";
    else if (!cur && prev) type = "DELETED";
    else if (!cur) return false;
  } else if (!cur) {
    return false;
  }
  TextPtr text = st.rewrite_api_version ? rewrite_api_version(*e.obj, *st.rewrite_api_version) : e.text;
  std::lock_guard l(st.mu);
  if (st.closed) return false;
  if (enforce_limit && st.queue.size() >= st.limit) {
    st.closed = true;  // too slow: end the watch; the client resumes from its last resourceVersion
    return true;
  }
  bool was_empty = st.queue.empty();
  st.queue.push_back({type, std::move(text)});
  return was_empty;
}

class WatcherImpl final : public Watcher {
 public:
  WatcherImpl(std::shared_ptr<WatchState> st, std::weak_ptr<Core> core, std::string storage_key)
      : st_(std::move(st)), core_(std::move(core)), storage_key_(std::move(storage_key)) {}
  ~WatcherImpl() override { stop(); }

  std::vector<WatchEvent> drain(bool& closed) override {
    std::lock_guard l(st_->mu);
    std::vector<WatchEvent> out;
    out.swap(st_->queue);
    closed = st_->closed;
    return out;
  }

  void set_notify(std::function<void()> notify) override {
    {
      std::lock_guard nl(st_->notify_mu);
      st_->notify = std::move(notify);
    }
    bool pending;
    {
      std::lock_guard l(st_->mu);
      pending = !st_->queue.empty() || st_->closed;
    }
    // Events queued before the consumer registered (initial ADDED, a 410) must not be missed.
    if (pending) st_->call_notify();
  }

  void stop() override {
    if (auto core = core_.lock()) {
      std::lock_guard l(core->mu);
      auto t = core->tables.find(storage_key_);
      if (t != core->tables.end()) std::erase(t->second.watchers, st_);
    }
    {
      std::lock_guard l(st_->mu);
      st_->closed = true;
    }
    std::lock_guard nl(st_->notify_mu);
    st_->notify = nullptr;
  }

  void request_bookmark() override {
    if (!st_->bookmarks) return;
    auto core = core_.lock();
    if (!core) return;
    {
      std::lock_guard cl(core->mu);
      std::lock_guard l(st_->mu);
      if (st_->closed) return;
      st_->queue.push_back({"BOOKMARK", std::make_shared<const std::string>(bookmark_text(st_->info, core->rv, false))});
    }
    st_->call_notify();
  }

 private:
  std::shared_ptr<WatchState> st_;
  std::weak_ptr<Core> core_;
  std::string storage_key_;
};

// ---- the store ---------------------------------------------------------------------------------

class MemoryStore final : public Store {
 public:
  explicit MemoryStore(const StoreOptions& options) : core_(std::make_shared<Core>()) { core_->options = options; }

  Status init() {
    Core& c = *core_;
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
        t.objects[key] = Stored{std::make_shared<const Document>(std::move(*doc)),
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
      t.evicted_rv = c.rv;
      t.last_change_rv = c.rv;
    }
    if (c.tables["/namespaces"].objects.empty()) {
      const ResourceInfo& ns_info = *find_builtin("", "namespaces");
      for (const char* name : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
        Document ns = Document::object();
        (void)json::set_string(ns, "/metadata/name", name);
        Pending p;
        auto r = create_locked(ns_info, "", std::move(ns), false, p);
        if (!r) return fail("creating namespace " + std::string(name) + ": " + r.error().message);
      }
    }
    return {};
  }

  std::vector<ResourceInfo> resources() const override {
    std::lock_guard l(core_->mu);
    std::vector<ResourceInfo> out = builtin_resources();
    for (const auto& [name, def] : core_->crds) {
      for (ResourceInfo& r : def->resources()) out.push_back(std::move(r));
    }
    return out;
  }

  std::optional<ResourceInfo> find_resource(std::string_view group, std::string_view version,
                                            std::string_view resource) const override {
    std::lock_guard l(core_->mu);
    auto it = core_->served.find(served_key(group, version, resource));
    if (it == core_->served.end()) return std::nullopt;
    return it->second.info;
  }

  json::Document printer_columns(const ResourceInfo& r) const override {
    std::lock_guard l(core_->mu);
    auto it = core_->served.find(served_key(r.group, r.version, r.resource));
    if (it == core_->served.end() || it->second.version == nullptr) return Document();
    return it->second.version->printer_columns;
  }

  std::string resource_version() const override {
    std::lock_guard l(core_->mu);
    return std::to_string(core_->rv);
  }

  StoreResult<Document> create(const ResourceInfo& r, std::string_view ns, Document obj, bool dry_run) override {
    Pending p;
    StoreResult<Document> out = [&]() -> StoreResult<Document> {
      std::lock_guard l(core_->mu);
      return create_locked(r, ns, std::move(obj), dry_run, p);
    }();
    p.fire();
    return out;
  }

  StoreResult<Document> get(const ResourceInfo& r, std::string_view ns, std::string_view name,
                            std::string_view subresource) const override {
    std::lock_guard l(core_->mu);
    const Served* s = lookup(r);
    if (s == nullptr) return fail(errors::resource_not_found());
    const Table& t = core_->tables.at(s->storage_key);
    auto it = t.objects.find(key_for(s->info, ns, name));
    if (it == t.objects.end()) return fail(errors::not_found(s->info, name));
    Document out = present(*s, *it->second.doc);
    if (subresource == "scale") return scale_of(*s, out);
    return out;
  }

  StoreResult<std::string> list(const ResourceInfo& r, std::string_view ns, const ListRequest& req) const override {
    std::lock_guard l(core_->mu);
    return list_locked(r, ns, req, nullptr);
  }

  StoreResult<Document> update(const ResourceInfo& r, std::string_view ns, std::string_view name, Document obj,
                               std::string_view subresource, bool dry_run) override {
    Pending p;
    StoreResult<Document> out = [&]() -> StoreResult<Document> {
      std::lock_guard l(core_->mu);
      const Served* s = lookup(r);
      if (s == nullptr) return fail(errors::resource_not_found());
      if (!obj.root().IsObject()) return fail(errors::bad_request("the body of the request must be a JSON object"));
      if (subresource == "scale") return update_scale(*s, ns, name, obj, dry_run, p);
      std::string body_name = json::string_at(obj.root(), "/metadata/name");
      if (!body_name.empty() && body_name != name) {
        return fail(errors::bad_request("the name of the object (" + body_name +
                                        ") does not match the name on the URL (" + std::string(name) + ")"));
      }
      auto st = check_namespace(*s, ns, obj);
      if (!st) return fail(std::move(st).error());
      Table& t = core_->tables.at(s->storage_key);
      auto it = t.objects.find(key_for(s->info, ns, name));
      if (it == t.objects.end()) return fail(errors::not_found(s->info, name));
      if (s->crd != nullptr && json::string_at(obj.root(), "/metadata/resourceVersion").empty()) {
        return fail(errors::invalid(s->info, name,
                                    {invalid_value_text("metadata.resourceVersion", "0x0",
                                                        "must be specified for an update")}));
      }
      return update_locked(*s, t, it->first, it->second.doc, std::move(obj), subresource, dry_run, p);
    }();
    p.fire();
    return out;
  }

  StoreResult<Document> patch(const ResourceInfo& r, std::string_view ns, std::string_view name, PatchKind kind,
                              std::string_view body, std::string_view subresource, std::string_view field_manager,
                              bool dry_run) override {
    (void)field_manager;
    Pending p;
    StoreResult<Document> out = [&]() -> StoreResult<Document> {
      std::lock_guard l(core_->mu);
      return patch_locked(r, ns, name, kind, body, subresource, dry_run, p);
    }();
    p.fire();
    return out;
  }

  StoreResult<Document> remove(const ResourceInfo& r, std::string_view ns, std::string_view name,
                               const DeleteRequest& req) override {
    Pending p;
    StoreResult<Document> out = [&]() -> StoreResult<Document> {
      std::lock_guard l(core_->mu);
      const Served* s = lookup(r);
      if (s == nullptr) return fail(errors::resource_not_found());
      return remove_locked(*s, ns, name, req, p);
    }();
    p.fire();
    return out;
  }

  StoreResult<std::string> remove_collection(const ResourceInfo& r, std::string_view ns, const ListRequest& selector,
                                             const DeleteRequest& req) override {
    Pending p;
    StoreResult<std::string> out = [&]() -> StoreResult<std::string> {
      std::lock_guard l(core_->mu);
      const Served* s = lookup(r);
      if (s == nullptr) return fail(errors::resource_not_found());
      ListRequest all = selector;
      all.limit = 0;
      all.continue_token.clear();
      std::vector<std::pair<std::string, std::string>> targets;  // namespace, name
      auto listed = list_locked(r, ns, all, &targets);
      if (!listed) return fail(std::move(listed).error());
      std::string items;
      for (const auto& [obj_ns, obj_name] : targets) {
        auto res = remove_locked(*s, obj_ns, obj_name, req, p);
        if (!res) {
          if (res.error().code == 404) continue;  // removed meanwhile (e.g. with its namespace)
          return fail(std::move(res).error());
        }
        if (!items.empty()) items += ',';
        items += res->dump();
      }
      return "{\"kind\":\"" + s->info.list_kind + "\",\"apiVersion\":\"" + s->info.api_version() +
             "\",\"metadata\":{\"resourceVersion\":\"" + std::to_string(core_->rv) + "\"},\"items\":[" + items + "]}";
    }();
    p.fire();
    return out;
  }

  StoreResult<std::unique_ptr<Watcher>> watch(const ResourceInfo& r, std::string_view ns,
                                              const WatchRequest& req) override {
    Pending p;
    StoreResult<std::unique_ptr<Watcher>> out = [&]() -> StoreResult<std::unique_ptr<Watcher>> {
      std::lock_guard l(core_->mu);
      const Served* s = lookup(r);
      if (s == nullptr) return fail(errors::resource_not_found());
      auto st = std::make_shared<WatchState>();
      st->ns = s->info.namespaced ? std::string(ns) : std::string();
      auto sel = parse_selectors(s->info, req.label_selector, req.field_selector, st->labels, st->fields);
      if (!sel) return fail(std::move(sel).error());
      st->info = s->info;
      if (s->crd != nullptr && s->info.version != s->crd->storage_version) st->rewrite_api_version = s->info.api_version();
      st->bookmarks = req.allow_bookmarks;
      st->limit = std::max<size_t>(core_->options.watcher_queue_limit, 1);
      Table& t = core_->tables.at(s->storage_key);
      // Watchers are made only on success paths: destroying one unregisters it, which takes the
      // store mutex held here.
      if (req.resource_version.empty() || req.resource_version == "0") {
        auto [begin, end] = range(s->info, t, st->ns);
        for (auto it = begin; it != end; ++it) {
          if (!st->matches(*it->second.doc)) continue;
          TextPtr text = st->rewrite_api_version ? text_of(*s, it->second) : it->second.text;
          st->queue.push_back({"ADDED", std::move(text)});
        }
        if (req.send_initial_events && req.allow_bookmarks) {
          st->queue.push_back({"BOOKMARK", std::make_shared<const std::string>(bookmark_text(s->info, core_->rv, true))});
        }
        st->min_rv = core_->rv;
      } else {
        auto rv = parse_rv(req.resource_version);
        if (!rv) return fail(errors::bad_request("invalid resource version: " + req.resource_version));
        if (*rv < t.evicted_rv) {
          StatusError gone = errors::expired("too old resource version: " + std::to_string(*rv) + " (" +
                                             std::to_string(t.evicted_rv) + ")");
          st->queue.push_back({"ERROR", std::make_shared<const std::string>(gone.to_status().dump())});
          st->closed = true;
          return std::unique_ptr<Watcher>(std::make_unique<WatcherImpl>(st, std::weak_ptr<Core>(), s->storage_key));
        }
        st->min_rv = *rv;
        for (const Event& e : t.window) offer(*st, e, false);
      }
      t.watchers.push_back(st);
      return std::unique_ptr<Watcher>(std::make_unique<WatcherImpl>(st, core_, s->storage_key));
    }();
    p.fire();
    return out;
  }

 private:
  static std::string storage_key(const ResourceInfo& r) { return r.group + "/" + r.resource; }

  static const ResourceInfo* find_builtin(std::string_view group, std::string_view resource) {
    for (const ResourceInfo& r : builtin_resources()) {
      if (r.group == group && r.resource == resource) return &r;
    }
    return nullptr;
  }

  const Served* lookup(const ResourceInfo& r) const {
    auto it = core_->served.find(served_key(r.group, r.version, r.resource));
    return it == core_->served.end() ? nullptr : &it->second;
  }

  static void register_crd(Core& c, CrdDefinition def) {
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
      t.evicted_rv = c.rv;
      t.last_change_rv = c.rv;
    }
    c.crds[shared->name] = shared;
  }

  // Objects of a custom resource are stored at the storage version; reads at another served
  // version get that apiVersion and that version's defaults (conversion strategy None).
  Document present(const Served& s, const Document& stored) const {
    if (s.crd == nullptr || s.info.version == s.crd->storage_version) return stored;
    Document d = stored;
    set_member(d, "apiVersion", Value(s.info.api_version().c_str(), d.alloc()));
    if (s.version != nullptr && s.version->schema_has_defaults) {
      apply_defaults(d.root(), s.version->schema.root(), d.alloc());
    }
    return d;
  }

  TextPtr text_of(const Served& s, const Stored& o) const {
    if (s.crd == nullptr || s.info.version == s.crd->storage_version) return o.text;
    return std::make_shared<const std::string>(present(s, *o.doc).dump());
  }

  using Iter = std::map<std::string, Stored, std::less<>>::const_iterator;
  static std::pair<Iter, Iter> range(const ResourceInfo& r, const Table& t, const std::string& ns) {
    if (!r.namespaced || ns.empty()) return {t.objects.begin(), t.objects.end()};
    std::string lo = ns + "/";
    std::string hi = ns + "0";  // '0' follows '/' in ASCII
    return {t.objects.lower_bound(lo), t.objects.lower_bound(hi)};
  }

  StoreResult<void> check_namespace(const Served& s, std::string_view ns, Document& obj) const {
    if (!s.info.namespaced) {
      meta_remove(obj, "namespace");
      return {};
    }
    std::string body_ns = json::string_at(obj.root(), "/metadata/namespace");
    if (!body_ns.empty() && body_ns != ns) {
      return fail(errors::bad_request(
          "the namespace of the provided object does not match the namespace sent on the request"));
    }
    meta_set_string(obj, "namespace", ns);
    return {};
  }

  static StoreResult<void> parse_selectors(const ResourceInfo& r, const std::string& label_text,
                                           const std::string& field_text, api::LabelSelector& labels,
                                           FieldSelector& fields) {
    if (!label_text.empty()) {
      auto ls = api::LabelSelector::parse(label_text);
      if (!ls) return fail(errors::bad_request("unable to parse requirement: " + ls.error().message));
      labels = std::move(*ls);
    }
    if (!field_text.empty()) {
      auto fs = FieldSelector::parse(field_text);
      if (!fs) return fail(errors::bad_request(fs.error().message));
      auto st = fs->bind(r);
      if (!st) return fail(errors::bad_request(st.error().message));
      fields = std::move(*fs);
    }
    return {};
  }

  // ---- writing ----

  // Gives `obj` the next resourceVersion, logs it, stores it (or removes it for DELETED), and
  // queues the event for watchers.
  StoreResult<DocPtr> commit(const Served& s, Table& t, const std::string& key, Document obj, const char* type,
                             Pending& p) {
    Core& c = *core_;
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
      it->second = Stored{doc, text};
    } else {
      t.objects.emplace(key, Stored{doc, text});
    }
    Event e{rv, type, json::string_at(doc->root(), "/metadata/namespace"), doc, deleted ? nullptr : prev, text};
    t.last_change_rv = rv;
    for (auto& st : t.watchers) {
      if (offer(*st, e, true)) p.states.push_back(st);
    }
    std::erase_if(t.watchers, [](const std::shared_ptr<WatchState>& st) {
      std::lock_guard l(st->mu);
      return st->closed;
    });
    t.window.push_back(std::move(e));
    while (t.window.size() > std::max<size_t>(c.options.watch_window, 1)) {
      t.evicted_rv = t.window.front().rv;
      t.window.pop_front();
    }
    maybe_compact();
    return doc;
  }

  void maybe_compact() {
    Core& c = *core_;
    if (!c.log || !c.log->wants_compaction()) return;
    std::vector<PersistentLog::SnapshotItem> items;
    for (const auto& [skey, t] : c.tables) {
      for (const auto& [key, o] : t.objects) items.push_back({skey, key, *o.text});
    }
    auto st = c.log->compact(c.rv, items);
    if (!st) spdlog::warn("local cluster state: compaction failed, the log keeps growing: {}", st.error().message);
  }

  std::vector<FieldError> custom_resource_checks(const Served& s, Document& obj) {
    if (s.version == nullptr || !s.version->schema.root().IsObject()) return {};
    const Value& schema = s.version->schema.root();
    prune(obj.root(), schema, obj.alloc());
    apply_defaults(obj.root(), schema, obj.alloc());
    return validate_schema(obj.root(), schema);
  }

  // Everything a create and an update check and fill in alike. `name` names the errors.
  StoreResult<void> admit(const Served& s, Document& obj, const std::string& name) {
    std::vector<FieldError> errs;
    if (s.crd != nullptr) {
      errs = custom_resource_checks(s, obj);
      set_member(obj, "apiVersion", Value((s.info.group + "/" + s.crd->storage_version).c_str(), obj.alloc()));
    } else {
      default_builtin(s.info, obj, core_->rng);
    }
    if (!errs.empty()) return fail(errors::invalid(s.info, name, errs));
    return {};
  }

  static bool is_crd(const ResourceInfo& r) { return r.group == kCrdGroup && r.resource == kCrdResource; }

  StoreResult<std::shared_ptr<const CrdDefinition>> admit_crd(const Served& s, Document& obj, const std::string& name) {
    default_crd(obj);
    auto def = parse_crd(obj.root());
    if (!def) return fail(errors::invalid(s.info, name, def.error()));
    set_crd_status(obj, *def, now_text());
    return std::make_shared<const CrdDefinition>(std::move(*def));
  }

  StoreResult<Document> create_locked(const ResourceInfo& r, std::string_view ns_in, Document obj, bool dry_run,
                                      Pending& p) {
    const Served* s = lookup(r);
    if (s == nullptr) return fail(errors::resource_not_found());
    if (!obj.root().IsObject()) return fail(errors::bad_request("the body of the request must be a JSON object"));
    std::string ns(ns_in);
    if (s->info.namespaced && ns.empty()) {
      ns = json::string_at(obj.root(), "/metadata/namespace");
      if (ns.empty()) ns = "default";
    }
    auto st = check_namespace(*s, ns, obj);
    if (!st) return fail(std::move(st).error());
    if (s->info.namespaced) {
      const Table& nst = core_->tables.at("/namespaces");
      auto nit = nst.objects.find(ns);
      if (nit == nst.objects.end()) return fail(errors::namespace_not_found(ns));
      if (json::find(nit->second.doc->root(), "/metadata/deletionTimestamp") != nullptr) {
        return fail(errors::forbidden(s->info, json::string_at(obj.root(), "/metadata/name"),
                                      "unable to create new content in namespace " + ns +
                                          " because it is being terminated"));
      }
    }
    Table& t = core_->tables.at(s->storage_key);
    std::string name = json::string_at(obj.root(), "/metadata/name");
    if (name.empty()) {
      std::string gen = json::string_at(obj.root(), "/metadata/generateName");
      if (gen.empty()) {
        return fail(errors::invalid(s->info, "", {required_value("metadata.name", "name or generateName is required")}));
      }
      // kube-apiserver trims the prefix so the result stays within 63 characters.
      if (gen.size() > 58) gen.resize(58);
      for (int attempt = 0; attempt < 8; ++attempt) {
        name = gen + random_suffix(core_->rng);
        if (t.objects.find(key_for(s->info, ns, name)) == t.objects.end()) break;
      }
      meta_set_string(obj, "name", name);
    }
    if (auto bad = check_object_name(s->info, name)) {
      return fail(errors::invalid(s->info, name, {invalid_value_text("metadata.name", "\"" + name + "\"", *bad)}));
    }
    std::string key = key_for(s->info, ns, name);
    if (t.objects.find(key) != t.objects.end()) return fail(errors::already_exists(s->info, name));

    set_member(obj, "apiVersion", Value(s->info.api_version().c_str(), obj.alloc()));
    set_member(obj, "kind", Value(s->info.kind.c_str(), obj.alloc()));
    // Fields only the server sets.
    for (const char* f : {"deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink"}) {
      meta_remove(obj, f);
    }
    meta_set_string(obj, "uid", new_uid(core_->rng));
    meta_set_string(obj, "creationTimestamp", now_text());
    meta_set(obj, "generation", Value(int64_t{1}));
    if (s->info.has_status && !(s->info.group.empty() && s->info.resource == "nodes")) {
      set_member(obj, "status", null_value());
    }
    if (s->info.group.empty() && s->info.resource == "pods") {
      Value status(rapidjson::kObjectType);
      status.AddMember("phase", "Pending", obj.alloc());
      status.AddMember("qosClass", json::str(qos_class(member_or_null(obj.root(), "spec")), obj.alloc()), obj.alloc());
      set_member(obj, "status", status);
    }
    if (s->info.group.empty() && s->info.resource == "namespaces") {
      (void)json::set_string(obj, "/status/phase", "Active");
    }
    if (s->info.group == "batch" && s->info.resource == "jobs") default_job_selector(obj);
    auto adm = admit(*s, obj, name);
    if (!adm) return fail(std::move(adm).error());
    std::shared_ptr<const CrdDefinition> crd;
    if (is_crd(s->info)) {
      auto def = admit_crd(*s, obj, name);
      if (!def) return fail(std::move(def).error());
      crd = std::move(*def);
    }
    if (dry_run) return present(*s, obj);
    auto stored = commit(*s, t, key, std::move(obj), "ADDED", p);
    if (!stored) return fail(std::move(stored).error());
    if (crd) register_crd(*core_, *crd);
    return present(*s, **stored);
  }

  static bool spec_changed(const Served& s, const Value& a, const Value& b) {
    if (s.crd == nullptr) return !json::equal(member_or_null(a, "spec"), member_or_null(b, "spec"));
    // Custom resources: anything outside metadata and status counts.
    auto differs = [](const Value& x, const Value& y) {
      for (auto it = x.MemberBegin(); it != x.MemberEnd(); ++it) {
        std::string_view k(it->name.GetString(), it->name.GetStringLength());
        if (k == "metadata" || k == "status" || k == "apiVersion" || k == "kind") continue;
        auto other = y.FindMember(it->name);
        if (other == y.MemberEnd() || !json::equal(it->value, other->value)) return true;
      }
      return false;
    };
    return differs(a, b) || differs(b, a);
  }

  StoreResult<Document> update_locked(const Served& s, Table& t, const std::string& key, DocPtr existing, Document obj,
                                      std::string_view subresource, bool dry_run, Pending& p) {
    const Value& old = existing->root();
    std::string name = json::string_at(old, "/metadata/name");
    std::string old_rv = json::string_at(old, "/metadata/resourceVersion");
    std::string new_rv = json::string_at(obj.root(), "/metadata/resourceVersion");
    if (!new_rv.empty() && new_rv != old_rv) return fail(errors::stale_resource_version(s.info, name));

    Document next;
    if (subresource == "status") {
      if (!s.info.has_status) return fail(errors::resource_not_found());
      next = *existing;
      set_member(next, "status", member_or_null(obj.root(), "status"));
    } else if (!subresource.empty()) {
      return fail(errors::resource_not_found());
    } else {
      next = std::move(obj);
      if (s.info.has_status) set_member(next, "status", member_or_null(old, "status"));
      const Value& old_meta = member_or_null(old, "metadata");
      for (const char* f : {"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                            "generation", "namespace", "name"}) {
        meta_set(next, f, member_or_null(old_meta, f));
      }
      set_member(next, "apiVersion", member_or_null(old, "apiVersion"));
      set_member(next, "kind", member_or_null(old, "kind"));
      if (json::find(old, "/metadata/deletionTimestamp") != nullptr) {
        auto before = finalizers_of(old);
        std::vector<FieldError> errs;
        for (const std::string& f : finalizers_of(next.root())) {
          if (std::find(before.begin(), before.end(), f) == before.end()) {
            errs.push_back(forbidden("metadata.finalizers",
                                     "no new finalizers can be added if the object is being deleted, found new "
                                     "finalizers []string{\"" + f + "\"}"));
            break;
          }
        }
        if (!errs.empty()) return fail(errors::invalid(s.info, name, errs));
      }
    }
    meta_set_string(next, "resourceVersion", old_rv);
    auto adm = admit(s, next, name);
    if (!adm) return fail(std::move(adm).error());
    if (subresource.empty() && s.info.group == "batch" && s.info.resource == "jobs") {
      if (auto errs = job_template_update_errors(old, next.root()); !errs.empty())
        return fail(errors::invalid(s.info, name, errs));
    }
    std::shared_ptr<const CrdDefinition> crd;
    if (is_crd(s.info)) {
      auto def = admit_crd(s, next, name);
      if (!def) return fail(std::move(def).error());
      crd = std::move(*def);
    }
    if (spec_changed(s, old, next.root())) {
      meta_set(next, "generation", Value(json::get_int(old, "/metadata/generation").value_or(0) + 1));
    }
    if (json::equal(next.root(), old)) return present(s, *existing);  // no-op: no new resourceVersion, no event
    if (dry_run) return present(s, next);
    bool finished = json::find(next.root(), "/metadata/deletionTimestamp") != nullptr &&
                    finalizers_of(next.root()).empty() &&
                    json::get_int(next.root(), "/metadata/deletionGracePeriodSeconds").value_or(0) == 0;
    auto stored = commit(s, t, key, std::move(next), finished ? "DELETED" : "MODIFIED", p);
    if (!stored) return fail(std::move(stored).error());
    if (crd) register_crd(*core_, *crd);
    return present(s, **stored);
  }

  // ---- scale subresource (custom resources) ----

  StoreResult<Document> scale_of(const Served& s, const Document& obj) const {
    if (s.version == nullptr || !s.version->has_scale) return fail(errors::resource_not_found());
    const Value& root = obj.root();
    Document scale = Document::object();
    auto& a = scale.alloc();
    scale.root().AddMember("kind", "Scale", a);
    scale.root().AddMember("apiVersion", "autoscaling/v1", a);
    Value meta(rapidjson::kObjectType);
    for (const char* f : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"}) {
      const Value& v = member_or_null(member_or_null(root, "metadata"), f);
      if (!v.IsNull()) meta.AddMember(Value(f, a), Value(v, a), a);
    }
    scale.root().AddMember("metadata", meta, a);
    Value spec(rapidjson::kObjectType);
    spec.AddMember("replicas", json::get_int(root, crd_path_to_pointer(s.version->spec_replicas_path)).value_or(0), a);
    scale.root().AddMember("spec", spec, a);
    Value status(rapidjson::kObjectType);
    status.AddMember("replicas", json::get_int(root, crd_path_to_pointer(s.version->status_replicas_path)).value_or(0), a);
    if (!s.version->label_selector_path.empty()) {
      std::string sel = json::string_at(root, crd_path_to_pointer(s.version->label_selector_path));
      if (!sel.empty()) status.AddMember("selector", json::str(sel, a), a);
    }
    scale.root().AddMember("status", status, a);
    return scale;
  }

  StoreResult<Document> update_scale(const Served& s, std::string_view ns, std::string_view name, const Document& scale,
                                     bool dry_run, Pending& p) {
    if (s.version == nullptr || !s.version->has_scale) return fail(errors::resource_not_found());
    Table& t = core_->tables.at(s.storage_key);
    auto it = t.objects.find(key_for(s.info, ns, name));
    if (it == t.objects.end()) return fail(errors::not_found(s.info, name));
    auto replicas = json::get_int(scale.root(), "/spec/replicas");
    if (!replicas || *replicas < 0) {
      ResourceInfo scale_info = s.info;
      scale_info.kind = "Scale";
      scale_info.group = "autoscaling";
      return fail(errors::invalid(scale_info, name,
                                  {invalid_value(std::string("spec.replicas"), member_or_null(member_or_null(scale.root(), "spec"), "replicas"),
                                                 "must be greater than or equal to 0")}));
    }
    Document next = present(s, *it->second.doc);
    std::string rv = json::string_at(scale.root(), "/metadata/resourceVersion");
    if (!rv.empty()) meta_set_string(next, "resourceVersion", rv);
    auto st = json::set(next, crd_path_to_pointer(s.version->spec_replicas_path), Value(*replicas));
    if (!st) return fail(errors::bad_request(st.error().message));
    auto res = update_locked(s, t, it->first, it->second.doc, std::move(next), "", dry_run, p);
    if (!res) return res;
    return scale_of(s, *res);
  }

  // ---- patch ----

  StoreResult<Document> patch_locked(const ResourceInfo& r, std::string_view ns, std::string_view name, PatchKind kind,
                                     std::string_view body, std::string_view subresource, bool dry_run, Pending& p) {
    const Served* s = lookup(r);
    if (s == nullptr) return fail(errors::resource_not_found());
    if (kind == PatchKind::Strategic && s->crd != nullptr) {
      return fail(errors::unsupported_media_type(
          "the body of the request was in an unknown format - accepted media types include: "
          "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"));
    }
    Document patch;
    if (kind == PatchKind::Apply) {
      auto docs = json::parse_yaml(body);
      if (!docs) return fail(errors::bad_request("error decoding YAML: " + docs.error().message));
      if (docs->size() != 1 || !(*docs)[0].root().IsObject()) {
        return fail(errors::bad_request("apply patches must contain exactly one object"));
      }
      patch = std::move((*docs)[0]);
    } else {
      auto parsed = Document::parse(body);
      if (!parsed) return fail(errors::bad_request("error decoding patch: " + parsed.error().message));
      patch = std::move(*parsed);
    }
    Table& t = core_->tables.at(s->storage_key);
    auto it = t.objects.find(key_for(s->info, ns, name));
    if (it == t.objects.end()) {
      if (kind == PatchKind::Apply && subresource.empty()) {
        std::string body_name = json::string_at(patch.root(), "/metadata/name");
        if (!body_name.empty() && body_name != name) {
          return fail(errors::bad_request("the name of the object (" + body_name +
                                          ") does not match the name on the URL (" + std::string(name) + ")"));
        }
        meta_set_string(patch, "name", name);
        return create_locked(s->info, ns, std::move(patch), dry_run, p);
      }
      return fail(errors::not_found(s->info, name));
    }
    Document target;
    if (subresource == "scale") {
      auto sc = scale_of(*s, present(*s, *it->second.doc));
      if (!sc) return sc;
      target = std::move(*sc);
    } else {
      target = present(*s, *it->second.doc);
    }
    switch (kind) {
      case PatchKind::Merge:
        if (!patch.root().IsObject()) return fail(errors::bad_request("a merge patch must be a JSON object"));
        json::apply_merge_patch(target, patch.root());
        break;
      case PatchKind::JSON: {
        if (!patch.root().IsArray()) return fail(errors::bad_request("a JSON patch must be a JSON array of operations"));
        auto st = json::apply_json_patch(target, patch.root());
        if (!st) {
          return fail(errors::invalid(s->info, name, {FieldError{"FieldValueInvalid", "", st.error().message}}));
        }
        break;
      }
      case PatchKind::Strategic:
      case PatchKind::Apply: {
        if (!patch.root().IsObject()) return fail(errors::bad_request("a strategic merge patch must be a JSON object"));
        if (s->crd != nullptr) {
          json::apply_merge_patch(target, patch.root());
        } else {
          auto st = json::apply_strategic_merge_patch(target, patch.root(), &json::kubernetes_merge_key);
          if (!st) return fail(errors::bad_request(st.error().message));
        }
        break;
      }
    }
    if (!target.root().IsObject()) return fail(errors::bad_request("the patched object is not a JSON object"));
    if (subresource == "scale") return update_scale(*s, ns, name, target, dry_run, p);
    // The patch may name another object; kube-apiserver refuses that.
    if (json::string_at(target.root(), "/metadata/name") != name) {
      return fail(errors::bad_request("the name of the object (" + json::string_at(target.root(), "/metadata/name") +
                                      ") does not match the name on the URL (" + std::string(name) + ")"));
    }
    if (s->info.namespaced && json::string_at(target.root(), "/metadata/namespace") != ns) {
      return fail(errors::bad_request(
          "the namespace of the provided object does not match the namespace sent on the request"));
    }
    return update_locked(*s, t, it->first, it->second.doc, std::move(target), subresource, dry_run, p);
  }

  // ---- delete ----

  StoreResult<Document> delete_now(const Served& s, Table& t, const std::string& key, Document obj, Pending& p) {
    auto stored = commit(s, t, key, std::move(obj), "DELETED", p);
    if (!stored) return fail(std::move(stored).error());
    return present(s, **stored);
  }

  StoreResult<Document> remove_locked(const Served& s, std::string_view ns, std::string_view name,
                                      const DeleteRequest& req, Pending& p) {
    Table& t = core_->tables.at(s.storage_key);
    std::string key = key_for(s.info, ns, name);
    auto it = t.objects.find(key);
    if (it == t.objects.end()) return fail(errors::not_found(s.info, name));
    DocPtr existing = it->second.doc;
    const Value& old = existing->root();
    if (req.precondition_uid) {
      std::string uid = json::string_at(old, "/metadata/uid");
      if (uid != *req.precondition_uid) {
        return fail(errors::conflict(s.info, name, "Precondition failed: UID in precondition: " + *req.precondition_uid +
                                                       ", UID in object meta: " + uid));
      }
    }
    if (req.precondition_resource_version) {
      std::string rv = json::string_at(old, "/metadata/resourceVersion");
      if (rv != *req.precondition_resource_version) {
        return fail(errors::conflict(s.info, name,
                                     "Precondition failed: ResourceVersion in precondition: " +
                                         *req.precondition_resource_version + ", ResourceVersion in object meta: " + rv));
      }
    }
    bool is_ns = s.info.group.empty() && s.info.resource == "namespaces";
    if (is_ns && (name == "default" || name == "kube-system" || name == "kube-public")) {
      return fail(errors::forbidden(s.info, name, "this namespace may not be deleted"));
    }
    std::optional<std::string> policy = req.propagation_policy;
    if (policy && *policy != "Orphan" && *policy != "Foreground" && *policy != "Background") {
      return fail(errors::invalid(s.info, name,
                                  {{"FieldValueNotSupported", "propagationPolicy",
                                    "Unsupported value: \"" + *policy +
                                        "\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""}}));
    }
    // batch/v1 Jobs orphan their pods unless told otherwise, for compatibility (kube-apiserver).
    if (!policy && s.info.group == "batch" && s.info.resource == "jobs") policy = "Orphan";

    int64_t grace = 0;
    if (s.info.group.empty() && s.info.resource == "pods") {
      grace = req.grace_period_seconds.value_or(json::get_int(old, "/spec/terminationGracePeriodSeconds").value_or(30));
      if (grace < 0) grace = 1;
      std::string phase = json::string_at(old, "/status/phase");
      if (json::string_at(old, "/spec/nodeName").empty() || phase == "Succeeded" || phase == "Failed") grace = 0;
    }
    if (req.dry_run) return present(s, *existing);

    if (is_ns) {
      // Content goes first, like the namespace controller, but without waiting for finalizers.
      std::string prefix = std::string(name) + "/";
      for (auto& [skey, table] : core_->tables) {
        const Served* owner = served_for_storage(skey);
        if (owner == nullptr || !owner->info.namespaced) continue;
        std::vector<std::string> keys;
        for (auto o = table.objects.lower_bound(prefix); o != table.objects.end() && o->first.starts_with(prefix); ++o) {
          keys.push_back(o->first);
        }
        for (const std::string& k : keys) {
          Document d = *table.objects.at(k).doc;
          auto res = commit(*owner, table, k, std::move(d), "DELETED", p);
          if (!res) return fail(std::move(res).error());
        }
      }
    }
    if (is_crd(s.info)) {
      std::string crd_name(name);
      auto cit = core_->crds.find(crd_name);
      if (cit != core_->crds.end()) {
        std::string skey = cit->second->storage_key();
        const Served* owner = served_for_storage(skey);
        auto tit = core_->tables.find(skey);
        if (tit != core_->tables.end() && owner != nullptr) {
          Served owner_copy = *owner;
          std::vector<std::string> keys;
          for (const auto& [k, o] : tit->second.objects) keys.push_back(k);
          for (const std::string& k : keys) {
            Document d = *tit->second.objects.at(k).doc;
            auto res = commit(owner_copy, tit->second, k, std::move(d), "DELETED", p);
            if (!res) return fail(std::move(res).error());
          }
          for (auto& st : tit->second.watchers) {
            std::lock_guard l(st->mu);
            st->closed = true;
            p.states.push_back(st);
          }
          core_->tables.erase(tit);
        }
        for (auto sit = core_->served.begin(); sit != core_->served.end();) {
          if (sit->second.crd != nullptr && sit->second.crd->name == crd_name) sit = core_->served.erase(sit);
          else ++sit;
        }
        core_->crds.erase(cit);
      }
      it = t.objects.find(key);
      if (it == t.objects.end()) return fail(errors::not_found(s.info, name));
      return delete_now(s, t, key, *existing, p);
    }

    std::vector<std::string> fins = finalizers_of(old);
    auto drop = [&](const char* f) { std::erase(fins, std::string(f)); };
    auto add = [&](const char* f) {
      if (std::find(fins.begin(), fins.end(), f) == fins.end()) fins.emplace_back(f);
    };
    if (policy == "Orphan") {
      drop("foregroundDeletion");
      add("orphan");
    } else if (policy == "Foreground") {
      drop("orphan");
      add("foregroundDeletion");
    } else if (policy == "Background") {
      drop("orphan");
      drop("foregroundDeletion");
    }

    Document next = *existing;
    bool deleting = json::find(old, "/metadata/deletionTimestamp") != nullptr;
    if (deleting) {
      int64_t current = json::get_int(old, "/metadata/deletionGracePeriodSeconds").value_or(0);
      if (grace < current) {
        meta_set(next, "deletionGracePeriodSeconds", Value(grace));
        meta_set_string(next, "deletionTimestamp", now_text(grace));
      } else {
        grace = current;
      }
      set_finalizers(next, fins);
      if (fins.empty() && grace == 0) return delete_now(s, t, key, std::move(next), p);
      if (json::equal(next.root(), old)) return present(s, *existing);
      auto stored = commit(s, t, key, std::move(next), "MODIFIED", p);
      if (!stored) return fail(std::move(stored).error());
      return present(s, **stored);
    }
    if (fins.empty() && grace == 0) return delete_now(s, t, key, std::move(next), p);
    set_finalizers(next, fins);
    meta_set_string(next, "deletionTimestamp", now_text(grace));
    meta_set(next, "deletionGracePeriodSeconds", Value(grace));
    meta_set(next, "generation", Value(json::get_int(old, "/metadata/generation").value_or(0) + 1));
    auto stored = commit(s, t, key, std::move(next), "MODIFIED", p);
    if (!stored) return fail(std::move(stored).error());
    return present(s, **stored);
  }

  // Any served entry of a storage key (built-in or a CRD's storage version).
  const Served* served_for_storage(const std::string& skey) const {
    const Served* any = nullptr;
    for (const auto& [k, s] : core_->served) {
      if (s.storage_key != skey) continue;
      if (s.crd == nullptr || s.info.version == s.crd->storage_version) return &s;
      any = &s;
    }
    return any;
  }

  // ---- list ----

  StoreResult<std::string> list_locked(const ResourceInfo& r, std::string_view ns_in, const ListRequest& req,
                                       std::vector<std::pair<std::string, std::string>>* targets) const {
    const Served* s = lookup(r);
    if (s == nullptr) return fail(errors::resource_not_found());
    const Table& t = core_->tables.at(s->storage_key);
    std::string ns = s->info.namespaced ? std::string(ns_in) : std::string();
    api::LabelSelector labels;
    FieldSelector fields;
    auto sel = parse_selectors(s->info, req.label_selector, req.field_selector, labels, fields);
    if (!sel) return fail(std::move(sel).error());

    uint64_t list_rv = core_->rv;
    std::string start_after;
    if (!req.continue_token.empty()) {
      if (!req.resource_version.empty() && req.resource_version != "0") {
        return fail(errors::bad_request("specifying resource version is not allowed when using continue"));
      }
      auto decoded = b64url_decode(req.continue_token);
      std::optional<Document> tok;
      if (decoded) {
        auto d = Document::parse(*decoded);
        if (d) tok = std::move(*d);
      }
      auto rv = tok ? json::get_int(tok->root(), "/rv") : std::nullopt;
      auto start = tok ? json::get_string(tok->root(), "/start") : std::nullopt;
      if (!rv || !start) return fail(errors::bad_request("continue key is not valid: " + req.continue_token));
      // Pages after the first report the first page's resourceVersion. Objects changed since
      // then are shown as they are now (the store keeps no history beyond the watch window).
      list_rv = static_cast<uint64_t>(*rv);
      start_after = std::string(*start);
    } else if (!req.resource_version.empty() && req.resource_version != "0") {
      auto rv = parse_rv(req.resource_version);
      if (!rv) return fail(errors::bad_request("invalid resource version: " + req.resource_version));
      if (req.resource_version_match == "Exact") {
        if (*rv > core_->rv) return fail(errors::too_large_resource_version(*rv, core_->rv));
        // The current state is the state at `rv` when nothing in this resource changed since.
        if (t.last_change_rv > *rv) return fail(errors::expired("The resourceVersion for the provided list is too old."));
        list_rv = *rv;
      } else if (*rv > core_->rv) {
        return fail(errors::too_large_resource_version(*rv, core_->rv));
      }
    }

    auto [begin, end] = range(s->info, t, ns);
    if (!start_after.empty()) {
      Iter after = t.objects.upper_bound(start_after);
      if (after == t.objects.end() || (end != t.objects.end() && after->first >= end->first)) {
        begin = end;
      } else if (begin != end && after->first > begin->first) {
        begin = after;
      }
    }
    const bool filtered = !labels.empty() || !fields.empty();
    // Select first, then build the output in one exactly-sized buffer: a 10k-pod list is ~9 MB
    // and growing strings by doubling costs more than the copying itself.
    std::vector<TextPtr> selected;
    if (req.limit > 0) selected.reserve(static_cast<size_t>(req.limit));
    std::string last_key;
    Iter it = begin;
    bool more = false;
    for (; it != end; ++it) {
      const Stored& o = it->second;
      if (filtered) {
        const Value& root = o.doc->root();
        if (!labels.empty() && !labels.matches(member_or_null(member_or_null(root, "metadata"), "labels"))) continue;
        if (!fields.empty() && !fields.matches(root)) continue;
      }
      if (req.limit > 0 && static_cast<int64_t>(selected.size()) == req.limit) {
        more = true;
        break;
      }
      if (targets != nullptr) {
        targets->emplace_back(json::string_at(o.doc->root(), "/metadata/namespace"), json::string_at(o.doc->root(), "/metadata/name"));
      }
      selected.push_back(text_of(*s, o));
      last_key = it->first;
    }
    std::string head = "{\"kind\":\"" + s->info.list_kind + "\",\"apiVersion\":\"" + s->info.api_version() +
                       "\",\"metadata\":{\"resourceVersion\":\"" + std::to_string(list_rv) + "\"";
    if (more) {
      std::string token_json = "{\"v\":\"meta.k8s.io/v1\",\"rv\":" + std::to_string(list_rv) + ",\"start\":" +
                               json::dump(Value(last_key.c_str(), static_cast<rapidjson::SizeType>(last_key.size()))) + "}";
      head += ",\"continue\":\"" + b64_encode(token_json) + "\"";
      if (!filtered) {
        int64_t remaining = std::distance(it, end);
        head += ",\"remainingItemCount\":" + std::to_string(remaining);
      }
    }
    head += "},\"items\":[";
    size_t total = head.size() + 2 + selected.size();
    for (const TextPtr& t : selected) total += t->size();
    std::string out;
    out.reserve(total);
    out += head;
    for (size_t i = 0; i < selected.size(); ++i) {
      if (i > 0) out += ',';
      out += *selected[i];
    }
    out += "]}";
    return out;
  }

  std::shared_ptr<Core> core_;
};

}  // namespace

Result<std::unique_ptr<Store>> make_memory_store(const StoreOptions& options) {
  auto store = std::make_unique<MemoryStore>(options);
  auto st = store->init();
  if (!st) return fail(st.error().message);
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace unitrain::localcluster
