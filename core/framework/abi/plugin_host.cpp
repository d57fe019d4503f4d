#include "core/framework/abi/plugin_host.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/framework/abi/wire.h"
#include "core/json/json.h"

namespace unitrain::framework::abi {

namespace {

using json::Document;
using json::Value;

// Whether a table of `struct_size` bytes holds the field at `offset` of `size` bytes.
constexpr bool covers(uint32_t struct_size, size_t offset, size_t size) { return struct_size >= offset + size; }
#define UNITRAIN_TABLE_HAS(table, type, field) covers((table)->struct_size, offsetof(type, field), sizeof((table)->field))

void log_from_module(void* context, int32_t level, const char* message, size_t size);

// A loaded module: the library (closed with the last reference; none for an entry point already
// in the process), the host table it was given and the module table it returned.
class Module {
 public:
  explicit Module(std::string origin) : origin_(std::move(origin)) {
    host_.struct_size = sizeof(unitrain_host_table);
    host_.abi_major = UNITRAIN_PLUGIN_ABI_MAJOR;
    host_.abi_minor = UNITRAIN_PLUGIN_ABI_MINOR;
    host_.context = this;
    host_.log = &log_from_module;
  }
  ~Module() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  Status open() {
    handle_ = dlopen(origin_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) return fail(fmt::format("module {}: cannot be loaded: {}", origin_, dlerror()));
    return {};
  }
  Result<unitrain_plugin_entry_fn> entry() const {
    void* symbol = dlsym(handle_, UNITRAIN_PLUGIN_ENTRY_SYMBOL);
    if (symbol == nullptr)
      return fail(fmt::format("module {}: it exports no {} function, so it is not a Unitrain framework module", origin_,
                              UNITRAIN_PLUGIN_ENTRY_SYMBOL));
    return reinterpret_cast<unitrain_plugin_entry_fn>(symbol);  // NOLINT: dlsym's only way to a function
  }

  // Calls the entry point and checks the table it returns.
  Status enter(unitrain_plugin_entry_fn entry) {
    table_ = entry(UNITRAIN_PLUGIN_ABI_MAJOR, UNITRAIN_PLUGIN_ABI_MINOR, &host_);
    if (table_ == nullptr) return fail(fmt::format("module {}: its entry point returned no table", origin_));
    if (!UNITRAIN_TABLE_HAS(table_, unitrain_module_table, reserved))
      return fail(fmt::format("module {}: its table of {} bytes is too small to say its ABI version", origin_,
                              table_->struct_size));
    if (table_->abi_major != UNITRAIN_PLUGIN_ABI_MAJOR)
      return fail(fmt::format("module {} was built for plugin ABI {}.{}; this operator speaks plugin ABI {}.{}: rebuild "
                              "it against this operator's UnitrainPluginSDK",
                              origin_, table_->abi_major, table_->abi_minor, UNITRAIN_PLUGIN_ABI_MAJOR,
                              UNITRAIN_PLUGIN_ABI_MINOR));
    if (!UNITRAIN_TABLE_HAS(table_, unitrain_module_table, create) || table_->free_buffer == nullptr ||
        table_->describe == nullptr || table_->create == nullptr)
      return fail(fmt::format("module {}: its table (plugin ABI {}.{}, {} bytes) lacks the functions of plugin ABI {}.0",
                              origin_, table_->abi_major, table_->abi_minor, table_->struct_size,
                              UNITRAIN_PLUGIN_ABI_MAJOR));
    return {};
  }

  const unitrain_module_table& table() const { return *table_; }
  const std::string& origin() const { return origin_; }

  // The text of a buffer the module handed out, released through the module.
  std::string take(unitrain_buffer& b) const {
    std::string text = b.data != nullptr ? std::string(b.data, b.size) : std::string();
    if (b.data != nullptr) table_->free_buffer(b);
    b = {nullptr, 0};
    return text;
  }

