#include "core/framework/abi/wire.h"

#include <array>
#include <utility>

#include <fmt/format.h>

namespace unitrain::framework::wire {

namespace {

using json::Allocator;
using json::Document;
using json::Value;

Value text_value(std::string_view s, Allocator& a) { return json::str(s, a); }

Value string_array(const std::vector<std::string>& items, Allocator& a) {
  Value out(rapidjson::kArrayType);
  for (const auto& s : items) out.PushBack(text_value(s, a), a);
  return out;
}

Value resource_json(const kube::GroupVersionResource& r, Allocator& a) {
  Value out(rapidjson::kObjectType);
  out.AddMember("group", text_value(r.group, a), a);
  out.AddMember("version", text_value(r.version, a), a);
  out.AddMember("resource", text_value(r.resource, a), a);
  return out;
}

Value resources_value(const std::vector<kube::GroupVersionResource>& resources, Allocator& a) {
  Value out(rapidjson::kArrayType);
  for (const auto& r : resources) out.PushBack(resource_json(r, a), a);
  return out;
}

Value pointers_json(const std::vector<const Value*>& objects, Allocator& a) {
  Value out(rapidjson::kArrayType);
  for (const Value* o : objects)
    if (o != nullptr) out.PushBack(Value(*o, a), a);
  return out;
}

std::string member_path(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

// Member readers: a missing member is the fallback unless `required`; a member of the wrong
// type is an error naming it.
class MemberReader {
 public:
  MemberReader(const Value& object, std::string path) : object_(object), path_(std::move(path)) {}

  Status check_object() const {
    if (!object_.IsObject()) return fail(fmt::format("{}: must be an object", path_.empty() ? "document" : path_));
    return {};
  }
  const Value* find(std::string_view key) const {
    auto it = object_.FindMember(rapidjson::StringRef(key.data(), static_cast<rapidjson::SizeType>(key.size())));
    return it == object_.MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
  }
  Result<std::string> string(std::string_view key, bool required = false, std::string fallback = {}) const {
    const Value* v = find(key);
    if (v == nullptr) {
      if (required) return fail(fmt::format("{}: required", member_path(path_, key)));
      return fallback;
    }
    if (!v->IsString()) return fail(fmt::format("{}: must be a string", member_path(path_, key)));
    return std::string(json::view(*v));
  }
  Result<std::optional<std::string>> optional_string(std::string_view key) const {
    const Value* v = find(key);
    if (v == nullptr) return std::optional<std::string>();
    if (!v->IsString()) return fail(fmt::format("{}: must be a string", member_path(path_, key)));
    return std::optional<std::string>(std::string(json::view(*v)));
  }
  Result<int32_t> int32(std::string_view key, int32_t fallback = 0) const {
    const Value* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->IsInt()) return fail(fmt::format("{}: must be a 32-bit integer", member_path(path_, key)));
    return v->GetInt();
  }
  Result<bool> boolean(std::string_view key, bool fallback) const {
    const Value* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->IsBool()) return fail(fmt::format("{}: must be true or false", member_path(path_, key)));
    return v->GetBool();
  }
  Result<std::vector<std::string>> strings(std::string_view key) const {
    std::vector<std::string> out;
    const Value* v = find(key);
    if (v == nullptr) return out;
    if (!v->IsArray()) return fail(fmt::format("{}: must be an array of strings", member_path(path_, key)));
    for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
      if (!(*v)[i].IsString()) return fail(fmt::format("{}[{}]: must be a string", member_path(path_, key), i));
      out.emplace_back(json::view((*v)[i]));
    }
    return out;
  }
  // An array member (empty when missing); each element must be an object.
  Result<const Value*> objects(std::string_view key) const {
    const Value* v = find(key);
    if (v == nullptr) return static_cast<const Value*>(nullptr);
    if (!v->IsArray()) return fail(fmt::format("{}: must be an array", member_path(path_, key)));
    for (rapidjson::SizeType i = 0; i < v->Size(); ++i)
      if (!(*v)[i].IsObject()) return fail(fmt::format("{}[{}]: must be an object", member_path(path_, key), i));
    return v;
  }
  std::string path(std::string_view key) const { return member_path(path_, key); }

 private:
  const Value& object_;
  std::string path_;
};

// Unwraps `r` into `out`, or returns its error from the enclosing function.
#define UNITRAIN_WIRE_READ(out, r)   \
  do {                               \
    auto read_ = (r);                \
    if (!read_) return fail(read_.error()); \
    out = std::move(*read_);         \
  } while (false)

Result<kube::GroupVersionResource> resource_from(const Value& v, const std::string& path) {
  MemberReader r(v, path);
  if (auto s = r.check_object(); !s) return fail(s.error());
  kube::GroupVersionResource out;
  UNITRAIN_WIRE_READ(out.group, r.string("group"));
  UNITRAIN_WIRE_READ(out.version, r.string("version", true));
  UNITRAIN_WIRE_READ(out.resource, r.string("resource", true));
  return out;
}

Result<std::vector<const Value*>> object_list(const Value* list, const std::string& path) {
  std::vector<const Value*> out;
  if (list == nullptr || list->IsNull()) return out;
  if (!list->IsArray()) return fail(fmt::format("{}: must be an array", path));
  for (const auto& o : list->GetArray()) out.push_back(&o);
  return out;
}

