// Kept whole: one in-memory API server for tests (store, watch fan-out, patches, fault scripts)
// whose parts share one lock and one resourceVersion counter.
#include "core/kube/fake_client.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "core/api/labels.h"
#include "core/kube/watch_decoder.h"

namespace unitrain::kube {

const char* to_string(FakeClient::Verb v) {
  switch (v) {
    case FakeClient::Verb::Get: return "get";
    case FakeClient::Verb::List: return "list";
    case FakeClient::Verb::Create: return "create";
    case FakeClient::Verb::Update: return "update";
    case FakeClient::Verb::UpdateStatus: return "update_status";
    case FakeClient::Verb::Patch: return "patch";
    case FakeClient::Verb::Delete: return "delete";
    case FakeClient::Verb::DeleteCollection: return "deletecollection";
    case FakeClient::Verb::Watch: return "watch";
  }
  return "unknown";
}

namespace {

ApiError api_error(ApiError::Reason reason, int code, std::string message) {
  ApiError e;
  e.reason = reason;
  e.code = code;
  e.message = std::move(message);
  return e;
}

ApiError not_found(const GroupVersionResource& r, std::string_view name) {
  return api_error(ApiError::Reason::NotFound, 404, fmt::format("{} \"{}\" not found", r.group_resource(), name));
}

ApiError conflict(const GroupVersionResource& r, std::string_view name) {
  return api_error(ApiError::Reason::Conflict, 409,
                   fmt::format("Operation cannot be fulfilled on {} \"{}\": the object has been modified; please "
                               "apply your changes to the latest version and try again",
                               r.group_resource(), name));
}

ApiError bad_request(std::string message) { return api_error(ApiError::Reason::BadRequest, 400, std::move(message)); }

std::string object_key(std::string_view ns, std::string_view name) {
  return ns.empty() ? std::string(name) : fmt::format("{}/{}", ns, name);
}

json::Document parse_stored(const std::string& text) {
  auto d = json::Document::parse(text);
  // Stored text is always produced by dump(), so it parses.
  return d ? std::move(*d) : json::Document::object();
}

struct Requirement {
  enum class Op { Eq, Neq, Exists, NotExists } op = Op::Eq;
  std::string key;
  std::string value;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

ApiResult<api::LabelSelector> parse_labels(std::string_view text) {
  auto sel = api::LabelSelector::parse(text);
  if (!sel) return fail(bad_request(sel.error().message));
  return std::move(*sel);
}

bool labels_match(const api::LabelSelector& sel, const json::Value& obj) {
  if (sel.empty()) return true;
  static const json::Value kNoLabels;
  const json::Value* labels = json::find(obj, "/metadata/labels");
  return sel.matches(labels ? *labels : kNoLabels);
}

ApiResult<std::vector<Requirement>> parse_selector(std::string_view text, bool field) {
  std::vector<Requirement> out;
  const char* what = field ? "field selector" : "label selector";
  size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    size_t comma = text.find(',', pos);
    std::string_view term = trim(text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos));
    pos = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    if (term.empty()) return fail(bad_request(fmt::format("{} '{}': empty requirement", what, text)));
    Requirement req;
    if (auto p = term.find("!="); p != term.npos) {
      req.op = Requirement::Op::Neq;
      req.key = trim(term.substr(0, p));
      req.value = trim(term.substr(p + 2));
    } else if (auto q = term.find("=="); q != term.npos) {
      req.key = trim(term.substr(0, q));
      req.value = trim(term.substr(q + 2));
    } else if (auto e = term.find('='); e != term.npos) {
      req.key = trim(term.substr(0, e));
      req.value = trim(term.substr(e + 1));
    } else if (!field && term.front() == '!') {
      req.op = Requirement::Op::NotExists;
      req.key = trim(term.substr(1));
    } else if (!field) {
      req.op = Requirement::Op::Exists;
      req.key = term;
    } else {
      return fail(bad_request(fmt::format("{} '{}': '{}' has no operator", what, text, term)));
    }
    if (req.key.empty()) return fail(bad_request(fmt::format("{} '{}': empty key in '{}'", what, text, term)));
    out.push_back(std::move(req));
  }
  return out;
}

std::optional<std::string> field_value(const json::Value& obj, std::string_view dotted) {
  std::string pointer;
  size_t start = 0;
  while (start <= dotted.size()) {
    size_t dot = dotted.find('.', start);
    std::string_view part = dotted.substr(start, dot == dotted.npos ? dotted.npos : dot - start);
    pointer += "/" + json::escape_pointer_token(part);
    if (dot == dotted.npos) break;
    start = dot + 1;
  }
  const json::Value* v = json::find(obj, pointer);
  if (!v || v->IsNull()) return std::nullopt;
  if (v->IsString()) return std::string(v->GetString(), v->GetStringLength());
  if (v->IsBool()) return v->GetBool() ? "true" : "false";
  return json::dump(*v);
}

bool matches(const std::vector<Requirement>& reqs, const json::Value& obj, bool field) {
  const json::Value* labels = field ? nullptr : json::find(obj, "/metadata/labels");
  for (const auto& r : reqs) {
    std::optional<std::string> actual;
    if (field) {
      actual = field_value(obj, r.key);
    } else if (labels && labels->IsObject()) {
      auto it = labels->FindMember(r.key.c_str());
      if (it != labels->MemberEnd() && it->value.IsString()) actual = it->value.GetString();
    }
    switch (r.op) {
      case Requirement::Op::Eq:
        if (actual.value_or("") != r.value || (!field && !actual)) return false;
        break;
      case Requirement::Op::Neq:
        if (actual && *actual == r.value) return false;
        break;
      case Requirement::Op::Exists:
        if (!actual) return false;
        break;
      case Requirement::Op::NotExists:
        if (actual) return false;
        break;
    }
  }
  return true;
}

std::string namespace_of(const json::Value& obj) {
  return std::string(json::get_string(obj, "/metadata/namespace").value_or(""));
}

int64_t parse_rv(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return -1;
  return v;
}

json::Document status_doc(std::string_view status, int code, std::string_view reason, std::string_view message) {
  auto d = json::Document::object();
  (void)json::set_string(d, "/kind", "Status");
  (void)json::set_string(d, "/apiVersion", "v1");
  (void)json::set(d, "/metadata", json::Value(rapidjson::kObjectType));
  (void)json::set_string(d, "/status", status);
  if (!message.empty()) (void)json::set_string(d, "/message", message);
  if (!reason.empty()) (void)json::set_string(d, "/reason", reason);
  (void)json::set_int(d, "/code", code);
  return d;
}

}  // namespace

