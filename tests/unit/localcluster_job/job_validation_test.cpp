// kube-apiserver's batch/v1 Job validation in the local cluster's store: what it refuses, with
// the field paths and words of Kubernetes 1.32, and the defaults it applies first.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "localcluster/memory_store.h"
#include "tests/support/json.h"

using namespace unitrain;
using namespace unitrain::localcluster;
using unitrain::testing::doc;

namespace {

struct Jobs {
  std::unique_ptr<Store> store;
  ResourceInfo jobs;
  Jobs() {
    auto s = make_memory_store({});
    REQUIRE(s);
    store = std::move(*s);
    jobs = *store->find_resource("batch", "v1", "jobs");
  }
  // `spec` is the Job spec's members before the template; `restart` the template's restartPolicy.
  static std::string job(const std::string& name, const std::string& spec, const std::string& restart = "Never") {
    return fmt::format(
        R"({{"apiVersion":"batch/v1","kind":"Job","metadata":{{"name":"{}"}},"spec":{{{}"template":{{"spec":{{
            "restartPolicy":"{}","containers":[{{"name":"main","image":"x"}}],"initContainers":[{{"name":"init","image":"x"}}]}}}}}}}})",
        name, spec, restart);
  }
  StoreResult<json::Document> create(const std::string& name, const std::string& spec, const std::string& restart = "Never") {
    return store->create(jobs, "default", doc(job(name, spec, restart)));
  }
  // The refusal's message; fails the test when the Job was accepted.
  std::string refusal(const std::string& name, const std::string& spec, const std::string& restart = "Never") {
    auto r = create(name, spec, restart);
    if (r) FAIL("accepted: " << r->dump());
    CHECK(r.error().code == 422);
    return r.error().message;
  }
};

}  // namespace

TEST_CASE("Indexed Jobs need completions and a name that leaves room for the index") {
  Jobs j;
  CHECK(j.refusal("a", R"("completionMode":"Indexed","parallelism":2,)") ==
        R"(Job.batch "a" is invalid: spec.completions: Required value: when completion mode is Indexed)");
  std::string long_name(62, 'x');
  CHECK(j.refusal(long_name, R"("completionMode":"Indexed","completions":100,)") ==
        fmt::format(R"(Job.batch "{0}" is invalid: metadata.name: Invalid value: "{0}": will not able to create pod with invalid DNS label: {0}-99)",
                    long_name));
  CHECK(j.refusal("b", R"("completionMode":"Sometimes",)").find(
            R"(spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed")") != std::string::npos);
  auto ok = j.create("c", R"("completionMode":"Indexed","completions":3,"parallelism":3,)");
  REQUIRE(ok);
}

TEST_CASE("backoffLimitPerIndex and maxFailedIndexes: Indexed only, defaults and bounds") {
  Jobs j;
  CHECK(j.refusal("a", R"("backoffLimitPerIndex":1,)") ==
        R"(Job.batch "a" is invalid: spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode)");
  CHECK(j.refusal("b", R"("completionMode":"Indexed","completions":3,"maxFailedIndexes":1,)") ==
        R"(Job.batch "b" is invalid: spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified)");
  CHECK(j.refusal("c", R"("completionMode":"Indexed","completions":3,"backoffLimitPerIndex":1,"maxFailedIndexes":4,)") ==
        R"(Job.batch "c" is invalid: spec.maxFailedIndexes: Invalid value: 4: must be less than or equal to completions)");
  CHECK(j.refusal("d", R"("completionMode":"Indexed","completions":3,"backoffLimitPerIndex":-1,)") ==
        R"(Job.batch "d" is invalid: spec.backoffLimitPerIndex: Invalid value: -1: must be greater than or equal to 0)");
  auto ok = j.create("e", R"("completionMode":"Indexed","completions":3,"backoffLimitPerIndex":1,)");
  REQUIRE(ok);
  CHECK(json::get_int(ok->root(), "/spec/backoffLimit") == 2147483647);  // math.MaxInt32 with a per-index limit
}

TEST_CASE("podFailurePolicy: restartPolicy Never, rules, and the podReplacementPolicy it implies") {
  Jobs j;
  std::string rule_42 = R"("podFailurePolicy":{"rules":[{"action":"FailJob","onExitCodes":{"operator":"In","values":[42]}}]},)";
  CHECK(j.refusal("a", rule_42, "OnFailure") ==
        R"(Job.batch "a" is invalid: spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified)");
  CHECK(j.refusal("b", "", "Always") ==
        R"(Job.batch "b" is invalid: spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never")");
  CHECK(j.refusal("c", R"("podFailurePolicy":{"rules":[{"action":"FailIndex","onExitCodes":{"operator":"In","values":[1]}}]},)") ==
        R"(Job.batch "c" is invalid: spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set)");
  std::string message = j.refusal("d", R"("podFailurePolicy":{"rules":[
      {"action":"Explode","onExitCodes":{"operator":"In","values":[0,3,3]}},
      {"action":"Ignore","onExitCodes":{"containerName":"nope","operator":"Between","values":[5,4]}},
      {"action":"Count"},
      {"action":"Ignore","onExitCodes":{"operator":"In","values":[1]},"onPodConditions":[{"type":"DisruptionTarget","status":"Maybe"}]}]},)");
  for (std::string_view part : {
           R"(spec.podFailurePolicy.rules[0].action: Unsupported value: "Explode": supported values: "Count", "FailIndex", "FailJob", "Ignore")",
           R"(spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator)",
           R"(spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 3)",
           R"(spec.podFailurePolicy.rules[1].onExitCodes.operator: Unsupported value: "Between": supported values: "In", "NotIn")",
           R"(spec.podFailurePolicy.rules[1].onExitCodes.containerName: Invalid value: "nope": must be one of the container or initContainer names in the pod template)",
           R"(spec.podFailurePolicy.rules[1].onExitCodes.values: Invalid value: []int32{5, 4}: must be ordered)",
           R"(spec.podFailurePolicy.rules[2]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required)",
           R"(spec.podFailurePolicy.rules[3].onPodConditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown")",
           R"(spec.podFailurePolicy.rules[3]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported)"}) {
    INFO(message);
    CHECK(message.find(part) != std::string::npos);
  }
  CHECK(j.refusal("e", rule_42 + R"("podReplacementPolicy":"TerminatingOrFailed",)").find(
            R"(spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed")") != std::string::npos);
  auto ok = j.create("f", R"("podFailurePolicy":{"rules":[{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]},
                                                          {"action":"FailJob","onExitCodes":{"containerName":"init","operator":"NotIn","values":[0]}}]},)");
  REQUIRE(ok);
  CHECK(json::string_at(ok->root(), "/spec/podReplacementPolicy") == "Failed");
  CHECK(json::string_at(ok->root(), "/spec/podFailurePolicy/rules/0/onPodConditions/0/status") == "True");
}