Value descriptor_json(const FrameworkDescriptor& d, Allocator& a) {
  Value o(rapidjson::kObjectType);
  o.AddMember("name", text_value(d.name, a), a);
  o.AddMember("aliases", string_array(d.aliases, a), a);
  o.AddMember("kindAliasDefault", d.kind_alias_default, a);
  o.AddMember("group", text_value(d.group, a), a);
  o.AddMember("version", text_value(d.version, a), a);
  o.AddMember("kind", text_value(d.kind, a), a);
  o.AddMember("plural", text_value(d.plural, a), a);
  o.AddMember("singular", text_value(d.singular, a), a);
  o.AddMember("replicaSpecsField", text_value(d.replica_specs_field, a), a);
  o.AddMember("replicaTypes", string_array(d.replica_types, a), a);
  o.AddMember("defaultContainer", text_value(d.default_container, a), a);
  o.AddMember("defaultPortName", text_value(d.default_port_name, a), a);
  o.AddMember("defaultPort", d.default_port, a);
  o.AddMember("controllerName", text_value(d.controller_name, a), a);
  o.AddMember("replicaTypeLabel", text_value(d.replica_type_label, a), a);
  o.AddMember("metricsFramework", text_value(d.metrics_framework, a), a);
  o.AddMember("managedBy", string_array(d.managed_by, a), a);
  o.AddMember("ownsUnsetManagedBy", d.owns_unset_managed_by, a);
  o.AddMember("ownedResources", resources_value(d.owned_resources, a), a);
  o.AddMember("optionalOwnedResources", resources_value(d.optional_owned_resources, a), a);
  o.AddMember("unservedOwnedWarning", text_value(d.unserved_owned_warning, a), a);
  o.AddMember("childLabelSelector", text_value(d.child_label_selector, a), a);
  Value core_children(rapidjson::kObjectType);
  core_children.AddMember("pods", d.core_children.pods, a);
  core_children.AddMember("services", d.core_children.services, a);
  o.AddMember("coreChildren", core_children, a);
  return o;
}

Result<FrameworkDescriptor> descriptor_from(const Value& v) {
  MemberReader r(v, "descriptor");
  if (auto s = r.check_object(); !s) return fail(s.error());
  FrameworkDescriptor d;
  UNITRAIN_WIRE_READ(d.name, r.string("name", true));
  UNITRAIN_WIRE_READ(d.aliases, r.strings("aliases"));
  UNITRAIN_WIRE_READ(d.kind_alias_default, r.boolean("kindAliasDefault", true));
  UNITRAIN_WIRE_READ(d.group, r.string("group", true));
  UNITRAIN_WIRE_READ(d.version, r.string("version", true));
  UNITRAIN_WIRE_READ(d.kind, r.string("kind", true));
  UNITRAIN_WIRE_READ(d.plural, r.string("plural", true));
  UNITRAIN_WIRE_READ(d.singular, r.string("singular"));
  UNITRAIN_WIRE_READ(d.replica_specs_field, r.string("replicaSpecsField"));
  UNITRAIN_WIRE_READ(d.replica_types, r.strings("replicaTypes"));
  UNITRAIN_WIRE_READ(d.default_container, r.string("defaultContainer"));
  UNITRAIN_WIRE_READ(d.default_port_name, r.string("defaultPortName"));
  UNITRAIN_WIRE_READ(d.default_port, r.int32("defaultPort"));
  UNITRAIN_WIRE_READ(d.controller_name, r.string("controllerName"));
  UNITRAIN_WIRE_READ(d.replica_type_label, r.string("replicaTypeLabel", false, d.replica_type_label));
  UNITRAIN_WIRE_READ(d.metrics_framework, r.string("metricsFramework"));
  UNITRAIN_WIRE_READ(d.managed_by, r.strings("managedBy"));
  UNITRAIN_WIRE_READ(d.owns_unset_managed_by, r.boolean("ownsUnsetManagedBy", true));
  const Value* owned = nullptr;
  UNITRAIN_WIRE_READ(owned, r.objects("ownedResources"));
  if (owned != nullptr) UNITRAIN_WIRE_READ(d.owned_resources, resources_from(*owned, r.path("ownedResources")));
  const Value* optional = nullptr;
  UNITRAIN_WIRE_READ(optional, r.objects("optionalOwnedResources"));
  if (optional != nullptr)
    UNITRAIN_WIRE_READ(d.optional_owned_resources, resources_from(*optional, r.path("optionalOwnedResources")));
  UNITRAIN_WIRE_READ(d.unserved_owned_warning, r.string("unservedOwnedWarning"));
  UNITRAIN_WIRE_READ(d.child_label_selector, r.string("childLabelSelector"));
  // ABI 1.3; a module built for an earlier minor version says nothing: pods and Services.
  if (const Value* core_children = r.find("coreChildren")) {
    MemberReader c(*core_children, r.path("coreChildren"));
    if (auto s = c.check_object(); !s) return fail(s.error());
    UNITRAIN_WIRE_READ(d.core_children.pods, c.boolean("pods", true));
    UNITRAIN_WIRE_READ(d.core_children.services, c.boolean("services", true));
  }
  return d;
}

constexpr std::array<std::pair<CoreEvent, std::string_view>, 9> kEvents = {{
    {CoreEvent::Created, "Created"},
    {CoreEvent::Suspended, "Suspended"},
    {CoreEvent::SuspendedNotRunning, "SuspendedNotRunning"},
    {CoreEvent::Resumed, "Resumed"},
    {CoreEvent::BackoffLimitExceeded, "BackoffLimitExceeded"},
    {CoreEvent::DeadlineExceeded, "DeadlineExceeded"},
    {CoreEvent::ReplicaRestarting, "ReplicaRestarting"},
    {CoreEvent::ReplicaFailed, "ReplicaFailed"},
    {CoreEvent::ValidationFailed, "ValidationFailed"},
}};