namespace {
// Like RestClient: only the fields the caller reads of a write's response.
ApiResult<json::Document> shaped(ApiResult<json::Document> r, const std::shared_ptr<const json::FieldMask>& fields) {
  if (r && fields) return json::Document::project(r->root(), *fields);
  return r;
}
}  // namespace

struct FakeClient::Watcher {
  std::string resource;
  std::string ns;
  api::LabelSelector labels;
  std::vector<Requirement> fields;
  std::shared_ptr<const json::FieldMask> object_fields;  // what the client wants of each object
  bool bookmarks = false;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<WatchEvent> events;
  bool closed = false;

  bool wants(const json::Value& obj) const {
    if (!ns.empty() && namespace_of(obj) != ns) return false;
    return labels_match(labels, obj) && matches(fields, obj, true);
  }
  void push(WatchEvent ev) {
    // Like RestClient: only the wanted fields of the objects (a Status or a bookmark as it is).
    if (object_fields && ev.type != WatchEvent::Type::Error && ev.type != WatchEvent::Type::Bookmark)
      ev.object = json::Document::project(ev.object.root(), *object_fields);
    std::lock_guard g(mu);
    if (closed) return;
    events.push_back(std::move(ev));
    cv.notify_all();
  }
  void close() {
    std::lock_guard g(mu);
    closed = true;
    cv.notify_all();
  }
  bool is_closed() {
    std::lock_guard g(mu);
    return closed;
  }
};