TEST_CASE("successPolicy: Indexed only, rules with indexes and counts within completions") {
  Jobs j;
  CHECK(j.refusal("a", R"("completions":3,"successPolicy":{"rules":[{"succeededCount":1}]},)") ==
        R"(Job.batch "a" is invalid: spec.successPolicy: Invalid value: {"rules":[{"succeededCount":1}]}: requires indexed completion mode)");
  std::string indexed = R"("completionMode":"Indexed","completions":3,)";
  CHECK(j.refusal("b", indexed + R"("successPolicy":{"rules":[]},)") ==
        R"(Job.batch "b" is invalid: spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified)");
  std::string message = j.refusal("c", indexed + R"("successPolicy":{"rules":[{},{"succeededIndexes":"0-5"},{"succeededIndexes":"0,2","succeededCount":3}]},)");
  for (std::string_view part : {
           R"(spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified)",
           R"(spec.successPolicy.rules[1].succeededIndexes: Invalid value: "0-5": error parsing succeededIndexes: too large index: "5")",
           R"(spec.successPolicy.rules[2].succeededCount: Invalid value: 3: must be less than or equal to 2 (the number of indexes in the specified succeededIndexes field))"}) {
    INFO(message);
    CHECK(message.find(part) != std::string::npos);
  }
  CHECK(j.refusal("d", indexed + R"("successPolicy":{"rules":[{"succeededCount":4}]},)").find(
            "spec.successPolicy.rules[0].succeededCount: Invalid value: 4: must be less than or equal to 3 (the number of specified completions)") !=
        std::string::npos);
  REQUIRE(j.create("e", indexed + R"("successPolicy":{"rules":[{"succeededIndexes":"0,2","succeededCount":1}]},)"));
}

TEST_CASE("Job updates: policies and completion mode are immutable, Indexed completions move with parallelism") {
  Jobs j;
  REQUIRE(j.create("idx", R"("completionMode":"Indexed","completions":3,"parallelism":3,"backoffLimitPerIndex":1,)"));
  auto patch = [&](const std::string& body) {
    return j.store->patch(j.jobs, "default", "idx", PatchKind::Merge, body);
  };
  auto refused = [&](const std::string& body) {
    auto r = patch(body);
    if (r) FAIL("accepted: " << body);
    return r.error().message;
  };
  CHECK(refused(R"({"spec":{"completionMode":"NonIndexed","backoffLimitPerIndex":null}})").find(
            R"(spec.completionMode: Invalid value: "NonIndexed": field is immutable)") != std::string::npos);
  CHECK(refused(R"({"spec":{"backoffLimitPerIndex":2}})") ==
        R"(Job.batch "idx" is invalid: spec.backoffLimitPerIndex: Invalid value: 2: field is immutable)");
  CHECK(refused(R"({"spec":{"completions":5}})") ==
        R"(Job.batch "idx" is invalid: spec.completions: Invalid value: 5: can only be modified in tandem with spec.parallelism)");
  CHECK(patch(R"({"spec":{"completions":5,"parallelism":5}})"));
  REQUIRE(j.create("plain", R"("completions":2,)"));
  auto plain = j.store->patch(j.jobs, "default", "plain", PatchKind::Merge, R"({"spec":{"completions":3}})");
  REQUIRE_FALSE(plain);
  CHECK(plain.error().message == R"(Job.batch "plain" is invalid: spec.completions: Invalid value: 3: field is immutable)");
  // Status writes do not re-run spec validation.
  CHECK(j.store->patch(j.jobs, "default", "plain", PatchKind::Merge, R"({"status":{"active":1}})", "status"));
}