constexpr std::array<std::pair<ChildEvent, std::string_view>, 11> kChildEvents = {{
    {ChildEvent::Created, "Created"},
    {ChildEvent::CreateFailed, "CreateFailed"},
    {ChildEvent::Deleted, "Deleted"},
    {ChildEvent::DeleteFailed, "DeleteFailed"},
    {ChildEvent::ExitedWithCode, "ExitedWithCode"},
    {ChildEvent::TemplateRestartPolicy, "TemplateRestartPolicy"},
    {ChildEvent::TemplateSchedulerName, "TemplateSchedulerName"},
    {ChildEvent::PodGroupDeleting, "PodGroupDeleting"},
    {ChildEvent::AbnormalPod, "AbnormalPod"},
    {ChildEvent::JobDeleted, "JobDeleted"},
    {ChildEvent::JobDeleteFailed, "JobDeleteFailed"},
}};

}  // namespace

// ---- registration ------------------------------------------------------------------------------

Document registration_json(const Registration& registration) {
  Document doc = Document::object();
  auto& a = doc.alloc();
  Value& root = doc.root();
  root.AddMember("descriptor", descriptor_json(registration.descriptor, a), a);
  Value options(rapidjson::kArrayType);
  for (const auto& o : registration.options) {
    Value option(rapidjson::kObjectType);
    option.AddMember("name", text_value(o.name, a), a);
    option.AddMember("default", text_value(o.default_value, a), a);
    option.AddMember("help", text_value(o.help, a), a);
    options.PushBack(option, a);
  }
  root.AddMember("options", options, a);
  root.AddMember("crds", string_array(registration.crds, a), a);
  Value permissions(rapidjson::kArrayType);
  for (const auto& p : registration.permissions) {
    Value rule(rapidjson::kObjectType);
    rule.AddMember("apiGroups", string_array(p.api_groups, a), a);
    rule.AddMember("resources", string_array(p.resources, a), a);
    rule.AddMember("verbs", string_array(p.verbs, a), a);
    rule.AddMember("why", text_value(p.why, a), a);
    permissions.PushBack(rule, a);
  }
  root.AddMember("permissions", permissions, a);
  Value webhooks(rapidjson::kObjectType);
  webhooks.AddMember("validate", string_array(registration.webhooks.validate, a), a);
  webhooks.AddMember("mutate", string_array(registration.webhooks.mutate, a), a);
  webhooks.AddMember("denialsForbidden", registration.webhooks.denials_forbidden, a);
  root.AddMember("webhooks", webhooks, a);
  Value companions(rapidjson::kArrayType);
  for (const auto& c : registration.companions) {
    Value companion(rapidjson::kObjectType);
    companion.AddMember("resource", resource_json(c.resource, a), a);
    companion.AddMember("kind", text_value(c.kind, a), a);
    companion.AddMember("clusterScoped", c.cluster_scoped, a);
    companion.AddMember("validate", string_array(c.validate, a), a);
    companion.AddMember("skipLabel", text_value(c.skip_label, a), a);
    companion.AddMember("skipValues", string_array(c.skip_values, a), a);
    companion.AddMember("releasedFinalizers", string_array(c.released_finalizers, a), a);
    companions.PushBack(companion, a);
  }
  root.AddMember("companions", companions, a);
  return doc;
}

Result<Registration> registration_from(const Value& doc) {
  MemberReader r(doc, "");
  if (auto s = r.check_object(); !s) return fail(s.error());
  Registration out;
  const Value* descriptor = r.find("descriptor");
  if (descriptor == nullptr) return fail("descriptor: required");
  UNITRAIN_WIRE_READ(out.descriptor, descriptor_from(*descriptor));
  const Value* options = nullptr;
  UNITRAIN_WIRE_READ(options, r.objects("options"));
  if (options != nullptr) {
    for (rapidjson::SizeType i = 0; i < options->Size(); ++i) {
      MemberReader o((*options)[i], fmt::format("options[{}]", i));
      OptionSpec spec;
      UNITRAIN_WIRE_READ(spec.name, o.string("name", true));
      UNITRAIN_WIRE_READ(spec.default_value, o.string("default"));
      UNITRAIN_WIRE_READ(spec.help, o.string("help"));
      out.options.push_back(std::move(spec));
    }
  }
  UNITRAIN_WIRE_READ(out.crds, r.strings("crds"));
  const Value* permissions = nullptr;
  UNITRAIN_WIRE_READ(permissions, r.objects("permissions"));
  if (permissions != nullptr) {
    for (rapidjson::SizeType i = 0; i < permissions->Size(); ++i) {
      MemberReader p((*permissions)[i], fmt::format("permissions[{}]", i));
      Permission rule;
      UNITRAIN_WIRE_READ(rule.api_groups, p.strings("apiGroups"));
      UNITRAIN_WIRE_READ(rule.resources, p.strings("resources"));
      UNITRAIN_WIRE_READ(rule.verbs, p.strings("verbs"));
      UNITRAIN_WIRE_READ(rule.why, p.string("why"));
      if (rule.api_groups.empty() || rule.resources.empty() || rule.verbs.empty())
        return fail(fmt::format("permissions[{}]: apiGroups, resources and verbs must not be empty", i));
      out.permissions.push_back(std::move(rule));
    }
  }
  if (const Value* webhooks = r.find("webhooks")) {
    MemberReader w(*webhooks, "webhooks");
    if (auto s = w.check_object(); !s) return fail(s.error());
    if (w.find("validate") != nullptr) UNITRAIN_WIRE_READ(out.webhooks.validate, w.strings("validate"));
    if (w.find("mutate") != nullptr) UNITRAIN_WIRE_READ(out.webhooks.mutate, w.strings("mutate"));
    UNITRAIN_WIRE_READ(out.webhooks.denials_forbidden, w.boolean("denialsForbidden", false));
  }
  const Value* companions = nullptr;
  UNITRAIN_WIRE_READ(companions, r.objects("companions"));
  if (companions != nullptr) {
    for (rapidjson::SizeType i = 0; i < companions->Size(); ++i) {
      const std::string path = fmt::format("companions[{}]", i);
      MemberReader c((*companions)[i], path);
      CompanionKind companion;
      const Value* resource = c.find("resource");
      if (resource == nullptr) return fail(path + ".resource: required");
      UNITRAIN_WIRE_READ(companion.resource, resource_from(*resource, path + ".resource"));
      UNITRAIN_WIRE_READ(companion.kind, c.string("kind", true));
      UNITRAIN_WIRE_READ(companion.cluster_scoped, c.boolean("clusterScoped", false));
      UNITRAIN_WIRE_READ(companion.validate, c.strings("validate"));
      UNITRAIN_WIRE_READ(companion.skip_label, c.string("skipLabel"));
      UNITRAIN_WIRE_READ(companion.skip_values, c.strings("skipValues"));
      UNITRAIN_WIRE_READ(companion.released_finalizers, c.strings("releasedFinalizers"));
      out.companions.push_back(std::move(companion));
    }
  }
  return out;
}

