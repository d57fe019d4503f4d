// Every in-tree framework module is also built as a shared module (frameworks/CMakeLists.txt);
// loaded through the plugin ABI it must describe itself and answer every hook byte for byte as
// the same module linked in does, on the repository's examples and, where ../shared is present,
// on the upstream operators' examples. And the host refuses what is not a module of its ABI.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "cmd/training-operator/frameworks.h"
#include "cmd/unitrain-conformance/conformance.h"
#include "core/controller/pod_builder.h"
#include "core/framework/abi/plugin_host.h"
#include "core/framework/abi/wire.h"
#include "core/framework/registry.h"
#include "core/json/json.h"
#include "tests/support/skip.h"

namespace fs = std::filesystem;
using namespace unitrain;
using framework::FrameworkPlugin;
using framework::Registration;
using framework::Registry;
using json::Document;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The built-in registry and one registry per shared module of build/modules.
struct Modules {
  Registry builtin;
  std::vector<Registry> loaded;  // each holds the one framework of one module

  Modules() {
    REQUIRE(operator_cmd::register_frameworks(builtin));
    auto files = framework::abi::module_files(UNITRAIN_MODULE_DIR);
    REQUIRE(files);
    for (const auto& file : *files) {
      auto registration = framework::abi::load_module(file);
      INFO(file);
      REQUIRE(registration);
      CHECK(registration->origin == file);
      Registry r;
      REQUIRE(r.add(std::move(*registration)));
      loaded.push_back(std::move(r));
    }
  }
  const Registration& loaded_registration(size_t i) const { return loaded[i].all().front(); }
};

const Modules& modules() {
  static const Modules m;
  return m;
}

std::string dump(const Document& d) { return d.dump(); }

framework::PluginConfig config_with(std::string gang) {
  framework::PluginConfig c;
  c.gang_scheduler_name = std::move(gang);
  c.cluster_domain = "cluster.example";
  return c;
}

Document observed_pod(const FrameworkPlugin& plugin, const json::Value& job, const framework::PodSlot& slot,
                      std::string_view phase, int exit_code) {
  auto pod = conformance::observed_pod(plugin, job, slot, phase, exit_code);
  REQUIRE(pod);
  return std::move(*pod);
}

std::string status_text(const FrameworkPlugin& p, const json::Value& job, const framework::Observed& o) {
  return dump(framework::wire::status_json(p.compute_status(job, o)));
}

// The desired objects as the wire writes them, with the values of Secrets' data replaced by a
// placeholder: a Secret holding a generated key (MPIJob v2's SSH key) differs between any two calls,
// linked or loaded alike.
std::string desired_text(const FrameworkPlugin& p, const json::Value& job, const framework::Observed& o) {
  auto objects = p.desired_objects(job, o);
  if (!objects) return "error: " + objects.error().message;
  for (auto& object : *objects) {
    if (object.resource.resource != "secrets") continue;
    json::Value* data = json::find(object.object.root(), "/data");
    if (data == nullptr || !data->IsObject()) continue;
    for (auto& member : data->GetObject())
      member.value.SetString(rapidjson::StringRef(member.value.IsString() ? "<set>" : "<not a string>"));
  }
  return dump(framework::wire::desired_json(*objects));
}

