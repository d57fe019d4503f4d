// The core carrying out a WorkloadPlanner's plans (core/controller/workload_pass.cpp) against the
// fake API server, with a kind that exists only in this test: its children are ConfigMaps, its
// status counts them. The status goes first; a failed status write acts on nothing; a child the
// job does not control is never taken over; a plan can delete children and the job itself;
// creations of one resource go out as one pipelined exchange, run after run; an unowned creation stays unowned.
#include <catch2/catch.hpp>

#include <chrono>
#include <mutex>
#include <span>
#include <thread>

#include <fmt/format.h>

#include "core/api/meta.h"
#include "core/controller/job_controller.h"
#include "core/kube/fake_client.h"
#include "tests/support/create_log.h"
#include "tests/support/eventually.h"
#include "tests/support/recording_sink.h"

namespace c = unitrain::controller;
namespace fw = unitrain::framework;
namespace json = unitrain::json;
namespace kube = unitrain::kube;
using json::Document;
using unitrain::testing::eventually;

namespace {

const kube::GroupVersionResource kPlanJobs{"test.unitrain.io", "v1", "planjobs"};
const kube::GroupVersionResource kPlanChildren{"", "v1", "configmaps"};
const kube::GroupVersionResource kPlanSecrets{"", "v1", "secrets"};

// A PlanJob wants one ConfigMap "<job>-child" (none once spec.dropChild), reports in status how
// many it saw, and deletes itself when spec.expire is true.
class PlanPlugin final : public fw::FrameworkPlugin, public fw::WorkloadPlanner {
 public:
  PlanPlugin() {
    d_.name = "test.unitrain.io/planjob";
    d_.group = "test.unitrain.io";
    d_.version = "v1";
    d_.kind = "PlanJob";
    d_.plural = "planjobs";
    d_.controller_name = "planjob-controller";
    d_.owned_resources = {kPlanChildren};
  }
  const fw::FrameworkDescriptor& descriptor() const override { return d_; }
  fw::Capabilities capabilities() const override { return {.workloads = this}; }
  void set_defaults(Document&) const override {}
  fw::Validation validate(const json::Value*, const json::Value&) const override { return {}; }
  std::vector<fw::PodSlot> pod_slots(const json::Value&) const override { return {}; }
  unitrain::Status decorate_pod(const json::Value&, const fw::PodSlot&, Document&) const override { return {}; }
  unitrain::Result<std::vector<fw::DesiredObject>> desired_objects(const json::Value&, const fw::Observed&) const override {
    return std::vector<fw::DesiredObject>{};
  }
  fw::StatusProposal compute_status(const json::Value&, const fw::Observed&) const override { return {}; }

  fw::WorkloadPlan plan(const json::Value& job, const fw::Observed& observed, std::string_view) const override {
    fw::WorkloadPlan plan;
    const std::string name = json::string_at(job, "/metadata/name");
    const std::string child = name + "-child";
    auto it = observed.owned.find("configmaps");
    const size_t seen = it == observed.owned.end() ? 0 : it->second.size();
    plan.status = Document::parse(fmt::format(R"({{"children":{}}})", seen)).value();
    if (seen > 0) plan.events.push_back({"Normal", "Counted", fmt::format("{} children", seen)});
    if (json::get_bool(job, "/spec/expire").value_or(false)) plan.delete_job = true;
    if (json::get_bool(job, "/spec/dropChild").value_or(false)) {
      if (seen > 0) plan.deletions.push_back({kPlanChildren, child, "Background"});
    } else if (const auto many = json::get_int(job, "/spec/children"); many && seen == 0) {
      // A Secret first, then `many` ConfigMaps "<job>-child-<i>".
      fw::DesiredObject secret;
      secret.resource = kPlanSecrets;
      secret.object = Document::parse(fmt::format(R"({{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"{}"}}}})", name)).value();
      plan.creations.push_back(std::move(secret));
      for (int64_t i = 0; i < *many; ++i) {
        fw::DesiredObject want;
        want.resource = kPlanChildren;
        want.object =
            Document::parse(fmt::format(R"({{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{}-{}"}}}})", child, i)).value();
        plan.creations.push_back(std::move(want));
      }
    } else if (seen == 0) {
      fw::DesiredObject want;
      want.resource = kPlanChildren;
      want.object = Document::parse(fmt::format(R"({{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{}"}}}})", child)).value();
      want.owned_by_job = !json::get_bool(job, "/spec/unowned").value_or(false);
      want.use_existing = !want.owned_by_job;  // not observed as a child: found existing on later passes
      plan.creations.push_back(std::move(want));
    }
    return plan;
  }

 private:
  fw::FrameworkDescriptor d_;
};

