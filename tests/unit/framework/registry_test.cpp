#include <catch2/catch.hpp>

#include "core/framework/abi/wire.h"
#include "core/framework/registry.h"

namespace fw = unitrain::framework;

namespace {

// A framework that exists only in this test: the registry must take it without core changes.
class EchoPlugin final : public fw::FrameworkPlugin {
 public:
  explicit EchoPlugin(fw::FrameworkDescriptor d, fw::PluginConfig c) : d_(std::move(d)), config_(std::move(c)) {}
  const fw::FrameworkDescriptor& descriptor() const override { return d_; }
  void set_defaults(unitrain::json::Document&) const override {}
  fw::Validation validate(const unitrain::json::Value*, const unitrain::json::Value&) const override { return {}; }
  std::vector<fw::PodSlot> pod_slots(const unitrain::json::Value&) const override { return {{"Worker", 0}}; }
  unitrain::Status decorate_pod(const unitrain::json::Value&, const fw::PodSlot&, unitrain::json::Document& pod) const override {
    return unitrain::json::set_string(pod, "/metadata/annotations/echo", config_.option("echo-greeting"));
  }
  unitrain::Result<std::vector<fw::DesiredObject>> desired_objects(const unitrain::json::Value&, const fw::Observed&) const override {
    return std::vector<fw::DesiredObject>{};
  }
  fw::StatusProposal compute_status(const unitrain::json::Value&, const fw::Observed&) const override { return {}; }

 private:
  fw::FrameworkDescriptor d_;
  fw::PluginConfig config_;
};

fw::FrameworkDescriptor descriptor(std::string name, std::string kind, std::string version, std::vector<std::string> aliases = {}) {
  fw::FrameworkDescriptor d;
  d.name = std::move(name);
  d.group = "kubeflow.org";
  d.version = std::move(version);
  d.kind = kind;
  d.plural = [&] { std::string p; for (char c : kind) p += static_cast<char>(std::tolower(c)); return p + "s"; }();
  d.aliases = std::move(aliases);
  return d;
}

template <class Plugin>
std::unique_ptr<fw::FrameworkPlugin> make(const fw::PluginConfig& c) {
  return std::make_unique<Plugin>(descriptor("test.unitrain.io/echojob", "EchoJob", "v1"), c);
}

fw::Registration reg(fw::FrameworkDescriptor d, fw::PluginFactory factory = &make<EchoPlugin>,
                     std::vector<fw::OptionSpec> options = {}) {
  fw::Registration r;
  r.descriptor = std::move(d);
  r.factory = std::move(factory);
  r.options = std::move(options);
  return r;
}

fw::Registry standard() {
  fw::Registry r;
  REQUIRE(r.add(reg(descriptor("kubeflow.org/tfjob", "TFJob", "v1", {"tensorflow"}))));
  REQUIRE(r.add(reg(descriptor("kubeflow.org/pytorchjob", "PyTorchJob", "v1", {"pytorch"}))));
  REQUIRE(r.add(reg(descriptor("kubeflow.org/mpijob@v1", "MPIJob", "v1", {"mpijob-v1"}))));
  auto v2 = descriptor("kubeflow.org/mpijob@v2beta1", "MPIJob", "v2beta1", {"mpijob-v2"});
  v2.kind_alias_default = false;
  REQUIRE(r.add(reg(v2)));
  return r;
}

}  // namespace

TEST_CASE("enable-scheme: no value enables every framework in registration order") {
  auto r = standard();
  auto names = r.resolve({});
  REQUIRE(names);
  CHECK(*names == std::vector<std::string>{"kubeflow.org/tfjob", "kubeflow.org/pytorchjob", "kubeflow.org/mpijob@v1",
                                           "kubeflow.org/mpijob@v2beta1"});
}

