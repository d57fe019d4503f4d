#include "core/framework/abi/module_export.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/framework/abi/wire.h"
#include "core/json/json.h"

// One plugin instance as the host holds it: the C++ plugin and the table of its hooks.
struct unitrain_plugin {
  std::unique_ptr<unitrain::framework::FrameworkPlugin> plugin;
  unitrain_plugin_table table{};
};

namespace unitrain::framework::abi {

namespace {

using json::Document;
using json::Value;

// The module's one piece of state: its registration, the table describing it, and the host it
// was loaded by. Built once by the first entry-point call (a function-local static).
struct ExportedModule {
  unitrain_module_table table{};
  Registration registration;
  std::optional<std::string> description;  // registration_json, or nothing when registering failed
  std::string failure;                     // why registering failed
  const unitrain_host_table* host = nullptr;
};

// A buffer the host frees through free_buffer: malloc'd here, free'd there, as the ABI says.
unitrain_buffer buffer_of(std::string_view text) {
  unitrain_buffer b{nullptr, 0};
  b.data = static_cast<char*>(std::malloc(text.empty() ? 1 : text.size()));
  if (b.data == nullptr) return b;
  if (!text.empty()) std::memcpy(b.data, text.data(), text.size());
  b.size = text.size();
  return b;
}

void free_buffer(unitrain_buffer b) { std::free(b.data); }

// Runs `hook`, turning an exception into UNITRAIN_ERROR with its message in `out`.
template <class Hook>
unitrain_status guarded(unitrain_buffer* out, Hook&& hook) noexcept {
  try {
    return hook();
  } catch (const std::exception& e) {
    *out = buffer_of(fmt::format("the module's hook threw: {}", e.what()));
  } catch (...) {
    *out = buffer_of("the module's hook threw an exception that is not a std::exception");
  }
  return UNITRAIN_ERROR;
}

unitrain_status answer(unitrain_buffer* out, std::string_view text, unitrain_status status = UNITRAIN_OK) {
  *out = buffer_of(text);
  return status;
}

unitrain_status bad_request(unitrain_buffer* out, const std::string& why) { return answer(out, why, UNITRAIN_BAD_REQUEST); }

Result<Document> parse(const char* data, size_t size) { return Document::parse(std::string_view(data, size)); }

const FrameworkPlugin& plugin_of(const unitrain_plugin* self) { return *self->plugin; }

// ---- hooks ----------------------------------------------------------------------------------------

unitrain_status set_defaults(const unitrain_plugin* self, const char* job, size_t size, unitrain_buffer* out) {
  return guarded(out, [&] {
    auto doc = parse(job, size);
    if (!doc) return bad_request(out, doc.error().message);
    plugin_of(self).set_defaults(*doc);
    return answer(out, doc->dump());
  });
}

unitrain_status validate(const unitrain_plugin* self, const char* request, size_t size, unitrain_buffer* out) {
  return guarded(out, [&] {
    auto doc = parse(request, size);
    if (!doc) return bad_request(out, doc.error().message);
    const Value* job = json::find(doc->root(), "/job");
    if (job == nullptr || !job->IsObject()) return bad_request(out, "job: must be an object");
    const Value* old_job = json::find(doc->root(), "/oldJob");
    if (old_job != nullptr && old_job->IsNull()) old_job = nullptr;
    return answer(out, wire::validation_json(plugin_of(self).validate(old_job, *job)).dump());
  });
}

unitrain_status pod_slots(const unitrain_plugin* self, const char* job, size_t size, unitrain_buffer* out) {
  return guarded(out, [&] {
    auto doc = parse(job, size);
    if (!doc) return bad_request(out, doc.error().message);
    return answer(out, wire::slots_json(plugin_of(self).pod_slots(doc->root())).dump());
  });
}

unitrain_status decorate_pod(const unitrain_plugin* self, const char* request, size_t size, unitrain_buffer* out) {
  return guarded(out, [&] {
    auto doc = parse(request, size);
    if (!doc) return bad_request(out, doc.error().message);
    const Value* job = json::find(doc->root(), "/job");
    const Value* slot_value = json::find(doc->root(), "/slot");
    const Value* pod_value = json::find(doc->root(), "/pod");
    if (job == nullptr || slot_value == nullptr || pod_value == nullptr)
      return bad_request(out, "job, slot and pod are required");
    auto slot = wire::slot_from(*slot_value, "slot");
    if (!slot) return bad_request(out, slot.error().message);
    Document pod = Document::copy_of(*pod_value);
    if (auto s = plugin_of(self).decorate_pod(*job, *slot, pod); !s) return answer(out, s.error().message, UNITRAIN_ERROR);
    return answer(out, pod.dump());
  });
}

// The job and the observed children of a desired_objects or compute_status request.
struct ObservedRequest {
  Document doc;
  const Value* job = nullptr;
  Observed observed;
};

Result<ObservedRequest> observed_request(const char* request, size_t size) {
  auto doc = parse(request, size);
  if (!doc) return fail(doc.error());
  ObservedRequest r;
  r.doc = std::move(*doc);
  r.job = json::find(r.doc.root(), "/job");
  if (r.job == nullptr || !r.job->IsObject()) return fail("job: must be an object");
  const Value* observed = json::find(r.doc.root(), "/observed");
  if (observed == nullptr) return fail("observed: required");
  auto children = wire::observed_from(*observed);
  if (!children) return fail(children.error());
  r.observed = std::move(*children);
  return r;
}

unitrain_status desired_objects(const unitrain_plugin* self, const char* request, size_t size, unitrain_buffer* out) {
  return guarded(out, [&] {
    auto r = observed_request(request, size);
    if (!r) return bad_request(out, r.error().message);
    auto objects = plugin_of(self).desired_objects(*r->job, r->observed);
    if (!objects) return answer(out, objects.error().message, UNITRAIN_ERROR);
    return answer(out, wire::desired_json(*objects).dump());
  });
}

unitrain_status compute_status(const unitrain_plugin* self, const char* request, size_t size, unitrain_buffer* out) {
  return guarded(out, [&] {
    auto r = observed_request(request, size);
    if (!r) return bad_request(out, r.error().message);
    return answer(out, wire::status_json(plugin_of(self).compute_status(*r->job, r->observed)).dump());
  });
}

unitrain_status pruned_resources(const unitrain_plugin* self, unitrain_buffer* out) {
  return guarded(out, [&] { return answer(out, wire::resources_json(plugin_of(self).pruned_resources()).dump()); });
}

// ---- optional capabilities -----------------------------------------------------------------------

unitrain_status wording(const unitrain_plugin* self, const char* request, size_t size, unitrain_buffer* out) {
  return guarded(out, [&] {
    auto doc = parse(request, size);
    if (!doc) return bad_request(out, doc.error().message);
    const auto event = wire::event_of(json::get_string(doc->root(), "/event").value_or(""));
    if (!event) return UNITRAIN_UNSUPPORTED;
    const Value* job = json::find(doc->root(), "/job");
    if (job == nullptr) return bad_request(out, "job: required");
    const std::string replica_type = json::string_at(doc->root(), "/replicaType");
    return answer(out, wire::wording_json(plugin_of(self).wording(*event, *job, replica_type)).dump());
  });
}

unitrain_status foreign_object_wording(const unitrain_plugin* self, const char* request, size_t size,
                                       unitrain_buffer* out) {
  return guarded(out, [&] {
    auto doc = parse(request, size);
    if (!doc) return bad_request(out, doc.error().message);
    const Value* job = json::find(doc->root(), "/job");
    if (job == nullptr) return bad_request(out, "job: required");
    const std::string kind = json::string_at(doc->root(), "/object/kind");
    const std::string resource = json::string_at(doc->root(), "/object/resource");
    const std::string name = json::string_at(doc->root(), "/object/name");
    const ForeignObject object{kind, resource, name};
    return answer(out, wire::wording_json(plugin_of(self).foreign_object_wording(*job, object)).dump());
  });
}

unitrain_status child_event(const unitrain_plugin* self, const char* request, size_t size, unitrain_buffer* out) {
  return guarded(out, [&] {
    auto doc = parse(request, size);
    if (!doc) return bad_request(out, doc.error().message);
    const auto event = wire::child_event_of(json::get_string(doc->root(), "/event").value_or(""));
    if (!event) return UNITRAIN_UNSUPPORTED;
    const Value* job = json::find(doc->root(), "/job");
    if (job == nullptr) return bad_request(out, "job: required");
    const std::string kind = json::string_at(doc->root(), "/subject/kind");
    const std::string name = json::string_at(doc->root(), "/subject/name");
    const std::string replica_type = json::string_at(doc->root(), "/subject/replicaType");
    const std::string detail = json::string_at(doc->root(), "/subject/detail");
    const std::string reason = json::string_at(doc->root(), "/subject/reason");
    const ChildSubject subject{kind, name, replica_type, detail, reason};
    return answer(out, wire::wording_json(plugin_of(self).child_event(*event, *job, subject)).dump());
  });
}

unitrain_status gang_min_member(const unitrain_plugin* self, const char* job, size_t size, int32_t* min_member,
                                unitrain_buffer* error) {
  return guarded(error, [&] {
    auto doc = parse(job, size);
    if (!doc) return bad_request(error, doc.error().message);
    auto policy = plugin_of(self).capabilities().gang->pod_group(doc->root(), [](std::string_view) { return 0; });
    if (!policy) return answer(error, policy.error().message, UNITRAIN_ERROR);
    *min_member = policy->min_member;
    return UNITRAIN_OK;
  });
}

unitrain_status gang_pod_group(const unitrain_plugin* self, const char* job, size_t size,
                               const unitrain_priority_lookup* priorities, unitrain_buffer* out) {
  return guarded(out, [&] {
    auto doc = parse(job, size);
    if (!doc) return bad_request(out, doc.error().message);
    auto priority_of = [priorities](std::string_view name) {
      if (priorities == nullptr || priorities->value_of == nullptr) return 0;
      return priorities->value_of(priorities->context, name.data(), name.size());
    };
    auto policy = plugin_of(self).capabilities().gang->pod_group(doc->root(), priority_of);
    if (!policy) return answer(out, policy.error().message, UNITRAIN_ERROR);
    return answer(out, wire::pod_group_json(*policy).dump());
  });
}

unitrain_status deprecation_warning(const unitrain_plugin* self, unitrain_buffer* out) {
  return guarded(out, [&] { return answer(out, plugin_of(self).capabilities().deprecation->warning()); });
}

unitrain_status workload_plan(const unitrain_plugin* self, const char* request, size_t size, unitrain_buffer* out) {
  return guarded(out, [&] {
    auto r = observed_request(request, size);
    if (!r) return bad_request(out, r.error().message);
    const std::string now = json::string_at(r->doc.root(), "/now");
    return answer(out, wire::plan_json(plugin_of(self).capabilities().workloads->plan(*r->job, r->observed, now)).dump());
  });
}

unitrain_status validate_companion(const unitrain_plugin* self, const char* request, size_t size, unitrain_buffer* out) {
  return guarded(out, [&] {
    auto doc = parse(request, size);
    if (!doc) return bad_request(out, doc.error().message);
    const Value* object = json::find(doc->root(), "/object");
    if (object == nullptr || !object->IsObject()) return bad_request(out, "object: must be an object");
    const Value* old_object = json::find(doc->root(), "/oldObject");
    if (old_object != nullptr && old_object->IsNull()) old_object = nullptr;
    const std::string kind = json::string_at(doc->root(), "/kind");
    return answer(out, wire::validation_json(
                           plugin_of(self).capabilities().companions->validate_companion(kind, old_object, *object))
                           .dump());
  });
}

// The PipelineDepartures answers; a throwing one counts as training-operator's way.
template <bool (PipelineDepartures::*Answer)() const, bool Default>
int32_t departure(const unitrain_plugin* self) {
  try {
    return (plugin_of(self).capabilities().departures->*Answer)() ? 1 : 0;
  } catch (...) {
    return Default ? 1 : 0;
  }
}

// Ends an instance create() released to the host.
void destroy(unitrain_plugin* self) { std::unique_ptr<unitrain_plugin> owned(self); }

// ---- the module table -----------------------------------------------------------------------------

ExportedModule& exported() {
  static ExportedModule module;
  return module;
}

unitrain_status describe(unitrain_buffer* out) {
  const ExportedModule& m = exported();
  if (!m.description) return answer(out, m.failure, UNITRAIN_ERROR);
  return answer(out, *m.description);
}

unitrain_status create(const char* config, size_t size, const unitrain_plugin_table** table, unitrain_buffer* error) {
  *table = nullptr;
  return guarded(error, [&] {
    const ExportedModule& m = exported();
    if (!m.description) return answer(error, m.failure, UNITRAIN_ERROR);
    auto doc = parse(config, size);
    if (!doc) return bad_request(error, doc.error().message);
    auto parsed = wire::config_from(doc->root());
    if (!parsed) return bad_request(error, parsed.error().message);
    for (const auto& option : m.registration.options) parsed->options.try_emplace(option.name, option.default_value);
    auto plugin = m.registration.factory(*parsed);
    if (!plugin) return answer(error, plugin.error().message, UNITRAIN_ERROR);
    if (!*plugin) return answer(error, "the plugin factory returned no plugin", UNITRAIN_ERROR);
    auto instance = std::make_unique<unitrain_plugin>();
    instance->plugin = std::move(*plugin);
    unitrain_plugin_table& t = instance->table;
    t.struct_size = sizeof(unitrain_plugin_table);
    t.self = instance.get();
    t.destroy = &destroy;
    t.set_defaults = &set_defaults;
    t.validate = &validate;
    t.pod_slots = &pod_slots;
    t.decorate_pod = &decorate_pod;
    t.desired_objects = &desired_objects;
    t.compute_status = &compute_status;
    t.pruned_resources = &pruned_resources;
    t.wording = &wording;
    t.foreign_object_wording = &foreign_object_wording;
    t.child_event = &child_event;
    const Capabilities caps = instance->plugin->capabilities();
    if (caps.gang != nullptr) {
      t.gang_min_member = &gang_min_member;
      t.gang_pod_group = &gang_pod_group;
    }
    if (caps.deprecation != nullptr) t.deprecation_warning = &deprecation_warning;
    if (caps.workloads != nullptr) t.workload_plan = &workload_plan;
    if (caps.companions != nullptr) t.validate_companion = &validate_companion;
    if (caps.departures != nullptr) {
      t.ttl_deletes_job = &departure<&PipelineDepartures::ttl_deletes_job, true>;
      t.enforces_run_limits = &departure<&PipelineDepartures::enforces_run_limits, true>;
      t.gang_holds_pod_creation = &departure<&PipelineDepartures::gang_holds_pod_creation, true>;
      t.delete_services_with_pods = &departure<&PipelineDepartures::delete_services_with_pods, true>;
      t.validates_defaulted = &departure<&PipelineDepartures::validates_defaulted, false>;
      t.reconciles_on_any_child = &departure<&PipelineDepartures::reconciles_on_any_child, false>;
      t.status_while_suspended = &departure<&PipelineDepartures::status_while_suspended, false>;
      t.ordered_pod_writes = &departure<&PipelineDepartures::ordered_pod_writes, false>;
    }
    *table = &t;
    instance.release();  // the host ends it through t.destroy
    return UNITRAIN_OK;
  });
}

void build(ExportedModule& m, RegisterFunction register_module, const std::vector<std::string_view>& crds) {
  auto registration = module_registration(register_module, crds);
  if (!registration) {
    m.failure = registration.error().message;
    return;
  }
  m.registration = std::move(*registration);
  m.description = wire::registration_json(m.registration).dump();
}

}  // namespace

const unitrain_module_table* export_module(RegisterFunction register_module, std::vector<std::string_view> crds,
                                           uint32_t host_abi_major, const unitrain_host_table* host) {
  static std::once_flag once;
  ExportedModule& m = exported();
  std::call_once(once, [&] {
    m.table.struct_size = sizeof(unitrain_module_table);
    m.table.abi_major = UNITRAIN_PLUGIN_ABI_MAJOR;
    m.table.abi_minor = UNITRAIN_PLUGIN_ABI_MINOR;
    m.table.free_buffer = &free_buffer;
    m.table.describe = &describe;
    m.table.create = &create;
    // A host of another major version gets the table (it reads the version and refuses the
    // module), but its own table is not read.
    const bool host_usable = host != nullptr && host_abi_major == UNITRAIN_PLUGIN_ABI_MAJOR &&
                             host->struct_size >= offsetof(unitrain_host_table, log) + sizeof(host->log);
    m.host = host_usable ? host : nullptr;
    try {
      build(m, register_module, crds);
    } catch (const std::exception& e) {
      m.failure = fmt::format("registering the framework threw: {}", e.what());
    }
  });
  return &m.table;
}

void host_log(int32_t level, std::string_view message) {
  const unitrain_host_table* host = exported().host;
  if (host != nullptr && host->log != nullptr) host->log(host->context, level, message.data(), message.size());
}

}  // namespace unitrain::framework::abi
