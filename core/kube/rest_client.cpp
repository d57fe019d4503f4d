#include "core/kube/rest_client.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/kube/watch_decoder.h"

namespace unitrain::kube {
namespace {

using Reason = ApiError::Reason;
using Clock = std::chrono::steady_clock;

// Appends `s` percent-encoded (RFC 3986 unreserved characters stay as they are).
void append_escaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
}

class QueryBuilder {
 public:
  void add(std::string_view key, std::string_view value) {
    out_ += out_.empty() ? '?' : '&';
    out_ += key;
    out_ += '=';
    append_escaped(out_, value);
  }
  void add_if(std::string_view key, std::string_view value) {
    if (!value.empty()) add(key, value);
  }
  std::string str() && { return std::move(out_); }

 private:
  std::string out_;
};

ApiError client_error(std::string message) {
  ApiError e;
  e.reason = Reason::BadRequest;
  e.message = std::move(message);
  return e;
}

std::string snippet(std::string_view body) {
  constexpr size_t kMax = 200;
  std::string s(body.substr(0, kMax));
  for (auto& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  if (body.size() > kMax) s += "...";
  return s;
}

std::string_view object_name(const json::Value& obj) {
  return json::get_string(obj, "/metadata/name").value_or(std::string_view{});
}

// The namespace argument wins; an object written without one may carry it in its metadata.
std::string_view object_namespace(std::string_view ns, const json::Value& obj) {
  if (!ns.empty()) return ns;
  return json::get_string(obj, "/metadata/namespace").value_or(std::string_view{});
}

class RestWatchStream final : public WatchStream {
 public:
  RestWatchStream(std::unique_ptr<BodyStream> body, std::shared_ptr<const json::FieldMask> fields,
                  std::shared_ptr<const json::CurrentCodes> text_codes)
      : body_(std::move(body)), decoder_(std::move(fields)) {
    decoder_.write_text_with(std::move(text_codes));
  }

  ApiResult<std::optional<WatchEvent>> next(std::chrono::milliseconds wait) override {
    timed_out_ = false;
    const auto deadline = Clock::now() + wait;
    for (;;) {
      auto ev = decoder_.next();
      if (!ev) {
        ApiError e;
        e.reason = Reason::BadResponse;
        e.code = body_->head().status;
        e.message = ev.error().message;
        return fail(std::move(e));
      }
      if (*ev) return std::move(*ev);
      if (ended_) return std::optional<WatchEvent>{};
      const auto now = Clock::now();
      if (now >= deadline) {
        timed_out_ = true;
        return std::optional<WatchEvent>{};
      }
      chunk_.clear();
      auto r = body_->read(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) +
                               std::chrono::milliseconds(1),
                           chunk_);
      if (!r) return fail(from_transport_error(r.error()));
      switch (*r) {
        case BodyStream::Read::Data:
          decoder_.feed(chunk_);
          break;
        case BodyStream::Read::End:
          if (auto s = decoder_.finish(); !s) {
            ApiError e;
            e.reason = Reason::BadResponse;
            e.code = body_->head().status;
            e.message = s.error().message;
            return fail(std::move(e));
          }
          ended_ = true;
          break;
        case BodyStream::Read::Timeout:
          timed_out_ = true;
          return std::optional<WatchEvent>{};
      }
    }
  }

  bool timed_out() const override { return timed_out_; }
  void cancel() override { body_->cancel(); }

 private:
  std::unique_ptr<BodyStream> body_;
  WatchDecoder decoder_;
  std::string chunk_;
  bool timed_out_ = false;
  bool ended_ = false;
};

}  // namespace

std::string url_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  append_escaped(out, s);
  return out;
}

