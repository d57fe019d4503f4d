// The process-wide caches: one informer per resource for every controller, label-filtered to what
// the modules could own, and each child's changes dispatched once to the controller of its job's
// kind (through an owned object for a grandchild).
#include <catch2/catch.hpp>

#include <mutex>

#include <fmt/format.h>

#include "core/controller/child_caches.h"
#include "core/controller/job_controller.h"
#include "core/kube/fake_client.h"
#include "tests/integration/controller/echo_framework.h"
#include "tests/support/eventually.h"
#include "tests/support/recording_sink.h"

namespace c = unitrain::controller;
namespace fw = unitrain::framework;
namespace json = unitrain::json;
namespace kube = unitrain::kube;
using json::Document;
using unitrain::testing::eventually;

namespace {

const kube::GroupVersionResource kBatchJobs{"batch", "v1", "jobs"};
const kube::GroupVersionResource kConfigMaps{"", "v1", "configmaps"};

fw::FrameworkDescriptor module(std::string kind, bool owns_batch_jobs) {
  fw::FrameworkDescriptor d = unitrain::testing::echo::echo_descriptor();
  d.kind = kind;
  d.plural = fmt::format("{}s", kind == "EchoJob" ? "echojob" : "otherjob");
  d.controller_name = d.plural.substr(0, d.plural.size() - 1) + "-controller";
  d.child_label_selector = "training.kubeflow.org/operator-name=" + d.controller_name;
  if (owns_batch_jobs) d.owned_resources = {kBatchJobs, kConfigMaps};
  return d;
}

struct Recorded {
  std::string kind, change, object, job;
  bool grandchild;
};

class RecordingEvents final : public c::ChildEventSink {
 public:
  void child_event(const c::ChildEvent& e) override {
    static constexpr const char* kKinds[] = {"Pod", "Service", "Owned", "PodGroup"};
    static constexpr const char* kChanges[] = {"Added", "Updated", "Deleted"};
    std::lock_guard g(mu_);
    seen_.push_back({kKinds[static_cast<int>(e.kind)], kChanges[static_cast<int>(e.change)],
                     std::string(json::get_string(e.object, "/metadata/name").value_or("")), e.job.name, e.grandchild});
  }
  std::vector<Recorded> seen() const {
    std::lock_guard g(mu_);
    return seen_;
  }
  bool saw(std::string_view object) const {
    for (const auto& r : seen())
      if (r.object == object) return true;
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Recorded> seen_;
};

Document owned_by(const kube::GroupVersionResource& r, std::string_view name, std::string_view labels,
                  std::string_view owner_api_version, std::string_view owner_kind, std::string_view owner_name,
                  std::string_view owner_uid) {
  const std::string kind = r == c::kPods ? "Pod" : r == c::kServices ? "Service" : r == kBatchJobs ? "Job" : "ConfigMap";
  return Document::parse(fmt::format(
             R"({{"apiVersion":"{}","kind":"{}","metadata":{{"name":"{}","namespace":"ns","uid":"uid-{}","labels":{},)"
             R"("ownerReferences":[{{"apiVersion":"{}","kind":"{}","name":"{}","uid":"{}","controller":true}}]}}}})",
             r.group.empty() ? r.version : r.group + "/" + r.version, kind, name, name, labels, owner_api_version,
             owner_kind, owner_name, owner_uid))
      .value();
}

std::string operator_label(std::string_view controller) {
  return fmt::format(R"({{"training.kubeflow.org/operator-name":"{}"}})", controller);
}

}  // namespace

TEST_CASE("shared caches: one informer per resource for every module, events to the job's own controller") {
  kube::FakeClient client;
  kube::RealClock clock;
  const auto echo = module("EchoJob", false), other = module("OtherJob", true);
  const std::string echo_labels = operator_label("echojob-controller"), other_labels = operator_label("otherjob-controller");
  // EchoJob "e" and OtherJob "o", and their children.
  (void)client.seed(c::kPods, owned_by(c::kPods, "e-0", echo_labels, "test.unitrain.io/v1", "EchoJob", "e", "uid-e").root());
  (void)client.seed(c::kServices, owned_by(c::kServices, "e-0", echo_labels, "test.unitrain.io/v1", "EchoJob", "e", "uid-e").root());
  (void)client.seed(c::kPods, owned_by(c::kPods, "o-0", other_labels, "test.unitrain.io/v1", "OtherJob", "o", "uid-o").root());
  // An OtherJob's launcher batch Job, and its pod: a grandchild of "o".
  const std::string launcher_uid(json::get_string(
      client.seed(kBatchJobs, owned_by(kBatchJobs, "o-launcher", other_labels, "test.unitrain.io/v1", "OtherJob", "o", "uid-o").root())
          .root(),
      "/metadata/uid").value_or(""));
  (void)client.seed(c::kPods, owned_by(c::kPods, "o-launcher-x", other_labels, "batch/v1", "Job", "o-launcher", launcher_uid).root());
  // Not for any controller: no label of ours, another operator's label, an owner nobody runs, a
  // ConfigMap without our label.
  (void)client.seed(c::kPods, owned_by(c::kPods, "unlabelled", "{}", "test.unitrain.io/v1", "EchoJob", "e", "uid-e").root());
  (void)client.seed(c::kPods, owned_by(c::kPods, "someone-else", operator_label("tfjob-controller"), "test.unitrain.io/v1", "EchoJob", "e", "uid-e").root());
  (void)client.seed(c::kPods, owned_by(c::kPods, "orphan-kind", echo_labels, "apps/v1", "ReplicaSet", "rs", "uid-rs").root());
  (void)client.seed(kConfigMaps, owned_by(kConfigMaps, "kube-root-ca.crt", "{}", "v1", "Namespace", "ns", "uid-ns").root());

  c::SharedCaches caches(client, clock, {&echo, &other}, {}, nullptr);
  RecordingEvents echo_events, other_events;
  auto echo_view = caches.attach(echo, echo_events);
  auto other_view = caches.attach(other, other_events);
  caches.start();
  REQUIRE(caches.wait_for_sync(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  REQUIRE(echo_view->wait_for_sync(std::chrono::steady_clock::now()));

  // One list and watch per resource, whatever the number of modules.
  REQUIRE(eventually([&] {
    return client.open_watches(c::kPods) == 1 && client.open_watches(c::kServices) == 1 &&
           client.open_watches(kBatchJobs) == 1;
  }));
  // Both modules' children, and nothing else, are cached.
  const kube::Informer* pods = echo_view->informer_for(c::kPods);
  REQUIRE(pods == other_view->informer_for(c::kPods));
  CHECK(pods->cache().get("ns/e-0"));
  CHECK(pods->cache().get("ns/o-0"));
  CHECK(pods->cache().get("ns/o-launcher-x"));
  CHECK(!pods->cache().get("ns/unlabelled"));
  CHECK(!pods->cache().get("ns/someone-else"));
  CHECK(echo_view->informer_for(kBatchJobs) == nullptr);  // EchoJob owns no batch Jobs
  CHECK(other_view->informer_for(kConfigMaps)->cache().size() == 0);

  REQUIRE(eventually([&] { return echo_events.saw("e-0") && other_events.saw("o-0"); }));
  // The launcher's pod reaches the OtherJob controller through its batch Job (once both caches
  // hold them: a change to the pod).
  auto launcher_pod = client.get(c::kPods, "ns", "o-launcher-x");
  REQUIRE(launcher_pod);
  (void)json::set_string(*launcher_pod, "/status/phase", "Running");
  REQUIRE(client.update(c::kPods, "ns", launcher_pod->root()));
  REQUIRE(eventually([&] { return other_events.saw("o-launcher-x"); }));
  for (const auto& r : echo_events.seen()) {
    CHECK(r.job == "e");
    CHECK(r.object != "orphan-kind");
  }
  bool grandchild = false;
  for (const auto& r : other_events.seen()) {
    CHECK(r.job == "o");
    if (r.object == "o-launcher-x") grandchild = r.grandchild && r.kind == "Pod";
  }
  CHECK(grandchild);
  CHECK(!other_events.saw("e-0"));

  // A job's children appear in observe() by uid, its owned kinds and their pods too.
  auto observed = other_view->observe("ns", "uid-o");
  CHECK(observed.pods.size() == 1);
  CHECK(observed.owned["jobs.batch"].size() == 1);
  CHECK(observed.owned["pods/jobs.batch"].size() == 1);

  // A change to a cached child reaches its controller once, as an update.
  auto updated = owned_by(c::kPods, "e-0", echo_labels, "test.unitrain.io/v1", "EchoJob", "e", "uid-e");
  (void)json::set_string(updated, "/status/phase", "Running");
  REQUIRE(client.update(c::kPods, "ns", updated.root()));
  REQUIRE(eventually([&] {
    for (const auto& r : echo_events.seen())
      if (r.object == "e-0" && r.change == "Updated") return true;
    return false;
  }));

  // A child whose controller reference moves to another job: the new owner's controller hears
  // of the update, and so does the previous owner's.
  auto moved = owned_by(c::kPods, "e-0", other_labels, "test.unitrain.io/v1", "OtherJob", "o", "uid-o");
  REQUIRE(client.update(c::kPods, "ns", moved.root()));
  auto heard = [](const RecordingEvents& events, std::string_view job) {
    for (const auto& r : events.seen())
      if (r.object == "e-0" && r.change == "Updated" && r.job == job) return true;
    return false;
  };
  REQUIRE(eventually([&] { return heard(other_events, "o"); }));
  REQUIRE(eventually([&] {
    size_t updates = 0;
    for (const auto& r : echo_events.seen()) updates += r.object == "e-0" && r.change == "Updated" && r.job == "e";
    return updates == 2;
  }));
  caches.stop();
}

TEST_CASE("shared caches: modules that select on different keys share an unfiltered informer, checked per object") {
  kube::FakeClient client;
  kube::RealClock clock;
  auto echo = module("EchoJob", false), other = module("OtherJob", false);
  other.child_label_selector = "example.com/owner=other";
  (void)client.seed(c::kPods, owned_by(c::kPods, "a", operator_label("echojob-controller"), "test.unitrain.io/v1", "EchoJob", "e", "u").root());
  (void)client.seed(c::kPods, owned_by(c::kPods, "b", R"({"example.com/owner":"other"})", "test.unitrain.io/v1", "OtherJob", "o", "v").root());
  (void)client.seed(c::kPods, owned_by(c::kPods, "c", R"({"example.com/owner":"someone"})", "test.unitrain.io/v1", "OtherJob", "o", "v").root());
  c::SharedCaches caches(client, clock, {&echo, &other}, {}, nullptr);
  RecordingEvents events;
  auto view = caches.attach(echo, events);
  caches.start();
  REQUIRE(caches.wait_for_sync(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  const auto& cache = view->informer_for(c::kPods)->cache();
  CHECK(cache.get("ns/a"));
  CHECK(cache.get("ns/b"));
  CHECK(!cache.get("ns/c"));
  caches.stop();
}

TEST_CASE("shared caches: a module's child labels must be key=value to be stamped") {
  auto d = module("EchoJob", false);
  auto labels = c::child_labels(d);
  REQUIRE(labels);
  CHECK(labels->at("training.kubeflow.org/operator-name") == "echojob-controller");
  d.child_label_selector = "a in (b,c)";
  auto bad = c::child_labels(d);
  REQUIRE(!bad);
  CHECK(bad.error().message ==
        "test.unitrain.io/echojob: child_label_selector 'a in (b,c)': only key=value requirements can be put on the "
        "objects the core creates, not 'a in (b,c)'");
  d.child_label_selector = "a=(";
  CHECK(!c::child_labels(d));
  d.child_label_selector = "";
  CHECK(c::child_labels(d)->empty());
}

TEST_CASE("shared caches: two controllers on one set of caches each run their own jobs") {
  kube::FakeClient client;
  kube::RealClock clock;
  unitrain::testing::RecordingSink events;
  const auto echo = module("EchoJob", false), other = module("OtherJob", false);
  auto job = [](std::string_view api_kind, std::string_view name) {
    return Document::parse(fmt::format(R"({{"apiVersion":"test.unitrain.io/v1","kind":"{}","metadata":{{"name":"{}","namespace":"ns"}},
      "spec":{{"echoReplicaSpecs":{{"Worker":{{"replicas":2,"template":{{"spec":{{"containers":[{{"name":"echo","image":"busybox"}}]}}}}}}}}}}}})",
                                       api_kind, name))
        .value();
  };
  (void)client.seed({"test.unitrain.io", "v1", "echojobs"}, job("EchoJob", "a").root());
  (void)client.seed({"test.unitrain.io", "v1", "otherjobs"}, job("OtherJob", "b").root());
  c::SharedCaches caches(client, clock, {&echo, &other}, {}, nullptr);
  c::JobController first(client, clock, events, std::make_unique<unitrain::testing::echo::EchoPlugin>(echo), {}, caches);
  c::JobController second(client, clock, events, std::make_unique<unitrain::testing::echo::EchoPlugin>(other), {}, caches);
  caches.start();
  first.start();
  second.start();
  auto created = [&](std::string_view pod) { return client.get(c::kPods, "ns", pod).has_value(); };
  REQUIRE(eventually([&] { return created("a-worker-0") && created("a-worker-1") && created("b-worker-0") && created("b-worker-1"); }));
  auto pod = client.get(c::kPods, "ns", "b-worker-0");
  CHECK(json::get_string(pod->root(), "/metadata/labels/training.kubeflow.org~1operator-name") == "otherjob-controller");
  // The services the core created carry the module's labels, so the shared cache sees them.
  REQUIRE(eventually([&] { return first.wait_for_sync({}) && caches.wait_for_sync(std::chrono::steady_clock::now()); }));
  CHECK(client.open_watches(c::kPods) == 1);
  first.stop();
  second.stop();
  caches.stop();
}
