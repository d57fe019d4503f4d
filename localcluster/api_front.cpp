#include "localcluster/webhooks.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/api/labels.h"
#include "core/kube/config.h"
#include "core/kube/transport.h"
#include "localcluster/memory_store.h"

namespace unitrain::localcluster {
namespace {

using json::Document;
using json::Value;

constexpr int kConflictRetries = 5;
// kube-apiserver's fixed timeout for conversion webhooks.
constexpr std::chrono::seconds kConversionTimeout{30};

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

void set_member(Document& d, const char* key, Value v) {
  auto& a = d.alloc();
  if (auto it = d.root().FindMember(key); it != d.root().MemberEnd()) {
    it->value = std::move(v);
  } else {
    d.root().AddMember(Value(key, a), std::move(v), a);
  }
}

// "Internal error occurred: ..." with the cause, as apierrors.NewInternalError builds it.
StatusError internal_error(const std::string& cause) {
  StatusError e = errors::internal("Internal error occurred: " + cause);
  e.details = Document::object();
  auto& a = e.details.alloc();
  Value causes(rapidjson::kArrayType);
  Value c(rapidjson::kObjectType);
  c.AddMember("message", json::str(cause, a), a);
  causes.PushBack(c, a);
  e.details.root().AddMember("causes", causes, a);
  return e;
}

std::string gvk_text(std::string_view api_version, std::string_view kind) {
  // schema.GroupVersionKind's String(): "group/version, Kind=Kind".
  return fmt::format("{}, Kind={}", api_version, kind);
}

// ---- calling a webhook ----------------------------------------------------------------------

// How a webhook is reached: the URL kube-apiserver would post to (for messages) and where this
// process connects.
struct Endpoint {
  std::string url;  // as in kube's error texts: https://<name>.<ns>.svc:<port><path>
  kube::RestConfig cfg;
  std::string target;  // path + query
};

class WebhookCaller {
 public:
  explicit WebhookCaller(const WebhookOptions& o) : options_(o) {}

  // Resolves a clientConfig (admissionregistration or apiextensions: same shape).
  Result<Endpoint> endpoint(const Value& client_config, std::chrono::seconds timeout) const {
    Endpoint ep;
    std::string query = fmt::format("?timeout={}s", timeout.count());
    if (auto ca = json::get_string(client_config, "/caBundle"); ca && !ca->empty()) {
      auto pem = kube::base64_decode(*ca);
      if (!pem) return fail("caBundle is not valid base64");
      ep.cfg.ca_pem = std::move(*pem);
    }
    if (auto url = json::get_string(client_config, "/url")) {
      if (auto s = kube::parse_server_url(*url, ep.cfg); !s) return fail("url: " + s.error().message);
      ep.target = (ep.cfg.path_prefix.empty() ? "/" : ep.cfg.path_prefix) + query;
      ep.cfg.path_prefix.clear();
      ep.url = std::string(*url) + query;
      return ep;
    }
    const Value* svc = json::find(client_config, "/service");
    if (svc == nullptr || !svc->IsObject()) return fail("clientConfig has neither url nor service");
    std::string ns = json::string_at(*svc, "/namespace"), name = json::string_at(*svc, "/name"), path = json::string_at(*svc, "/path");
    int64_t port = json::get_int(*svc, "/port").value_or(443);
    if (path.empty()) path = "/";
    std::string host = fmt::format("{}.{}.svc", name, ns);
    ep.url = fmt::format("https://{}:{}{}{}", host, port, path, query);
    ep.target = path + query;
    auto it = options_.service_endpoints.find(fmt::format("{}/{}:{}", ns, name, port));
    if (it == options_.service_endpoints.end()) {
      // What the dialer reports when the service name does not resolve.
      return fail(fmt::format("dial tcp: lookup {}: no such host (the local cluster has no pod network; map the "
                              "service with --service-endpoint {}/{}:{}=HOST:PORT)",
                              host, ns, name, port));
    }
    if (auto s = kube::parse_server_url("https://" + it->second, ep.cfg); !s) {
      return fail("service endpoint " + it->second + ": " + s.error().message);
    }
    ep.cfg.tls_server_name = host;
    return ep;
  }

  // POSTs `body` and returns the decoded response; the error reads like Go's url.Error
  // (`Post "<url>": <reason>`), which is what kube-apiserver puts in its messages.
  Result<Document> post(const Endpoint& ep, const std::string& body, std::chrono::milliseconds timeout) {
    auto transport = transport_for(ep.cfg);
    if (!transport) return fail(fmt::format("Post \"{}\": {}", ep.url, transport.error().message));
    kube::http::Request req;
    req.method = "POST";
    req.target = ep.target;
    req.headers.push_back({"Content-Type", "application/json"});
    req.headers.push_back({"Accept", "application/json, */*"});
    req.body = body;
    auto res = (*transport)->send(req, timeout);
    if (!res) {
      using K = kube::http::TransportError::Kind;
      const auto& e = res.error();
      std::string reason;
      switch (e.kind) {
        case K::Timeout:
          reason = "context deadline exceeded";
          break;
        case K::TlsVerify:
          reason = "tls: failed to verify certificate: " + e.message;
          break;
        default:
          reason = e.message;
      }
      return fail(fmt::format("Post \"{}\": {}", ep.url, reason));
    }
    if (res->status < 200 || res->status > 299) {
      return fail(fmt::format("an error on the server (\"{}\") has prevented the request from succeeding",
                              res->body.substr(0, 256)));
    }
    auto doc = Document::parse(res->body);
    if (!doc) return fail("couldn't decode the webhook response: " + doc.error().message);
    return std::move(*doc);
  }

 private:
  Result<kube::Transport*> transport_for(const kube::RestConfig& cfg) {
    std::string key = fmt::format("{}|{}|{}|{}", cfg.host, cfg.port, cfg.tls_server_name, cfg.ca_pem);
    std::lock_guard lock(mu_);
    auto it = transports_.find(key);
    if (it != transports_.end()) return it->second.get();
    auto t = kube::Transport::create(cfg);
    if (!t) return fail(t.error());
    auto* raw = t->get();
    transports_.emplace(std::move(key), std::move(*t));
    return raw;
  }

