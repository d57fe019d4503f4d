#include "core/webhook/handler.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/api/field_errors.h"
#include "core/framework/ascii.h"
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

}  // namespace

json::Document json_patch_diff(const Value& from, const Value& to) {
  json::Document ops = json::Document::array();
  diff_into(from, to, "", ops.root(), ops.alloc());
  return ops;
}

Handler::Handler(std::vector<const framework::FrameworkPlugin*> plugins, const framework::Registry& registry,
                 HandlerOptions options)
    : plugins_(std::move(plugins)), registry_(registry), options_(options) {
  auto shares_kind = [&](const framework::FrameworkDescriptor& d) {
    return std::count_if(plugins_.begin(), plugins_.end(), [&](const framework::FrameworkPlugin* p) {
             return p->descriptor().group == d.group && p->descriptor().kind == d.kind;
           }) > 1;
  };
  std::vector<std::string> fills;
  for (const auto* p : plugins_) {
    const auto& d = p->descriptor();
    const bool shared = shares_kind(d);
    const std::string id = shared ? lower(d.kind) + "-" + d.version : lower(d.kind);
    const std::string suffix = fmt::format("{}-{}-{}", dashed(d.group), d.version, lower(d.kind));
    const framework::Registration* reg = registry_.find(d.name);
    const framework::WebhookNeeds needs = reg != nullptr ? reg->webhooks : framework::WebhookNeeds{};
    Endpoint validating{WebhookType::Validating, "/validate-" + suffix,
                        fmt::format("validator.{}.training-operator.kubeflow.org", id), d.resource(), needs.validate,
                        !needs.validate.empty()};
    if (validating.operations.empty()) validating.operations = {"CREATE", "UPDATE"};
    Endpoint mutating{WebhookType::Mutating, "/mutate-" + suffix,
                      fmt::format("defaulter.{}.training-operator.kubeflow.org", id), d.resource(),
                      {"CREATE", "UPDATE"}, shared || options_.persist_defaults};
    endpoints_.push_back(std::move(validating));
    endpoints_.push_back(std::move(mutating));
    // Where several modules serve one kind, the version a user wrote says which module owns it.
    const std::string fill = shared && !d.managed_by.empty() ? d.managed_by.front() : std::string();
    fills.push_back(fill);
    fills.push_back(fill);
  }
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    const auto* plugin = plugins_[i / 2];
    routes_.push_back(Route{&endpoints_[i], plugin, fills[i], framework::pipeline_behaviour(*plugin).validates_defaulted});
  }
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

  if (route.endpoint->type == WebhookType::Mutating) {
    // Nothing to default on DELETE, as controller-runtime's defaulting webhooks answer.
    response.AddMember("allowed", true, a);
    if (object != nullptr) {
      json::Document mutated = json::Document::copy_of(*object);
      if (options_.persist_defaults) route.plugin->set_defaults(mutated);
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
  framework::Validation v;
  if (operation == Operation::Create || operation == Operation::Update) {
    const Value* old = operation == Operation::Update ? old_object : nullptr;
    if (route.validates_defaulted) {
      json::Document defaulted = json::Document::copy_of(*object);
      route.plugin->set_defaults(defaulted);
      std::optional<json::Document> old_defaulted;
      if (old != nullptr) {
        old_defaulted = json::Document::copy_of(*old);
        route.plugin->set_defaults(*old_defaulted);
      }
      v = route.plugin->validate(old_defaulted ? &old_defaulted->root() : nullptr, defaulted.root());
    } else {
      v = route.plugin->validate(old, *object);
    }
    // The owner of a job never changes, whatever the framework checks itself.
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
    json::Document status = api::invalid_status(d.group, d.kind, name, v.errors);
    // AdmissionResponse.status is a metav1.Status without type meta.
    status.root().EraseMember("kind");
    status.root().EraseMember("apiVersion");
    response.AddMember("status", Value(status.root(), a), a);
  }
  if (!warnings.Empty()) response.AddMember("warnings", warnings, a);
  return json_reply(admission_review_reply(request->uid, response));
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

json::Document Handler::configuration(WebhookType type, const json::Value& client_config) const {
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
    if (e.type != type || !e.registered) continue;
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
    rule.AddMember("scope", "Namespaced", a);
    Value rules(rapidjson::kArrayType);
    rules.PushBack(rule, a);
    hook.AddMember("rules", rules, a);
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

json::Document Handler::validating_configuration(const json::Value& client_config) const {
  return configuration(WebhookType::Validating, client_config);
}

json::Document Handler::mutating_configuration(const json::Value& client_config) const {
  return configuration(WebhookType::Mutating, client_config);
}

}  // namespace unitrain::webhook