// ---- configuration -------------------------------------------------------------------------------

Document config_json(const PluginConfig& config) {
  Document doc = Document::object();
  auto& a = doc.alloc();
  Value options(rapidjson::kObjectType);
  for (const auto& [name, value] : config.options) options.AddMember(text_value(name, a), text_value(value, a), a);
  doc.root().AddMember("options", options, a);
  doc.root().AddMember("gangSchedulerName", text_value(config.gang_scheduler_name, a), a);
  doc.root().AddMember("clusterDomain", text_value(config.cluster_domain, a), a);
  return doc;
}

Result<PluginConfig> config_from(const Value& doc) {
  MemberReader r(doc, "");
  if (auto s = r.check_object(); !s) return fail(s.error());
  PluginConfig out;
  if (const Value* options = r.find("options")) {
    if (!options->IsObject()) return fail("options: must be an object of strings");
    for (const auto& m : options->GetObject()) {
      if (!m.value.IsString()) return fail(fmt::format("options.{}: must be a string", json::view(m.name)));
      out.options.emplace(std::string(json::view(m.name)), std::string(json::view(m.value)));
    }
  }
  UNITRAIN_WIRE_READ(out.gang_scheduler_name, r.string("gangSchedulerName"));
  UNITRAIN_WIRE_READ(out.cluster_domain, r.string("clusterDomain"));
  return out;
}

// ---- validate -----------------------------------------------------------------------------------

Document validate_request(const Value* old_job, const Value& job) {
  Document doc = Document::object();
  auto& a = doc.alloc();
  doc.root().AddMember("job", Value(job, a), a);
  if (old_job != nullptr) doc.root().AddMember("oldJob", Value(*old_job, a), a);
  return doc;
}

Document validation_json(const Validation& validation) {
  Document doc = Document::object();
  auto& a = doc.alloc();
  Value errors(rapidjson::kArrayType);
  for (const auto& e : validation.errors) {
    Value error(rapidjson::kObjectType);
    error.AddMember("type", text_value(api::cause_type(e.type), a), a);
    error.AddMember("field", text_value(e.field, a), a);
    if (!e.value.omitted()) error.AddMember("value", text_value(e.value.text(), a), a);
    error.AddMember("detail", text_value(e.detail, a), a);
    errors.PushBack(error, a);
  }
  doc.root().AddMember("errors", errors, a);
  doc.root().AddMember("warnings", string_array(validation.warnings, a), a);
  return doc;
}

Result<Validation> validation_from(const Value& doc) {
  MemberReader r(doc, "");
  if (auto s = r.check_object(); !s) return fail(s.error());
  Validation out;
  const Value* errors = nullptr;
  UNITRAIN_WIRE_READ(errors, r.objects("errors"));
  if (errors != nullptr) {
    for (rapidjson::SizeType i = 0; i < errors->Size(); ++i) {
      MemberReader e((*errors)[i], fmt::format("errors[{}]", i));
      std::string type;
      UNITRAIN_WIRE_READ(type, e.string("type", true));
      auto t = api::field_error_type_of_cause(type);
      if (!t) return fail(fmt::format("errors[{}].type: \"{}\" is not a metav1 cause type of a field error", i, type));
      api::FieldError error;
      error.type = *t;
      UNITRAIN_WIRE_READ(error.field, e.string("field"));
      std::optional<std::string> value;
      UNITRAIN_WIRE_READ(value, e.optional_string("value"));
      if (value) error.value = api::FieldValue::rendered(std::move(*value));
      UNITRAIN_WIRE_READ(error.detail, e.string("detail"));
      out.errors.push_back(std::move(error));
    }
  }
  UNITRAIN_WIRE_READ(out.warnings, r.strings("warnings"));
  return out;
}

// ---- pod slots ----------------------------------------------------------------------------------

