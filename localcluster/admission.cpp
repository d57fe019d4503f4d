#include "localcluster/admission.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/api/labels.h"
#include "core/base/base64.h"

namespace unitrain::localcluster {
namespace {

using json::Document;
using json::Value;

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
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

// The error of a denial: webhookutil.ToStatusErr.
StatusError denied(const Webhook& h, const Value& result) {
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

}  // namespace

const char* operation_name(Operation op) {
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

bool resource_rule_matches(std::string_view rule, std::string_view resource, std::string_view sub) {
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
  if (!contains(ops, "*") && !contains(ops, operation_name(op))) return false;
  auto groups = json::strings_at(rule, "/apiGroups");
  if (!contains(groups, "*") && !contains(groups, group)) return false;
  auto versions = json::strings_at(rule, "/apiVersions");
  if (!contains(versions, "*") && !contains(versions, version)) return false;
  bool any = false;
  for (const auto& r : json::strings_at(rule, "/resources")) any = any || resource_rule_matches(r, resource, sub);
  if (!any) return false;
  auto scope = json::get_string(rule, "/scope").value_or("*");
  if (scope == "Cluster") return !namespaced;
  if (scope == "Namespaced") return namespaced;
  return true;
}

AdmissionAttributes admission_attributes(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                         std::string_view sub, Operation op, const char* options_kind, bool dry_run) {
  AdmissionAttributes at;
  at.resource = &r;
  at.ns = r.namespaced ? std::string(ns) : std::string();
  at.name = std::string(name);
  at.subresource = std::string(sub);
  at.op = op;
  at.options_kind = options_kind;
  at.dry_run = dry_run;
  return at;
}

bool is_webhook_configuration(const ResourceInfo& r) { return r.group == "admissionregistration.k8s.io"; }

AdmissionWebhooks::AdmissionWebhooks(ConvertingStore& versions, WebhookCaller& caller, UuidSource& uuids)
    : versions_(versions), caller_(caller), uuids_(uuids) {}

std::vector<Webhook> AdmissionWebhooks::configured(bool mutating) {
  std::vector<Webhook> out;
  auto info = versions_.store().find_resource("admissionregistration.k8s.io", "v1",
                                  mutating ? "mutatingwebhookconfigurations" : "validatingwebhookconfigurations");
  if (!info) return out;
  auto text = versions_.store().list(*info, "", ListRequest{});
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

std::optional<ResourceInfo> AdmissionWebhooks::matched_resource(const Webhook& h, const AdmissionAttributes& at) {
  const ResourceInfo& r = *at.resource;
  if (any_rule_matches(h, at.op, r.group, r.version, r.resource, at.subresource, r.namespaced)) return r;
  if (!h.equivalent) return std::nullopt;
  for (const auto& other : versions_.store().resources()) {
    if (other.group != r.group || other.resource != r.resource || other.version == r.version) continue;
    if (any_rule_matches(h, at.op, other.group, other.version, other.resource, at.subresource, other.namespaced)) {
      return other;
    }
  }
  return std::nullopt;
}

bool AdmissionWebhooks::selectors_match(const Webhook& h, const AdmissionAttributes& at, const Value* object,
                                        const Value* old_object) {
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
    auto ns_info = versions_.store().find_resource("", "v1", "namespaces");
    if (!ns_info) return false;
    auto ns = versions_.store().get(*ns_info, "", at.ns);
    return ns && s->matches(api::labels_of(ns->root()));
  }
  return true;
}

Document AdmissionWebhooks::review_request(const AdmissionAttributes& at, const ResourceInfo& matched,
                                           const std::string& uid, const Value* object, const Value* old_object) {
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
  q.AddMember("operation", json::str(operation_name(at.op), a), a);
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

StoreResult<bool> AdmissionWebhooks::call(const Webhook& h, const AdmissionAttributes& at, Document* object,
                                           const Document* old_object, CallNotes& notes, bool* changed) {
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
    conv = versions_.conversion_for(*at.resource);
    if (!conv) conv = versions_.conversion_for(*matched);
    if (object != nullptr) obj_at = *object;
    if (old_object != nullptr) old_at = *old_object;
    for (Document* d : {&obj_at, &old_at}) {
      if (!d->root().IsObject()) continue;
      if (conv && conv->client_config.root().IsObject()) {
        if (auto s = versions_.convert_one(*conv, *d, matched->api_version()); !s) return fail(std::move(s).error());
      } else {
        set_member(*d, "apiVersion", json::str(matched->api_version(), d->alloc()));
      }
    }
    if (object != nullptr) ov = &obj_at.root();
    if (old_object != nullptr) oov = &old_at.root();
  }
  std::string uid = uuids_.next();
  Document review = review_request(at, *matched, uid, ov, oov);
  auto failure = [&](const std::string& why) -> StoreResult<bool> {
    std::string text = fmt::format("failed calling webhook \"{}\": {}", h.name, why);
    if (!h.fail_closed) {
      spdlog::warn("localcluster: failed calling webhook, failing open {}: {}", h.name, text);
      return false;
    }
    return fail(errors::internal_error_occurred(text));
  };
  const Value* cc = json::find(h.spec.root(), "/clientConfig");
  if (cc == nullptr) return failure("failed to call webhook: no clientConfig");
  auto ep = caller_.endpoint(*cc, h.timeout);
  if (!ep) return failure("failed to call webhook: " + ep.error().message);
  auto res = caller_.post(*ep, review.dump(), h.timeout);
  if (!res) return failure("failed to call webhook: " + res.error().message);
  const Value& resp = res->root();
  if (json::string_at(resp, "/apiVersion") != "admission.k8s.io/v1" ||
      json::string_at(resp, "/kind") != "AdmissionReview") {
    return failure(fmt::format("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {}",
                               group_version_kind_text(json::string_at(resp, "/apiVersion"),
                                                       json::string_at(resp, "/kind"))));
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
  auto decoded = base64_decode(*patch_text);
  if (!decoded) return fail(errors::internal_error_occurred("the webhook's patch is not valid base64"));
  auto ops = Document::parse(*decoded);
  if (!ops) return fail(errors::internal_error_occurred("the webhook's patch is not JSON: " + ops.error().message));
  Document patched = ov == &obj_at.root() ? obj_at : *object;
  if (auto st = json::apply_json_patch(patched, ops->root()); !st) {
    return fail(errors::internal_error_occurred(st.error().message));
  }
  if (ov == &obj_at.root()) {
    if (conv && conv->client_config.root().IsObject()) {
      if (auto s = versions_.convert_one(*conv, patched, at.resource->api_version()); !s) {
        return fail(std::move(s).error());
      }
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
StoreResult<void> AdmissionWebhooks::mutate(const std::vector<Webhook>& hooks, const AdmissionAttributes& at,
                                             Document* object, const Document* old_object, CallNotes& notes) {
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

StoreResult<void> AdmissionWebhooks::validate(const std::vector<Webhook>& hooks, const AdmissionAttributes& at,
                                               const Document* object, const Document* old_object,
                                               CallNotes& notes) {
  for (const auto& h : hooks) {
    auto r = call(h, at, const_cast<Document*>(object), old_object, notes, nullptr);
    if (!r) return fail(std::move(r).error());
  }
  return {};
}

MatchingWebhooks AdmissionWebhooks::matching(const AdmissionAttributes& at) {
  MatchingWebhooks out;
  for (bool mutating : {true, false}) {
    for (auto& h : configured(mutating)) {
      if (matched_resource(h, at)) (mutating ? out.mutating : out.validating).push_back(std::move(h));
    }
  }
  return out;
}

}  // namespace unitrain::localcluster
