// The pure rules of the reconcile pipeline: which failed pods run again, what counts toward
// backoffLimit (and how that count stays exact across failed writes), when a run limit is
// exceeded, and how the slot pods are sorted into missing, failed and surplus.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "core/api/time.h"
#include "core/controller/restart_policy.h"
#include "core/controller/run_limits.h"
#include "core/controller/slot_plan.h"

namespace c = unitrain::controller;
namespace fw = unitrain::framework;
namespace json = unitrain::json;
using namespace std::chrono_literals;

namespace {

fw::FrameworkDescriptor two_types() {
  fw::FrameworkDescriptor d;
  d.kind = "PyTorchJob";
  d.replica_specs_field = "pytorchReplicaSpecs";
  d.replica_types = {"Master", "Worker"};
  d.default_container = "pytorch";
  return d;
}

json::Document job_with_policies(std::string_view master_policy, std::string_view worker_policy,
                                 std::string_view annotations = "{}") {
  return json::Document::parse(fmt::format(R"({{"metadata":{{"name":"pt","namespace":"ns","annotations":{}}},
    "spec":{{"pytorchReplicaSpecs":{{"Master":{{"replicas":1,"restartPolicy":"{}"}},"Worker":{{"replicas":2,"restartPolicy":"{}"}}}}}}}})",
                                           annotations, master_policy, worker_policy))
      .value();
}

// A pod of the job: its replica type, phase, restart count and, when >= 0, the exit code its
// container terminated with.
json::Document pod(std::string_view name, std::string_view type, std::string_view phase, int restarts = 0,
                   int exit_code = -1, bool deleting = false) {
  const std::string terminated = exit_code >= 0 ? fmt::format(R"(,"state":{{"terminated":{{"exitCode":{}}}}})", exit_code) : "";
  return json::Document::parse(
             fmt::format(R"({{"metadata":{{"name":"{}","uid":"uid-{}","labels":{{"training.kubeflow.org/replica-type":"{}"}}{}}},
                "status":{{"phase":"{}","containerStatuses":[{{"name":"pytorch","restartCount":{}{}}}]}}}})",
                         name, name, type, deleting ? R"(,"deletionTimestamp":"2024-01-01T00:00:00Z")" : "", phase, restarts,
                         terminated))
      .value();
}

std::vector<const json::Value*> roots(const std::vector<json::Document>& docs) {
  std::vector<const json::Value*> out;
  for (const auto& d : docs) out.push_back(&d.root());
  return out;
}

}  // namespace

TEST_CASE("retryable: one rule for every restartPolicy") {
  CHECK(c::retryable("Always", 0));
  CHECK(c::retryable("OnFailure", 1));
  CHECK(c::retryable("OnFailure", std::nullopt));
  CHECK_FALSE(c::retryable("Never", 137));
  CHECK_FALSE(c::retryable("Never", std::nullopt));
  CHECK_FALSE(c::retryable("", 137));
  // ExitCode: a signal (>= 128, no upper bound) or no terminated container at all retries; a
  // permanent code does not.
  CHECK(c::retryable("ExitCode", 128));
  CHECK(c::retryable("ExitCode", 137));
  CHECK(c::retryable("ExitCode", 255));
  CHECK(c::retryable("ExitCode", std::nullopt));
  CHECK_FALSE(c::retryable("ExitCode", 127));
  CHECK_FALSE(c::retryable("ExitCode", 1));
  CHECK_FALSE(c::retryable("ExitCode", 0));
  CHECK(c::pod_restart_policy("ExitCode") == "Never");
  CHECK(c::pod_restart_policy("OnFailure") == "OnFailure");
}

TEST_CASE("RecreatedPods: the count written before the deletes never counts one pod twice") {
  auto job = job_with_policies("ExitCode", "ExitCode");
  const auto none = c::RecreatedPods::of(job.root());
  CHECK(none.count == 0);
  CHECK(none.counted_uids.empty());

  const auto first = none.after({"a", "b"});
  CHECK(first.count == 2);
  CHECK(first.merge_patch() ==
        R"({"metadata":{"annotations":{"training.unitrain.io/pod-restarts":"2","training.unitrain.io/pod-restarts-counted":"a,b"}}})");

  // Written, then one delete failed: the next pass finds "b" still failed and counts nothing.
  auto written = job_with_policies("ExitCode", "ExitCode",
                                   R"({"training.unitrain.io/pod-restarts":"2","training.unitrain.io/pod-restarts-counted":"a,b"})");
  const auto read = c::RecreatedPods::of(written.root());
  CHECK(read == first);
  CHECK(read.after({"b"}).count == 2);
  // A new failure alongside the one still being deleted counts once.
  const auto next = read.after({"b", "c"});
  CHECK(next.count == 3);
  CHECK(next.counted_uids == std::set<std::string>{"b", "c"});

  auto edited = job_with_policies("ExitCode", "ExitCode", R"({"training.unitrain.io/pod-restarts":"many"})");
  CHECK(c::RecreatedPods::of(edited.root()).count == 0);
}