namespace {

class FakeWatchStream final : public WatchStream {
 public:
  explicit FakeWatchStream(std::shared_ptr<FakeClient::Watcher> w) : w_(std::move(w)) {}
  ~FakeWatchStream() override { w_->close(); }

  ApiResult<std::optional<WatchEvent>> next(std::chrono::milliseconds wait) override {
    std::unique_lock lock(w_->mu);
    timed_out_ = false;
    w_->cv.wait_for(lock, wait, [&] { return !w_->events.empty() || w_->closed; });
    if (!w_->events.empty()) {
      WatchEvent ev = std::move(w_->events.front());
      w_->events.pop_front();
      return std::optional<WatchEvent>(std::move(ev));
    }
    if (!w_->closed) timed_out_ = true;
    return std::optional<WatchEvent>();
  }
  bool timed_out() const override { return timed_out_; }
  void cancel() override { w_->close(); }

 private:
  std::shared_ptr<FakeClient::Watcher> w_;
  bool timed_out_ = false;
};

// Which event a watcher sees for a change, given whether the old and new states match its
// filter: objects entering or leaving a selector appear as ADDED / DELETED, as the API server does.
std::optional<WatchEvent::Type> visible_type(WatchEvent::Type type, bool old_match, bool new_match) {
  switch (type) {
    case WatchEvent::Type::Added:
      return new_match ? std::optional(type) : std::nullopt;
    case WatchEvent::Type::Deleted:
      return old_match ? std::optional(type) : std::nullopt;
    case WatchEvent::Type::Modified:
      if (old_match && new_match) return type;
      if (new_match) return WatchEvent::Type::Added;
      if (old_match) return WatchEvent::Type::Deleted;
      return std::nullopt;
    default:
      return type;
  }
}

}  // namespace

FakeClient::FakeClient() = default;

FakeClient::~FakeClient() {
  std::lock_guard g(mu_);
  for (auto& w : watchers_) w->close();
}

std::optional<ApiError> FakeClient::take_failure(Verb verb) {
  auto it = failures_.find(verb);
  if (it == failures_.end() || it->second.empty()) return std::nullopt;
  ApiError e = std::move(it->second.front());
  it->second.pop_front();
  return e;
}

void FakeClient::record(Verb verb, const GroupVersionResource& r, std::string_view ns, std::string_view name) {
  writes_.push_back(WriteRecord{verb, r.group_resource(), std::string(ns), std::string(name)});
}

void FakeClient::emit_locked(const GroupVersionResource& r, WatchEvent::Type type, std::string obj,
                             std::string old_obj, int64_t rv) {
  auto& res = resources_[r.group_resource()];
  std::erase_if(watchers_, [](const auto& w) { return w->is_closed(); });
  if (!paused_) {
    std::optional<json::Document> parsed, parsed_old;
    for (auto& w : watchers_) {
      if (w->resource != r.group_resource()) continue;
      if (!parsed) {
        parsed = parse_stored(obj);
        if (!old_obj.empty()) parsed_old = parse_stored(old_obj);
      }
      bool new_match = w->wants(parsed->root());
      bool old_match = parsed_old && w->wants(parsed_old->root());
      if (type == WatchEvent::Type::Deleted) old_match = new_match;
      if (auto t = visible_type(type, old_match, new_match)) w->push(WatchEvent{*t, *parsed, {}});
    }
  }
  res.history.push_back(Resource::Event{rv, type, std::move(obj), std::move(old_obj)});
  if (res.history.size() > kHistory) {
    compacted_ = std::max(compacted_, res.history.front().rv);
    res.history.pop_front();
  }
}

ApiResult<json::Document> FakeClient::get(const GroupVersionResource& r, std::string_view ns, std::string_view name) {
  std::lock_guard g(mu_);
  if (auto e = take_failure(Verb::Get)) return fail(*e);
  auto& objs = resources_[r.group_resource()].objects;
  auto it = objs.find(object_key(ns, name));
  if (it == objs.end()) return fail(not_found(r, name));
  return parse_stored(it->second);
}