  const WebhookOptions& options_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<kube::Transport>> transports_;
};

// ---- admission configuration ------------------------------------------------------------------

enum class Operation { Create, Update, Delete };

const char* op_name(Operation op) {
  switch (op) {
    case Operation::Create:
      return "CREATE";
    case Operation::Update:
      return "UPDATE";
    case Operation::Delete:
      return "DELETE";
  }
  return "";
}

struct Webhook {
  std::string name;
  bool mutating = false;
  Document spec;  // the webhook entry of the configuration
  bool fail_closed = true;
  bool equivalent = true;
  bool reinvoke = false;
  std::chrono::seconds timeout{10};
  bool dry_run_safe = false;  // sideEffects None or NoneOnDryRun
};

// Does `rule_resource` ("pods", "pods/status", "*", "*/*", "pods/*", "*/status") cover
// resource/subresource?
bool resource_matches(std::string_view rule, std::string_view resource, std::string_view sub) {
  size_t slash = rule.find('/');
  std::string_view rr = rule.substr(0, slash);
  std::string_view rs = slash == std::string_view::npos ? std::string_view{} : rule.substr(slash + 1);
  if (rr != "*" && rr != resource) return false;
  if (slash == std::string_view::npos) return sub.empty();
  return rs == "*" || rs == sub;
}

bool rule_matches(const Value& rule, Operation op, const std::string& group, const std::string& version,
                  const std::string& resource, std::string_view sub, bool namespaced) {
  auto ops = json::strings_at(rule, "/operations");
  if (!contains(ops, "*") && !contains(ops, op_name(op))) return false;
  auto groups = json::strings_at(rule, "/apiGroups");
  if (!contains(groups, "*") && !contains(groups, group)) return false;
  auto versions = json::strings_at(rule, "/apiVersions");
  if (!contains(versions, "*") && !contains(versions, version)) return false;
  bool any = false;
  for (const auto& r : json::strings_at(rule, "/resources")) any = any || resource_matches(r, resource, sub);
  if (!any) return false;
  auto scope = json::get_string(rule, "/scope").value_or("*");
  if (scope == "Cluster") return !namespaced;
  if (scope == "Namespaced") return namespaced;
  return true;
}

bool any_rule_matches(const Webhook& h, Operation op, const std::string& group, const std::string& version,
                      const std::string& resource, std::string_view sub, bool namespaced) {
  const Value* rules = json::find(h.spec.root(), "/rules");
  if (rules == nullptr || !rules->IsArray()) return false;
  for (const auto& rule : rules->GetArray()) {
    if (rule_matches(rule, op, group, version, resource, sub, namespaced)) return true;
  }
  return false;
}

// ---- the request being admitted -------------------------------------------------------------

struct Attributes {
  const ResourceInfo* resource = nullptr;
  std::string subresource;
  std::string ns;
  std::string name;
  Operation op = Operation::Create;
  std::string options_kind;  // CreateOptions, UpdateOptions, PatchOptions, DeleteOptions
  Document options;          // extra fields of the options (propagationPolicy, fieldManager)
  bool dry_run = false;
};

// Kind and resource a subresource request is about: the scale subresource of anything is an
// autoscaling/v1 Scale; status carries the parent's kind.
std::pair<std::string, std::string> kind_of(const ResourceInfo& r, std::string_view sub) {
  if (sub == "scale") return {"autoscaling/v1", "Scale"};
  return {r.api_version(), r.kind};
}

Value group_version_kind(std::string_view api_version, std::string_view kind, json::Allocator& a) {
  size_t slash = api_version.find('/');
  std::string_view g = slash == std::string_view::npos ? std::string_view("") : api_version.substr(0, slash);
  std::string_view v = slash == std::string_view::npos ? api_version : api_version.substr(slash + 1);
  Value o(rapidjson::kObjectType);
  o.AddMember("group", json::str(g, a), a);
  o.AddMember("version", json::str(v, a), a);
  o.AddMember("kind", json::str(kind, a), a);
  return o;
}

Value group_version_resource(const ResourceInfo& r, json::Allocator& a) {
  Value o(rapidjson::kObjectType);
  o.AddMember("group", json::str(r.group, a), a);
  o.AddMember("version", json::str(r.version, a), a);
  o.AddMember("resource", json::str(r.resource, a), a);
  return o;
}


// The conversion a CRD version needs: through its webhook, or nothing (strategy None).
struct Conversion {
  ResourceInfo storage;
  Document client_config;
  std::string kind;
};

}  // namespace

// ---- the front --------------------------------------------------------------------------------

struct ApiFront::Impl {
  Impl(Store& s, WebhookOptions o) : store(s), options(std::move(o)), caller(options), rng(std::random_device{}()) {}

  Store& store;
  WebhookOptions options;
  WebhookCaller caller;
  std::mutex rng_mu;
  std::mt19937_64 rng;

  std::string new_uid() {
    std::lock_guard lock(rng_mu);
    uint64_t hi = rng(), lo = rng();
    hi = (hi & 0xFFFFFFFFFFFF0FFFull) | 0x0000000000004000ull;
    lo = (lo & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;
    return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xFFFF, hi & 0xFFFF, lo >> 48,
                       lo & 0xFFFFFFFFFFFFull);
  }

  // ---- conversion ----