TEST_CASE("backoff_restarts: re-creations plus in-place restarts of running pods whose policy retries") {
  const auto d = two_types();
  auto job = job_with_policies("Never", "OnFailure");
  std::vector<json::Document> pods;
  pods.push_back(pod("pt-master-0", "master", "Running", 5));    // Never: its restarts do not count
  pods.push_back(pod("pt-worker-0", "worker", "Running", 2));    // counts
  pods.push_back(pod("pt-worker-1", "worker", "Pending", 7));    // not running: does not count
  CHECK(c::backoff_restarts(d, job.root(), roots(pods), 0) == 2);
  CHECK(c::backoff_restarts(d, job.root(), roots(pods), 3) == 5);
}

TEST_CASE("check_run_limits: backoffLimit first, then the deadline, requeued until it passes") {
  const auto start = unitrain::api::parse_time("2024-01-01T00:00:00Z").value();
  unitrain::api::RunPolicy policy;
  CHECK_FALSE(c::check_run_limits(policy, 100, start, start + 1h).exceeded);

  policy.backoff_limit = 0;
  CHECK_FALSE(c::check_run_limits(policy, 0, start, start).exceeded);
  CHECK(c::check_run_limits(policy, 1, start, start).exceeded == fw::CoreEvent::BackoffLimitExceeded);
  policy.backoff_limit = 3;
  CHECK_FALSE(c::check_run_limits(policy, 2, start, start).exceeded);
  CHECK(c::check_run_limits(policy, 3, start, start).exceeded == fw::CoreEvent::BackoffLimitExceeded);

  policy.active_deadline_seconds = 60;
  const auto early = c::check_run_limits(policy, 0, start, start + 20s);
  CHECK_FALSE(early.exceeded);
  REQUIRE(early.deadline_in);
  CHECK(*early.deadline_in == std::chrono::duration_cast<unitrain::kube::Clock::Duration>(40s));
  CHECK(c::check_run_limits(policy, 0, start, start + 60s).exceeded == fw::CoreEvent::DeadlineExceeded);
  // Both exceeded: the backoff limit is the reason.
  CHECK(c::check_run_limits(policy, 3, start, start + 60s).exceeded == fw::CoreEvent::BackoffLimitExceeded);
  // No startTime yet: no deadline.
  CHECK_FALSE(c::check_run_limits(policy, 0, std::nullopt, start + 1h).exceeded);
}

TEST_CASE("plan_slots: missing slots, failed pods by outcome, surplus pods") {
  const auto d = two_types();
  auto job = job_with_policies("ExitCode", "ExitCode");
  std::vector<fw::PodSlot> slots{{"Master", 0}, {"Worker", 0}, {"Worker", 1}};
  std::vector<json::Document> pods;
  pods.push_back(pod("pt-master-0", "master", "Failed", 0, 3));     // permanent: fails the job
  pods.push_back(pod("pt-worker-0", "worker", "Failed", 0, 137));   // signal: restart
  pods.push_back(pod("pt-worker-2", "worker", "Running"));          // scaled away: surplus
  pods.push_back(pod("pt-worker-3", "worker", "Running", 0, -1, true));  // already going
  const auto plan = c::plan_slots(d, job.root(), slots, roots(pods));
  REQUIRE(plan.missing.size() == 1);
  CHECK(plan.missing[0].index == 1);
  REQUIRE(plan.failed.size() == 2);
  CHECK(plan.failed[0].outcome == c::FailedSlotPod::Outcome::FailJob);
  CHECK(plan.failed[0].exit_code == 3);
  CHECK(plan.failed[1].outcome == c::FailedSlotPod::Outcome::Restart);
  CHECK(plan.restart_uids() == std::vector<std::string>{"uid-pt-worker-0"});
  REQUIRE(plan.surplus.size() == 1);
  CHECK(json::get_string(*plan.surplus[0], "/metadata/name") == "pt-worker-2");

  // Never: the framework's status rules decide; the core neither restarts nor fails.
  auto never = job_with_policies("Never", "Never");
  const auto kept = c::plan_slots(d, never.root(), slots, roots(pods));
  REQUIRE(kept.failed.size() == 2);
  CHECK(kept.failed[0].outcome == c::FailedSlotPod::Outcome::Keep);
  CHECK(kept.restart_uids().empty());
  // A slot with its own name (MPI v1's launcher) is found by that name.
  std::vector<fw::PodSlot> named{{"Master", 0, "pt-launcher"}};
  CHECK(c::slot_pod_name("pt", named[0]) == "pt-launcher");
  CHECK(c::plan_slots(d, never.root(), named, roots(pods)).missing.size() == 1);
}