Value slot_json(const PodSlot& slot, Allocator& a) {
  Value out(rapidjson::kObjectType);
  out.AddMember("replicaType", text_value(slot.replica_type, a), a);
  out.AddMember("index", slot.index, a);
  if (!slot.name.empty()) out.AddMember("name", text_value(slot.name, a), a);
  return out;
}

Result<PodSlot> slot_from(const Value& v, std::string_view path) {
  MemberReader r(v, std::string(path));
  if (auto s = r.check_object(); !s) return fail(s.error());
  PodSlot slot;
  UNITRAIN_WIRE_READ(slot.replica_type, r.string("replicaType", true));
  UNITRAIN_WIRE_READ(slot.index, r.int32("index"));
  UNITRAIN_WIRE_READ(slot.name, r.string("name"));
  return slot;
}

Document slots_json(const std::vector<PodSlot>& slots) {
  Document doc = Document::array();
  for (const auto& s : slots) doc.root().PushBack(slot_json(s, doc.alloc()), doc.alloc());
  return doc;
}

Result<std::vector<PodSlot>> slots_from(const Value& doc) {
  if (!doc.IsArray()) return fail("pod slots: must be an array");
  std::vector<PodSlot> out;
  for (rapidjson::SizeType i = 0; i < doc.Size(); ++i) {
    PodSlot slot;
    UNITRAIN_WIRE_READ(slot, slot_from(doc[i], fmt::format("[{}]", i)));
    out.push_back(std::move(slot));
  }
  return out;
}

Document decorate_request(const Value& job, const PodSlot& slot, const Value& pod) {
  Document doc = Document::object();
  auto& a = doc.alloc();
  doc.root().AddMember("job", Value(job, a), a);
  doc.root().AddMember("slot", slot_json(slot, a), a);
  doc.root().AddMember("pod", Value(pod, a), a);
  return doc;
}

// ---- observed children, desired objects, status -------------------------------------------------

Document observed_request(const Value& job, const Observed& observed) {
  Document doc = Document::object();
  auto& a = doc.alloc();
  doc.root().AddMember("job", Value(job, a), a);
  Value children(rapidjson::kObjectType);
  children.AddMember("pods", pointers_json(observed.pods, a), a);
  children.AddMember("services", pointers_json(observed.services, a), a);
  Value owned(rapidjson::kObjectType);
  for (const auto& [key, objects] : observed.owned) owned.AddMember(text_value(key, a), pointers_json(objects, a), a);
  children.AddMember("owned", owned, a);
  if (!observed.fetched.empty()) {
    Value fetched(rapidjson::kArrayType);
    for (const auto& f : observed.fetched) {
      Value v(rapidjson::kObjectType);
      v.AddMember("resource", resource_json(f.ref.resource, a), a);
      v.AddMember("namespace", text_value(f.ref.namespace_name, a), a);
      v.AddMember("name", text_value(f.ref.name, a), a);
      if (f.object) v.AddMember("object", Value(f.object->root(), a), a);
      v.AddMember("error", text_value(f.error, a), a);
      fetched.PushBack(v, a);
    }
    children.AddMember("fetched", fetched, a);
  }
  doc.root().AddMember("observed", children, a);
  return doc;
}

namespace {
Result<ObjectFetch> fetch_from(const Value& v, const std::string& path) {
  MemberReader r(v, path);
  if (auto s = r.check_object(); !s) return fail(s.error());
  ObjectFetch out;
  const Value* resource = r.find("resource");
  if (resource == nullptr) return fail(path + ".resource: required");
  UNITRAIN_WIRE_READ(out.resource, resource_from(*resource, path + ".resource"));
  UNITRAIN_WIRE_READ(out.namespace_name, r.string("namespace", false));
  UNITRAIN_WIRE_READ(out.name, r.string("name", true));
  return out;
}
}  // namespace

Result<Observed> observed_from(const Value& observed) {
  MemberReader r(observed, "observed");
  if (auto s = r.check_object(); !s) return fail(s.error());
  Observed out;
  UNITRAIN_WIRE_READ(out.pods, object_list(r.find("pods"), "observed.pods"));
  UNITRAIN_WIRE_READ(out.services, object_list(r.find("services"), "observed.services"));
  if (const Value* owned = r.find("owned")) {
    if (!owned->IsObject()) return fail("observed.owned: must be an object");
    for (const auto& m : owned->GetObject()) {
      const std::string key(json::view(m.name));
      UNITRAIN_WIRE_READ(out.owned[key], object_list(&m.value, "observed.owned." + key));
    }
  }
  if (const Value* fetched = r.find("fetched")) {
    if (!fetched->IsArray()) return fail("observed.fetched: must be an array");
    for (rapidjson::SizeType i = 0; i < fetched->Size(); ++i) {
      const std::string path = fmt::format("observed.fetched[{}]", i);
      FetchedObject f;
      UNITRAIN_WIRE_READ(f.ref, fetch_from((*fetched)[i], path));
      MemberReader fr((*fetched)[i], path);
      if (const Value* object = fr.find("object")) f.object = Document::copy_of(*object);
      UNITRAIN_WIRE_READ(f.error, fr.string("error", false));
      out.fetched.push_back(std::move(f));
    }
  }
  return out;
}

Document pod_group_json(const PodGroupPolicy& policy) {
  Document doc = Document::object();
  auto& a = doc.alloc();
  doc.root().AddMember("minMember", policy.min_member, a);
  doc.root().AddMember("queue", text_value(policy.queue, a), a);
  doc.root().AddMember("priorityClass", text_value(policy.priority_class, a), a);
  if (policy.min_resources) doc.root().AddMember("minResources", Value(policy.min_resources->root(), a), a);
  if (policy.schedule_timeout_seconds) doc.root().AddMember("scheduleTimeoutSeconds", *policy.schedule_timeout_seconds, a);
  return doc;
}