ApiResult<json::Document> FakeClient::list(const GroupVersionResource& r, std::string_view ns,
                                           const ListOptions& opts) {
  std::lock_guard g(mu_);
  ++list_calls_;
  if (auto e = take_failure(Verb::List)) return fail(*e);
  auto labels = parse_labels(opts.label_selector);
  if (!labels) return fail(labels.error());
  auto fields = parse_selector(opts.field_selector, true);
  if (!fields) return fail(fields.error());

  int64_t list_rv = rv_;
  std::string after;
  if (!opts.continue_token.empty()) {
    auto bar = opts.continue_token.find('|');
    if (bar == std::string::npos) return fail(bad_request(fmt::format("continue token '{}' is malformed", opts.continue_token)));
    list_rv = parse_rv(std::string_view(opts.continue_token).substr(0, bar));
    after = opts.continue_token.substr(bar + 1);
    if (list_rv < compacted_) {
      return fail(api_error(ApiError::Reason::Expired, 410,
                            "The provided continue parameter is too old to display a consistent list result."));
    }
  }

  auto& objs = resources_[r.group_resource()].objects;
  std::string prefix = ns.empty() ? "" : std::string(ns) + "/";
  auto it = after.empty() ? objs.lower_bound(prefix) : objs.upper_bound(after);
  bool filter = !labels->empty() || !fields->empty();
  std::string items;
  int64_t count = 0;
  std::string last_key;
  bool more = false;
  for (; it != objs.end(); ++it) {
    if (!prefix.empty() && it->first.compare(0, prefix.size(), prefix) != 0) break;
    if (filter) {
      auto obj = parse_stored(it->second);
      if (!labels_match(*labels, obj.root()) || !matches(*fields, obj.root(), true)) continue;
    }
    if (opts.limit > 0 && count == opts.limit) {
      more = true;
      break;
    }
    if (count > 0) items += ',';
    items += it->second;
    last_key = it->first;
    ++count;
  }
  std::string api_version = r.group.empty() ? r.version : r.group + "/" + r.version;
  std::string meta = fmt::format("\"resourceVersion\":\"{}\"", list_rv);
  if (more) meta += fmt::format(",\"continue\":\"{}|{}\"", list_rv, last_key);
  std::string text =
      fmt::format("{{\"apiVersion\":\"{}\",\"kind\":\"List\",\"metadata\":{{{}}},\"items\":[{}]}}", api_version, meta, items);
  auto d = opts.fields ? json::Document::parse(text, list_fields(*opts.fields)) : json::Document::parse(text);
  if (!d) return fail(api_error(ApiError::Reason::BadResponse, 0, d.error().message));
  return std::move(*d);
}

ApiResult<json::Document> FakeClient::create(const GroupVersionResource& r, std::string_view ns,
                                             const json::Value& obj, const WriteOptions& opts) {
  std::lock_guard g(mu_);
  if (auto e = take_failure(Verb::Create)) return fail(*e);
  return shaped(create_locked(r, ns, obj, true), opts.response_fields);
}

json::Document FakeClient::seed(const GroupVersionResource& r, const json::Value& obj) {
  std::lock_guard g(mu_);
  auto res = create_locked(r, std::string(json::get_string(obj, "/metadata/namespace").value_or("")), obj, false);
  return res ? std::move(*res) : json::Document();
}