TEST_CASE("enable-scheme: kinds and aliases are case-insensitive, values repeat and split on commas") {
  auto r = standard();
  auto names = r.resolve({"PyTorchJob, TFJOB", "mpijob-V1"});
  REQUIRE(names);
  CHECK(*names == std::vector<std::string>{"kubeflow.org/tfjob", "kubeflow.org/pytorchjob", "kubeflow.org/mpijob@v1"});
}

TEST_CASE("enable-scheme: a kind two modules serve means, bare, the one marked kind_alias_default") {
  auto r = standard();
  auto bare = r.resolve({"mpijob"});
  REQUIRE(bare);
  CHECK(*bare == std::vector<std::string>{"kubeflow.org/mpijob@v1"});
  auto removed = r.resolve({"-MPIJob"});
  REQUIRE(removed);
  CHECK(*removed == std::vector<std::string>{"kubeflow.org/tfjob", "kubeflow.org/pytorchjob", "kubeflow.org/mpijob@v2beta1"});
  fw::Registry neither;
  auto a = descriptor("test.unitrain.io/echojob@v1", "EchoJob", "v1", {"echo-v1"});
  auto b = descriptor("test.unitrain.io/echojob@v2", "EchoJob", "v2", {"echo-v2"});
  a.kind_alias_default = b.kind_alias_default = false;
  REQUIRE(neither.add(reg(a)));
  REQUIRE(neither.add(reg(b)));
  auto ambiguous = neither.resolve({"echojob"});
  REQUIRE_FALSE(ambiguous);
  CHECK(ambiguous.error().message == "--enable-scheme: scheme \"echojob\" is ambiguous: it names "
                                     "test.unitrain.io/echojob@v1 and test.unitrain.io/echojob@v2; use one of those names");
}

TEST_CASE("enable-scheme: star and removals") {
  auto r = standard();
  auto all_but = r.resolve({"*,-tfjob"});
  REQUIRE(all_but);
  CHECK(all_but->size() == 3);
  CHECK(all_but->front() == "kubeflow.org/pytorchjob");
  auto only_removals = r.resolve({"-mpijob-v1", "-mpijob-v2"});
  REQUIRE(only_removals);
  CHECK(*only_removals == std::vector<std::string>{"kubeflow.org/tfjob", "kubeflow.org/pytorchjob"});
  auto none = r.resolve({"*", "-*"});
  REQUIRE(none);
  CHECK(none->empty());
}

TEST_CASE("enable-scheme: unknown names list the valid ones") {
  auto r = standard();
  auto bad = r.resolve({"pytorchjob,caffejob"});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message ==
        "--enable-scheme: scheme \"caffejob\" is not supported; valid names: kubeflow.org/mpijob@v1, "
        "kubeflow.org/mpijob@v2beta1, kubeflow.org/pytorchjob, kubeflow.org/tfjob, mpijob, mpijob-v1, mpijob-v2, "
        "pytorch, pytorchjob, tensorflow, tfjob");
  auto dash = r.resolve({"-"});
  REQUIRE_FALSE(dash);
  CHECK(dash.error().message == "--enable-scheme: \"-\" must be followed by a framework name");
}

TEST_CASE("registry rejects duplicate names, aliases and kind/version pairs") {
  auto r = standard();
  auto dup_alias = r.add(reg(descriptor("example.com/torch", "TorchJob", "v1", {"Pytorch"})));
  REQUIRE_FALSE(dup_alias);
  CHECK(dup_alias.error().message == "framework \"example.com/torch\" (built in): name \"pytorch\" is already taken by \"kubeflow.org/pytorchjob\" (built in)");
  auto dup_kind = r.add(reg(descriptor("example.com/tf2", "TFJob", "v1")));
  REQUIRE_FALSE(dup_kind);
  CHECK(dup_kind.error().message == "framework \"example.com/tf2\" (built in): kubeflow.org/v1 TFJob is already served by \"kubeflow.org/tfjob\" (built in)");
  fw::Registration no_factory = reg(descriptor("example.com/x", "XJob", "v1"), nullptr);
  CHECK_FALSE(r.add(no_factory));
  // Two kinds cannot share one resource: their CRDs would be one.
  auto plural = descriptor("example.com/tf3", "TFJobX", "v1");
  plural.plural = "tfjobs";
  auto dup_plural = r.add(reg(plural));
  REQUIRE_FALSE(dup_plural);
  CHECK(dup_plural.error().message ==
        "framework \"example.com/tf3\" (built in): resource tfjobs.kubeflow.org is already the kind TFJob of \"kubeflow.org/tfjob\" (built in)");
}