Document plan_job(std::string_view name, std::string_view spec = "{}") {
  return Document::parse(fmt::format(
                             R"({{"apiVersion":"test.unitrain.io/v1","kind":"PlanJob","metadata":{{"name":"{}","namespace":"ns"}},"spec":{}}})",
                             name, spec))
      .value();
}

size_t writes_of(const kube::FakeClient& client, kube::FakeClient::Verb verb, const std::string& resource) {
  size_t n = 0;
  for (const auto& w : client.writes())
    if (w.verb == verb && w.resource == resource) ++n;
  return n;
}

std::string children_in_status(kube::FakeClient& client, std::string_view name) {
  auto job = client.get(kPlanJobs, "ns", name);
  if (!job) return "<absent>";
  const json::Value* n = json::find(job->root(), "/status/children");
  return n == nullptr ? "<unset>" : json::dump(*n);
}

// Whether the first write that went through was a status write, before any create (the fake
// client records only writes that succeeded).
bool status_written_before_create(const kube::FakeClient& client) {
  const auto writes = client.writes();
  size_t first_status = writes.size(), first_create = writes.size();
  for (size_t i = 0; i < writes.size(); ++i) {
    if (writes[i].verb == kube::FakeClient::Verb::UpdateStatus && first_status == writes.size()) first_status = i;
    if (writes[i].verb == kube::FakeClient::Verb::Create && first_create == writes.size()) first_create = i;
  }
  return first_status < first_create;
}

struct PlanFixture {
  kube::FakeClient client;
  kube::RealClock clock;
  unitrain::testing::RecordingSink events;
  std::unique_ptr<c::JobController> controller;

  void start(kube::Client* through = nullptr) {
    controller = std::make_unique<c::JobController>(through != nullptr ? *through : client, clock, events,
                                                    std::make_unique<PlanPlugin>(), c::JobControllerOptions{});
    controller->start();
    REQUIRE(controller->wait_for_sync(std::chrono::seconds(5)));
  }
};

}  // namespace