// Built in one string, sized for the common case (nothing to escape), as it runs per request.
std::string resource_path(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                          std::string_view subresource) {
  // A namespace object itself is cluster-scoped: /api/v1/namespaces/NAME.
  const bool namespaced = !ns.empty() && !(r.group.empty() && r.resource == "namespaces");
  std::string p;
  p.reserve(std::string_view("/apis//namespaces///").size() + 2 + r.group.size() + r.version.size() +
            (namespaced ? ns.size() : 0) + r.resource.size() + name.size() + subresource.size());
  if (r.group.empty()) {
    p += "/api/";
  } else {
    p += "/apis/";
    append_escaped(p, r.group);
    p += '/';
  }
  append_escaped(p, r.version);
  if (namespaced) {
    p += "/namespaces/";
    append_escaped(p, ns);
  }
  p += '/';
  append_escaped(p, r.resource);
  if (!name.empty()) {
    p += '/';
    append_escaped(p, name);
    if (!subresource.empty()) {
      p += '/';
      append_escaped(p, subresource);
    }
  }
  return p;
}

std::string list_query(const ListOptions& o) {
  QueryBuilder q;
  q.add_if("labelSelector", o.label_selector);
  q.add_if("fieldSelector", o.field_selector);
  if (o.limit > 0) q.add("limit", std::to_string(o.limit));
  q.add_if("continue", o.continue_token);
  q.add_if("resourceVersion", o.resource_version);
  q.add_if("resourceVersionMatch", o.resource_version_match);
  return std::move(q).str();
}

std::string watch_query(const WatchOptions& o) {
  QueryBuilder q;
  q.add("watch", "true");
  q.add_if("labelSelector", o.label_selector);
  q.add_if("fieldSelector", o.field_selector);
  q.add_if("resourceVersion", o.resource_version);
  if (o.allow_bookmarks) q.add("allowWatchBookmarks", "true");
  if (o.timeout_seconds) q.add("timeoutSeconds", std::to_string(*o.timeout_seconds));
  return std::move(q).str();
}