TEST_CASE("a test-only framework registers and instantiates with its declared options") {
  fw::Registry r;
  fw::Registration echo = reg(descriptor("test.unitrain.io/echojob", "EchoJob", "v1", {"echo"}), &make<EchoPlugin>,
                              {{"echo-greeting", "hello", "what the echo pod says"}});
  REQUIRE(r.add(std::move(echo)));
  auto enabled = r.resolve({"ECHO"});
  REQUIRE(enabled);
  REQUIRE(*enabled == std::vector<std::string>{"test.unitrain.io/echojob"});
  auto plugin = r.instantiate("echojob", {});
  REQUIRE(plugin);
  auto pod = unitrain::json::Document::object();
  REQUIRE((*plugin)->decorate_pod(unitrain::json::Document::object().root(), {"Worker", 0}, pod));
  CHECK(unitrain::json::get_string(pod.root(), "/metadata/annotations/echo") == "hello");
  CHECK_FALSE(r.instantiate("nosuchjob", {}));
}

TEST_CASE("unset managedBy: only the default version's module answers when two serve the kind") {
  auto r = standard();
  const std::vector<std::string> both{"kubeflow.org/mpijob@v1", "kubeflow.org/mpijob@v2beta1"};
  fw::EnablementOptions v1_default;
  v1_default.default_version["mpijob"] = "v1";
  CHECK(r.owns_unset_managed_by("kubeflow.org/mpijob@v1", both, v1_default));
  CHECK_FALSE(r.owns_unset_managed_by("kubeflow.org/mpijob@v2beta1", both, v1_default));
  fw::EnablementOptions v2_default;
  v2_default.default_version["mpijob"] = "v2beta1";
  CHECK_FALSE(r.owns_unset_managed_by("kubeflow.org/mpijob@v1", both, v2_default));
  CHECK(r.owns_unset_managed_by("kubeflow.org/mpijob@v2beta1", both, v2_default));
  // Without a default version the kind-alias default decides (v1 in this registry).
  CHECK(r.owns_unset_managed_by("kubeflow.org/mpijob@v1", both, {}));
  CHECK_FALSE(r.owns_unset_managed_by("kubeflow.org/mpijob@v2beta1", both, {}));
  // Alone, a module keeps its own answer whatever the default version says.
  CHECK(r.owns_unset_managed_by("kubeflow.org/mpijob@v1", {"kubeflow.org/mpijob@v1"}, v2_default));
  CHECK(r.owns_unset_managed_by("kubeflow.org/pytorchjob", {"kubeflow.org/pytorchjob", "kubeflow.org/tfjob"}, v2_default));
  CHECK_FALSE(r.owns_unset_managed_by("kubeflow.org/nosuchjob", both, v2_default));
}

TEST_CASE("a kind several registered modules serve pins the owner of jobs without managedBy, enabled or not") {
  auto r = standard();
  CHECK(r.kind_shared("kubeflow.org/mpijob@v1"));
  CHECK(r.kind_shared("kubeflow.org/mpijob@v2beta1"));
  CHECK_FALSE(r.kind_shared("kubeflow.org/pytorchjob"));
  CHECK_FALSE(r.kind_shared("kubeflow.org/nosuchjob"));
}