  std::optional<Document> crd_of(const ResourceInfo& r) const {
    if (r.group.find('.') == std::string::npos) return std::nullopt;
    auto crd_info = store.find_resource("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    if (!crd_info) return std::nullopt;
    auto crd = store.get(*crd_info, "", r.resource + "." + r.group);
    if (!crd) return std::nullopt;
    return std::move(*crd);
  }

  // The conversion webhook for `r` when r is a non-storage version of a CRD with strategy Webhook.
  std::optional<Conversion> conversion_for(const ResourceInfo& r) const {
    if (!r.conversion_webhook || r.version == r.storage_version) return std::nullopt;
    auto crd = crd_of(r);
    if (!crd) return std::nullopt;
    const Value& root = crd->root();
    if (json::get_string(root, "/spec/conversion/strategy").value_or("None") != "Webhook") return std::nullopt;
    std::string storage_version;
    if (const Value* vs = json::find(root, "/spec/versions"); vs != nullptr && vs->IsArray()) {
      for (const auto& v : vs->GetArray()) {
        if (json::get_bool(v, "/storage").value_or(false)) storage_version = json::string_at(v, "/name");
      }
    }
    if (storage_version.empty() || storage_version == r.version) return std::nullopt;
    auto storage = store.find_resource(r.group, storage_version, r.resource);
    if (!storage) return std::nullopt;
    Conversion c;
    c.storage = std::move(*storage);
    c.kind = r.kind;
    if (const Value* cc = json::find(root, "/spec/conversion/webhook/clientConfig")) c.client_config = Document::copy_of(*cc);
    return c;
  }

  // Converts every object of `objects` that is not at `desired` (an apiVersion) in one
  // ConversionReview, keeping each object's metadata except labels and annotations, as
  // kube-apiserver does.
  StoreResult<void> convert(const Conversion& c, std::vector<Document*> objects, const std::string& desired) {
    std::vector<Document*> to_convert;
    for (Document* d : objects) {
      if (d->root().IsObject() && json::string_at(d->root(), "/apiVersion") != desired) to_convert.push_back(d);
    }
    if (to_convert.empty()) return {};
    std::string source = json::string_at(to_convert.front()->root(), "/apiVersion");
    auto failed = [&](const std::string& why) {
      return internal_error(fmt::format("conversion webhook for {} failed: {}", gvk_text(source, c.kind), why));
    };
    std::string uid = new_uid();
    Document review = Document::object();
    auto& a = review.alloc();
    review.root().AddMember("kind", "ConversionReview", a);
    review.root().AddMember("apiVersion", "apiextensions.k8s.io/v1", a);
    Value request(rapidjson::kObjectType);
    request.AddMember("uid", json::str(uid, a), a);
    request.AddMember("desiredAPIVersion", json::str(desired, a), a);
    Value objs(rapidjson::kArrayType);
    for (Document* d : to_convert) objs.PushBack(json::clone(d->root(), a), a);
    request.AddMember("objects", objs, a);
    review.root().AddMember("request", request, a);

    if (!c.client_config.root().IsObject()) return fail(failed("the CRD has no conversion.webhook.clientConfig"));
    auto ep = caller.endpoint(c.client_config.root(), kConversionTimeout);
    if (!ep) return fail(failed(ep.error().message));
    auto res = caller.post(*ep, review.dump(), kConversionTimeout);
    if (!res) return fail(failed(res.error().message));
    const Value& resp = res->root();
    if (json::string_at(resp, "/response/uid") != uid) {
      return fail(failed(fmt::format("expected response.uid=\"{}\", got \"{}\"", uid, json::string_at(resp, "/response/uid"))));
    }
    if (auto st = json::string_at(resp, "/response/result/status"); st != "Success") {
      auto msg = json::string_at(resp, "/response/result/message");
      return fail(failed(!msg.empty() ? msg : fmt::format("response.result.status was '{}', not 'Success'", st)));
    }
    const Value* converted = json::find(resp, "/response/convertedObjects");
    size_t got = converted != nullptr && converted->IsArray() ? converted->Size() : 0;
    if (got != to_convert.size()) {
      return fail(internal_error(fmt::format("conversion webhook for {} returned {} objects, expected {}",
                                             gvk_text(source, c.kind), got, to_convert.size())));
    }
    for (size_t i = 0; i < to_convert.size(); ++i) {
      const Value& out = (*converted)[static_cast<rapidjson::SizeType>(i)];
      if (json::string_at(out, "/apiVersion") != desired) {
        return fail(failed(fmt::format("invalid converted object at index {}: invalid apiVersion \"{}\", expected \"{}\"",
                                       i, json::string_at(out, "/apiVersion"), desired)));
      }
      Document next = Document::copy_of(out);
      // Only labels and annotations may change; everything else of metadata stays as stored.
      Value meta = json::clone(to_convert[i]->root()["metadata"], next.alloc());
      for (const char* k : {"labels", "annotations"}) {
        if (meta.HasMember(k)) meta.RemoveMember(k);
        if (const Value* v = json::find(out, std::string("/metadata/") + k)) {
          meta.AddMember(Value(k, next.alloc()), json::clone(*v, next.alloc()), next.alloc());
        }
      }
      set_member(next, "metadata", std::move(meta));
      *to_convert[i] = std::move(next);
    }
    return {};
  }

  StoreResult<void> convert_one(const Conversion& c, Document& d, const std::string& desired) {
    return convert(c, {&d}, desired);
  }

  StoreResult<void> convert_list_text(const Conversion& c, std::string& text, const std::string& desired) {
    auto doc = Document::parse(text);
    if (!doc) return fail(errors::internal(doc.error().message));
    Value* items = json::find(doc->root(), "/items");
    if (items != nullptr && items->IsArray()) {
      std::vector<Document> objs;
      for (auto& it : items->GetArray()) objs.push_back(Document::copy_of(it));
      std::vector<Document*> ptrs;
      for (auto& o : objs) ptrs.push_back(&o);
      if (auto s = convert(c, ptrs, desired); !s) return s;
      Value out(rapidjson::kArrayType);
      for (auto& o : objs) out.PushBack(json::clone(o.root(), doc->alloc()), doc->alloc());
      *items = std::move(out);
    }
    set_member(*doc, "apiVersion", json::str(desired, doc->alloc()));
    text = doc->dump();
    return {};
  }

  // ---- versioned store: the Store's verbs with conversion webhooks applied ----

  StoreResult<Document> vget(const ResourceInfo& r, std::string_view ns, std::string_view name, std::string_view sub) {
    auto c = sub == "scale" ? std::nullopt : conversion_for(r);
    if (!c) return store.get(r, ns, name, sub);
    auto obj = store.get(c->storage, ns, name, sub);
    if (!obj) return obj;
    if (auto s = convert_one(*c, *obj, r.api_version()); !s) return fail(std::move(s).error());
    return obj;
  }

  StoreResult<std::string> vlist(const ResourceInfo& r, std::string_view ns, const ListRequest& req) {
    auto c = conversion_for(r);
    if (!c) return store.list(r, ns, req);
    auto text = store.list(c->storage, ns, req);
    if (!text) return text;
    if (auto s = convert_list_text(*c, *text, r.api_version()); !s) return fail(std::move(s).error());
    return text;
  }

  // The object written at `r`'s version, converted to the storage version (and the result back).
  template <class Write>
  StoreResult<Document> vwrite(const ResourceInfo& r, std::string_view sub, Document obj, Write&& write) {
    auto c = sub == "scale" ? std::nullopt : conversion_for(r);
    if (!c) return write(r, std::move(obj));
    if (obj.root().IsObject()) {
      set_member(obj, "apiVersion", json::str(r.api_version(), obj.alloc()));
      set_member(obj, "kind", json::str(r.kind, obj.alloc()));
      if (auto s = convert_one(*c, obj, c->storage.api_version()); !s) return fail(std::move(s).error());
    }
    auto out = write(c->storage, std::move(obj));
    if (!out) return out;
    if (auto s = convert_one(*c, *out, r.api_version()); !s) return fail(std::move(s).error());
    return out;
  }

  StoreResult<Document> vcreate(const ResourceInfo& r, std::string_view ns, Document obj, bool dry_run) {
    return vwrite(r, "", std::move(obj),
                  [&](const ResourceInfo& at, Document o) { return store.create(at, ns, std::move(o), dry_run); });
  }

  StoreResult<Document> vupdate(const ResourceInfo& r, std::string_view ns, std::string_view name, Document obj,
                                std::string_view sub, bool dry_run) {
    return vwrite(r, sub, std::move(obj), [&](const ResourceInfo& at, Document o) {
      return store.update(at, ns, name, std::move(o), sub, dry_run);
    });
  }

  StoreResult<Document> vpatch(const ResourceInfo& r, std::string_view ns, std::string_view name, PatchKind kind,
                               std::string_view body, std::string_view sub, std::string_view field_manager,
                               bool dry_run) {
    auto c = sub == "scale" ? std::nullopt : conversion_for(r);
    if (!c) return store.patch(r, ns, name, kind, body, sub, field_manager, dry_run);
    // The patch applies to the object at the requested version: read, convert, patch here, then
    // write back with the resourceVersion read (retrying when someone wrote in between).
    if (kind == PatchKind::Strategic) {
      return fail(errors::unsupported_media_type(
          "the body of the request was in an unknown format - accepted media types include: "
          "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"));
    }
    Document patch;
    if (kind == PatchKind::Apply) {
      auto docs = json::parse_yaml(body);
      if (!docs || docs->size() != 1 || !(*docs)[0].root().IsObject()) {
        return fail(errors::bad_request("apply patches must contain exactly one object"));
      }
      patch = std::move((*docs)[0]);
    } else {
      auto parsed = Document::parse(body);
      if (!parsed) return fail(errors::bad_request("error decoding patch: " + parsed.error().message));
      patch = std::move(*parsed);
    }
    for (int attempt = 0;; ++attempt) {
      auto current = vget(r, ns, name, sub);
      if (!current) {
        if (current.error().code == 404 && kind == PatchKind::Apply && sub.empty()) {
          Document obj = patch;
          (void)json::set_string(obj, "/metadata/name", name);
          return vcreate(r, ns, std::move(obj), dry_run);
        }
        return current;
      }
      Document target = std::move(*current);
      if (kind == PatchKind::JSON) {
        if (!patch.root().IsArray()) return fail(errors::bad_request("a JSON patch must be a JSON array of operations"));
        if (auto st = json::apply_json_patch(target, patch.root()); !st) {
          return fail(errors::invalid(r, name, {FieldError{"FieldValueInvalid", "", st.error().message}}));
        }
      } else {
        if (!patch.root().IsObject()) return fail(errors::bad_request("a merge patch must be a JSON object"));
        json::apply_merge_patch(target, patch.root());
      }
      if (json::string_at(target.root(), "/metadata/name") != name) {
        return fail(errors::bad_request("the name of the object (" + json::string_at(target.root(), "/metadata/name") +
                                        ") does not match the name on the URL (" + std::string(name) + ")"));
      }
      auto out = vupdate(r, ns, name, std::move(target), sub, dry_run);
      if (!out && out.error().code == 409 && attempt < kConflictRetries) continue;
      return out;
    }
  }

  // ---- admission ----

  std::vector<Webhook> configured(bool mutating) {
    std::vector<Webhook> out;
    auto info = store.find_resource("admissionregistration.k8s.io", "v1",
                                    mutating ? "mutatingwebhookconfigurations" : "validatingwebhookconfigurations");
    if (!info) return out;
    auto text = store.list(*info, "", ListRequest{});
    if (!text) return out;
    auto doc = Document::parse(*text);
    if (!doc) return out;
    const Value* items = json::find(doc->root(), "/items");
    if (items == nullptr || !items->IsArray()) return out;
    std::vector<const Value*> configs;
    for (const auto& c : items->GetArray()) configs.push_back(&c);
    // kube-apiserver orders the configurations by name, then the webhooks as listed.
    std::sort(configs.begin(), configs.end(), [](const Value* x, const Value* y) {
      return json::string_at(*x, "/metadata/name") < json::string_at(*y, "/metadata/name");
    });
    for (const Value* c : configs) {
      const Value* hooks = json::find(*c, "/webhooks");
      if (hooks == nullptr || !hooks->IsArray()) continue;
      for (const auto& h : hooks->GetArray()) {
        Webhook w;
        w.name = json::string_at(h, "/name");
        w.mutating = mutating;
        w.spec = Document::copy_of(h);
        w.fail_closed = json::get_string(h, "/failurePolicy").value_or("Fail") != "Ignore";
        w.equivalent = json::get_string(h, "/matchPolicy").value_or("Equivalent") != "Exact";
        w.reinvoke = json::get_string(h, "/reinvocationPolicy").value_or("Never") == "IfNeeded";
        w.timeout = std::chrono::seconds(std::clamp<int64_t>(json::get_int(h, "/timeoutSeconds").value_or(10), 1, 30));
        auto se = json::get_string(h, "/sideEffects").value_or("Unknown");
        w.dry_run_safe = se == "None" || se == "NoneOnDryRun";
        out.push_back(std::move(w));
      }
    }
    return out;
  }

  // The version of r's resource a webhook's rules match: r itself, or with matchPolicy
  // Equivalent another served version of the same custom resource.
  std::optional<ResourceInfo> matched_resource(const Webhook& h, const Attributes& at) {
    const ResourceInfo& r = *at.resource;
    if (any_rule_matches(h, at.op, r.group, r.version, r.resource, at.subresource, r.namespaced)) return r;
    if (!h.equivalent) return std::nullopt;
    for (const auto& other : store.resources()) {
      if (other.group != r.group || other.resource != r.resource || other.version == r.version) continue;
      if (any_rule_matches(h, at.op, other.group, other.version, other.resource, at.subresource, other.namespaced)) {
        return other;
      }
    }
    return std::nullopt;
  }

  bool selectors_match(const Webhook& h, const Attributes& at, const Value* object, const Value* old_object) {
    if (const Value* sel = json::find(h.spec.root(), "/objectSelector"); sel != nullptr && sel->IsObject()) {
      auto s = api::LabelSelector::from_json(*sel, "objectSelector");
      if (!s) return false;
      bool m = false;
      for (const Value* o : {object, old_object}) {
        if (o != nullptr && o->IsObject()) m = m || s->matches(api::labels_of(*o));
      }
      if (!m && !s->empty()) return false;
    }
    if (const Value* sel = json::find(h.spec.root(), "/namespaceSelector"); sel != nullptr && sel->IsObject()) {
      auto s = api::LabelSelector::from_json(*sel, "namespaceSelector");
      if (!s) return false;
      if (s->empty()) return true;
      const ResourceInfo& r = *at.resource;
      bool is_namespace = r.group.empty() && r.resource == "namespaces";
      if (is_namespace) {
        const Value* o = object != nullptr && object->IsObject() ? object : old_object;
        return o != nullptr && s->matches(api::labels_of(*o));
      }
      if (!r.namespaced) return true;  // cluster-scoped objects are never excluded by it
      auto ns_info = store.find_resource("", "v1", "namespaces");
      if (!ns_info) return false;
      auto ns = store.get(*ns_info, "", at.ns);
      return ns && s->matches(api::labels_of(ns->root()));
    }
    return true;
  }

  Document review_request(const Attributes& at, const ResourceInfo& matched, const std::string& uid,
                          const Value* object, const Value* old_object) {
    Document d = Document::object();
    auto& a = d.alloc();
    d.root().AddMember("kind", "AdmissionReview", a);
    d.root().AddMember("apiVersion", "admission.k8s.io/v1", a);
    Value q(rapidjson::kObjectType);
    q.AddMember("uid", json::str(uid, a), a);
    auto [kav, kk] = kind_of(matched, at.subresource);
    auto [rav, rk] = kind_of(*at.resource, at.subresource);
    q.AddMember("kind", group_version_kind(kav, kk, a), a);
    q.AddMember("resource", group_version_resource(matched, a), a);
    if (!at.subresource.empty()) q.AddMember("subResource", json::str(at.subresource, a), a);
    q.AddMember("requestKind", group_version_kind(rav, rk, a), a);
    q.AddMember("requestResource", group_version_resource(*at.resource, a), a);
    if (!at.subresource.empty()) q.AddMember("requestSubResource", json::str(at.subresource, a), a);
    if (!at.name.empty()) q.AddMember("name", json::str(at.name, a), a);
    if (!at.ns.empty()) q.AddMember("namespace", json::str(at.ns, a), a);
    q.AddMember("operation", json::str(op_name(at.op), a), a);
    Value user(rapidjson::kObjectType);
    // Every authenticated client of the local cluster is its administrator.
    user.AddMember("username", "system:admin", a);
    Value groups(rapidjson::kArrayType);
    groups.PushBack("system:masters", a);
    groups.PushBack("system:authenticated", a);
    user.AddMember("groups", groups, a);
    q.AddMember("userInfo", user, a);
    q.AddMember("object", object != nullptr ? json::clone(*object, a) : Value(), a);
    q.AddMember("oldObject", old_object != nullptr ? json::clone(*old_object, a) : Value(), a);
    q.AddMember("dryRun", at.dry_run, a);
    Value opts = at.options.root().IsObject() ? json::clone(at.options.root(), a) : Value(rapidjson::kObjectType);
    opts.AddMember("kind", json::str(at.options_kind, a), a);
    opts.AddMember("apiVersion", "meta.k8s.io/v1", a);
    if (at.dry_run) {
      Value dr(rapidjson::kArrayType);
      dr.PushBack("All", a);
      opts.AddMember("dryRun", dr, a);
    }
    q.AddMember("options", opts, a);
    d.root().AddMember("request", q, a);
    return d;
  }

  // The error of a denial: webhookutil.ToStatusErr.
  static StatusError denied(const Webhook& h, const Value& result) {
    StatusError e;
    e.code = static_cast<int>(json::get_int(result, "/code").value_or(0));
    if (e.code < 400) e.code = 400;
    e.reason = json::string_at(result, "/reason");
    std::string by = fmt::format("admission webhook \"{}\" denied the request", h.name);
    std::string msg = json::string_at(result, "/message");
    if (!msg.empty()) {
      e.message = by + ": " + msg;
    } else if (!e.reason.empty()) {
      e.message = by + ": " + e.reason;
    } else {
      e.message = by + " without explanation";
    }
    if (const Value* det = json::find(result, "/details"); det != nullptr && det->IsObject()) {
      e.details = Document::copy_of(*det);
    }
    return e;
  }

  // Calls one webhook about `object` (which a mutating webhook's patch changes in place).
  // Returns whether it was called; errors are denials and (with failurePolicy Fail) call
  // failures.
  StoreResult<bool> call(const Webhook& h, const Attributes& at, Document* object, const Document* old_object,
                         CallNotes& notes, bool* changed) {
    auto matched = matched_resource(h, at);
    if (!matched) return false;
    const Value* ov = object != nullptr ? &object->root() : nullptr;
    const Value* oov = old_object != nullptr ? &old_object->root() : nullptr;
    if (!selectors_match(h, at, ov, oov)) return false;
    if (at.dry_run && !h.dry_run_safe) {
      return fail(errors::bad_request(fmt::format("admission webhook \"{}\" does not support dry run", h.name)));
    }
    // A webhook matched through another version sees the objects at that version.
    std::optional<Conversion> conv;
    Document obj_at, old_at;
    if (matched->version != at.resource->version && at.subresource != "scale") {
      conv = conversion_for(*at.resource);
      if (!conv) conv = conversion_for(*matched);
      if (object != nullptr) obj_at = *object;
      if (old_object != nullptr) old_at = *old_object;
      for (Document* d : {&obj_at, &old_at}) {
        if (!d->root().IsObject()) continue;
        if (conv && conv->client_config.root().IsObject()) {
          if (auto s = convert_one(*conv, *d, matched->api_version()); !s) return fail(std::move(s).error());
        } else {
          set_member(*d, "apiVersion", json::str(matched->api_version(), d->alloc()));
        }
      }
      if (object != nullptr) ov = &obj_at.root();
      if (old_object != nullptr) oov = &old_at.root();
    }
    std::string uid = new_uid();
    Document review = review_request(at, *matched, uid, ov, oov);
    auto failure = [&](const std::string& why) -> StoreResult<bool> {
      std::string text = fmt::format("failed calling webhook \"{}\": {}", h.name, why);
      if (!h.fail_closed) {
        spdlog::warn("localcluster: failed calling webhook, failing open {}: {}", h.name, text);
        return false;
      }
      return fail(internal_error(text));
    };
    const Value* cc = json::find(h.spec.root(), "/clientConfig");
    if (cc == nullptr) return failure("failed to call webhook: no clientConfig");
    auto ep = caller.endpoint(*cc, h.timeout);
    if (!ep) return failure("failed to call webhook: " + ep.error().message);
    auto res = caller.post(*ep, review.dump(), h.timeout);
    if (!res) return failure("failed to call webhook: " + res.error().message);
    const Value& resp = res->root();
    if (json::string_at(resp, "/apiVersion") != "admission.k8s.io/v1" || json::string_at(resp, "/kind") != "AdmissionReview") {
      return failure(fmt::format("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {}",
                                 gvk_text(json::string_at(resp, "/apiVersion"), json::string_at(resp, "/kind"))));
    }
    const Value* response = json::find(resp, "/response");
    if (response == nullptr || !response->IsObject()) return failure("webhook response was absent");
    if (json::string_at(*response, "/uid") != uid) {
      return failure(fmt::format("expected response.uid=\"{}\", got \"{}\"", uid, json::string_at(*response, "/uid")));
    }
    for (const auto& w : json::strings_at(*response, "/warnings")) notes.warnings.push_back(w);
    if (!json::get_bool(*response, "/allowed").value_or(false)) {
      const Value* status = json::find(*response, "/status");
      static const Value empty(rapidjson::kObjectType);
      return fail(denied(h, status != nullptr && status->IsObject() ? *status : empty));
    }
    auto patch_text = json::get_string(*response, "/patch");
    if (!patch_text || patch_text->empty()) return true;
    if (!h.mutating) return true;
    if (json::get_string(*response, "/patchType").value_or("") != "JSONPatch") {
      return failure(fmt::format("unsupported patch type \"{}\"", json::string_at(*response, "/patchType")));
    }
    if (object == nullptr || !object->root().IsObject()) return true;  // DELETE: nothing to patch
    auto decoded = kube::base64_decode(*patch_text);
    if (!decoded) return fail(internal_error("the webhook's patch is not valid base64"));
    auto ops = Document::parse(*decoded);
    if (!ops) return fail(internal_error("the webhook's patch is not JSON: " + ops.error().message));
    Document patched = ov == &obj_at.root() ? obj_at : *object;
    if (auto st = json::apply_json_patch(patched, ops->root()); !st) return fail(internal_error(st.error().message));
    if (ov == &obj_at.root()) {
      if (conv && conv->client_config.root().IsObject()) {
        if (auto s = convert_one(*conv, patched, at.resource->api_version()); !s) return fail(std::move(s).error());
      } else {
        set_member(patched, "apiVersion", json::str(at.resource->api_version(), patched.alloc()));
      }
    }
    if (!json::equal(patched.root(), object->root())) {
      *object = std::move(patched);
      if (changed != nullptr) *changed = true;
    }
    return true;
  }

  // Mutating webhooks in order; those with reinvocationPolicy IfNeeded run once more when a later
  // webhook changed the object after they saw it.
  StoreResult<void> mutate(const std::vector<Webhook>& hooks, const Attributes& at, Document* object,
                           const Document* old_object, CallNotes& notes) {
    std::vector<size_t> called_at;  // per hook: the change count when it was last called
    std::vector<bool> called(hooks.size(), false);
    called_at.assign(hooks.size(), 0);
    size_t changes = 0;
    for (size_t i = 0; i < hooks.size(); ++i) {
      bool changed = false;
      auto r = call(hooks[i], at, object, old_object, notes, &changed);
      if (!r) return fail(std::move(r).error());
      called[i] = *r;
      if (changed) ++changes;
      called_at[i] = changes;
    }
    if (changes == 0) return {};
    for (size_t i = 0; i < hooks.size(); ++i) {
      if (!called[i] || !hooks[i].reinvoke || called_at[i] == changes) continue;
      auto r = call(hooks[i], at, object, old_object, notes, nullptr);
      if (!r) return fail(std::move(r).error());
    }
    return {};
  }

  StoreResult<void> validate(const std::vector<Webhook>& hooks, const Attributes& at, const Document* object,
                             const Document* old_object, CallNotes& notes) {
    for (const auto& h : hooks) {
      auto r = call(h, at, const_cast<Document*>(object), old_object, notes, nullptr);
      if (!r) return fail(std::move(r).error());
    }
    return {};
  }

  // The webhooks whose rules could apply to this request (selectors are checked per call).
  std::pair<std::vector<Webhook>, std::vector<Webhook>> hooks_for(const Attributes& at) {
    std::pair<std::vector<Webhook>, std::vector<Webhook>> out;
    for (bool mutating : {true, false}) {
      for (auto& h : configured(mutating)) {
        if (matched_resource(h, at)) (mutating ? out.first : out.second).push_back(std::move(h));
      }
    }
    return out;
  }

  static bool is_webhook_configuration(const ResourceInfo& r) {
    // kube-apiserver never sends webhook configurations to webhooks: a broken webhook must not
    // lock out its own repair.
    return r.group == "admissionregistration.k8s.io";
  }

  Attributes attributes(const ResourceInfo& r, std::string_view ns, std::string_view name, std::string_view sub,
                        Operation op, const char* options_kind, bool dry_run) {
    Attributes at;
    at.resource = &r;
    at.ns = r.namespaced ? std::string(ns) : std::string();
    at.name = std::string(name);
    at.subresource = std::string(sub);
    at.op = op;
    at.options_kind = options_kind;
    at.dry_run = dry_run;
    return at;
  }

  StoreResult<Document> create(const ResourceInfo& r, std::string_view ns, Document obj, bool dry_run,
                               CallNotes& notes) {
    if (is_webhook_configuration(r)) return vcreate(r, ns, std::move(obj), dry_run);
    std::string name = obj.root().IsObject() ? json::string_at(obj.root(), "/metadata/name") : "";
    Attributes at = attributes(r, ns, name, "", Operation::Create, "CreateOptions", dry_run);
    auto [mutating, validating] = hooks_for(at);
    if (mutating.empty() && validating.empty()) return vcreate(r, ns, std::move(obj), dry_run);
    if (!obj.root().IsObject()) return vcreate(r, ns, std::move(obj), dry_run);
    if (r.namespaced && !ns.empty()) (void)json::set_string(obj, "/metadata/namespace", ns);
    if (!json::find(obj.root(), "/apiVersion")) set_member(obj, "apiVersion", json::str(r.api_version(), obj.alloc()));
    if (!json::find(obj.root(), "/kind")) set_member(obj, "kind", json::str(r.kind, obj.alloc()));
    if (auto s = mutate(mutating, at, &obj, nullptr, notes); !s) return fail(std::move(s).error());
    // Validating webhooks see the object as it will be stored: defaulted, named, validated.
    auto pre = vcreate(r, ns, obj, true);
    if (!pre) return pre;
    at.name = json::string_at(pre->root(), "/metadata/name");
    if (auto s = validate(validating, at, &*pre, nullptr, notes); !s) return fail(std::move(s).error());
    if (dry_run) return pre;
    // Stored from the mutated object, not the dry run's result: defaults derived from the uid
    // (a Job's controller-uid selector) must come from the real create. Only the name generated
    // by the dry run is kept, so the object stored is the one the webhooks saw.
    (void)json::set_string(obj, "/metadata/name", at.name);
    return vcreate(r, ns, std::move(obj), false);
  }

  StoreResult<Document> update(const ResourceInfo& r, std::string_view ns, std::string_view name, Document obj,
                               std::string_view sub, bool dry_run, CallNotes& notes) {
    if (is_webhook_configuration(r)) return vupdate(r, ns, name, std::move(obj), sub, dry_run);
    Attributes at = attributes(r, ns, name, sub, Operation::Update, "UpdateOptions", dry_run);
    auto [mutating, validating] = hooks_for(at);
    if (mutating.empty() && validating.empty()) return vupdate(r, ns, name, std::move(obj), sub, dry_run);
    auto old = vget(r, ns, name, sub);
    if (!old) return old;
    if (auto s = mutate(mutating, at, &obj, &*old, notes); !s) return fail(std::move(s).error());
    auto pre = vupdate(r, ns, name, std::move(obj), sub, true);
    if (!pre) return pre;
    if (auto s = validate(validating, at, &*pre, &*old, notes); !s) return fail(std::move(s).error());
    if (dry_run) return pre;
    return vupdate(r, ns, name, std::move(*pre), sub, false);
  }

  StoreResult<Document> patch(const ResourceInfo& r, std::string_view ns, std::string_view name, PatchKind kind,
                              std::string_view body, std::string_view sub, std::string_view field_manager,
                              bool dry_run, CallNotes& notes) {
    if (is_webhook_configuration(r)) return vpatch(r, ns, name, kind, body, sub, field_manager, dry_run);
    Attributes at = attributes(r, ns, name, sub, Operation::Update, "PatchOptions", dry_run);
    if (!field_manager.empty()) {
      at.options = Document::object();
      at.options.root().AddMember("fieldManager", json::str(field_manager, at.options.alloc()), at.options.alloc());
    }
    Attributes create_at = attributes(r, ns, name, sub, Operation::Create, "PatchOptions", dry_run);
    auto [mutating, validating] = hooks_for(at);
    auto [cm, cv] = hooks_for(create_at);
    if (mutating.empty() && validating.empty() && cm.empty() && cv.empty()) {
      return vpatch(r, ns, name, kind, body, sub, field_manager, dry_run);
    }
    for (int attempt = 0;; ++attempt) {
      auto old = vget(r, ns, name, sub);
      if (!old && !(old.error().code == 404 && kind == PatchKind::Apply && sub.empty())) return old;
      auto pre = vpatch(r, ns, name, kind, body, sub, field_manager, true);
      if (!pre) return pre;
      if (!old) return create(r, ns, std::move(*pre), dry_run, notes);  // server-side apply of a new object
      Document obj = std::move(*pre);
      bool changed_by_webhook = false;
      {
        Document before = obj;
        if (auto s = mutate(mutating, at, &obj, &*old, notes); !s) return fail(std::move(s).error());
        changed_by_webhook = !json::equal(before.root(), obj.root());
      }
      if (changed_by_webhook) {
        auto again = vupdate(r, ns, name, std::move(obj), sub, true);
        if (!again) return again;
        obj = std::move(*again);
      }
      if (auto s = validate(validating, at, &obj, &*old, notes); !s) return fail(std::move(s).error());
      if (dry_run) return obj;
      auto out = vupdate(r, ns, name, std::move(obj), sub, false);
      if (!out && out.error().code == 409 && attempt < kConflictRetries) {
        notes.warnings.clear();
        continue;
      }
      return out;
    }
  }

  Document delete_options(const DeleteRequest& req) {
    Document o = Document::object();
    auto& a = o.alloc();
    if (req.propagation_policy) o.root().AddMember("propagationPolicy", json::str(*req.propagation_policy, a), a);
    if (req.grace_period_seconds) o.root().AddMember("gracePeriodSeconds", *req.grace_period_seconds, a);
    return o;
  }

  // DELETE admission: mutating webhooks get no objects (kube-apiserver passes none), validating
  // ones get the object being deleted as oldObject.
  StoreResult<void> admit_delete(const ResourceInfo& r, std::string_view ns, const Document& old,
                                 const DeleteRequest& req, std::vector<Webhook>& mutating,
                                 std::vector<Webhook>& validating, CallNotes& notes) {
    Attributes at = attributes(r, ns, json::string_at(old.root(), "/metadata/name"), "", Operation::Delete, "DeleteOptions",
                               req.dry_run);
    at.options = delete_options(req);
    if (auto s = mutate(mutating, at, nullptr, nullptr, notes); !s) return s;
    return validate(validating, at, nullptr, &old, notes);
  }

  StoreResult<Document> vremove(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                const DeleteRequest& req) {
    auto c = conversion_for(r);
    if (!c) return store.remove(r, ns, name, req);
    auto out = store.remove(c->storage, ns, name, req);
    if (!out) return out;
    if (auto s = convert_one(*c, *out, r.api_version()); !s) return fail(std::move(s).error());
    return out;
  }

  StoreResult<Document> remove(const ResourceInfo& r, std::string_view ns, std::string_view name,
                               const DeleteRequest& req, CallNotes& notes) {
    if (is_webhook_configuration(r)) return vremove(r, ns, name, req);
    Attributes at = attributes(r, ns, name, "", Operation::Delete, "DeleteOptions", req.dry_run);
    auto [mutating, validating] = hooks_for(at);
    if (mutating.empty() && validating.empty()) return vremove(r, ns, name, req);
    auto old = vget(r, ns, name, "");
    if (!old) return old;
    if (auto s = admit_delete(r, ns, *old, req, mutating, validating, notes); !s) return fail(std::move(s).error());
    DeleteRequest guarded = req;
    // Delete exactly what the webhooks saw.
    if (!guarded.precondition_resource_version) {
      guarded.precondition_resource_version = json::string_at(old->root(), "/metadata/resourceVersion");
    }
    return vremove(r, ns, name, guarded);
  }

  StoreResult<std::string> remove_collection(const ResourceInfo& r, std::string_view ns, const ListRequest& selector,
                                             const DeleteRequest& req, CallNotes& notes) {
    auto c = is_webhook_configuration(r) ? std::nullopt : conversion_for(r);
    Attributes at = attributes(r, ns, "", "", Operation::Delete, "DeleteOptions", req.dry_run);
    auto [mutating, validating] = is_webhook_configuration(r) ? decltype(hooks_for(at)){} : hooks_for(at);
    if (!mutating.empty() || !validating.empty()) {
      // Each object is admitted as its own DELETE, as kube-apiserver's DeleteCollection does;
      // nothing is deleted when any is refused.
      auto text = vlist(r, ns, selector);
      if (!text) return text;
      auto doc = Document::parse(*text);
      if (!doc) return fail(errors::internal(doc.error().message));
      if (const Value* items = json::find(doc->root(), "/items"); items != nullptr && items->IsArray()) {
        for (const auto& it : items->GetArray()) {
          Document old = Document::copy_of(it);
          if (!old.root().HasMember("apiVersion")) set_member(old, "apiVersion", json::str(r.api_version(), old.alloc()));
          if (!old.root().HasMember("kind")) set_member(old, "kind", json::str(r.kind, old.alloc()));
          std::string item_ns = json::string_at(old.root(), "/metadata/namespace");
          if (auto s = admit_delete(r, item_ns, old, req, mutating, validating, notes); !s) {
            return fail(std::move(s).error());
          }
        }
      }
    }
    if (!c) return store.remove_collection(r, ns, selector, req);
    auto out = store.remove_collection(c->storage, ns, selector, req);
    if (!out) return out;
    if (auto s = convert_list_text(*c, *out, r.api_version()); !s) return fail(std::move(s).error());
    return out;
  }
};

namespace {

// Drains the storage-version watch and converts each object to the watched version. Conversion
// runs on the draining thread, never under the store's lock.
class ConvertingWatcher : public Watcher {
 public:
  using Convert = std::function<StoreResult<void>(std::vector<Document*>)>;
  ConvertingWatcher(Convert convert, std::unique_ptr<Watcher> inner)
      : convert_(std::move(convert)), inner_(std::move(inner)) {}