ApiResult<json::Document> FakeClient::create_locked(const GroupVersionResource& r, std::string_view ns,
                                                    const json::Value& obj, bool record_write) {
  if (!obj.IsObject()) return fail(bad_request("create: the body is not a JSON object"));
  auto doc = json::Document::copy_of(obj);
  auto obj_ns = json::get_string(doc.root(), "/metadata/namespace");
  if (obj_ns && !ns.empty() && *obj_ns != ns) {
    return fail(bad_request(fmt::format("the namespace of the provided object ({}) does not match the namespace sent on "
                                        "the request ({})", *obj_ns, ns)));
  }
  if (!ns.empty()) (void)json::set_string(doc, "/metadata/namespace", ns);
  std::string name(json::get_string(doc.root(), "/metadata/name").value_or(""));
  if (name.empty()) {
    auto gen = json::get_string(doc.root(), "/metadata/generateName");
    if (!gen) return fail(api_error(ApiError::Reason::Invalid, 422, "metadata.name: Required value: name or generateName is required"));
    name = fmt::format("{}{:05x}", *gen, ++uid_counter_ & 0xfffff);
    (void)json::set_string(doc, "/metadata/name", name);
  }
  auto key = object_key(ns, name);
  auto& res = resources_[r.group_resource()];
  if (res.objects.count(key)) {
    return fail(api_error(ApiError::Reason::AlreadyExists, 409,
                          fmt::format("{} \"{}\" already exists", r.group_resource(), name)));
  }
  int64_t rv = ++rv_;
  (void)json::set_string(doc, "/metadata/uid", fmt::format("00000000-0000-4000-8000-{:012x}", ++uid_counter_));
  (void)json::set_string(doc, "/metadata/resourceVersion", std::to_string(rv));
  if (!json::find(doc.root(), "/metadata/creationTimestamp")) {
    (void)json::set_string(doc, "/metadata/creationTimestamp", "2024-01-02T03:04:05Z");
  }
  std::string text = doc.dump();
  res.objects[key] = text;
  if (record_write) record(Verb::Create, r, ns, name);
  emit_locked(r, WatchEvent::Type::Added, std::move(text), {}, rv);
  return doc;
}

ApiResult<json::Document> FakeClient::store_update_locked(const GroupVersionResource& r, std::string_view ns,
                                                          std::string_view name, json::Document updated, Verb verb) {
  auto& res = resources_[r.group_resource()];
  auto key = object_key(ns, name);
  auto it = res.objects.find(key);
  if (it == res.objects.end()) return fail(not_found(r, name));
  std::string old_text = it->second;
  auto old = parse_stored(old_text);
  // Identity fields are the server's, whatever the client sent.
  for (const char* p : {"/metadata/uid", "/metadata/creationTimestamp", "/metadata/namespace", "/metadata/name"}) {
    if (const auto* v = json::find(old.root(), p)) (void)json::set(updated, p, json::clone(*v, updated.alloc()));
  }
  int64_t rv = ++rv_;
  (void)json::set_string(updated, "/metadata/resourceVersion", std::to_string(rv));
  record(verb, r, ns, name);
  const auto* finalizers = json::find(updated.root(), "/metadata/finalizers");
  bool finalized = json::find(updated.root(), "/metadata/deletionTimestamp") &&
                   (!finalizers || !finalizers->IsArray() || finalizers->Empty());
  std::string text = updated.dump();
  if (finalized) {
    // The last finalizer is gone from an object being deleted: the deletion completes.
    res.objects.erase(it);
    emit_locked(r, WatchEvent::Type::Deleted, text, std::move(old_text), rv);
    return updated;
  }
  it->second = text;
  emit_locked(r, WatchEvent::Type::Modified, std::move(text), std::move(old_text), rv);
  return updated;
}

namespace {
// Update semantics shared by update and update_status: the main resource ignores status, the
// status subresource ignores everything else (resources with a status subresource, as the
// operator's pods, services and jobs are).
json::Document merge_for_update(const json::Value& old, const json::Value& incoming, bool status_only) {
  json::Document out = json::Document::copy_of(status_only ? old : incoming);
  const json::Value* status = json::find(status_only ? incoming : old, "/status");
  if (status) {
    (void)json::set(out, "/status", json::clone(*status, out.alloc()));
  } else {
    json::remove(out, "/status");
  }
  return out;
}
}  // namespace