Result<PodGroupPolicy> pod_group_from(const Value& v) {
  MemberReader r(v, "pod group");
  if (auto s = r.check_object(); !s) return fail(s.error());
  PodGroupPolicy p;
  UNITRAIN_WIRE_READ(p.min_member, r.int32("minMember"));
  UNITRAIN_WIRE_READ(p.queue, r.string("queue"));
  UNITRAIN_WIRE_READ(p.priority_class, r.string("priorityClass"));
  if (const Value* resources = r.find("minResources")) {
    if (!resources->IsObject()) return fail("pod group.minResources: must be an object");
    p.min_resources = Document::copy_of(*resources);
  }
  if (r.find("scheduleTimeoutSeconds") != nullptr) {
    int32_t seconds = 0;
    UNITRAIN_WIRE_READ(seconds, r.int32("scheduleTimeoutSeconds"));
    p.schedule_timeout_seconds = seconds;
  }
  return p;
}

Document desired_json(const std::vector<DesiredObject>& objects) {
  Document doc = Document::array();
  auto& a = doc.alloc();
  for (const auto& o : objects) {
    Value v(rapidjson::kObjectType);
    v.AddMember("resource", resource_json(o.resource, a), a);
    v.AddMember("object", Value(o.object.root(), a), a);
    v.AddMember("update", text_value(o.update == DesiredObject::Update::WhenDiffers ? "WhenDiffers" : "Never", a), a);
    v.AddMember("compared", string_array(o.compared, a), a);
    v.AddMember("useExisting", o.use_existing, a);
    v.AddMember("ownedByJob", o.owned_by_job, a);
    v.AddMember("afterPods", o.after_pods, a);
    v.AddMember("statusClearedFirst", string_array(o.status_cleared_first, a), a);
    doc.root().PushBack(v, a);
  }
  return doc;
}

Result<std::vector<DesiredObject>> desired_from(const Value& doc) {
  if (!doc.IsArray()) return fail("desired objects: must be an array");
  std::vector<DesiredObject> out;
  for (rapidjson::SizeType i = 0; i < doc.Size(); ++i) {
    const std::string path = fmt::format("[{}]", i);
    MemberReader r(doc[i], path);
    if (auto s = r.check_object(); !s) return fail(s.error());
    DesiredObject o;
    const Value* resource = r.find("resource");
    if (resource == nullptr) return fail(path + ".resource: required");
    UNITRAIN_WIRE_READ(o.resource, resource_from(*resource, path + ".resource"));
    const Value* object = r.find("object");
    if (object == nullptr || !object->IsObject()) return fail(path + ".object: must be an object");
    o.object = Document::copy_of(*object);
    std::string update;
    UNITRAIN_WIRE_READ(update, r.string("update", false, "Never"));
    if (update == "WhenDiffers") o.update = DesiredObject::Update::WhenDiffers;
    else if (update != "Never") return fail(fmt::format("{}.update: \"{}\" is neither Never nor WhenDiffers", path, update));
    UNITRAIN_WIRE_READ(o.compared, r.strings("compared"));
    UNITRAIN_WIRE_READ(o.use_existing, r.boolean("useExisting", false));
    UNITRAIN_WIRE_READ(o.owned_by_job, r.boolean("ownedByJob", true));
    UNITRAIN_WIRE_READ(o.after_pods, r.boolean("afterPods", false));
    UNITRAIN_WIRE_READ(o.status_cleared_first, r.strings("statusClearedFirst"));
    out.push_back(std::move(o));
  }
  return out;
}

Document status_json(const StatusProposal& proposal) {
  Document doc = Document::object();
  auto& a = doc.alloc();
  Value replicas(rapidjson::kObjectType);
  for (const auto& [type, counts] : proposal.replica_statuses) {
    Value c(rapidjson::kObjectType);
    c.AddMember("active", counts.active, a);
    c.AddMember("succeeded", counts.succeeded, a);
    c.AddMember("failed", counts.failed, a);
    if (counts.selector) c.AddMember("selector", text_value(*counts.selector, a), a);
    replicas.AddMember(text_value(type, a), c, a);
  }
  doc.root().AddMember("replicaStatuses", replicas, a);
  Value conditions(rapidjson::kArrayType);
  for (const auto& c : proposal.conditions) {
    Value v(rapidjson::kObjectType);
    v.AddMember("type", text_value(c.type, a), a);
    v.AddMember("status", text_value(c.status, a), a);
    v.AddMember("reason", text_value(c.reason, a), a);
    v.AddMember("message", text_value(c.message, a), a);
    conditions.PushBack(v, a);
  }
  doc.root().AddMember("conditions", conditions, a);
  Value events(rapidjson::kArrayType);
  for (const auto& e : proposal.events) {
    Value v(rapidjson::kObjectType);
    v.AddMember("type", text_value(e.type, a), a);
    v.AddMember("reason", text_value(e.reason, a), a);
    v.AddMember("message", text_value(e.message, a), a);
    events.PushBack(v, a);
  }
  doc.root().AddMember("events", events, a);
  doc.root().AddMember("setCompletionTime", proposal.set_completion_time, a);
  if (proposal.completion_time) doc.root().AddMember("completionTime", text_value(*proposal.completion_time, a), a);
  return doc;
}