 private:
  std::string origin_;
  void* handle_ = nullptr;
  unitrain_host_table host_{};
  const unitrain_module_table* table_ = nullptr;
};

void log_from_module(void* context, int32_t level, const char* message, size_t size) {
  const auto* module = static_cast<const Module*>(context);
  const std::string_view text(message, message != nullptr ? size : 0);
  const auto spd = level <= 0 ? spdlog::level::debug
                   : level == 1 ? spdlog::level::info
                   : level == 2 ? spdlog::level::warn
                                : spdlog::level::err;
  spdlog::log(spd, "module {}: {}", module->origin(), text);
}

std::string_view status_text(unitrain_status s) {
  switch (s) {
    case UNITRAIN_ERROR: return "failed";
    case UNITRAIN_BAD_REQUEST: return "could not read the request";
    case UNITRAIN_UNSUPPORTED: return "does not support it";
    default: return "returned an unknown status";
  }
}

// A framework module's plugin instance, reached through its table.
class AbiPlugin final : public FrameworkPlugin,
                        public GangContribution,
                        public DeprecationNotice,
                        public PipelineDepartures,
                        public WorkloadPlanner,
                        public CompanionValidator {
 public:
  static Result<std::unique_ptr<FrameworkPlugin>> create(std::shared_ptr<const Module> module,
                                                         const FrameworkDescriptor& descriptor, const PluginConfig& config) {
    const std::string request = wire::config_json(config).dump();
    const unitrain_plugin_table* table = nullptr;
    unitrain_buffer error{nullptr, 0};
    const unitrain_status s = module->table().create(request.data(), request.size(), &table, &error);
    std::string message = module->take(error);
    if (s != UNITRAIN_OK || table == nullptr)
      return fail(fmt::format("module {}: creating the plugin {}: {}", module->origin(), status_text(s),
                              message.empty() ? "no table" : message));
    auto plugin = std::make_unique<AbiPlugin>(std::move(module), descriptor, table);
    if (auto ok = plugin->read_constants(); !ok) return fail(ok.error());
    return std::unique_ptr<FrameworkPlugin>(std::move(plugin));
  }

  // Owns the instance `table` describes; create() reads its constants before handing it out.
  AbiPlugin(std::shared_ptr<const Module> module, FrameworkDescriptor descriptor, const unitrain_plugin_table* table)
      : module_(std::move(module)), d_(std::move(descriptor)), table_(table) {}
  ~AbiPlugin() override { table_->destroy(table_->self); }
  AbiPlugin(const AbiPlugin&) = delete;
  AbiPlugin& operator=(const AbiPlugin&) = delete;

  const FrameworkDescriptor& descriptor() const override { return d_; }
  Capabilities capabilities() const override {
    return {.gang = has_gang_ ? this : nullptr,
            .deprecation = deprecation_ ? this : nullptr,
            .departures = has_departures_ ? this : nullptr,
            .workloads = workload_plan_fn_ != nullptr ? this : nullptr,
            .companions = validate_companion_fn_ != nullptr ? this : nullptr};
  }

  void set_defaults(Document& job) const override {
    job = answer_document("set_defaults", call_text("set_defaults", table_->set_defaults, job.dump()));
  }

  Validation validate(const Value* old_job, const Value& job) const override {
    const Document answer =
        answer_document("validate", call_text("validate", table_->validate, wire::validate_request(old_job, job).dump()));
    return decoded("validate", wire::validation_from(answer.root()));
  }

  std::vector<PodSlot> pod_slots(const Value& job) const override {
    const Document answer = answer_document("pod_slots", call_text("pod_slots", table_->pod_slots, json::dump(job)));
    return decoded("pod_slots", wire::slots_from(answer.root()));
  }

  Status decorate_pod(const Value& job, const PodSlot& slot, Document& pod) const override {
    auto text = call("decorate_pod", table_->decorate_pod, wire::decorate_request(job, slot, pod.root()).dump());
    if (!text) return fail(text.error());
    auto decorated = Document::parse(*text);
    if (!decorated) return fail(fmt::format("module {}: decorate_pod answered {}", origin(), decorated.error().message));
    pod = std::move(*decorated);
    return {};
  }

  Result<std::vector<DesiredObject>> desired_objects(const Value& job, const Observed& observed) const override {
    auto text = call("desired_objects", table_->desired_objects, wire::observed_request(job, observed).dump());
    if (!text) return fail(text.error());
    auto answer = Document::parse(*text);
    if (!answer) return fail(fmt::format("module {}: desired_objects answered {}", origin(), answer.error().message));
    auto objects = wire::desired_from(answer->root());
    if (!objects) return fail(fmt::format("module {}: desired_objects answered: {}", origin(), objects.error().message));
    return std::move(*objects);
  }

  StatusProposal compute_status(const Value& job, const Observed& observed) const override {
    const Document answer = answer_document(
        "compute_status", call_text("compute_status", table_->compute_status, wire::observed_request(job, observed).dump()));
    return decoded("compute_status", wire::status_from(answer.root()));
  }

  std::vector<kube::GroupVersionResource> pruned_resources() const override { return pruned_; }

  CoreWording wording(CoreEvent e, const Value& job, std::string_view replica_type) const override {
    if (auto w = optional_wording("wording", wording_fn_, wire::wording_request(e, job, replica_type).dump())) return *w;
    return FrameworkPlugin::wording(e, job, replica_type);
  }

  CoreWording foreign_object_wording(const Value& job, const ForeignObject& object) const override {
    if (auto w = optional_wording("foreign_object_wording", foreign_wording_fn_,
                                  wire::foreign_object_request(job, object).dump()))
      return *w;
    return FrameworkPlugin::foreign_object_wording(job, object);
  }

  CoreWording child_event(ChildEvent e, const Value& job, const ChildSubject& subject) const override {
    if (auto w = optional_wording("child_event", child_event_fn_, wire::child_event_request(e, job, subject).dump())) return *w;
    return FrameworkPlugin::child_event(e, job, subject);
  }

  // GangContribution
  Result<PodGroupPolicy> pod_group(const Value& job,
                                   const std::function<int32_t(std::string_view)>& priority_of) const override {
    const std::string request = json::dump(job);
    if (pod_group_fn_ == nullptr) {
      // A module that exports only gang_min_member asks for a PodGroup of that size alone.
      PodGroupPolicy policy;
      unitrain_buffer error{nullptr, 0};
      const unitrain_status s =
          table_->gang_min_member(table_->self, request.data(), request.size(), &policy.min_member, &error);
      std::string message = module_->take(error);
      if (s != UNITRAIN_OK) return fail(fmt::format("module {}: gang_min_member {}: {}", origin(), status_text(s), message));
      return policy;
    }
    using Lookup = std::function<int32_t(std::string_view)>;
    const unitrain_priority_lookup priorities{
        const_cast<Lookup*>(&priority_of), [](void* context, const char* name, size_t size) -> int32_t {
          try {
            return (*static_cast<const Lookup*>(context))(std::string_view(name, size));
          } catch (...) {
            return 0;
          }
        }};
    unitrain_buffer out{nullptr, 0};
    const unitrain_status s = pod_group_fn_(table_->self, request.data(), request.size(), &priorities, &out);
    std::string text = module_->take(out);
    if (s != UNITRAIN_OK) return fail(fmt::format("module {}: gang_pod_group {}: {}", origin(), status_text(s), text));
    auto doc = Document::parse(text);
    if (!doc) return fail(fmt::format("module {}: gang_pod_group answered {}", origin(), doc.error().message));
    auto policy = wire::pod_group_from(doc->root());
    if (!policy) return fail(fmt::format("module {}: gang_pod_group: {}", origin(), policy.error().message));
    return policy;
  }

  // WorkloadPlanner
  WorkloadPlan plan(const Value& job, const Observed& observed, std::string_view now) const override {
    const Document answer = answer_document(
        "workload_plan", call_text("workload_plan", workload_plan_fn_, wire::workload_request(job, observed, now).dump()));
    return decoded("workload_plan", wire::plan_from(answer.root()));
  }

  // CompanionValidator
  Validation validate_companion(std::string_view kind, const Value* old_object, const Value& object) const override {
    Document request = Document::object();
    auto& a = request.alloc();
    request.root().AddMember("kind", json::str(kind, a), a);
    request.root().AddMember("object", Value(object, a), a);
    if (old_object != nullptr) request.root().AddMember("oldObject", Value(*old_object, a), a);
    const Document answer = answer_document(
        "validate_companion", call_text("validate_companion", validate_companion_fn_, request.dump()));
    return decoded("validate_companion", wire::validation_from(answer.root()));
  }

  // DeprecationNotice
  std::string warning() const override { return deprecation_.value_or(""); }

  // PipelineDepartures, as the module answered once.
  bool ttl_deletes_job() const override { return behaviour_.ttl_deletes_job; }
  bool enforces_run_limits() const override { return behaviour_.enforces_run_limits; }
  bool gang_holds_pod_creation() const override { return behaviour_.gang_holds_pod_creation; }
  bool delete_services_with_pods() const override { return behaviour_.delete_services_with_pods; }
  bool validates_defaulted() const override { return behaviour_.validates_defaulted; }
  bool reconciles_on_any_child() const override { return behaviour_.reconciles_on_any_child; }
  bool status_while_suspended() const override { return behaviour_.status_while_suspended; }
  bool ordered_pod_writes() const override { return behaviour_.ordered_pod_writes; }

 private:
  using TextHook = unitrain_status (*)(const unitrain_plugin*, const char*, size_t, unitrain_buffer*);

  const std::string& origin() const { return module_->origin(); }

  // Checks the table and reads what an instance answers once: pruned kinds, the deprecation
  // warning, the pipeline departures, which optional capabilities it has.
  Status read_constants() {
    const unitrain_plugin_table* t = table_;
    if (!UNITRAIN_TABLE_HAS(t, unitrain_plugin_table, pruned_resources) || t->destroy == nullptr ||
        t->set_defaults == nullptr || t->validate == nullptr || t->pod_slots == nullptr || t->decorate_pod == nullptr ||
        t->desired_objects == nullptr || t->compute_status == nullptr || t->pruned_resources == nullptr)
      return fail(fmt::format("module {}: its plugin table ({} bytes) lacks a required hook of plugin ABI {}.0", origin(),
                              t->struct_size, UNITRAIN_PLUGIN_ABI_MAJOR));
    unitrain_buffer out{nullptr, 0};
    const unitrain_status s = t->pruned_resources(t->self, &out);
    const std::string text = module_->take(out);
    if (s != UNITRAIN_OK) return fail(fmt::format("module {}: pruned_resources {}: {}", origin(), status_text(s), text));
    auto doc = Document::parse(text);
    if (!doc) return fail(fmt::format("module {}: pruned_resources answered {}", origin(), doc.error().message));
    auto pruned = wire::resources_from(doc->root(), "pruned_resources");
    if (!pruned) return fail(fmt::format("module {}: {}", origin(), pruned.error().message));
    pruned_ = std::move(*pruned);

    if (UNITRAIN_TABLE_HAS(t, unitrain_plugin_table, wording)) wording_fn_ = t->wording;
    if (UNITRAIN_TABLE_HAS(t, unitrain_plugin_table, foreign_object_wording)) foreign_wording_fn_ = t->foreign_object_wording;
    if (UNITRAIN_TABLE_HAS(t, unitrain_plugin_table, child_event)) child_event_fn_ = t->child_event;
    if (UNITRAIN_TABLE_HAS(t, unitrain_plugin_table, gang_pod_group)) pod_group_fn_ = t->gang_pod_group;
    if (UNITRAIN_TABLE_HAS(t, unitrain_plugin_table, workload_plan)) workload_plan_fn_ = t->workload_plan;
    if (UNITRAIN_TABLE_HAS(t, unitrain_plugin_table, validate_companion)) validate_companion_fn_ = t->validate_companion;
    has_gang_ = pod_group_fn_ != nullptr ||
                (UNITRAIN_TABLE_HAS(t, unitrain_plugin_table, gang_min_member) && t->gang_min_member != nullptr);
    if (UNITRAIN_TABLE_HAS(t, unitrain_plugin_table, deprecation_warning) && t->deprecation_warning != nullptr) {
      unitrain_buffer w{nullptr, 0};
      const unitrain_status ws = t->deprecation_warning(t->self, &w);
      std::string warning = module_->take(w);
      if (ws != UNITRAIN_OK)
        return fail(fmt::format("module {}: deprecation_warning {}: {}", origin(), status_text(ws), warning));
      deprecation_ = std::move(warning);
    }
    auto departure = [&](int32_t (*answer)(const unitrain_plugin*), bool fallback) {
      if (answer == nullptr) return fallback;
      has_departures_ = true;
      return answer(t->self) != 0;
    };
    if (UNITRAIN_TABLE_HAS(t, unitrain_plugin_table, validates_defaulted)) {
      behaviour_.ttl_deletes_job = departure(t->ttl_deletes_job, true);
      behaviour_.enforces_run_limits = departure(t->enforces_run_limits, true);
      behaviour_.gang_holds_pod_creation = departure(t->gang_holds_pod_creation, true);
      behaviour_.delete_services_with_pods = departure(t->delete_services_with_pods, true);
      behaviour_.validates_defaulted = departure(t->validates_defaulted, false);
    }
    if (UNITRAIN_TABLE_HAS(t, unitrain_plugin_table, ordered_pod_writes)) {
      behaviour_.reconciles_on_any_child = departure(t->reconciles_on_any_child, false);
      behaviour_.status_while_suspended = departure(t->status_while_suspended, false);
      behaviour_.ordered_pod_writes = departure(t->ordered_pod_writes, false);
    }
    return {};
  }

  // Calls a hook with a JSON request; the answer text or the module's message.
  Result<std::string> call(std::string_view hook, TextHook fn, const std::string& request) const {
    unitrain_buffer out{nullptr, 0};
    const unitrain_status s = fn(table_->self, request.data(), request.size(), &out);
    std::string text = module_->take(out);
    if (s == UNITRAIN_OK) return text;
    return fail(fmt::format("module {}: {} {}: {}", origin(), hook, status_text(s), text));
  }
  // The same for a hook that has no error value in the C++ contract.
  std::string call_text(std::string_view hook, TextHook fn, const std::string& request) const {
    auto text = call(hook, fn, request);
    if (!text) throw ModuleError(text.error().message);
    return std::move(*text);
  }
  Document answer_document(std::string_view hook, const std::string& text) const {
    auto doc = Document::parse(text);
    if (!doc) throw ModuleError(fmt::format("module {}: {} answered {}", origin(), hook, doc.error().message));
    return std::move(*doc);
  }
  template <class T>
  T decoded(std::string_view hook, Result<T> value) const {
    if (!value) throw ModuleError(fmt::format("module {}: {} answered: {}", origin(), hook, value.error().message));
    return std::move(*value);
  }
  // An optional wording hook's answer; nullopt when the module has none or does not word it.
  std::optional<CoreWording> optional_wording(std::string_view hook, TextHook fn, const std::string& request) const {
    if (fn == nullptr) return std::nullopt;
    unitrain_buffer out{nullptr, 0};
    const unitrain_status s = fn(table_->self, request.data(), request.size(), &out);
    std::string text = module_->take(out);
    if (s == UNITRAIN_UNSUPPORTED) return std::nullopt;
    if (s != UNITRAIN_OK) throw ModuleError(fmt::format("module {}: {} {}: {}", origin(), hook, status_text(s), text));
    return decoded(hook, wire::wording_from(answer_document(hook, text).root()));
  }

  std::shared_ptr<const Module> module_;
  FrameworkDescriptor d_;
  const unitrain_plugin_table* table_;
  std::vector<kube::GroupVersionResource> pruned_;
  TextHook wording_fn_ = nullptr;
  TextHook foreign_wording_fn_ = nullptr;
  TextHook child_event_fn_ = nullptr;
  TextHook workload_plan_fn_ = nullptr;
  TextHook validate_companion_fn_ = nullptr;
  bool has_gang_ = false;
  decltype(unitrain_plugin_table::gang_pod_group) pod_group_fn_ = nullptr;
  std::optional<std::string> deprecation_;
  bool has_departures_ = false;
  PipelineBehaviour behaviour_;
};

// The registration a loaded module describes, its factory holding the module.
Result<Registration> registration_of(std::shared_ptr<Module> module, unitrain_plugin_entry_fn entry) {
  if (auto s = module->enter(entry); !s) return fail(s.error());
  unitrain_buffer out{nullptr, 0};
  const unitrain_status s = module->table().describe(&out);
  const std::string text = module->take(out);
  if (s != UNITRAIN_OK) return fail(fmt::format("module {}: describe {}: {}", module->origin(), status_text(s), text));
  auto doc = Document::parse(text);
  if (!doc) return fail(fmt::format("module {}: describe answered {}", module->origin(), doc.error().message));
  auto registration = wire::registration_from(doc->root());
  if (!registration) return fail(fmt::format("module {}: describe answered: {}", module->origin(), registration.error().message));
  registration->origin = module->origin();
  std::shared_ptr<const Module> held = std::move(module);
  registration->factory = [held, descriptor = registration->descriptor](const PluginConfig& config) {
    return AbiPlugin::create(held, descriptor, config);
  };
  return std::move(*registration);
}

#undef UNITRAIN_TABLE_HAS

}  // namespace

Result<Registration> load_module(const std::string& path) {
  auto module = std::make_shared<Module>(path);
  if (auto s = module->open(); !s) return fail(s.error());
  auto entry = module->entry();
  if (!entry) return fail(entry.error());
  return registration_of(std::move(module), *entry);
}

Result<Registration> registration_of_entry(unitrain_plugin_entry_fn entry, const std::string& origin) {
  return registration_of(std::make_shared<Module>(origin), entry);
}

Result<std::vector<std::string>> module_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return fail(fmt::format("{}: not a directory", dir));
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file(ec) && entry.path().extension() == ".so") out.push_back(entry.path().string());
  }
  if (ec) return fail(fmt::format("{}: {}", dir, ec.message()));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace unitrain::framework::abi