// Every hook of `linked` and `loaded` (one framework, one configuration) on `job`.
void check_same_answers(const FrameworkPlugin& linked, const FrameworkPlugin& loaded, const json::Value& job) {
  namespace wire = framework::wire;
  CHECK(dump(wire::validation_json(linked.validate(nullptr, job))) == dump(wire::validation_json(loaded.validate(nullptr, job))));
  CHECK(dump(wire::validation_json(linked.validate(&job, job))) == dump(wire::validation_json(loaded.validate(&job, job))));

  Document defaulted = Document::copy_of(job);
  Document defaulted_loaded = Document::copy_of(job);
  linked.set_defaults(defaulted);
  loaded.set_defaults(defaulted_loaded);
  REQUIRE(dump(defaulted) == dump(defaulted_loaded));
  const json::Value& d = defaulted.root();
  CHECK(dump(wire::validation_json(linked.validate(nullptr, d))) == dump(wire::validation_json(loaded.validate(nullptr, d))));

  const auto slots = linked.pod_slots(d);
  REQUIRE(dump(wire::slots_json(slots)) == dump(wire::slots_json(loaded.pod_slots(d))));
  // A kind whose children are workloads (JobSet) keeps no pod slots; every other keeps some.
  CHECK(slots.empty() == (linked.capabilities().workloads != nullptr));
  for (const auto& slot : slots) {
    auto built = controller::build_pod(linked.descriptor(), d, slot.replica_type, slot.index);
    REQUIRE(built);
    Document a = Document::copy_of(built->pod.root());
    Document b = Document::copy_of(built->pod.root());
    const auto sa = linked.decorate_pod(d, slot, a);
    const auto sb = loaded.decorate_pod(d, slot, b);
    REQUIRE(static_cast<bool>(sa) == static_cast<bool>(sb));
    CHECK(dump(a) == dump(b));
  }

  // The children in a few states: none yet; all pending; all running; all succeeded; the first
  // failed (exit code 1, retryable for some kinds) while the rest run; all failed with 137.
  struct State {
    std::string phase, first_phase;
    int exit_code;
  };
  for (const auto& state : std::vector<State>{{"", "", 0},
                                              {"Pending", "Pending", 0},
                                              {"Running", "Running", 0},
                                              {"Succeeded", "Succeeded", 0},
                                              {"Running", "Failed", 1},
                                              {"Failed", "Failed", 137}}) {
    INFO("pods " << (state.phase.empty() ? "none" : state.first_phase + " then " + state.phase));
    std::vector<Document> pods;
    if (!state.phase.empty()) {
      for (size_t i = 0; i < slots.size(); ++i)
        pods.push_back(observed_pod(linked, d, slots[i], i == 0 ? state.first_phase : state.phase, state.exit_code));
    }
    framework::Observed observed;
    for (const auto& p : pods) observed.pods.push_back(&p.root());
    const std::string desired = desired_text(linked, d, observed);
    CHECK(desired == desired_text(loaded, d, observed));
    CHECK(status_text(linked, d, observed) == status_text(loaded, d, observed));
  }

  for (auto e : {framework::CoreEvent::Created, framework::CoreEvent::Suspended, framework::CoreEvent::SuspendedNotRunning,
                 framework::CoreEvent::Resumed, framework::CoreEvent::BackoffLimitExceeded,
                 framework::CoreEvent::DeadlineExceeded, framework::CoreEvent::ReplicaRestarting,
                 framework::CoreEvent::ReplicaFailed, framework::CoreEvent::ValidationFailed}) {
    const auto a = linked.wording(e, d, "Worker");
    const auto b = loaded.wording(e, d, "Worker");
    INFO(wire::event_name(e));
    CHECK(dump(wire::wording_json(a)) == dump(wire::wording_json(b)));
  }
  using framework::ChildEvent;
  for (auto e : {ChildEvent::Created, ChildEvent::CreateFailed, ChildEvent::Deleted, ChildEvent::DeleteFailed,
                 ChildEvent::ExitedWithCode, ChildEvent::TemplateRestartPolicy, ChildEvent::TemplateSchedulerName,
                 ChildEvent::PodGroupDeleting, ChildEvent::AbnormalPod, ChildEvent::JobDeleted, ChildEvent::JobDeleteFailed}) {
    for (auto subject : {framework::ChildSubject{"Pod", "x-worker-0", "Worker", "137", "OOMKilled"},
                         framework::ChildSubject{"Service", "x-worker-0", "", "boom", ""},
                         framework::ChildSubject{"Job", "x", "", "", ""}}) {
      const auto a = linked.child_event(e, d, subject);
      const auto b = loaded.child_event(e, d, subject);
      INFO(wire::child_event_name(e) << " " << subject.kind);
      CHECK(dump(wire::wording_json(a)) == dump(wire::wording_json(b)));
    }
  }
  for (auto object : {framework::ForeignObject{"Pod", "pods", "x-worker-0"},
                      framework::ForeignObject{"ConfigMap", "configmaps", "x-config"}}) {
    const auto a = linked.foreign_object_wording(d, object);
    const auto b = loaded.foreign_object_wording(d, object);
    CHECK(dump(wire::wording_json(a)) == dump(wire::wording_json(b)));
  }
  const auto ca = linked.capabilities();
  const auto cb = loaded.capabilities();
  REQUIRE((ca.gang == nullptr) == (cb.gang == nullptr));
  if (ca.gang != nullptr) {
    // PriorityClass values reach the module through the host's lookup.
    auto priority_of = [](std::string_view name) { return name == "high" ? 1000 : name == "low" ? 10 : 0; };
    auto ga = ca.gang->pod_group(d, priority_of);
    auto gb = cb.gang->pod_group(d, priority_of);
    REQUIRE(ga.has_value() == gb.has_value());
    if (ga) CHECK(dump(wire::pod_group_json(*ga)) == dump(wire::pod_group_json(*gb)));
    else CHECK(ga.error().message == gb.error().message);
  }
  REQUIRE((ca.workloads == nullptr) == (cb.workloads == nullptr));
  if (ca.workloads != nullptr) {
    // The plan for no children yet, then for the children it creates, as Jobs still running,
    // completed and failed.
    const std::string now = "2026-01-01T00:00:00Z";
    const auto first = ca.workloads->plan(d, {}, now);
    CHECK(dump(wire::plan_json(first)) == dump(wire::plan_json(cb.workloads->plan(d, {}, now))));
    for (const std::string condition : {"", "Complete", "Failed"}) {
      INFO("children " << (condition.empty() ? "running" : condition));
      std::vector<Document> children;
      for (const auto& created : first.creations) {
        Document child = Document::copy_of(created.object.root());
        if (!condition.empty()) {
          auto c = Document::parse(R"([{"type":")" + condition +
                                   R"(","status":"True","reason":"BackoffLimitExceeded","lastTransitionTime":"2026-01-01T00:00:00Z"}])");
          REQUIRE(c);
          REQUIRE(json::set(child, "/status/conditions", json::clone(c->root(), child.alloc())));
        }
        children.push_back(std::move(child));
      }
      framework::Observed observed;
      for (const auto& c : children) {
        const std::string resource = json::string_at(c.root(), "/kind") == "Job" ? "jobs.batch" : "services";
        if (resource == "services") observed.services.push_back(&c.root());
        else observed.owned[resource].push_back(&c.root());
      }
      CHECK(dump(wire::plan_json(ca.workloads->plan(d, observed, now))) ==
            dump(wire::plan_json(cb.workloads->plan(d, observed, now))));
    }
  }
  REQUIRE((ca.deprecation == nullptr) == (cb.deprecation == nullptr));
  if (ca.deprecation != nullptr) CHECK(ca.deprecation->warning() == cb.deprecation->warning());
  const auto pa = framework::pipeline_behaviour(linked);
  const auto pb = framework::pipeline_behaviour(loaded);
  CHECK(pa.ttl_deletes_job == pb.ttl_deletes_job);
  CHECK(pa.enforces_run_limits == pb.enforces_run_limits);
  CHECK(pa.gang_holds_pod_creation == pb.gang_holds_pod_creation);
  CHECK(pa.delete_services_with_pods == pb.delete_services_with_pods);
  CHECK(pa.validates_defaulted == pb.validates_defaulted);
  CHECK(pa.reconciles_on_any_child == pb.reconciles_on_any_child);
  CHECK(pa.status_while_suspended == pb.status_while_suspended);
  CHECK(pa.ordered_pod_writes == pb.ordered_pod_writes);
  CHECK(dump(wire::resources_json(linked.pruned_resources())) == dump(wire::resources_json(loaded.pruned_resources())));
}