Result<StatusProposal> status_from(const Value& doc) {
  MemberReader r(doc, "");
  if (auto s = r.check_object(); !s) return fail(s.error());
  StatusProposal out;
  if (const Value* replicas = r.find("replicaStatuses")) {
    if (!replicas->IsObject()) return fail("replicaStatuses: must be an object");
    for (const auto& m : replicas->GetObject()) {
      const std::string type(json::view(m.name));
      MemberReader c(m.value, "replicaStatuses." + type);
      if (auto s = c.check_object(); !s) return fail(s.error());
      StatusProposal::ReplicaCounts counts;
      UNITRAIN_WIRE_READ(counts.active, c.int32("active"));
      UNITRAIN_WIRE_READ(counts.succeeded, c.int32("succeeded"));
      UNITRAIN_WIRE_READ(counts.failed, c.int32("failed"));
      UNITRAIN_WIRE_READ(counts.selector, c.optional_string("selector"));
      out.replica_statuses[type] = std::move(counts);
    }
  }
  const Value* conditions = nullptr;
  UNITRAIN_WIRE_READ(conditions, r.objects("conditions"));
  if (conditions != nullptr) {
    for (rapidjson::SizeType i = 0; i < conditions->Size(); ++i) {
      MemberReader c((*conditions)[i], fmt::format("conditions[{}]", i));
      StatusProposal::Condition condition;
      UNITRAIN_WIRE_READ(condition.type, c.string("type", true));
      UNITRAIN_WIRE_READ(condition.status, c.string("status", false, "True"));
      UNITRAIN_WIRE_READ(condition.reason, c.string("reason"));
      UNITRAIN_WIRE_READ(condition.message, c.string("message"));
      out.conditions.push_back(std::move(condition));
    }
  }
  const Value* events = nullptr;
  UNITRAIN_WIRE_READ(events, r.objects("events"));
  if (events != nullptr) {
    for (rapidjson::SizeType i = 0; i < events->Size(); ++i) {
      MemberReader e((*events)[i], fmt::format("events[{}]", i));
      if (auto s = e.check_object(); !s) return fail(s.error());
      StatusProposal::Event event;
      UNITRAIN_WIRE_READ(event.type, e.string("type", true));
      UNITRAIN_WIRE_READ(event.reason, e.string("reason", true));
      UNITRAIN_WIRE_READ(event.message, e.string("message"));
      out.events.push_back(std::move(event));
    }
  }
  UNITRAIN_WIRE_READ(out.set_completion_time, r.boolean("setCompletionTime", false));
  UNITRAIN_WIRE_READ(out.completion_time, r.optional_string("completionTime"));
  return out;
}

// ---- workload plans ------------------------------------------------------------------------------

Document workload_request(const Value& job, const Observed& observed, std::string_view now) {
  Document doc = observed_request(job, observed);
  doc.root().AddMember("now", text_value(now, doc.alloc()), doc.alloc());
  return doc;
}

Document plan_json(const WorkloadPlan& plan) {
  Document doc = Document::object();
  auto& a = doc.alloc();
  if (plan.status) doc.root().AddMember("status", Value(plan.status->root(), a), a);
  StatusProposal events_only;
  events_only.events = plan.events;
  Document events = status_json(events_only);
  doc.root().AddMember("events", Value(*json::find(events.root(), "/events"), a), a);
  doc.root().AddMember("deleteJob", plan.delete_job, a);
  Value deletions(rapidjson::kArrayType);
  for (const auto& d : plan.deletions) {
    Value v(rapidjson::kObjectType);
    v.AddMember("resource", resource_json(d.resource, a), a);
    v.AddMember("name", text_value(d.name, a), a);
    v.AddMember("propagationPolicy", text_value(d.propagation_policy, a), a);
    deletions.PushBack(v, a);
  }
  doc.root().AddMember("deletions", deletions, a);
  doc.root().AddMember("updates", Value(desired_json(plan.updates).root(), a), a);
  doc.root().AddMember("creations", Value(desired_json(plan.creations).root(), a), a);
  if (plan.requeue_after_ms) doc.root().AddMember("requeueAfterMs", static_cast<int64_t>(*plan.requeue_after_ms), a);
  if (!plan.fetch.empty()) {
    Value fetch(rapidjson::kArrayType);
    for (const auto& f : plan.fetch) {
      Value v(rapidjson::kObjectType);
      v.AddMember("resource", resource_json(f.resource, a), a);
      v.AddMember("namespace", text_value(f.namespace_name, a), a);
      v.AddMember("name", text_value(f.name, a), a);
      fetch.PushBack(v, a);
    }
    doc.root().AddMember("fetch", fetch, a);
  }
  return doc;
}