  std::vector<WatchEvent> drain(bool& closed) override {
    if (failed_) {
      closed = true;
      return {};
    }
    auto events = inner_->drain(closed);
    std::vector<Document> docs;
    std::vector<size_t> index;
    for (size_t i = 0; i < events.size(); ++i) {
      const auto& t = events[i].type;
      if ((t != "ADDED" && t != "MODIFIED" && t != "DELETED") || !events[i].object) continue;
      auto d = Document::parse(*events[i].object);
      if (!d) continue;
      docs.push_back(std::move(*d));
      index.push_back(i);
    }
    if (docs.empty()) return events;
    std::vector<Document*> ptrs;
    for (auto& d : docs) ptrs.push_back(&d);
    if (auto s = convert_(std::move(ptrs)); !s) {
      failed_ = true;
      closed = true;
      inner_->stop();
      StatusError e = std::move(s).error();
      return {WatchEvent{"ERROR", std::make_shared<const std::string>(e.to_status().dump())}};
    }
    for (size_t k = 0; k < index.size(); ++k) {
      events[index[k]].object = std::make_shared<const std::string>(docs[k].dump());
    }
    return events;
  }
  void set_notify(std::function<void()> notify) override { inner_->set_notify(std::move(notify)); }
  void stop() override { inner_->stop(); }
  void request_bookmark() override { inner_->request_bookmark(); }