// Checks every job document of the YAML files under `root` against both builds of the module
// serving its kind; returns how many jobs it checked.
int check_examples(const fs::path& root) {
  const Modules& m = modules();
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  int checked = 0;
  for (const auto& file : files) {
    auto docs = json::parse_yaml(read_file(file));
    INFO(file.string());
    REQUIRE(docs);
    for (const auto& job : *docs) {
      const std::string api_version = json::string_at(job.root(), "/apiVersion");
      const std::string kind = json::string_at(job.root(), "/kind");
      for (size_t i = 0; i < m.loaded.size(); ++i) {
        const auto& desc = m.loaded_registration(i).descriptor;
        if (desc.api_version() != api_version || desc.kind != kind) continue;
        for (const std::string gang : {"", "volcano"}) {
          INFO(desc.name << " gang scheduler \"" << gang << "\"");
          auto linked = m.builtin.instantiate(desc.name, config_with(gang));
          auto loaded = m.loaded[i].instantiate(desc.name, config_with(gang));
          REQUIRE(linked);
          REQUIRE(loaded);
          check_same_answers(**linked, **loaded, job.root());
        }
        ++checked;
      }
    }
  }
  return checked;
}

}  // namespace

TEST_CASE("every built-in framework is also a shared module that describes itself the same") {
  const Modules& m = modules();
  std::set<std::string> builtin_names, loaded_names;
  for (const auto& r : m.builtin.all()) builtin_names.insert(r.descriptor.name);
  for (size_t i = 0; i < m.loaded.size(); ++i) loaded_names.insert(m.loaded_registration(i).descriptor.name);
  CHECK(builtin_names == loaded_names);
  for (size_t i = 0; i < m.loaded.size(); ++i) {
    const Registration& loaded = m.loaded_registration(i);
    const Registration* linked = m.builtin.find(loaded.descriptor.name);
    REQUIRE(linked != nullptr);
    INFO(loaded.origin);
    CHECK(linked->crds.size() >= 1);
    CHECK(dump(framework::wire::registration_json(*linked)) == dump(framework::wire::registration_json(loaded)));
  }
}

