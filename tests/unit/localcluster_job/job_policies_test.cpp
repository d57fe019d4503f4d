// The Job controller's pod failure policy and success policy decisions.
#include <catch2/catch.hpp>

#include "localcluster/controllers/job_policies.h"
#include "tests/support/json.h"

using namespace unitrain::localcluster;
using namespace unitrain::localcluster::controllers;
using unitrain::testing::doc;

namespace {

PodFailureFacts failed_pod(const std::string& statuses, const std::string& conditions = "[]") {
  auto pod = doc(R"({"metadata":{"namespace":"ns","name":"p-0-abcde"},"status":{"phase":"Failed","containerStatuses":)" +
                 statuses + R"(,"conditions":)" + conditions + "}}");
  return pod_failure_facts(pod.root());
}

std::string exited(const std::string& name, int code) {
  return R"({"name":")" + name + R"(","state":{"terminated":{"exitCode":)" + std::to_string(code) + "}}}";
}

}  // namespace

TEST_CASE("pod failure policy: the first matching rule decides, with kube-controller-manager's FailJob message") {
  auto policy = doc(R"({"rules":[
    {"action":"Ignore","onExitCodes":{"operator":"In","values":[43]}},
    {"action":"FailJob","onExitCodes":{"containerName":"main","operator":"In","values":[42]}},
    {"action":"Count","onExitCodes":{"operator":"NotIn","values":[1,42,43]}},
    {"action":"FailJob","onPodConditions":[{"type":"DisruptionTarget","status":"True"}]}]})");
  const auto* p = &policy.root();

  auto fail_job = match_pod_failure_policy(p, failed_pod("[" + exited("sidecar", 0) + "," + exited("main", 42) + "]"));
  CHECK(fail_job.action == FailureAction::FailJob);
  CHECK(fail_job.counts());
  CHECK(fail_job.fail_job_message == "Container main for pod ns/p-0-abcde failed with exit code 42 matching FailJob rule at index 1");

  // containerName narrows the rule: 42 from another container matches nothing but NotIn fails too.
  CHECK(match_pod_failure_policy(p, failed_pod("[" + exited("other", 42) + "]")).action == FailureAction::None);

  auto ignored = match_pod_failure_policy(p, failed_pod("[" + exited("main", 43) + "]"));
  CHECK(ignored.action == FailureAction::Ignore);
  CHECK_FALSE(ignored.counts());

  CHECK(match_pod_failure_policy(p, failed_pod("[" + exited("main", 7) + "]")).action == FailureAction::Count);
  CHECK(match_pod_failure_policy(p, failed_pod("[" + exited("main", 1) + "]")).action == FailureAction::None);

  // Exit code 0 and running containers never match; a pod condition rule does.
  auto disrupted = match_pod_failure_policy(
      p, failed_pod(R"([{"name":"main","state":{"running":{}}}])", R"([{"type":"DisruptionTarget","status":"True"}])"));
  CHECK(disrupted.action == FailureAction::FailJob);
  CHECK(disrupted.fail_job_message == "Pod ns/p-0-abcde has condition DisruptionTarget matching FailJob rule at index 3");
  CHECK(match_pod_failure_policy(p, failed_pod("[]", R"([{"type":"DisruptionTarget","status":"False"}])")).action ==
        FailureAction::None);
  CHECK(match_pod_failure_policy(nullptr, failed_pod("[" + exited("main", 42) + "]")).counts());
}

TEST_CASE("pod failure policy reads init containers after containers, FailIndex as an action") {
  auto policy = doc(R"({"rules":[{"action":"FailIndex","onExitCodes":{"operator":"In","values":[3]}}]})");
  auto pod = doc(R"({"metadata":{"namespace":"ns","name":"p"},"status":{"phase":"Failed",
      "initContainerStatuses":[{"name":"init","state":{"terminated":{"exitCode":3}}}],
      "containerStatuses":[{"name":"main","state":{"waiting":{}}}]}})");
  CHECK(match_pod_failure_policy(&policy.root(), pod_failure_facts(pod.root())).action == FailureAction::FailIndex);
}

TEST_CASE("success policy: succeededIndexes, succeededCount, and both") {
  auto policy = doc(R"({"rules":[{"succeededIndexes":"0,2-3","succeededCount":5},
                                 {"succeededIndexes":"4-7","succeededCount":2},
                                 {"succeededCount":6}]})");
  const auto* p = &policy.root();
  auto set = [](std::string_view s) { return CompletionIndexes::parse_lenient(s, 10); };
  CHECK_FALSE(match_success_policy(p, 10, set("")));
  CHECK(match_success_policy(p, 10, set("0,2-3")) == "Matched rules at index 0");  // all listed indexes
  CHECK_FALSE(match_success_policy(p, 10, set("0,2,4")));
  CHECK(match_success_policy(p, 10, set("0,2,4,6")) == "Matched rules at index 1");  // 2 of 4-7
  CHECK(match_success_policy(p, 10, set("1,4,8-9,0,2")) == "Matched rules at index 2");  // any 6
  CHECK_FALSE(match_success_policy(nullptr, 10, set("0-9")));
}