 private:
  Convert convert_;
  std::unique_ptr<Watcher> inner_;
  bool failed_ = false;
};

}  // namespace

Status add_service_endpoint(WebhookOptions& options, std::string_view spec) {
  size_t eq = spec.find('=');
  size_t slash = spec.find('/');
  if (eq == std::string_view::npos || slash == std::string_view::npos || slash > eq) {
    return fail(fmt::format("--service-endpoint {}: expected NAMESPACE/NAME[:PORT]=HOST:PORT", spec));
  }
  std::string key(spec.substr(0, eq));
  std::string target(spec.substr(eq + 1));
  if (key.find(':') == std::string::npos) key += ":443";
  size_t colon = target.rfind(':');
  if (colon == std::string::npos || colon + 1 == target.size()) {
    return fail(fmt::format("--service-endpoint {}: the target must be HOST:PORT", spec));
  }
  options.service_endpoints[key] = target;
  return {};
}

ApiFront::ApiFront(Store& store, WebhookOptions options)
    : impl_(std::make_unique<Impl>(store, std::move(options))) {}
ApiFront::~ApiFront() = default;

StoreResult<json::Document> ApiFront::get(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                          std::string_view subresource) {
  return impl_->vget(r, ns, name, subresource);
}
StoreResult<std::string> ApiFront::list(const ResourceInfo& r, std::string_view ns, const ListRequest& req) {
  return impl_->vlist(r, ns, req);
}
StoreResult<json::Document> ApiFront::create(const ResourceInfo& r, std::string_view ns, json::Document obj,
                                             bool dry_run, CallNotes& notes) {
  return impl_->create(r, ns, std::move(obj), dry_run, notes);
}
StoreResult<json::Document> ApiFront::update(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                             json::Document obj, std::string_view subresource, bool dry_run,
                                             CallNotes& notes) {
  return impl_->update(r, ns, name, std::move(obj), subresource, dry_run, notes);
}
StoreResult<json::Document> ApiFront::patch(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                            PatchKind kind, std::string_view body, std::string_view subresource,
                                            std::string_view field_manager, bool dry_run, CallNotes& notes) {
  return impl_->patch(r, ns, name, kind, body, subresource, field_manager, dry_run, notes);
}
StoreResult<json::Document> ApiFront::remove(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                             const DeleteRequest& req, CallNotes& notes) {
  return impl_->remove(r, ns, name, req, notes);
}
StoreResult<std::string> ApiFront::remove_collection(const ResourceInfo& r, std::string_view ns,
                                                     const ListRequest& selector, const DeleteRequest& req,
                                                     CallNotes& notes) {
  return impl_->remove_collection(r, ns, selector, req, notes);
}
StoreResult<std::unique_ptr<Watcher>> ApiFront::watch(const ResourceInfo& r, std::string_view ns,
                                                      const WatchRequest& req) {
  auto c = impl_->conversion_for(r);
  if (!c) return impl_->store.watch(r, ns, req);
  auto inner = impl_->store.watch(c->storage, ns, req);
  if (!inner) return inner;
  auto convert = [impl = impl_.get(), c = std::move(*c), desired = r.api_version()](std::vector<Document*> objs) {
    return impl->convert(c, std::move(objs), desired);
  };
  return std::unique_ptr<Watcher>(std::make_unique<ConvertingWatcher>(std::move(convert), std::move(*inner)));
}

}  // namespace unitrain::localcluster
