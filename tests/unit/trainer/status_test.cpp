// TrainJob status from its spec and JobSet: Suspended/Resumed, the JobSet's terminal conditions
// renamed, jobsStatus in the JobSet's order, the active deadline.
#include <catch2/catch.hpp>

#include "frameworks/trainer/status.h"
#include "tests/unit/trainer/fixtures.h"

namespace json = unitrain::json;
namespace tr = unitrain::frameworks::trainer;
namespace api = unitrain::api;
using unitrain::testing::yaml;
using unitrain::testing::trainer::at;

namespace {
api::TimePoint t(std::string_view s) { return *api::parse_time(s); }
std::string conditions_of(const tr::StatusDecision& d) {
  std::string out;
  const json::Value& cs = at(d.status.root(), "/conditions");
  if (!cs.IsArray()) return out;
  for (const auto& c : cs.GetArray()) {
    out += json::string_at(c, "/type") + "=" + json::string_at(c, "/status") + "/" + json::string_at(c, "/reason") + "/" +
           json::string_at(c, "/message") + "@" + json::string_at(c, "/lastTransitionTime") + ";";
  }
  return out;
}
}  // namespace

TEST_CASE("suspend and resume: Suspended True, then False/Resumed, appended in first-set order") {
  auto tj = yaml("metadata: {name: a, creationTimestamp: '2026-01-01T00:00:00Z'}\nspec: {suspend: true}");
  auto d = tr::next_status(tj.root(), nullptr, t("2026-01-01T00:00:05Z"));
  CHECK(conditions_of(d) == "Suspended=True/Suspended/TrainJob is suspended@2026-01-01T00:00:05Z;");
  REQUIRE(json::set(tj, "/status", json::clone(d.status.root(), tj.alloc())));
  REQUIRE(json::set_bool(tj, "/spec/suspend", false));
  auto resumed = tr::next_status(tj.root(), nullptr, t("2026-01-01T00:01:00Z"));
  CHECK(conditions_of(resumed) == "Suspended=False/Resumed/TrainJob is resumed@2026-01-01T00:01:00Z;");
  // Never suspended: no condition at all, and no empty conditions list.
  auto plain = yaml("metadata: {name: a}\nspec: {suspend: false}");
  CHECK(tr::next_status(plain.root(), nullptr, t("2026-01-01T00:00:00Z")).status.root().ObjectEmpty());
}

TEST_CASE("the JobSet's Completed and Failed become Complete and Failed, jobsStatus copied in order") {
  auto tj = yaml("metadata: {name: a}\nspec: {suspend: false}");
  auto jobset = yaml(R"(
status:
  conditions:
    - {type: Completed, status: "True", reason: AllJobsCompleted, message: jobset completed successfully, lastTransitionTime: "2026-01-01T00:10:00Z"}
  replicatedJobsStatus:
    - {name: node, ready: 0, succeeded: 1, failed: 0, active: 0, suspended: 0, jobRestarts: [0]}
    - {name: dataset-initializer, ready: 0, succeeded: 1, failed: 0, active: 0, suspended: 0}
)");
  auto d = tr::next_status(tj.root(), &jobset.root(), t("2026-01-01T00:10:02Z"));
  CHECK(conditions_of(d) == "Complete=True/AllJobsCompleted/jobset completed successfully@2026-01-01T00:10:00Z;");
  auto expected = yaml(R"(
- {name: node, ready: 0, succeeded: 1, failed: 0, active: 0, suspended: 0}
- {name: dataset-initializer, ready: 0, succeeded: 1, failed: 0, active: 0, suspended: 0}
)");
  CHECK(json::equal(at(d.status.root(), "/jobsStatus"), expected.root()));

  auto failed = yaml(R"y(
status:
  conditions:
    - {type: Failed, status: "True", reason: FailedJobs, message: "jobset failed due to one or more job failures (first failed job: a-node-0)", lastTransitionTime: "2026-01-01T00:10:00Z"}
)y");
  CHECK(conditions_of(tr::next_status(tj.root(), &failed.root(), t("2026-01-01T00:11:00Z"))) ==
        "Failed=True/FailedJobs/jobset failed due to one or more job failures (first failed job: a-node-0)@2026-01-01T00:10:00Z;");
}

TEST_CASE("a finished TrainJob whose JobSet is gone keeps its status") {
  auto tj = yaml(R"(
metadata: {name: a}
spec: {suspend: false, activeDeadlineSeconds: 1}
status:
  conditions: [{type: Complete, status: "True", reason: AllJobsCompleted, message: m, lastTransitionTime: "2026-01-01T00:00:00Z"}]
  jobsStatus: [{name: node, ready: 0, succeeded: 1, failed: 0, active: 0, suspended: 0}]
)");
  auto d = tr::next_status(tj.root(), nullptr, t("2026-02-01T00:00:00Z"));
  CHECK(json::equal(d.status.root(), at(tj.root(), "/status")));
  CHECK_FALSE(d.delete_jobset);
}

TEST_CASE("activeDeadlineSeconds: requeue while ahead, Failed/DeadlineExceeded and the JobSet deleted once passed") {
  auto tj = yaml("metadata: {name: a, creationTimestamp: '2026-01-01T00:00:00Z'}\nspec: {suspend: false, activeDeadlineSeconds: 60}");
  auto ahead = tr::next_status(tj.root(), nullptr, t("2026-01-01T00:00:30Z"));
  REQUIRE(ahead.requeue_after);
  CHECK(ahead.requeue_after->count() == 30);
  CHECK_FALSE(ahead.delete_jobset);
  auto passed = tr::next_status(tj.root(), nullptr, t("2026-01-01T00:01:01Z"));
  CHECK(passed.delete_jobset);
  CHECK(conditions_of(passed) == "Failed=True/DeadlineExceeded/TrainJob exceeded its active deadline@2026-01-01T00:01:01Z;");
  // A resume restarts the timer; a suspended TrainJob has none.
  auto resumed = yaml(R"(
metadata: {name: a, creationTimestamp: '2026-01-01T00:00:00Z'}
spec: {suspend: false, activeDeadlineSeconds: 60}
status: {conditions: [{type: Suspended, status: "False", reason: Resumed, message: TrainJob is resumed, lastTransitionTime: "2026-01-01T00:05:00Z"}]}
)");
  auto r = tr::next_status(resumed.root(), nullptr, t("2026-01-01T00:05:50Z"));
  REQUIRE(r.requeue_after);
  CHECK(r.requeue_after->count() == 10);
  REQUIRE(json::set_bool(tj, "/spec/suspend", true));
  auto s = tr::next_status(tj.root(), nullptr, t("2026-01-01T01:00:00Z"));
  CHECK_FALSE(s.delete_jobset);
  CHECK_FALSE(s.requeue_after);
}

TEST_CASE("Failed is terminal: a Failed TrainJob stays Failed whatever its JobSet says") {
  auto tj = yaml(R"(
metadata: {name: a}
spec: {suspend: false}
status: {conditions: [{type: Failed, status: "True", reason: FailedJobs, message: m, lastTransitionTime: "2026-01-01T00:00:00Z"}]}
)");
  auto fresh_jobset = yaml("status: {replicatedJobsStatus: [{name: node, ready: 0, succeeded: 0, failed: 0, active: 1, suspended: 0}]}");
  auto d = tr::next_status(tj.root(), &fresh_jobset.root(), t("2026-01-01T00:05:00Z"));
  CHECK(conditions_of(d) == "Failed=True/FailedJobs/m@2026-01-01T00:00:00Z;");
  CHECK(tr::finished(tj.root()));
}