Result<WorkloadPlan> plan_from(const Value& doc) {
  MemberReader r(doc, "");
  if (auto s = r.check_object(); !s) return fail(s.error());
  WorkloadPlan out;
  if (const Value* status = r.find("status")) {
    if (!status->IsObject()) return fail("status: must be an object");
    out.status = Document::copy_of(*status);
  }
  if (const Value* events = r.find("events")) {
    Document wrapped = Document::object();
    wrapped.root().AddMember("events", Value(*events, wrapped.alloc()), wrapped.alloc());
    StatusProposal proposal;
    UNITRAIN_WIRE_READ(proposal, status_from(wrapped.root()));
    out.events = std::move(proposal.events);
  }
  UNITRAIN_WIRE_READ(out.delete_job, r.boolean("deleteJob", false));
  const Value* deletions = nullptr;
  UNITRAIN_WIRE_READ(deletions, r.objects("deletions"));
  if (deletions != nullptr) {
    for (rapidjson::SizeType i = 0; i < deletions->Size(); ++i) {
      const std::string path = fmt::format("deletions[{}]", i);
      MemberReader d((*deletions)[i], path);
      ChildDeletion deletion;
      const Value* resource = d.find("resource");
      if (resource == nullptr) return fail(path + ".resource: required");
      UNITRAIN_WIRE_READ(deletion.resource, resource_from(*resource, path + ".resource"));
      UNITRAIN_WIRE_READ(deletion.name, d.string("name", true));
      UNITRAIN_WIRE_READ(deletion.propagation_policy, d.string("propagationPolicy", false, "Foreground"));
      out.deletions.push_back(std::move(deletion));
    }
  }
  for (auto [key, into] : {std::pair{"updates", &out.updates}, std::pair{"creations", &out.creations}}) {
    if (const Value* objects = r.find(key)) {
      auto decoded = desired_from(*objects);
      if (!decoded) return fail(fmt::format("{}: {}", key, decoded.error().message));
      *into = std::move(*decoded);
    }
  }
  if (const Value* requeue = r.find("requeueAfterMs")) {
    if (!requeue->IsInt64()) return fail("requeueAfterMs: must be an integer");
    out.requeue_after_ms = requeue->GetInt64();
  }
  if (const Value* fetch = r.find("fetch")) {
    if (!fetch->IsArray()) return fail("fetch: must be an array");
    for (rapidjson::SizeType i = 0; i < fetch->Size(); ++i) {
      ObjectFetch f;
      UNITRAIN_WIRE_READ(f, fetch_from((*fetch)[i], fmt::format("fetch[{}]", i)));
      out.fetch.push_back(std::move(f));
    }
  }
  return out;
}

// ---- resources, wording -------------------------------------------------------------------------

Document resources_json(const std::vector<kube::GroupVersionResource>& resources) {
  Document doc = Document::array();
  doc.root() = resources_value(resources, doc.alloc());
  return doc;
}

Result<std::vector<kube::GroupVersionResource>> resources_from(const Value& doc, std::string_view path) {
  if (!doc.IsArray()) return fail(fmt::format("{}: must be an array", path.empty() ? "resources" : path));
  std::vector<kube::GroupVersionResource> out;
  for (rapidjson::SizeType i = 0; i < doc.Size(); ++i) {
    kube::GroupVersionResource r;
    UNITRAIN_WIRE_READ(r, resource_from(doc[i], fmt::format("{}[{}]", path, i)));
    out.push_back(std::move(r));
  }
  return out;
}

std::string_view event_name(CoreEvent event) {
  for (const auto& [e, name] : kEvents)
    if (e == event) return name;
  return "Created";
}

std::optional<CoreEvent> event_of(std::string_view name) {
  for (const auto& [e, n] : kEvents)
    if (n == name) return e;
  return std::nullopt;
}

Document wording_request(CoreEvent event, const Value& job, std::string_view replica_type) {
  Document doc = Document::object();
  auto& a = doc.alloc();
  doc.root().AddMember("event", text_value(event_name(event), a), a);
  doc.root().AddMember("job", Value(job, a), a);
  doc.root().AddMember("replicaType", text_value(replica_type, a), a);
  return doc;
}

Document foreign_object_request(const Value& job, const ForeignObject& object) {
  Document doc = Document::object();
  auto& a = doc.alloc();
  doc.root().AddMember("job", Value(job, a), a);
  Value o(rapidjson::kObjectType);
  o.AddMember("kind", text_value(object.kind, a), a);
  o.AddMember("resource", text_value(object.resource, a), a);
  o.AddMember("name", text_value(object.name, a), a);
  doc.root().AddMember("object", o, a);
  return doc;
}

std::string_view child_event_name(ChildEvent event) {
  for (const auto& [e, name] : kChildEvents)
    if (e == event) return name;
  return "Created";
}

std::optional<ChildEvent> child_event_of(std::string_view name) {
  for (const auto& [e, n] : kChildEvents)
    if (n == name) return e;
  return std::nullopt;
}

Document child_event_request(ChildEvent event, const Value& job, const ChildSubject& subject) {
  Document doc = Document::object();
  auto& a = doc.alloc();
  doc.root().AddMember("event", text_value(child_event_name(event), a), a);
  doc.root().AddMember("job", Value(job, a), a);
  Value o(rapidjson::kObjectType);
  o.AddMember("kind", text_value(subject.kind, a), a);
  o.AddMember("name", text_value(subject.name, a), a);
  o.AddMember("replicaType", text_value(subject.replica_type, a), a);
  o.AddMember("detail", text_value(subject.detail, a), a);
  o.AddMember("reason", text_value(subject.reason, a), a);
  doc.root().AddMember("subject", o, a);
  return doc;
}

Document wording_json(const CoreWording& wording) {
  Document doc = Document::object();
  auto& a = doc.alloc();
  doc.root().AddMember("reason", text_value(wording.reason, a), a);
  doc.root().AddMember("message", text_value(wording.message, a), a);
  doc.root().AddMember("eventType", text_value(wording.event_type, a), a);
  return doc;
}

Result<CoreWording> wording_from(const Value& doc) {
  MemberReader r(doc, "");
  if (auto s = r.check_object(); !s) return fail(s.error());
  CoreWording out;
  UNITRAIN_WIRE_READ(out.reason, r.string("reason", true));
  UNITRAIN_WIRE_READ(out.message, r.string("message"));
  UNITRAIN_WIRE_READ(out.event_type, r.string("eventType"));
  return out;
}

#undef UNITRAIN_WIRE_READ

}  // namespace unitrain::framework::wire