TEST_CASE("workload pass: the status is written first, the child is created once, owned by the job") {
  PlanFixture f;
  f.client.seed(kPlanJobs, plan_job("p").root());
  f.client.clear_writes();
  f.start();
  REQUIRE(eventually([&] { return children_in_status(f.client, "p") == "1"; }));
  CHECK(status_written_before_create(f.client));
  auto child = f.client.get(kPlanChildren, "ns", "p-child");
  REQUIRE(child);
  auto job = f.client.get(kPlanJobs, "ns", "p");
  REQUIRE(job);
  CHECK(unitrain::api::is_controlled_by(child->root(), unitrain::api::uid_of(job->root())));
  // The plan's events are recorded once its status write returns, after the status is visible.
  CHECK(eventually([&] { return f.events.has("Normal Counted 1 children"); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(writes_of(f.client, kube::FakeClient::Verb::Create, "configmaps") == 1);
}

TEST_CASE("workload pass: a failed status write acts on nothing, the next pass does") {
  PlanFixture f;
  f.client.seed(kPlanJobs, plan_job("p").root());
  kube::ApiError unavailable;
  unavailable.reason = kube::ApiError::Reason::ServiceUnavailable;
  unavailable.code = 503;
  f.client.fail_next(kube::FakeClient::Verb::UpdateStatus, unavailable);
  f.client.clear_writes();
  f.start();
  REQUIRE(eventually([&] { return writes_of(f.client, kube::FakeClient::Verb::Create, "configmaps") == 1; }));
  // The pass whose status write failed created nothing; the create came after a status write went through.
  CHECK(status_written_before_create(f.client));
  REQUIRE(eventually([&] { return children_in_status(f.client, "p") == "1"; }));
}

TEST_CASE("workload pass: a child under the job's name that the job does not control is not taken over") {
  PlanFixture f;
  f.client.seed(kPlanChildren, Document::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p-child","namespace":"ns"}})").value().root());
  f.client.seed(kPlanJobs, plan_job("p").root());
  f.start();
  REQUIRE(eventually([&] { return f.events.has("Warning"); }));
  auto child = f.client.get(kPlanChildren, "ns", "p-child");
  REQUIRE(child);
  CHECK(unitrain::api::owner_references_of(child->root()).empty());
  CHECK(children_in_status(f.client, "p") == "0");
}

TEST_CASE("workload pass: a plan deletes a child, then the job itself") {
  PlanFixture f;
  f.client.seed(kPlanJobs, plan_job("p").root());
  f.start();
  REQUIRE(eventually([&] { return f.client.get(kPlanChildren, "ns", "p-child").has_value(); }));
  auto drop = Document::parse(R"({"spec":{"dropChild":true}})").value();
  REQUIRE(f.client.patch(kPlanJobs, "ns", "p", kube::PatchType::Merge, drop.dump()));
  REQUIRE(eventually([&] { return !f.client.get(kPlanChildren, "ns", "p-child").has_value(); }));
  auto expire = Document::parse(R"({"spec":{"expire":true}})").value();
  REQUIRE(f.client.patch(kPlanJobs, "ns", "p", kube::PatchType::Merge, expire.dump()));
  REQUIRE(eventually([&] { return !f.client.get(kPlanJobs, "ns", "p").has_value(); }));
}

TEST_CASE("workload pass: creations of one resource go out as one create_all, each run after the one before") {
  PlanFixture f;
  unitrain::testing::CreateLog recorded(f.client);
  // The controller calls `recorded`: it stops before `recorded` goes, whichever way the test ends.
  struct StopControllerFirst {
    PlanFixture& fixture;
    ~StopControllerFirst() { fixture.controller.reset(); }
  } stop_controller_first{f};
  f.client.seed(kPlanJobs, plan_job("p", R"({"children":4})").root());
  f.start(&recorded);
  REQUIRE(eventually([&] { return f.client.get(kPlanChildren, "ns", "p-child-3").has_value(); }));
  // The Secret (the run before), then the four ConfigMaps in the plan's order, each run one
  // exchange made by the pass itself.
  CHECK(recorded.lines() == std::vector<std::string>{"secrets: p", "configmaps: p-child-0 p-child-1 p-child-2 p-child-3"});
  CHECK(f.client.get(kPlanSecrets, "ns", "p").has_value());
}

TEST_CASE("workload pass: a failed run of creations ends the pass before the next run") {
  PlanFixture f;
  f.client.seed(kPlanJobs, plan_job("p", R"({"children":2})").root());
  kube::ApiError refused;
  refused.reason = kube::ApiError::Reason::Forbidden;
  refused.code = 403;
  refused.message = "quota";
  f.client.fail_next(kube::FakeClient::Verb::Create, refused);  // the Secret's first create
  f.client.clear_writes();
  f.start();
  REQUIRE(eventually([&] { return f.client.get(kPlanChildren, "ns", "p-child-0") && f.client.get(kPlanChildren, "ns", "p-child-1"); }));
  // The only creates that went through: the Secret (retried), then the ConfigMaps.
  const auto writes = f.client.writes();
  std::vector<std::string> created;
  for (const auto& w : writes)
    if (w.verb == kube::FakeClient::Verb::Create) created.push_back(w.resource);
  REQUIRE(created.size() == 3);
  CHECK(created[0] == "secrets");
}

TEST_CASE("workload pass: a creation the job does not own gets no owner reference") {
  PlanFixture f;
  f.client.seed(kPlanJobs, plan_job("p", R"({"unowned":true})").root());
  f.start();
  REQUIRE(eventually([&] { return f.client.get(kPlanChildren, "ns", "p-child").has_value(); }));
  auto child = f.client.get(kPlanChildren, "ns", "p-child");
  REQUIRE(child);
  CHECK(unitrain::api::owner_references_of(child->root()).empty());
}