namespace {

class PlannerPlugin final : public fw::FrameworkPlugin, public fw::WorkloadPlanner {
 public:
  explicit PlannerPlugin(fw::FrameworkDescriptor d) : d_(std::move(d)) {}
  const fw::FrameworkDescriptor& descriptor() const override { return d_; }
  fw::Capabilities capabilities() const override { return {.workloads = this}; }
  void set_defaults(unitrain::json::Document&) const override {}
  fw::Validation validate(const unitrain::json::Value*, const unitrain::json::Value&) const override { return {}; }
  std::vector<fw::PodSlot> pod_slots(const unitrain::json::Value&) const override { return {}; }
  unitrain::Status decorate_pod(const unitrain::json::Value&, const fw::PodSlot&, unitrain::json::Document&) const override { return {}; }
  unitrain::Result<std::vector<fw::DesiredObject>> desired_objects(const unitrain::json::Value&, const fw::Observed&) const override {
    return std::vector<fw::DesiredObject>{};
  }
  fw::StatusProposal compute_status(const unitrain::json::Value&, const fw::Observed&) const override { return {}; }
  fw::WorkloadPlan plan(const unitrain::json::Value&, const fw::Observed&, std::string_view) const override { return {}; }

 private:
  fw::FrameworkDescriptor d_;
};

}  // namespace

TEST_CASE("a module whose descriptor leaves out pods is instantiated only when it plans workloads") {
  fw::Registry r;
  auto podless = descriptor("kubeflow.org/pytorchjob", "PyTorchJob", "v1");
  podless.core_children.pods = false;
  REQUIRE(r.add(reg(podless)));
  auto pipeline = r.instantiate("kubeflow.org/pytorchjob", {});
  REQUIRE(!pipeline);
  CHECK(pipeline.error().message ==
        "framework \"kubeflow.org/pytorchjob\" (built in): its descriptor's core_children leaves out pods, but only a "
        "WorkloadPlanner runs without the core's pods");
  auto planner = descriptor("kubeflow.org/planjob", "PlanJob", "v1");
  planner.core_children.pods = false;
  REQUIRE(r.add(reg(planner, [planner](const fw::PluginConfig&) -> unitrain::Result<std::unique_ptr<fw::FrameworkPlugin>> {
    return std::unique_ptr<fw::FrameworkPlugin>(std::make_unique<PlannerPlugin>(planner));
  })));
  CHECK(r.instantiate("kubeflow.org/planjob", {}));
}

TEST_CASE("plugin ABI: the descriptor's core children cross the wire, and a module that predates them has pods and Services") {
  auto d = descriptor("kubeflow.org/planjob", "PlanJob", "v1");
  d.core_children = {.pods = false, .services = true};
  auto doc = fw::wire::registration_json(reg(d));
  auto back = fw::wire::registration_from(doc.root());
  REQUIRE(back);
  CHECK(!back->descriptor.core_children.pods);
  CHECK(back->descriptor.core_children.services);

  // An ABI 1.2 module's descriptor has no coreChildren, or (from a later one) a member missing.
  auto& described = doc.root()["descriptor"];
  described.RemoveMember("coreChildren");
  auto old = fw::wire::registration_from(doc.root());
  REQUIRE(old);
  CHECK(old->descriptor.core_children.pods);
  CHECK(old->descriptor.core_children.services);
  described.AddMember("coreChildren", unitrain::json::Value(rapidjson::kObjectType), doc.alloc());
  described["coreChildren"].AddMember("services", false, doc.alloc());
  auto partial = fw::wire::registration_from(doc.root());
  REQUIRE(partial);
  CHECK(partial->descriptor.core_children.pods);
  CHECK(!partial->descriptor.core_children.services);

  described["coreChildren"]["services"].SetString("no");
  auto bad = fw::wire::registration_from(doc.root());
  REQUIRE(!bad);
  CHECK(bad.error().message == "descriptor.coreChildren.services: must be true or false");
  described["coreChildren"].SetArray();
  bad = fw::wire::registration_from(doc.root());
  REQUIRE(!bad);
  CHECK(bad.error().message == "descriptor.coreChildren: must be an object");
}