ApiResult<json::Document> FakeClient::update(const GroupVersionResource& r, std::string_view ns,
                                             const json::Value& obj, const WriteOptions& opts) {
  std::lock_guard g(mu_);
  if (auto e = take_failure(Verb::Update)) return fail(*e);
  std::string name(json::get_string(obj, "/metadata/name").value_or(""));
  auto& objs = resources_[r.group_resource()].objects;
  auto it = objs.find(object_key(ns, name));
  if (it == objs.end()) return fail(not_found(r, name));
  auto old = parse_stored(it->second);
  auto sent_rv = json::get_string(obj, "/metadata/resourceVersion");
  if (sent_rv && !sent_rv->empty() && *sent_rv != json::get_string(old.root(), "/metadata/resourceVersion")) {
    return fail(conflict(r, name));
  }
  return shaped(store_update_locked(r, ns, name, merge_for_update(old.root(), obj, false), Verb::Update),
                opts.response_fields);
}

ApiResult<json::Document> FakeClient::update_status(const GroupVersionResource& r, std::string_view ns,
                                                    const json::Value& obj, const WriteOptions& opts) {
  std::lock_guard g(mu_);
  if (auto e = take_failure(Verb::UpdateStatus)) return fail(*e);
  std::string name(json::get_string(obj, "/metadata/name").value_or(""));
  auto& objs = resources_[r.group_resource()].objects;
  auto it = objs.find(object_key(ns, name));
  if (it == objs.end()) return fail(not_found(r, name));
  auto old = parse_stored(it->second);
  auto sent_rv = json::get_string(obj, "/metadata/resourceVersion");
  if (sent_rv && !sent_rv->empty() && *sent_rv != json::get_string(old.root(), "/metadata/resourceVersion")) {
    return fail(conflict(r, name));
  }
  return shaped(store_update_locked(r, ns, name, merge_for_update(old.root(), obj, true), Verb::UpdateStatus),
                opts.response_fields);
}

ApiResult<json::Document> FakeClient::patch(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                                            PatchType type, std::string_view body, const PatchOptions& opts,
                                            std::string_view subresource) {
  std::lock_guard g(mu_);
  if (auto e = take_failure(Verb::Patch)) return fail(*e);
  auto& objs = resources_[r.group_resource()].objects;
  auto it = objs.find(object_key(ns, name));
  if (it == objs.end()) return fail(not_found(r, name));
  auto old = parse_stored(it->second);
  auto patch_doc = json::Document::parse(body);
  if (!patch_doc) return fail(bad_request(fmt::format("patch body: {}", patch_doc.error().message)));
  json::Document patched = old;
  switch (type) {
    case PatchType::Merge:
      if (!patch_doc->root().IsObject()) return fail(bad_request("merge patch body is not a JSON object"));
      json::apply_merge_patch(patched, patch_doc->root());
      break;
    case PatchType::Strategic:
      if (auto s = json::apply_strategic_merge_patch(patched, patch_doc->root(), &json::kubernetes_merge_key); !s) {
        return fail(bad_request(s.error().message));
      }
      break;
    case PatchType::JSON:
      if (auto s = json::apply_json_patch(patched, patch_doc->root()); !s) {
        return fail(api_error(ApiError::Reason::Invalid, 422, s.error().message));
      }
      break;
    case PatchType::Apply:
      return fail(api_error(ApiError::Reason::UnsupportedMediaType, 415,
                            "the fake client does not implement server-side apply"));
  }
  auto old_rv = json::get_string(old.root(), "/metadata/resourceVersion");
  auto new_rv = json::get_string(patched.root(), "/metadata/resourceVersion");
  // A resourceVersion in the patch is a precondition, as on the API server.
  if (new_rv != old_rv) return fail(conflict(r, name));
  bool status_only = subresource == "status";
  return shaped(store_update_locked(r, ns, name, merge_for_update(old.root(), patched.root(), status_only),
                                    status_only ? Verb::UpdateStatus : Verb::Patch),
                opts.response_fields);
}

ApiResult<json::Document> FakeClient::remove(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                                             const DeleteOptions& opts) {
  std::lock_guard g(mu_);
  if (auto e = take_failure(Verb::Delete)) return fail(*e);
  return shaped(remove_locked(r, ns, name, opts), opts.response_fields);
}

