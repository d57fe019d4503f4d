#include "core/webhook/handler.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/api/field_errors.h"
#include "core/framework/ascii.h"
#include "core/framework/ownership.h"
#include "core/webhook/review.h"

namespace unitrain::webhook {

namespace {

using framework::ascii::lower;
using json::Value;

std::string dashed(std::string_view group) {
  std::string out(group);
  std::replace(out.begin(), out.end(), '.', '-');
  return out;
}

Value str(std::string_view s, json::Allocator& a) { return json::str(s, a); }

Reply bad_request(std::string message) { return Reply{400, "text/plain; charset=utf-8", std::move(message) + "\n"}; }

void diff_into(const Value& from, const Value& to, const std::string& path, Value& ops, json::Allocator& a) {
  auto op = [&](std::string_view name, const std::string& p, const Value* v) {
    Value o(rapidjson::kObjectType);
    o.AddMember("op", str(name, a), a);
    o.AddMember("path", str(p, a), a);
    if (v != nullptr) o.AddMember("value", Value(*v, a), a);
    ops.PushBack(o, a);
  };
  if (from.IsObject() && to.IsObject()) {
    for (const auto& m : from.GetObject()) {
      if (!to.HasMember(m.name))
        op("remove", path + "/" + json::escape_pointer_token({m.name.GetString(), m.name.GetStringLength()}), nullptr);
    }
    for (const auto& m : to.GetObject()) {
      const std::string child = path + "/" + json::escape_pointer_token({m.name.GetString(), m.name.GetStringLength()});
      auto it = from.FindMember(m.name);
      if (it == from.MemberEnd()) op("add", child, &m.value);
      else diff_into(it->value, m.value, child, ops, a);
    }
    return;
  }
  if (!json::equal(from, to)) op("replace", path, &to);
}

Reply json_reply(std::string body) { return Reply{200, "application/json", std::move(body)}; }

// The Status kube-apiserver answers a create of a name that is taken with (409 AlreadyExists).
Value already_exists_status(const framework::FrameworkDescriptor& d, std::string_view name, json::Allocator& a) {
  Value status(rapidjson::kObjectType);
  status.AddMember("status", "Failure", a);
  status.AddMember("message", str(fmt::format("{}.{} \"{}\" already exists", d.plural, d.group, name), a), a);
  status.AddMember("reason", "AlreadyExists", a);
  Value details(rapidjson::kObjectType);
  details.AddMember("name", str(name, a), a);
  details.AddMember("group", str(d.group, a), a);
  details.AddMember("kind", str(d.plural, a), a);
  status.AddMember("details", details, a);
  status.AddMember("code", 409, a);
  return status;
}

Endpoint endpoint(WebhookType type, std::string path, std::string name, kube::GroupVersionResource resource,
                  std::vector<std::string> operations) {
  Endpoint e;
  e.type = type;
  e.path = std::move(path);
  e.name = std::move(name);
  e.resource = std::move(resource);
  e.operations = std::move(operations);
  return e;
}

// A validating webhook's refusal: controller-runtime's Denied for a validator's plain error (403
// Forbidden, the aggregated errors as the message), or the 422 Invalid status of the errors.
Value denial_status(bool forbidden, std::string_view group, std::string_view kind, std::string_view name,
                    const api::FieldErrorList& errors, json::Allocator& a) {
  if (forbidden) {
    Value status(rapidjson::kObjectType);
    status.AddMember("status", "Failure", a);
    status.AddMember("message", str(api::aggregate(errors), a), a);
    status.AddMember("reason", "Forbidden", a);
    status.AddMember("code", 403, a);
    return status;
  }
  json::Document status = api::invalid_status(group, kind, name, errors);
  // AdmissionResponse.status is a metav1.Status without type meta.
  status.root().EraseMember("kind");
  status.root().EraseMember("apiVersion");
  return Value(status.root(), a);
}

// A module that writes its defaults into objects itself, on the operations it names
// (Registration::webhooks.mutate: JobSet's CREATE).
bool persists_own_defaults(const framework::Registry& registry, const framework::FrameworkDescriptor& d) {
  const framework::Registration* r = registry.find(d.name);
  return r != nullptr && !r->webhooks.mutate.empty();
}

}  // namespace

json::Document json_patch_diff(const Value& from, const Value& to) {
  json::Document ops = json::Document::array();
  diff_into(from, to, "", ops.root(), ops.alloc());
  return ops;
}

Handler::Handler(std::vector<const framework::FrameworkPlugin*> plugins, const framework::Registry& registry,
                 HandlerOptions options)
    : plugins_(std::move(plugins)), registry_(registry), options_(options) {
  // Several registered modules for one kind (enabled here or not): versioned hook names, which
  // stay the same whichever of them an operator enables, and managedBy filled on create.
  auto shares_kind = [&](const framework::FrameworkDescriptor& d) {
    return std::count_if(registry_.all().begin(), registry_.all().end(), [&](const framework::Registration& r) {
             return r.descriptor.group == d.group && r.descriptor.kind == d.kind;
           }) > 1;
  };
  struct Target {
    const framework::FrameworkPlugin* plugin;
    std::string fill;
    const framework::CompanionKind* companion;
    bool denials_forbidden;
  };
  std::vector<Target> targets;  // one per endpoint
  for (const auto* p : plugins_) {
    const auto& d = p->descriptor();
    const bool shared = shares_kind(d);
    const std::string id = shared ? lower(d.kind) + "-" + d.version : lower(d.kind);
    const std::string suffix = fmt::format("{}-{}-{}", dashed(d.group), d.version, lower(d.kind));
    const framework::Registration* reg = registry_.find(d.name);
    const framework::WebhookNeeds needs = reg != nullptr ? reg->webhooks : framework::WebhookNeeds{};
    Endpoint validating = endpoint(WebhookType::Validating, "/validate-" + suffix,
                                   fmt::format("validator.{}.training-operator.kubeflow.org", id), d.resource(),
                                   needs.validate);
    validating.registered = !needs.validate.empty();
    if (validating.operations.empty()) validating.operations = {"CREATE", "UPDATE"};
    // A module that persists its own defaults (needs.mutate) gets its defaulting webhook on those
    // operations whatever --persist-defaults says.
    const bool own_defaults = !needs.mutate.empty();
    Endpoint mutating = endpoint(WebhookType::Mutating, "/mutate-" + suffix,
                                 fmt::format("defaulter.{}.training-operator.kubeflow.org", id), d.resource(),
                                 own_defaults ? needs.mutate : std::vector<std::string>{"CREATE", "UPDATE"});
    mutating.registered = shared || options_.persist_defaults || own_defaults;
    endpoints_.push_back(std::move(validating));
    endpoints_.push_back(std::move(mutating));
    // Where several modules serve one kind, the version a user wrote says which module owns it.
    const std::string fill = shared && !d.managed_by.empty() ? d.managed_by.front() : std::string();
    targets.push_back({p, fill, nullptr, needs.denials_forbidden});
    targets.push_back({p, fill, nullptr, needs.denials_forbidden});
    if (reg == nullptr || p->capabilities().companions == nullptr) continue;
    for (const auto& c : reg->companions) {
      if (c.validate.empty()) continue;
      Endpoint hook = endpoint(
          WebhookType::Validating, fmt::format("/validate-{}-{}-{}", dashed(c.resource.group), c.resource.version, lower(c.kind)),
          fmt::format("validator.{}.training-operator.kubeflow.org", lower(c.kind)), c.resource, c.validate);
      hook.cluster_scoped = c.cluster_scoped;
      hook.skip_label = c.skip_label;
      hook.skip_values = c.skip_values;
      endpoints_.push_back(std::move(hook));
      targets.push_back({p, std::string(), &c, needs.denials_forbidden});
    }
  }
  for (size_t i = 0; i < endpoints_.size(); ++i)
    routes_.push_back(Route{&endpoints_[i], targets[i].plugin, targets[i].fill, targets[i].companion,
                            targets[i].denials_forbidden});
}

std::vector<std::string> Handler::conversion_crds() const {
  std::vector<std::string> out;
  for (const auto& c : registry_.conversions()) {
    const bool enabled = std::any_of(plugins_.begin(), plugins_.end(), [&](const framework::FrameworkPlugin* p) {
      return p->descriptor().group == c.group && p->descriptor().kind == c.kind;
    });
    if (enabled) out.push_back(c.plural + "." + c.group);
  }
  return out;
}

Reply Handler::handle(std::string_view path, std::string_view body) const {
  if (path == kConvertPath) return convert(body);
  for (const auto& r : routes_)
    if (r.endpoint->path == path) return admit(r, body);
  return Reply{404, "text/plain; charset=utf-8", "not found\n"};
}

Reply Handler::admit(const Route& route, std::string_view body) const {
  if (route.companion != nullptr) return admit_companion(route, body);
  const auto& d = route.plugin->descriptor();
  const AdmissionTarget target{{d.group, d.version, d.kind}, d.resource(), route.endpoint->type == WebhookType::Validating};
  auto request = parse_admission_review(body, target);
  if (!request) return json_reply(admission_review_refusal(request.error().uid, request.error().message));
  const Operation operation = request->operation;
  const Value* object = request->object;
  const Value* old_object = request->old_object;
  json::Document out = json::Document::object();
  auto& a = out.alloc();
  Value& response = out.root();
  Value warnings(rapidjson::kArrayType);
  if (const auto* deprecation = route.plugin->capabilities().deprecation)
    if (route.endpoint->type == WebhookType::Validating) warnings.PushBack(str(deprecation->warning(), a), a);

  // On update the owner is the stored job's (managedBy never changes); on create the new one's.
  const Value* owned = operation == Operation::Update && old_object != nullptr ? old_object : object;
  const framework::FrameworkPlugin* owner = owned != nullptr ? owner_of(route, *owned) : route.plugin;
  if (route.endpoint->type == WebhookType::Mutating) {
    // Nothing to default on DELETE, as controller-runtime's defaulting webhooks answer.
    response.AddMember("allowed", true, a);
    if (object != nullptr) {
      json::Document mutated = json::Document::copy_of(*object);
      const auto& ops = route.endpoint->operations;
      const bool own_defaults = persists_own_defaults(registry_, d);
      const bool defaults_here = own_defaults ? std::find(ops.begin(), ops.end(), to_string(operation)) != ops.end()
                                              : options_.persist_defaults;
      if (defaults_here) {
        // The owner's defaults, in the owner's version, brought back to the version written.
        auto in_owner = in_version_of(*owner, *object);
        if (owner != route.plugin && in_owner) {
          owner->set_defaults(*in_owner);
          if (auto back = in_version_of(*route.plugin, in_owner->root())) mutated = std::move(*back);
        } else {
          route.plugin->set_defaults(mutated);
        }
      }
      // A replace that leaves out the owner annotation keeps it (the owner never changes).
      const std::string pin = "/metadata/annotations/" + json::escape_pointer_token(framework::kOwnerAnnotation);
      if (operation == Operation::Update && old_object != nullptr && json::find(mutated.root(), pin) == nullptr)
        if (auto pinned = json::get_string(*old_object, pin))
          if (auto s = json::set_string(mutated, pin, *pinned); !s)
            return json_reply(admission_review_refusal(request->uid, fmt::format("{}: {}", d.kind, s.error().message)));
      // On update the stored owner stands (the validating webhook refuses a change).
      const Value* spec = json::find(mutated.root(), "/spec");
      if (!route.fill_managed_by.empty() && operation == Operation::Create && spec != nullptr && spec->IsObject() &&
          json::find(mutated.root(), "/spec/runPolicy/managedBy") == nullptr) {
        if (auto s = json::set_string(mutated, "/spec/runPolicy/managedBy", route.fill_managed_by); !s)
          return json_reply(admission_review_refusal(request->uid, fmt::format("{}: {}", d.kind, s.error().message)));
      }
      json::Document patch = json_patch_diff(*object, mutated.root());
      if (!patch.root().Empty()) {
        response.AddMember("patchType", "JSONPatch", a);
        response.AddMember("patch", str(base64_encode(patch.dump()), a), a);
      }
    }
    return json_reply(admission_review_reply(request->uid, response));
  }

  // DELETE and CONNECT are not validated (only a deprecated kind's warning goes back), as
  // controller-runtime's validating webhooks answer them.
  if (operation == Operation::Update && old_object != nullptr && applied_over_other_version(route, *object, *old_object)) {
    response.AddMember("allowed", false, a);
    const std::string name(json::get_string(*object, "/metadata/name").value_or(request->name));
    response.AddMember("status", already_exists_status(d, name, a), a);
    return json_reply(admission_review_reply(request->uid, response));
  }
  framework::Validation v;
  if (operation == Operation::Create || operation == Operation::Update) {
    const Value* old = operation == Operation::Update ? old_object : nullptr;
    // The owning module judges the job in its own version.
    const framework::FrameworkPlugin* judge = route.plugin;
    const Value* judged = object;
    const Value* judged_old = old;
    std::optional<json::Document> converted, converted_old;
    if (owner != route.plugin) {
      auto now = in_version_of(*owner, *object);
      auto before = old != nullptr ? in_version_of(*owner, *old) : Result<json::Document>(json::Document());
      if (now && before) {
        judge = owner;
        converted = std::move(*now);
        judged = &converted->root();
        if (old != nullptr) {
          converted_old = std::move(*before);
          judged_old = &converted_old->root();
        }
      }
    }
    if (framework::pipeline_behaviour(*judge).validates_defaulted) {
      json::Document defaulted = json::Document::copy_of(*judged);
      judge->set_defaults(defaulted);
      std::optional<json::Document> old_defaulted;
      if (judged_old != nullptr) {
        old_defaulted = json::Document::copy_of(*judged_old);
        judge->set_defaults(*old_defaulted);
      }
      v = judge->validate(old_defaulted ? &old_defaulted->root() : nullptr, defaulted.root());
    } else {
      v = judge->validate(judged_old, *judged);
    }
    // A job another module of this kind owns (not enabled here) is no managedBy error.
    if (auto named = json::get_string(*object, "/spec/runPolicy/managedBy"); named && judge == route.plugin &&
                                                                           sibling_manager(route, *named)) {
      v.errors.erase(std::remove_if(v.errors.begin(), v.errors.end(),
                                    [](const api::FieldError& e) {
                                      return e.field == "spec.runPolicy.managedBy" &&
                                             e.type == api::FieldErrorType::NotSupported;
                                    }),
                     v.errors.end());
    }
    // The owner of a job never changes, whatever the framework checks itself: neither the
    // managedBy a user gave nor the owner annotation the operator pinned once set.
    if (old != nullptr) {
      const std::string pin = "/metadata/annotations/" + json::escape_pointer_token(framework::kOwnerAnnotation);
      const Value* pinned_before = json::find(*old, pin);
      const Value* pinned_now = json::find(*object, pin);
      if (pinned_before != nullptr && (pinned_now == nullptr || !json::equal(*pinned_now, *pinned_before)))
        v.errors.push_back(api::FieldError::invalid(
            api::FieldPath("metadata").child("annotations").key(framework::kOwnerAnnotation),
            pinned_now ? api::FieldValue::of_json(*pinned_now) : api::FieldValue::null(), "field is immutable"));
    }
    if (old != nullptr) {
      const Value* now = json::find(*object, "/spec/runPolicy/managedBy");
      const Value* before = json::find(*old, "/spec/runPolicy/managedBy");
      const bool same = (now == nullptr && before == nullptr) ||
                        (now != nullptr && before != nullptr && json::equal(*now, *before));
      const std::string field = "spec.runPolicy.managedBy";
      const bool reported = std::any_of(v.errors.begin(), v.errors.end(),
                                        [&](const api::FieldError& e) { return e.field == field; });
      if (!same && !reported)
        v.errors.push_back(api::FieldError::invalid(api::FieldPath(field),
                                                    now ? api::FieldValue::of_json(*now) : api::FieldValue::null(),
                                                    "field is immutable"));
    }
  }
  for (const auto& w : v.warnings) warnings.PushBack(str(w, a), a);
  response.AddMember("allowed", v.ok(), a);
  if (!v.ok()) {
    const std::string name(json::get_string(*object, "/metadata/name").value_or(request->name));
    response.AddMember("status", denial_status(route.denials_forbidden, d.group, d.kind, name, v.errors, a), a);
  }
  if (!warnings.Empty()) response.AddMember("warnings", warnings, a);
  return json_reply(admission_review_reply(request->uid, response));
}

Reply Handler::admit_companion(const Route& route, std::string_view body) const {
  const framework::CompanionKind& c = *route.companion;
  const AdmissionTarget target{{c.resource.group, c.resource.version, c.kind}, c.resource, true};
  auto request = parse_admission_review(body, target);
  if (!request) return json_reply(admission_review_refusal(request.error().uid, request.error().message));
  json::Document out = json::Document::object();
  auto& a = out.alloc();
  Value& response = out.root();
  framework::Validation v;
  const auto& ops = route.endpoint->operations;
  const std::string operation(to_string(request->operation));
  // Only the operations the hook is registered for are judged (DELETE, CONNECT never).
  if ((request->operation == Operation::Create || request->operation == Operation::Update) &&
      std::find(ops.begin(), ops.end(), operation) != ops.end()) {
    const Value* old = request->operation == Operation::Update ? request->old_object : nullptr;
    v = route.plugin->capabilities().companions->validate_companion(c.kind, old, *request->object);
  }
  response.AddMember("allowed", v.ok(), a);
  if (!v.ok()) {
    const std::string name(json::get_string(*request->object, "/metadata/name").value_or(request->name));
    response.AddMember("status", denial_status(route.denials_forbidden, c.resource.group, c.kind, name, v.errors, a), a);
  }
  Value warnings(rapidjson::kArrayType);
  for (const auto& w : v.warnings) warnings.PushBack(str(w, a), a);
  if (!warnings.Empty()) response.AddMember("warnings", warnings, a);
  return json_reply(admission_review_reply(request->uid, response));
}

const framework::FrameworkPlugin* Handler::owner_of(const Route& route, const Value& object) const {
  const auto owner = framework::declared_owner(object);
  if (!owner) return route.plugin;
  const auto& d = route.plugin->descriptor();
  for (const auto* p : plugins_) {
    const auto& pd = p->descriptor();
    if (pd.group != d.group || pd.kind != d.kind) continue;
    if (std::find(pd.managed_by.begin(), pd.managed_by.end(), *owner) != pd.managed_by.end()) return p;
  }
  return route.plugin;
}

Result<json::Document> Handler::in_version_of(const framework::FrameworkPlugin& plugin, const Value& object) const {
  const auto& d = plugin.descriptor();
  if (json::get_string(object, "/apiVersion") == std::string_view(d.api_version())) return json::Document::copy_of(object);
  const auto* conversion = registry_.find_conversion(d.group, d.kind);
  if (conversion == nullptr) return fail(fmt::format("no conversion for {} {}", d.api_version(), d.kind));
  return conversion->convert(object, d.api_version());
}

bool Handler::sibling_manager(const Route& route, std::string_view manager) const {
  const auto& d = route.plugin->descriptor();
  for (const auto& r : registry_.all()) {
    const auto& rd = r.descriptor;
    if (rd.name == d.name || rd.group != d.group || rd.kind != d.kind) continue;
    if (std::find(rd.managed_by.begin(), rd.managed_by.end(), manager) != rd.managed_by.end()) return true;
  }
  return false;
}

bool Handler::applied_over_other_version(const Route& route, const Value& object, const Value& old_object) const {
  constexpr std::string_view kLastApplied = "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration";
  auto applied_version = [&](const Value& obj) -> std::optional<std::string> {
    auto text = json::get_string(obj, kLastApplied);
    if (!text) return std::nullopt;
    auto applied = json::Document::parse(*text);
    if (!applied || !applied->root().IsObject()) return std::nullopt;
    // kubectl edit rewrites the annotation with the whole edited object (uid and all); an applied
    // manifest names no uid.
    if (json::find(applied->root(), "/metadata/uid") != nullptr) return std::nullopt;
    return std::string(json::get_string(applied->root(), "/apiVersion").value_or(""));
  };
  const auto& d = route.plugin->descriptor();
  const auto now = applied_version(object);
  if (!now || *now != d.api_version() || applied_version(old_object) == now) return false;
  if (auto before = applied_version(old_object)) return true;  // last applied in the other version
  // Never applied: the version of the module that owns it.
  const auto owner = framework::declared_owner(old_object);
  if (!owner || !sibling_manager(route, *owner)) return false;
  for (const auto& r : registry_.all()) {
    const auto& rd = r.descriptor;
    if (rd.group == d.group && rd.kind == d.kind && rd.name != d.name &&
        std::find(rd.managed_by.begin(), rd.managed_by.end(), *owner) != rd.managed_by.end())
      return rd.version != d.version;
  }
  return false;
}

Reply Handler::convert(std::string_view body) const {
  auto request = parse_conversion_review(body);
  if (!request) {
    if (request.error().uid.empty()) return bad_request(request.error().message);
    return json_reply(conversion_review_failure(request.error().uid, request.error().message));
  }
  const std::string desired_group = request->desired_api_version.substr(0, request->desired_api_version.find('/'));
  json::Document converted = json::Document::array();
  auto& a = converted.alloc();
  const api::FieldPath objects_path = api::FieldPath("request").child("objects");
  for (rapidjson::SizeType i = 0; i < request->objects->Size(); ++i) {
    const Value& object = (*request->objects)[i];
    const api::FieldPath path = objects_path.index(i);
    auto failure = [&](const std::string& why) { return json_reply(conversion_review_failure(request->uid, why)); };
    if (!object.IsObject()) return failure(fmt::format("{}: must be an object", path.str()));
    const std::string api_version(json::get_string(object, "/apiVersion").value_or(""));
    const std::string kind(json::get_string(object, "/kind").value_or(""));
    const auto slash = api_version.find('/');
    const std::string group = slash == std::string::npos ? std::string() : api_version.substr(0, slash);
    if (group != desired_group)
      return failure(fmt::format("{}.apiVersion: \"{}\" is not in group {} of desiredAPIVersion {}", path.str(), api_version,
                                 desired_group, request->desired_api_version));
    const auto* c = registry_.find_conversion(group, kind);
    if (c == nullptr) return failure(fmt::format("no conversion for {} {}", api_version, kind));
    auto result = c->convert(object, request->desired_api_version);
    if (!result) return failure(fmt::format("{}: {}", path.str(), result.error().message));
    converted.root().PushBack(Value(result->root(), a), a);
  }
  return json_reply(conversion_review_success(request->uid, converted.root()));
}

json::Document Handler::configuration_for(WebhookType type, const json::Value& client_config) const {
  return configuration_of(type, client_config, false);
}

json::Document Handler::manifest_configuration(WebhookType type, const json::Value& client_config) const {
  return configuration_of(type, client_config, true);
}

json::Document Handler::configuration_of(WebhookType type, const json::Value& client_config, bool every_served) const {
  json::Document doc = json::Document::object();
  auto& a = doc.alloc();
  const bool validating = type == WebhookType::Validating;
  doc.root().AddMember("apiVersion", "admissionregistration.k8s.io/v1", a);
  doc.root().AddMember("kind", str(validating ? "ValidatingWebhookConfiguration" : "MutatingWebhookConfiguration", a), a);
  Value meta(rapidjson::kObjectType);
  meta.AddMember("name", str(validating ? kValidatingConfigurationName : kMutatingConfigurationName, a), a);
  doc.root().AddMember("metadata", meta, a);
  Value hooks(rapidjson::kArrayType);
  for (const auto& e : endpoints_) {
    if (e.type != type || !(e.registered || every_served)) continue;
    Value hook(rapidjson::kObjectType);
    hook.AddMember("name", str(e.name, a), a);
    Value cc(client_config, a);
    if (auto it = cc.FindMember("service"); it != cc.MemberEnd() && it->value.IsObject()) {
      it->value.EraseMember("path");
      it->value.AddMember("path", str(e.path, a), a);
    } else if (auto url = cc.FindMember("url"); url != cc.MemberEnd() && url->value.IsString()) {
      std::string base = url->value.GetString();
      while (!base.empty() && base.back() == '/') base.pop_back();
      url->value = str(base + e.path, a);
    }
    hook.AddMember("clientConfig", cc, a);
    Value rule(rapidjson::kObjectType);
    Value groups(rapidjson::kArrayType), versions(rapidjson::kArrayType), ops(rapidjson::kArrayType),
        resources(rapidjson::kArrayType);
    groups.PushBack(str(e.resource.group, a), a);
    versions.PushBack(str(e.resource.version, a), a);
    for (const auto& o : e.operations) ops.PushBack(str(o, a), a);
    resources.PushBack(str(e.resource.resource, a), a);
    rule.AddMember("apiGroups", groups, a);
    rule.AddMember("apiVersions", versions, a);
    rule.AddMember("operations", ops, a);
    rule.AddMember("resources", resources, a);
    rule.AddMember("scope", str(e.cluster_scoped ? "Cluster" : "Namespaced", a), a);
    Value rules(rapidjson::kArrayType);
    rules.PushBack(rule, a);
    hook.AddMember("rules", rules, a);
    if (!e.skip_label.empty()) {
      Value requirement(rapidjson::kObjectType), values(rapidjson::kArrayType), expressions(rapidjson::kArrayType),
          selector(rapidjson::kObjectType);
      requirement.AddMember("key", str(e.skip_label, a), a);
      requirement.AddMember("operator", "NotIn", a);
      for (const auto& v : e.skip_values) values.PushBack(str(v, a), a);
      requirement.AddMember("values", values, a);
      expressions.PushBack(requirement, a);
      selector.AddMember("matchExpressions", expressions, a);
      hook.AddMember("objectSelector", selector, a);
    }
    // Each hook sees only the version it names: the version a user wrote decides the owner.
    hook.AddMember("matchPolicy", "Exact", a);
    hook.AddMember("failurePolicy", "Fail", a);
    hook.AddMember("sideEffects", "None", a);
    Value review_versions(rapidjson::kArrayType);
    review_versions.PushBack("v1", a);
    hook.AddMember("admissionReviewVersions", review_versions, a);
    hook.AddMember("timeoutSeconds", 10, a);
    if (!validating) hook.AddMember("reinvocationPolicy", "Never", a);
    hooks.PushBack(hook, a);
  }
  doc.root().AddMember("webhooks", hooks, a);
  return doc;
}

bool Handler::registration_needed(std::string_view name) const {
  for (const auto& r : routes_) {
    if (r.endpoint->name != name) continue;
    return r.endpoint->type == WebhookType::Validating || !r.fill_managed_by.empty() || options_.persist_defaults ||
           persists_own_defaults(registry_, r.plugin->descriptor());
  }
  return false;
}

json::Document Handler::validating_configuration(const json::Value& client_config) const {
  return configuration_for(WebhookType::Validating, client_config);
}

json::Document Handler::mutating_configuration(const json::Value& client_config) const {
  return configuration_for(WebhookType::Mutating, client_config);
}

}  // namespace unitrain::webhook