TEST_CASE("companion kinds: the loaded module validates them as the built-in one does (ABI 1.2)") {
  const Modules& m = modules();
  int checked = 0;
  for (size_t i = 0; i < m.loaded.size(); ++i) {
    const Registration& loaded_reg = m.loaded_registration(i);
    if (loaded_reg.companions.empty()) continue;
    INFO(loaded_reg.descriptor.name);
    auto linked = m.builtin.instantiate(loaded_reg.descriptor.name, {});
    auto loaded = m.loaded[i].instantiate(loaded_reg.descriptor.name, {});
    REQUIRE(linked);
    REQUIRE(loaded);
    const auto* a = (*linked)->capabilities().companions;
    const auto* b = (*loaded)->capabilities().companions;
    REQUIRE(a != nullptr);
    REQUIRE(b != nullptr);
    for (const auto& c : loaded_reg.companions) {
      // An object of the kind with a spec no validator accepts, and one with an empty spec.
      for (const char* spec : {R"({"template":{"spec":{"replicatedJobs":[{"name":"n","replicas":2,"template":{"metadata":)"
                               R"({"labels":{"trainer.kubeflow.org/trainjob-ancestor-step":"trainer"}},"spec":{"template":)"
                               R"({"spec":{"containers":[{"name":"x"}]}}}}}]}}})",
                               "{}"}) {
        auto object = json::Document::parse(fmt::format(R"({{"apiVersion":"{}/{}","kind":"{}","metadata":{{"name":"r"}},"spec":{}}})",
                                                        c.resource.group, c.resource.version, c.kind, spec));
        auto old = json::Document::parse(R"({"spec":{"changed":true}})");
        REQUIRE(object);
        REQUIRE(old);
        const std::vector<const json::Value*> befores = {nullptr, &old->root(), &object->root()};
        for (const json::Value* before : befores) {
          const auto va = a->validate_companion(c.kind, before, object->root());
          const auto vb = b->validate_companion(c.kind, before, object->root());
          CHECK(dump(framework::wire::validation_json(va)) == dump(framework::wire::validation_json(vb)));
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 0);
}

TEST_CASE("the repository's examples: every hook answers the same through the plugin ABI") {
  CHECK(check_examples(fs::path(UNITRAIN_SOURCE_DIR) / "examples") >= static_cast<int>(modules().loaded.size()));
}

TEST_CASE("the upstream examples: every hook answers the same through the plugin ABI") {
  // $UNITRAIN_REFERENCE_EXAMPLES lets a worktree without ../shared point at a copy.
  const char* override_root = std::getenv("UNITRAIN_REFERENCE_EXAMPLES");
  const fs::path root = override_root != nullptr ? override_root : UNITRAIN_REFERENCE_EXAMPLES;
  if (!fs::is_directory(root)) return testing::skip("upstream examples " + root.string() + " not found");
  CHECK(check_examples(root) > 0);
}

TEST_CASE("a module built for another plugin ABI major version is refused, naming the module and both versions") {
  auto r = framework::abi::load_module(UNITRAIN_OTHER_MAJOR_MODULE);
  REQUIRE_FALSE(r);
  const std::string& message = r.error().message;
  CHECK_THAT(message, Catch::Contains(UNITRAIN_OTHER_MAJOR_MODULE));
  CHECK_THAT(message, Catch::Contains(fmt::format("built for plugin ABI {}.0", UNITRAIN_PLUGIN_ABI_MAJOR + 1)));
  CHECK_THAT(message, Catch::Contains(fmt::format("speaks plugin ABI {}.{}", UNITRAIN_PLUGIN_ABI_MAJOR,
                                                  UNITRAIN_PLUGIN_ABI_MINOR)));
}

TEST_CASE("a file that is not a framework module is refused, naming the file and the cause") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("unitrain-plugin-abi-{}", ::getpid());
  fs::create_directories(dir);
  const fs::path text = dir / "not_a_library.so";
  std::ofstream(text) << "not an ELF file\n";
  auto r = framework::abi::load_module(text.string());
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains(text.string()) && Catch::Contains("cannot be loaded"));

  auto missing = framework::abi::load_module((dir / "missing.so").string());
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("missing.so") && Catch::Contains("cannot be loaded"));

  // A shared library without the entry point: the test's other module is one, but without the
  // symbol a host looks up there is nothing to load (libm stands in for any such library).
  auto no_entry = framework::abi::load_module("libm.so.6");
  REQUIRE_FALSE(no_entry);
  CHECK_THAT(no_entry.error().message, Catch::Contains("libm.so.6") && Catch::Contains("unitrain_plugin_entry"));

  auto listed = framework::abi::module_files(dir.string());
  REQUIRE(listed);
  CHECK(*listed == std::vector<std::string>{text.string()});
  CHECK_FALSE(framework::abi::module_files((dir / "nope").string()));
  fs::remove_all(dir);
}