ApiResult<json::Document> FakeClient::remove_locked(const GroupVersionResource& r, std::string_view ns,
                                                    std::string_view name, const DeleteOptions& opts) {
  auto& res = resources_[r.group_resource()];
  auto it = res.objects.find(object_key(ns, name));
  if (it == res.objects.end()) return fail(not_found(r, name));
  auto obj = parse_stored(it->second);
  if (opts.precondition_uid && json::get_string(obj.root(), "/metadata/uid") != *opts.precondition_uid) {
    return fail(api_error(ApiError::Reason::Conflict, 409,
                          fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: {}",
                                      *opts.precondition_uid,
                                      json::get_string(obj.root(), "/metadata/uid").value_or(""))));
  }
  if (opts.precondition_resource_version &&
      json::get_string(obj.root(), "/metadata/resourceVersion") != *opts.precondition_resource_version) {
    return fail(conflict(r, name));
  }
  const auto* finalizers = json::find(obj.root(), "/metadata/finalizers");
  if (finalizers && finalizers->IsArray() && !finalizers->Empty()) {
    if (json::find(obj.root(), "/metadata/deletionTimestamp")) return obj;
    (void)json::set_string(obj, "/metadata/deletionTimestamp", "2024-01-02T03:04:05Z");
    return store_update_locked(r, ns, name, std::move(obj), Verb::Delete);
  }
  std::string old_text = std::move(it->second);
  res.objects.erase(it);
  int64_t rv = ++rv_;
  (void)json::set_string(obj, "/metadata/resourceVersion", std::to_string(rv));
  record(Verb::Delete, r, ns, name);
  emit_locked(r, WatchEvent::Type::Deleted, obj.dump(), std::move(old_text), rv);
  return status_doc("Success", 200, "", "");
}

ApiResult<json::Document> FakeClient::delete_collection(const GroupVersionResource& r, std::string_view ns,
                                                        const ListOptions& selector, const DeleteOptions& opts) {
  std::lock_guard g(mu_);
  if (auto e = take_failure(Verb::DeleteCollection)) return fail(*e);
  auto labels = parse_labels(selector.label_selector);
  if (!labels) return fail(labels.error());
  auto fields = parse_selector(selector.field_selector, true);
  if (!fields) return fail(fields.error());
  std::vector<std::pair<std::string, std::string>> victims;
  for (const auto& [key, text] : resources_[r.group_resource()].objects) {
    auto obj = parse_stored(text);
    std::string obj_ns = namespace_of(obj.root());
    if (!ns.empty() && obj_ns != ns) continue;
    if (!labels_match(*labels, obj.root()) || !matches(*fields, obj.root(), true)) continue;
    victims.emplace_back(obj_ns, std::string(json::get_string(obj.root(), "/metadata/name").value_or("")));
  }
  for (const auto& [vns, vname] : victims) {
    if (auto res = remove_locked(r, vns, vname, opts); !res) return fail(res.error());
  }
  return status_doc("Success", 200, "", "");
}