const char* patch_content_type(PatchType t) {
  switch (t) {
    case PatchType::Merge: return "application/merge-patch+json";
    case PatchType::JSON: return "application/json-patch+json";
    case PatchType::Strategic: return "application/strategic-merge-patch+json";
    case PatchType::Apply: return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

std::string delete_options_body(const DeleteOptions& o) {
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  d.root().AddMember("kind", "DeleteOptions", a);
  d.root().AddMember("apiVersion", "v1", a);
  if (o.grace_period_seconds) d.root().AddMember("gracePeriodSeconds", json::Value(*o.grace_period_seconds), a);
  if (o.precondition_uid || o.precondition_resource_version) {
    json::Value pre(rapidjson::kObjectType);
    if (o.precondition_uid) pre.AddMember("uid", json::str(*o.precondition_uid, a), a);
    if (o.precondition_resource_version)
      pre.AddMember("resourceVersion", json::str(*o.precondition_resource_version, a), a);
    d.root().AddMember("preconditions", pre, a);
  }
  if (o.propagation_policy) d.root().AddMember("propagationPolicy", json::str(*o.propagation_policy, a), a);
  return d.dump();
}

ApiError::Reason reason_for_code(int code) {
  switch (code) {
    case 400: return Reason::BadRequest;
    case 401: return Reason::Unauthorized;
    case 403: return Reason::Forbidden;
    case 404: return Reason::NotFound;
    case 405: return Reason::MethodNotAllowed;
    case 406: return Reason::NotAcceptable;
    case 409: return Reason::Conflict;
    case 410: return Reason::Gone;
    case 413: return Reason::RequestEntityTooLarge;
    case 415: return Reason::UnsupportedMediaType;
    case 422: return Reason::Invalid;
    case 429: return Reason::TooManyRequests;
    case 500: return Reason::InternalError;
    case 503: return Reason::ServiceUnavailable;
    case 504: return Reason::Timeout;
    default: return Reason::Unknown;
  }
}

std::optional<ApiError::Reason> parse_reason(std::string_view s) {
  static constexpr std::pair<std::string_view, Reason> kReasons[] = {
      {"NotFound", Reason::NotFound},
      {"AlreadyExists", Reason::AlreadyExists},
      {"Conflict", Reason::Conflict},
      {"Invalid", Reason::Invalid},
      {"Forbidden", Reason::Forbidden},
      {"Unauthorized", Reason::Unauthorized},
      {"Gone", Reason::Gone},
      {"TooManyRequests", Reason::TooManyRequests},
      {"Timeout", Reason::Timeout},
      {"ServerTimeout", Reason::ServerTimeout},
      {"InternalError", Reason::InternalError},
      {"BadRequest", Reason::BadRequest},
      {"MethodNotAllowed", Reason::MethodNotAllowed},
      {"NotAcceptable", Reason::NotAcceptable},
      {"UnsupportedMediaType", Reason::UnsupportedMediaType},
      {"RequestEntityTooLarge", Reason::RequestEntityTooLarge},
      {"ServiceUnavailable", Reason::ServiceUnavailable},
      {"Expired", Reason::Expired},
  };
  for (const auto& [name, r] : kReasons)
    if (name == s) return r;
  return std::nullopt;
}

ApiError decode_status(int code, std::string_view body, std::optional<std::string_view> retry_after_header) {
  ApiError e;
  e.code = code;
  e.reason = reason_for_code(code);
  if (retry_after_header) e.retry_after = http::parse_retry_after(*retry_after_header);

  auto doc = json::Document::parse(body);
  const bool is_status = doc && doc->root().IsObject() &&
                         (json::get_string(doc->root(), "/kind") == std::optional<std::string_view>("Status") ||
                          doc->root().HasMember("reason") || doc->root().HasMember("status"));
  if (!is_status) {
    // client-go keeps the code's reason for a body that is not a Status (e.g. a proxy's HTML);
    // a code that implies nothing is a response we cannot interpret.
    if (e.reason == Reason::Unknown) e.reason = Reason::BadResponse;
    std::string why = body.empty() ? "empty body" : !doc ? "body is not JSON: " + doc.error().message
                                                          : "body is not a metav1.Status";
    e.message = fmt::format("HTTP {} ({}){}{}", code, why, body.empty() ? "" : ": ", snippet(body));
    return e;
  }
  const json::Value& s = doc->root();
  if (auto r = json::get_string(s, "/reason"); r && !r->empty()) {
    if (auto parsed = parse_reason(*r)) e.reason = *parsed;
  }
  if (auto m = json::get_string(s, "/message"); m && !m->empty()) e.message = std::string(*m);
  else e.message = fmt::format("the server responded with HTTP {} and no message", code);
  if (!e.retry_after) {
    if (auto ra = json::get_int(s, "/details/retryAfterSeconds"); ra && *ra > 0) e.retry_after = std::chrono::seconds(*ra);
  }
  if (const json::Value* causes = json::find(s, "/details/causes"); causes && causes->IsArray()) {
    for (const auto& c : causes->GetArray()) {
      if (!c.IsObject()) continue;
      ApiError::Cause cause;
      cause.type = std::string(json::get_string(c, "/reason").value_or(""));
      cause.message = std::string(json::get_string(c, "/message").value_or(""));
      cause.field = std::string(json::get_string(c, "/field").value_or(""));
      e.causes.push_back(std::move(cause));
    }
  }
  return e;
}

ApiError from_transport_error(const http::TransportError& t) {
  ApiError e;
  e.reason = t.kind == http::TransportError::Kind::Cancelled ? Reason::Cancelled : Reason::Transport;
  e.message = t.message;
  return e;
}

std::optional<std::chrono::milliseconds> retry_delay(const RetryPolicy& p, std::string_view method, int attempt,
                                                     const AttemptOutcome& o) {
  using std::chrono::milliseconds;
  if (attempt >= p.max_retries) return std::nullopt;
  auto backoff = [&] {
    auto d = p.base_backoff;
    for (int i = 0; i < attempt && d < p.max_backoff; ++i) d *= 2;
    return std::min(d, p.max_backoff);
  };
  auto after = [&](std::chrono::seconds s) {
    return std::chrono::duration_cast<milliseconds>(std::min(s, p.max_retry_after));
  };
  const bool idempotent_read = method == "GET" || method == "HEAD";
  if (o.transport_error) {
    using K = http::TransportError::Kind;
    switch (o.transport_error->kind) {
      case K::Resolve:
      case K::Connect:
        return backoff();  // nothing reached the server
      case K::ConnectionLost:
      case K::Timeout:
        if (idempotent_read || !o.transport_error->request_sent) return backoff();
        return std::nullopt;
      case K::Tls:
      case K::TlsVerify:
      case K::Protocol:
      case K::Cancelled:
        return std::nullopt;
    }
    return std::nullopt;
  }
  if (o.status == 429) return o.retry_after ? after(*o.retry_after) : backoff();
  if (o.status >= 500 && o.status != 501) {
    if (o.retry_after) return after(*o.retry_after);
    if (idempotent_read) return backoff();
  }
  return std::nullopt;
}

// ---- RestClient -----------------------------------------------------------------------------

RestClient::RestClient(PassKey<RestClient>, RestConfig cfg, RestClientOptions opts, std::unique_ptr<Transport> t)
    : cfg_(std::move(cfg)), opts_(std::move(opts)), transport_(std::move(t)), limiter_(cfg_.qps, cfg_.burst) {
  if (!opts_.sleep) {
    opts_.sleep = [stop = opts_.stop](std::chrono::milliseconds d) {
      std::mutex mu;
      std::condition_variable_any cv;
      std::unique_lock lock(mu);
      cv.wait_for(lock, stop, d, [] { return false; });
    };
  }
}

Result<std::unique_ptr<RestClient>> RestClient::create(const RestConfig& cfg, RestClientOptions opts) {
  auto t = Transport::create(cfg, opts.transport);
  if (!t) return fail(t.error());
  return std::make_unique<RestClient>(PassKey<RestClient>{}, cfg, std::move(opts), std::move(*t));
}

bool RestClient::wait_to_retry(std::chrono::milliseconds delay) {
  if (opts_.stop.stop_requested()) return false;
  opts_.sleep(delay);
  return !opts_.stop.stop_requested();
}

void RestClient::report(const http::Request& req, Clock::time_point started, int status,
                        const http::TransportError* error) const {
  if (!opts_.on_attempt) return;
  AttemptReport report;
  report.method = req.method;
  report.target = req.target;
  report.took = Clock::now() - started;
  report.status = status;
  report.transport_error = error;
  opts_.on_attempt(report);
}

bool RestClient::take_tokens(size_t n) {
  const auto wait = limiter_.reserve(n);
  if (wait.count() <= 0) return true;
  if (!opts_.stop_ends_rate_limit_wait) {
    std::this_thread::sleep_for(wait);
    return true;
  }
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_for(lock, opts_.stop, wait, [] { return false; });
  return !opts_.stop.stop_requested();
}

namespace {
ApiError stopped_waiting(const http::Request& req) {
  ApiError e;
  e.reason = Reason::Cancelled;
  e.message = fmt::format("{} {}: stopping; the request was still waiting for the client's rate limit", req.method, req.target);
  return e;
}
}  // namespace

ApiResult<http::Response> RestClient::execute(const http::Request& req, std::optional<Sent> first) {
  for (int attempt = 0;; ++attempt) {
    std::optional<Sent> sent;
    if (attempt == 0 && first) {
      sent.emplace(std::move(*first));
    } else {
      if (!take_tokens()) return fail(stopped_waiting(req));
      const auto started = Clock::now();
      sent.emplace(transport_->send(req));
      report(req, started, *sent ? (*sent)->status : 0, *sent ? nullptr : &sent->error());
    }
    auto& r = *sent;
    if (!r) {
      AttemptOutcome o;
      o.transport_error = &r.error();
      if (auto d = retry_delay(opts_.retry, req.method, attempt, o); d && wait_to_retry(*d)) continue;
      return fail(from_transport_error(r.error()));
    }
    if (r->status >= 200 && r->status < 300) return std::move(*r);
    auto ra_header = r->header("Retry-After");
    AttemptOutcome o;
    o.status = r->status;
    if (ra_header) o.retry_after = http::parse_retry_after(*ra_header);
    if (auto d = retry_delay(opts_.retry, req.method, attempt, o); d && wait_to_retry(*d)) continue;
    ApiError e = decode_status(r->status, r->body, ra_header);
    return fail(std::move(e));
  }
}

namespace {
http::Request json_request(std::string method, std::string target, std::string body, std::string content_type) {
  http::Request req;
  req.method = std::move(method);
  req.target = std::move(target);
  req.body = std::move(body);
  req.headers.push_back({"Accept", "application/json"});
  if (!content_type.empty()) req.headers.push_back({"Content-Type", std::move(content_type)});
  return req;
}
}  // namespace

ApiResult<json::Document> RestClient::decode(const http::Request& req, ApiResult<http::Response> r,
                                             const json::FieldMask* fields) const {
  if (!r) return fail(std::move(r.error()));
  // The caller reads nothing of it: a 2xx status is the whole answer, the body is not scanned.
  if (keeps_nothing(fields)) return json::Document::object();
  auto doc = fields ? json::Document::parse(r->body, *fields) : json::Document::parse(r->body);
  if (!doc) {
    ApiError e;
    e.reason = Reason::BadResponse;
    e.code = r->status;
    e.message = fmt::format("{} {}: HTTP {} response {}: {}", req.method, req.target, r->status,
                            r->body.empty() ? "has an empty body" : "is not valid JSON", doc.error().message);
    return fail(std::move(e));
  }
  return std::move(*doc);
}

ApiResult<json::Document> RestClient::request_json(std::string method, std::string target, std::string body,
                                                   std::string content_type, const json::FieldMask* fields) {
  const http::Request req = json_request(std::move(method), std::move(target), std::move(body), std::move(content_type));
  return decode(req, execute(req), fields);
}

std::vector<CreateOutcome> RestClient::create_all(const GroupVersionResource& r, std::span<const json::Document> objects,
                                                  const WriteOptions& opts) {
  std::vector<std::optional<CreateOutcome>> outcomes(objects.size());
  std::vector<http::Request> reqs;
  std::vector<size_t> of_request;  // the object each request creates
  reqs.reserve(objects.size());
  for (size_t i = 0; i < objects.size(); ++i) {
    const json::Value& obj = objects[i].root();
    if (auto refused = unnamed_create(r, obj)) {
      outcomes[i].emplace(CreateOutcome{fail(std::move(*refused)), false});
      continue;
    }
    reqs.push_back(json_request("POST", resource_path(r, object_namespace({}, obj)), json::dump(obj), "application/json"));
    of_request.push_back(i);
  }
  if (!reqs.empty() && !take_tokens(reqs.size())) {
    for (size_t k = 0; k < reqs.size(); ++k)
      outcomes[of_request[k]].emplace(CreateOutcome{fail(stopped_waiting(reqs[k])), false});
    reqs.clear();
  }
  const auto started = Clock::now();
  auto sent = transport_->send_pipelined(reqs);
  for (size_t k = 0; k < reqs.size(); ++k) {
    // A request the exchange ended before (the server closed the connection, or it broke) has no
    // answer to go by: it is sent again on its own, on another connection, with its own token.
    // Its name makes that safe: if the first copy was stored, the second is answered
    // AlreadyExists, which the caller tells by `resent`.
    const bool resend = !sent[k] && sent[k].error().kind == http::TransportError::Kind::ConnectionLost;
    if (!resend) report(reqs[k], started, sent[k] ? sent[k]->status : 0, sent[k] ? nullptr : &sent[k].error());
    auto result = resend ? execute(reqs[k]) : execute(reqs[k], std::move(sent[k]));
    outcomes[of_request[k]].emplace(CreateOutcome{decode(reqs[k], std::move(result), opts.response_fields.get()), resend});
  }
  std::vector<CreateOutcome> out;
  out.reserve(outcomes.size());
  for (auto& o : outcomes) out.push_back(std::move(*o));
  return out;
}

ApiResult<json::Document> RestClient::get(const GroupVersionResource& r, std::string_view ns, std::string_view name) {
  if (name.empty()) return fail(client_error("get " + r.group_resource() + ": empty name"));
  return request_json("GET", resource_path(r, ns, name));
}

ApiResult<json::Document> RestClient::list(const GroupVersionResource& r, std::string_view ns, const ListOptions& o) {
  if (!o.fields) return request_json("GET", resource_path(r, ns) + list_query(o));
  const json::FieldMask fields = list_fields(*o.fields);
  return request_json("GET", resource_path(r, ns) + list_query(o), {}, {}, &fields);
}

ApiResult<json::Document> RestClient::create(const GroupVersionResource& r, std::string_view ns,
                                             const json::Value& obj, const WriteOptions& opts) {
  return request_json("POST", resource_path(r, object_namespace(ns, obj)), json::dump(obj), "application/json",
                      opts.response_fields.get());
}

ApiResult<json::Document> RestClient::put_object(const GroupVersionResource& r, std::string_view ns,
                                                 const json::Value& obj, std::string_view subresource,
                                                 const json::FieldMask* response_fields) {
  auto name = object_name(obj);
  if (name.empty()) return fail(client_error("update " + r.group_resource() + ": object has no metadata.name"));
  return request_json("PUT", resource_path(r, object_namespace(ns, obj), name, subresource), json::dump(obj),
                      "application/json", response_fields);
}

ApiResult<json::Document> RestClient::update(const GroupVersionResource& r, std::string_view ns,
                                             const json::Value& obj, const WriteOptions& opts) {
  return put_object(r, ns, obj, {}, opts.response_fields.get());
}

ApiResult<json::Document> RestClient::update_status(const GroupVersionResource& r, std::string_view ns,
                                                    const json::Value& obj, const WriteOptions& opts) {
  return put_object(r, ns, obj, "status", opts.response_fields.get());
}

ApiResult<json::Document> RestClient::patch(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                                            PatchType type, std::string_view body, const PatchOptions& opts,
                                            std::string_view subresource) {
  if (name.empty()) return fail(client_error("patch " + r.group_resource() + ": empty name"));
  if (type == PatchType::Apply && opts.field_manager.empty())
    return fail(client_error("apply " + r.group_resource() + "/" + std::string(name) + ": fieldManager is required"));
  QueryBuilder q;
  q.add_if("fieldManager", opts.field_manager);
  if (opts.force && type == PatchType::Apply) q.add("force", "true");
  return request_json("PATCH", resource_path(r, ns, name, subresource) + std::move(q).str(), std::string(body),
                      patch_content_type(type), opts.response_fields.get());
}

ApiResult<json::Document> RestClient::remove(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                                             const DeleteOptions& opts) {
  if (name.empty()) return fail(client_error("delete " + r.group_resource() + ": empty name"));
  return request_json("DELETE", resource_path(r, ns, name), delete_options_body(opts), "application/json",
                      opts.response_fields.get());
}

ApiResult<json::Document> RestClient::delete_collection(const GroupVersionResource& r, std::string_view ns,
                                                        const ListOptions& selector, const DeleteOptions& opts) {
  return request_json("DELETE", resource_path(r, ns) + list_query(selector), delete_options_body(opts),
                      "application/json");
}

ApiResult<json::Document> RestClient::get_path(std::string_view path) {
  return request_json("GET", std::string(path));
}

ApiResult<std::unique_ptr<WatchStream>> RestClient::watch(const GroupVersionResource& r, std::string_view ns,
                                                          const WatchOptions& opts) {
  http::Request req;
  req.target = resource_path(r, ns) + watch_query(opts);
  req.headers.push_back({"Accept", "application/json"});
  if (!take_tokens()) return fail(stopped_waiting(req));
  const auto started = Clock::now();
  auto s = transport_->open_stream(req);
  report(req, started, s ? (*s)->head().status : 0, s ? nullptr : &s.error());
  if (!s) return fail(from_transport_error(s.error()));
  const int status = (*s)->head().status;
  if (status != 200) {
    // The failure body is small; read it within the request timeout.
    std::string body;
    const auto deadline = Clock::now() + cfg_.timeout;
    for (;;) {
      const auto now = Clock::now();
      if (now >= deadline) break;
      auto rd = (*s)->read(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now), body);
      if (!rd || *rd != BodyStream::Read::Data) break;
    }
    return fail(decode_status(status, body, (*s)->head().header("Retry-After")));
  }
  return std::unique_ptr<WatchStream>(std::make_unique<RestWatchStream>(std::move(*s), opts.fields, opts.text_codes));
}

}  // namespace unitrain::kube