ApiResult<std::unique_ptr<WatchStream>> FakeClient::watch(const GroupVersionResource& r, std::string_view ns,
                                                          const WatchOptions& opts) {
  std::lock_guard g(mu_);
  ++watch_calls_;
  if (auto e = take_failure(Verb::Watch)) return fail(*e);
  auto w = std::make_shared<Watcher>();
  w->resource = r.group_resource();
  w->ns = std::string(ns);
  w->bookmarks = opts.allow_bookmarks;
  auto labels = parse_labels(opts.label_selector);
  if (!labels) return fail(labels.error());
  auto fields = parse_selector(opts.field_selector, true);
  if (!fields) return fail(fields.error());
  w->labels = std::move(*labels);
  w->fields = std::move(*fields);
  w->object_fields = opts.fields;

  auto& res = resources_[r.group_resource()];
  if (opts.resource_version.empty() || opts.resource_version == "0") {
    // Like the API server: a watch without a version starts with the current state as ADDED.
    for (const auto& [key, text] : res.objects) {
      auto obj = parse_stored(text);
      if (w->wants(obj.root())) w->push(WatchEvent{WatchEvent::Type::Added, std::move(obj), {}});
    }
  } else {
    int64_t from = parse_rv(opts.resource_version);
    if (from < 0) return fail(bad_request(fmt::format("resourceVersion '{}' is not a number", opts.resource_version)));
    if (from < compacted_) {
      // A real API server accepts the watch and reports expiry as its first event.
      w->push(WatchEvent{WatchEvent::Type::Error,
                         status_doc("Failure", 410, "Expired",
                                    fmt::format("too old resource version: {} ({})", from, compacted_)), {}});
      w->close();
      return std::unique_ptr<WatchStream>(std::make_unique<FakeWatchStream>(w));
    }
    for (const auto& ev : res.history) {
      if (ev.rv <= from) continue;
      auto obj = parse_stored(ev.obj);
      bool new_match = w->wants(obj.root());
      bool old_match = ev.type == WatchEvent::Type::Deleted
                           ? new_match
                           : (!ev.old_obj.empty() && w->wants(parse_stored(ev.old_obj).root()));
      if (auto t = visible_type(ev.type, old_match, new_match)) w->push(WatchEvent{*t, std::move(obj), {}});
    }
  }
  watchers_.push_back(w);
  return std::unique_ptr<WatchStream>(std::make_unique<FakeWatchStream>(w));
}

void FakeClient::fail_next(Verb verb, ApiError error) {
  std::lock_guard g(mu_);
  failures_[verb].push_back(std::move(error));
}

void FakeClient::compact(int64_t rv) {
  std::lock_guard g(mu_);
  compacted_ = std::max(compacted_, rv);
  for (auto& [name, res] : resources_) {
    while (!res.history.empty() && res.history.front().rv < compacted_) res.history.pop_front();
  }
}

void FakeClient::expire_watches(const GroupVersionResource& r) {
  std::lock_guard g(mu_);
  for (auto& w : watchers_) {
    if (w->resource != r.group_resource()) continue;
    w->push(WatchEvent{WatchEvent::Type::Error,
                       status_doc("Failure", 410, "Expired", fmt::format("too old resource version: ({})", rv_)), {}});
    w->close();
  }
}

void FakeClient::close_watches(const GroupVersionResource& r) {
  std::lock_guard g(mu_);
  for (auto& w : watchers_) {
    if (w->resource == r.group_resource()) w->close();
  }
}

void FakeClient::send_bookmark(const GroupVersionResource& r) {
  std::lock_guard g(mu_);
  for (auto& w : watchers_) {
    if (w->resource != r.group_resource() || !w->bookmarks) continue;
    auto d = json::Document::object();
    (void)json::set_string(d, "/metadata/resourceVersion", std::to_string(rv_));
    w->push(WatchEvent{WatchEvent::Type::Bookmark, std::move(d), {}});
  }
}

void FakeClient::pause_watch_delivery(bool paused) {
  std::lock_guard g(mu_);
  paused_ = paused;
}

int FakeClient::open_watches(const GroupVersionResource& r) const {
  std::lock_guard g(mu_);
  int n = 0;
  for (const auto& w : watchers_) {
    if (w->resource == r.group_resource() && !w->is_closed()) ++n;
  }
  return n;
}

int FakeClient::watch_calls() const {
  std::lock_guard g(mu_);
  return watch_calls_;
}

int FakeClient::list_calls() const {
  std::lock_guard g(mu_);
  return list_calls_;
}

std::vector<FakeClient::WriteRecord> FakeClient::writes() const {
  std::lock_guard g(mu_);
  return writes_;
}

size_t FakeClient::write_count() const {
  std::lock_guard g(mu_);
  return writes_.size();
}

void FakeClient::clear_writes() {
  std::lock_guard g(mu_);
  writes_.clear();
}

int64_t FakeClient::resource_version() const {
  std::lock_guard g(mu_);
  return rv_;
}

}  // namespace unitrain::kube
