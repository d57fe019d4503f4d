// JobSet (frameworks/jobset): the webhook's defaults and messages, the child Jobs and Service,
// and the reconcile plan against fixtures of observed Jobs (v0.12.0's behaviour).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/api/time.h"
#include "frameworks/jobset/jobset.h"

namespace js = unitrain::frameworks::jobset;
using unitrain::framework::Observed;
using unitrain::framework::WorkloadPlan;
using unitrain::json::Document;

namespace {

Document parse(const std::string& text) {
  auto d = Document::parse(text);
  REQUIRE(d);
  return std::move(*d);
}

// A defaulted two-replicatedJob JobSet ("driver" x1, "workers" x2), optionally with extra spec members.
Document jobset(const std::string& extra_spec = "", const std::string& status = "") {
  Document d = parse(R"({"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet",
    "metadata":{"name":"js","namespace":"ns","uid":"u-1"},
    "spec":{)" + extra_spec + R"("replicatedJobs":[
      {"name":"driver","replicas":1,"template":{"metadata":{"labels":{"team":"a"}},"spec":{"parallelism":1,"completions":1,
        "template":{"metadata":{"labels":{"pod":"x"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}},
      {"name":"workers","replicas":2,"template":{"spec":{"parallelism":2,"completions":2,
        "template":{"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}}]})" +
                     (status.empty() ? "" : ",\"status\":" + status) + "}");
  js::set_defaults(d);
  return d;
}

// A child Job as the cache shows it: attempt, condition ("Complete", "Failed" or ""), counts.
Document job(const std::string& name, const std::string& rjob, int attempt, const std::string& condition = "",
             const std::string& extra_status = "", bool suspend = false, const std::string& reason = "BackoffLimitExceeded",
             const std::string& failed_at = "2026-01-01T00:00:00Z") {
  std::string conditions;
  if (!condition.empty())
    conditions = R"(,"conditions":[{"type":")" + condition + R"(","status":"True","reason":")" + reason +
                 R"(","message":"m","lastTransitionTime":")" + failed_at + R"("}])";
  return parse(R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":")" + name +
               R"(","namespace":"ns","resourceVersion":"7","labels":{"jobset.sigs.k8s.io/replicatedjob-name":")" + rjob +
               R"(","jobset.sigs.k8s.io/restart-attempt":")" + std::to_string(attempt) +
               R"("}},"spec":{"suspend":)" + (suspend ? "true" : "false") +
               R"(,"parallelism":2,"completions":2,"template":{"metadata":{},"spec":{}}},"status":{"startTime":"2026-01-01T00:00:00Z")" +
               extra_status + conditions + "}}");
}

struct Children {
  std::vector<Document> docs;
  Observed observed() const {
    Observed o;
    for (const auto& d : docs) {
      if (unitrain::json::string_at(d.root(), "/kind") == "Job") o.owned["jobs.batch"].push_back(&d.root());
      else o.services.push_back(&d.root());
    }
    return o;
  }
};

const auto kNow = *unitrain::api::parse_time("2026-01-01T00:10:00Z");

std::vector<std::string> names(const std::vector<unitrain::framework::DesiredObject>& objects) {
  std::vector<std::string> out;
  for (const auto& o : objects) out.push_back(unitrain::json::string_at(o.object.root(), "/metadata/name"));
  return out;
}

std::string condition(const WorkloadPlan& plan, const std::string& type) {
  REQUIRE(plan.status);
  const auto* conditions = unitrain::json::find(plan.status->root(), "/conditions");
  if (conditions == nullptr) return "";
  for (const auto& c : conditions->GetArray())
    if (unitrain::json::string_at(c, "/type") == type)
      return unitrain::json::string_at(c, "/status") + " " + unitrain::json::string_at(c, "/reason") + " " +
             unitrain::json::string_at(c, "/message");
  return "";
}

// Sets the member at `pointer` of `d` to the JSON `text`.
void set_json(Document& d, const std::string& pointer, const std::string& text) {
  Document value = parse(text);
  REQUIRE(unitrain::json::set(d, pointer, unitrain::json::clone(value.root(), d.alloc())));
}

std::vector<std::string> error_details(const unitrain::framework::Validation& v) {
  std::vector<std::string> out;
  for (const auto& e : v.errors) out.push_back(e.detail);
  return out;
}

}  // namespace

TEST_CASE("the defaulting webhook fills absent fields only", "[jobset][defaults]") {
  Document d = parse(R"({"metadata":{"name":"js"},"spec":{"failurePolicy":{"rules":[{"action":"FailJobSet"},{"name":"keep","action":"FailJobSet"}]},
    "network":{"enableDNSHostnames":false},
    "replicatedJobs":[{"name":"a","template":{"spec":{"completionMode":"NonIndexed","template":{"spec":{"restartPolicy":"Never"}}}}},
                      {"name":"b","template":{"spec":{"template":{"spec":{}}}}}]}})");
  js::set_defaults(d);
  const auto& r = d.root();
  CHECK(unitrain::json::string_at(r, "/spec/successPolicy/operator") == "All");
  CHECK(unitrain::json::string_at(r, "/spec/startupPolicy/startupPolicyOrder") == "AnyOrder");
  CHECK(unitrain::json::string_at(r, "/spec/replicatedJobs/0/template/spec/completionMode") == "NonIndexed");
  CHECK(unitrain::json::string_at(r, "/spec/replicatedJobs/0/template/spec/template/spec/restartPolicy") == "Never");
  CHECK(unitrain::json::string_at(r, "/spec/replicatedJobs/1/template/spec/completionMode") == "Indexed");
  CHECK(unitrain::json::string_at(r, "/spec/replicatedJobs/1/template/spec/template/spec/restartPolicy") == "OnFailure");
  CHECK(unitrain::json::get_bool(r, "/spec/network/enableDNSHostnames") == false);
  CHECK(unitrain::json::get_bool(r, "/spec/network/publishNotReadyAddresses") == true);
  CHECK(unitrain::json::string_at(r, "/spec/failurePolicy/rules/0/name") == "failurePolicyRule0");
  CHECK(unitrain::json::string_at(r, "/spec/failurePolicy/rules/1/name") == "keep");
}

TEST_CASE("the validating webhook words its refusals as upstream", "[jobset][validate]") {
  SECTION("a valid JobSet passes") { CHECK(js::validate(nullptr, jobset().root()).ok()); }
  SECTION("replicated Job and policy references") {
    Document d = jobset(R"("successPolicy":{"operator":"All","targetReplicatedJobs":["nope"]},
      "failurePolicy":{"maxRestarts":1,"rules":[{"name":"r","action":"FailJobSet","onJobFailureReasons":["Evicted"],"targetReplicatedJobs":["ghost"]},
                                                {"name":"r","action":"RestartJobSet"},{"name":"9bad","action":"RestartJobSet"}]},)");
    CHECK(error_details(js::validate(nullptr, d.root())) ==
          std::vector<std::string>{
              "invalid replicatedJob name 'nope' does not appear in .spec.ReplicatedJobs",
              "invalid replicatedJob name 'ghost' in failure policy does not appear in .spec.ReplicatedJobs",
              "invalid job failure reason 'Evicted' in failure policy is not a recognized job failure reason",
              "invalid failure policy rule name '9bad', a failure policy rule name must start with an alphabetic character, "
              "optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric "
              "character or '_'",
              "rule names are not unique, rules with indices [0, 1] all have the same name 'r'"});
  }
  SECTION("generated names longer than 63 characters") {
    Document d = jobset();
    (void)unitrain::json::set_string(d, "/metadata/name", std::string(56, 'a'));
    auto details = error_details(js::validate(nullptr, d.root()));
    CHECK(std::count(details.begin(), details.end(),
                     "JobSet name is too long, job names generated for this JobSet will exceed 63 characters") == 2);
    CHECK(std::count(details.begin(), details.end(),
                     "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters") == 2);
  }
  SECTION("dependsOn only on an earlier replicated Job, never on the first") {
    Document d = parse(R"({"metadata":{"name":"js"},"spec":{"replicatedJobs":[
      {"name":"a","dependsOn":[{"name":"b","status":"Ready"}],"template":{"spec":{}}},
      {"name":"b","dependsOn":[{"name":"c","status":"Complete"}],"template":{"spec":{}}},
      {"name":"c","template":{"spec":{}}}]}})");
    CHECK(error_details(js::validate(nullptr, d.root())) ==
          std::vector<std::string>{"DependsOn can't be set for the first ReplicatedJob",
                                   "replicatedJob: a cannot depend on replicatedJob: b",
                                   "replicatedJob: b cannot depend on replicatedJob: c"});
  }
  SECTION("a long subdomain") {
    Document d = jobset(R"("network":{"subdomain":")" + std::string(70, 's') + R"("},)");
    auto details = error_details(js::validate(nullptr, d.root()));
    CHECK(std::count(details.begin(), details.end(), ".spec.network.subdomain is too long, must be less than 63 characters") == 1);
  }
  SECTION("volumeClaimPolicies: unique DNS-1123 names that fit, mounted, no pod volume of that name") {
    Document d = jobset(R"("volumeClaimPolicies":[{"templates":[{"metadata":{"name":"data"}},{"metadata":{"name":"data"}},
      {"metadata":{"name":"Bad_Name"}},{"metadata":{"name":")" + std::string(61, 'x') + R"("}}]}],)");
    set_json(d, "/spec/replicatedJobs/1/template/spec/template/spec/containers/0/volumeMounts", R"([{"name":"data","mountPath":"/data"}])");
    set_json(d, "/spec/replicatedJobs/1/template/spec/template/spec/volumes", R"([{"name":"data","emptyDir":{}}])");
    auto v = js::validate(nullptr, d.root());
    std::vector<std::string> got;
    for (const auto& e : v.errors) got.push_back(e.field + ": " + e.detail);
    const std::string x61(61, 'x');
    CHECK(got == std::vector<std::string>{
                     "spec.replicatedJobs[1].template.spec.template.spec.volumes[0].name: volume name conflicts with "
                     "VolumeClaimPolicy template name: data",
                     "spec.volumeClaimPolicies[0].template[1].name: names must be unique for VolumeClaimPolicies template",
                     "spec.replicatedJobs[1].template.spec.template.spec.volumes[0].name: volume name conflicts with "
                     "VolumeClaimPolicy template name: data",
                     "spec.volumeClaimPolicies[0].template[2].name: a lowercase RFC 1123 subdomain must consist of lower "
                     "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                     "(e.g. 'example.com', regex used for validation is "
                     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                     "spec.replicatedJobs: replicatedJob containers don't have a matching volumeMount: Bad_Name from "
                     "VolumeClaimPolicies",
                     "spec.volumeClaimPolicies[0].template[3].name: VolumeClaimPolicies template name is too long",
                     "spec.replicatedJobs: replicatedJob containers don't have a matching volumeMount: " + x61 +
                         " from VolumeClaimPolicies"});
  }
  SECTION("updates: replicatedJobs immutable unless suspended (pod labels), managedBy immutable") {
    Document old = jobset();
    Document changed = jobset();
    (void)unitrain::json::set_string(changed, "/spec/replicatedJobs/0/template/spec/template/metadata/labels/pod", "y");
    auto v = js::validate(&old.root(), changed.root());
    REQUIRE(v.errors.size() == 1);
    CHECK(v.errors[0].field == "spec.replicatedJobs");
    CHECK(v.errors[0].detail == "field is immutable");
    (void)unitrain::json::set_bool(changed, "/spec/suspend", true);
    CHECK(js::validate(&old.root(), changed.root()).ok());
    (void)unitrain::json::set_int(changed, "/spec/replicatedJobs/0/replicas", 3);
    CHECK_FALSE(js::validate(&old.root(), changed.root()).ok());
    Document managed = jobset();
    (void)unitrain::json::set_string(managed, "/spec/managedBy", "kueue.x-k8s.io/multikueue");
    auto m = js::validate(&old.root(), managed.root());
    REQUIRE(m.errors.size() == 1);
    CHECK(m.errors[0].field == "spec.managedBy");
  }
}

TEST_CASE("child Jobs carry JobSet's names, labels and annotations", "[jobset][objects]") {
  CHECK(js::sha1_hex("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d");
  Document d = jobset("", R"({"restarts":2})");
  Document j = js::child_job(d.root(), 1, 1);
  const auto& r = j.root();
  CHECK(unitrain::json::string_at(r, "/metadata/name") == "js-workers-1");
  const std::vector<std::pair<std::string, std::string>> want = {
      {"jobset.sigs.k8s.io~1jobset-name", "js"},          {"jobset.sigs.k8s.io~1jobset-uid", "u-1"},
      {"jobset.sigs.k8s.io~1replicatedjob-name", "workers"}, {"jobset.sigs.k8s.io~1restart-attempt", "2"},
      {"jobset.sigs.k8s.io~1replicatedjob-replicas", "2"}, {"jobset.sigs.k8s.io~1global-replicas", "3"},
      {"jobset.sigs.k8s.io~1job-index", "1"},             {"jobset.sigs.k8s.io~1job-global-index", "2"},
      {"jobset.sigs.k8s.io~1group-name", "default"},      {"jobset.sigs.k8s.io~1group-replicas", "3"},
      {"jobset.sigs.k8s.io~1job-group-index", "2"},       {"jobset.sigs.k8s.io~1job-key", js::sha1_hex("ns/js-workers-1")}};
  for (const auto& [key, value] : want) {
    for (const std::string base : {"/metadata/labels/", "/metadata/annotations/", "/spec/template/metadata/labels/",
                                   "/spec/template/metadata/annotations/"}) {
      INFO(base + key);
      CHECK(unitrain::json::string_at(r, base + key) == value);
    }
  }
  CHECK(unitrain::json::string_at(r, "/spec/template/spec/subdomain") == "js");
  CHECK(unitrain::json::get_bool(r, "/spec/suspend") == false);
  CHECK(unitrain::json::string_at(r, "/spec/completionMode") == "Indexed");
  Document driver = js::child_job(d.root(), 0, 0);
  CHECK(unitrain::json::string_at(driver.root(), "/metadata/labels/team") == "a");
  CHECK(unitrain::json::string_at(driver.root(), "/spec/template/metadata/labels/pod") == "x");

  Document svc = js::headless_service(jobset(R"("network":{"subdomain":"net"},)").root());
  CHECK(svc.root() == parse(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"net","namespace":"ns"},
    "spec":{"clusterIP":"None","selector":{"jobset.sigs.k8s.io/jobset-name":"js"},"publishNotReadyAddresses":true}})").root());
}

TEST_CASE("a new JobSet gets its Service and every Job, and a status", "[jobset][plan]") {
  Document d = jobset();
  WorkloadPlan plan = js::plan(d.root(), Children{}.observed(), kNow);
  CHECK(names(plan.creations) == std::vector<std::string>{"js", "js-driver-0", "js-workers-0", "js-workers-1"});
  CHECK(plan.creations[0].use_existing);
  REQUIRE(plan.status);
  // Stored in descending name order, as upstream leaves it.
  CHECK(plan.status->root() == parse(R"({"restarts":0,"replicatedJobsStatus":[
    {"name":"workers","ready":0,"succeeded":0,"failed":0,"active":0,"suspended":0},
    {"name":"driver","ready":0,"succeeded":0,"failed":0,"active":0,"suspended":0}]})").root());
  CHECK(plan.events.empty());
}

TEST_CASE("counts and the success policy", "[jobset][plan]") {
  Children c;
  c.docs.push_back(js::headless_service(jobset().root()));
  c.docs.push_back(job("js-driver-0", "driver", 0, "Complete", R"(,"succeeded":2)"));
  c.docs.push_back(job("js-workers-0", "workers", 0, "", R"(,"active":2,"ready":2)"));
  c.docs.push_back(job("js-workers-1", "workers", 0, "", R"(,"active":2,"ready":1)"));
  SECTION("All: running until every Job completes") {
    WorkloadPlan plan = js::plan(jobset().root(), c.observed(), kNow);
    CHECK(plan.creations.empty());
    CHECK(plan.status->root()["replicatedJobsStatus"] == parse(R"([
      {"name":"workers","ready":1,"succeeded":0,"failed":0,"active":2,"suspended":0},
      {"name":"driver","ready":0,"succeeded":1,"failed":0,"active":0,"suspended":0}])").root());
    CHECK(condition(plan, "Completed").empty());
  }
  SECTION("Any with a target: one completed driver completes the JobSet") {
    WorkloadPlan plan =
        js::plan(jobset(R"("successPolicy":{"operator":"Any","targetReplicatedJobs":["driver"]},)").root(), c.observed(), kNow);
    CHECK(condition(plan, "Completed") == "True AllJobsCompleted jobset completed successfully");
    CHECK(unitrain::json::string_at(plan.status->root(), "/terminalState") == "Completed");
    REQUIRE(plan.events.size() == 1);
    CHECK(plan.events[0].reason == "AllJobsCompleted");
    CHECK(plan.events[0].type == "Normal");
    CHECK(plan.creations.empty());
    CHECK(plan.deletions.empty());
  }
  SECTION("a finished JobSet deletes its active Jobs, foreground") {
    Document done = jobset("", R"({"restarts":0,"terminalState":"Completed","conditions":[{"type":"Completed","status":"True",
      "lastTransitionTime":"2026-01-01T00:05:00Z","reason":"AllJobsCompleted","message":"jobset completed successfully"}]})");
    WorkloadPlan plan = js::plan(done.root(), c.observed(), kNow);
    REQUIRE(plan.deletions.size() == 2);
    CHECK(plan.deletions[0].name == "js-workers-0");
    CHECK(plan.deletions[0].propagation_policy == "Foreground");
    CHECK(plan.events.empty());
    CHECK_FALSE(plan.delete_job);
    CHECK_FALSE(plan.requeue_after_ms);
  }
}

TEST_CASE("TTL after finished", "[jobset][plan][ttl]") {
  const std::string finished = R"({"restarts":0,"terminalState":"Failed","conditions":[{"type":"Failed","status":"True",
      "lastTransitionTime":"2026-01-01T00:09:00Z","reason":"FailedJobs","message":"m"}]})";
  WorkloadPlan waiting = js::plan(jobset(R"("ttlSecondsAfterFinished":100,)", finished).root(), Children{}.observed(), kNow);
  CHECK_FALSE(waiting.delete_job);
  CHECK(waiting.requeue_after_ms == 40000);
  WorkloadPlan expired = js::plan(jobset(R"("ttlSecondsAfterFinished":60,)", finished).root(), Children{}.observed(), kNow);
  CHECK(expired.delete_job);
}

TEST_CASE("the failure policy", "[jobset][plan][failure]") {
  Children c;
  c.docs.push_back(js::headless_service(jobset().root()));
  c.docs.push_back(job("js-driver-0", "driver", 0, "", R"(,"active":1,"ready":1)"));
  c.docs.push_back(job("js-workers-0", "workers", 0, "Failed", "", false, "BackoffLimitExceeded", "2026-01-01T00:02:00Z"));
  c.docs.push_back(job("js-workers-1", "workers", 0, "Failed", "", false, "DeadlineExceeded", "2026-01-01T00:01:00Z"));
  SECTION("without a policy the JobSet fails, naming the first failed Job") {
    WorkloadPlan plan = js::plan(jobset().root(), c.observed(), kNow);
    CHECK(condition(plan, "Failed") ==
          "True FailedJobs jobset failed due to one or more job failures (first failed job: js-workers-1)");
    CHECK(unitrain::json::string_at(plan.status->root(), "/terminalState") == "Failed");
    CHECK(plan.creations.empty());
  }
  SECTION("the default action restarts while restarts remain, then fails") {
    WorkloadPlan plan = js::plan(jobset(R"("failurePolicy":{"maxRestarts":2},)").root(), c.observed(), kNow);
    CHECK(unitrain::json::get_int(plan.status->root(), "/restarts") == 1);
    CHECK(unitrain::json::get_int(plan.status->root(), "/restartsCountTowardsMax") == 1);
    CHECK(condition(plan, "RestartingJobSet") ==
          "True DefaultFailurePolicy applying RestartJobSet failure policy action (first failed job: js-workers-1)");
    REQUIRE(plan.events.size() == 2);
    CHECK(plan.events[1].reason == "RestartJobSetFailurePolicyAction");
    CHECK(plan.events[1].type == "Warning");
    CHECK(plan.creations.empty());

    WorkloadPlan exhausted =
        js::plan(jobset(R"("failurePolicy":{"maxRestarts":2},)", R"({"restarts":2,"restartsCountTowardsMax":2})").root(),
                 Children{{job("js-workers-0", "workers", 2, "Failed")}}.observed(), kNow);
    CHECK(condition(exhausted, "Failed") ==
          "True ReachedMaxRestarts jobset failed due to reaching max number of restarts (first failed job: js-workers-0)");
  }
  SECTION("rules match on reason and target, first rule wins") {
    WorkloadPlan plan = js::plan(
        jobset(R"("failurePolicy":{"maxRestarts":0,"rules":[
          {"name":"deadline","action":"FailJobSet","onJobFailureReasons":["DeadlineExceeded"],"targetReplicatedJobs":["driver"]},
          {"name":"backoff","action":"FailJobSet","onJobFailureReasons":["BackoffLimitExceeded"]}]},)")
            .root(),
        c.observed(), kNow);
    CHECK(condition(plan, "Failed") ==
          "True FailJobSetFailurePolicyAction applying FailJobSet failure policy action (first failed job: js-workers-0)");
  }
  SECTION("RestartJobSetAndIgnoreMaxRestarts restarts without counting toward the maximum") {
    WorkloadPlan plan = js::plan(
        jobset(R"("failurePolicy":{"maxRestarts":0,"rules":[{"name":"always","action":"RestartJobSetAndIgnoreMaxRestarts"}]},)")
            .root(),
        c.observed(), kNow);
    CHECK(unitrain::json::get_int(plan.status->root(), "/restarts") == 1);
    CHECK(unitrain::json::find(plan.status->root(), "/restartsCountTowardsMax") == nullptr);
    CHECK(condition(plan, "RestartingJobSet") ==
          "True FailurePolicy_always applying RestartJobSetAndIgnoreMaxRestarts failure policy action (first failed job: "
          "js-workers-1)");
    CHECK(plan.events.back().reason == "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction");
  }
}

TEST_CASE("a restart deletes the previous attempt and recreates each Job once it is gone", "[jobset][plan][restart]") {
  Document d = jobset(R"("failurePolicy":{"maxRestarts":3},)", R"({"restarts":1,"restartsCountTowardsMax":1,"conditions":[
    {"type":"RestartingJobSet","status":"True","lastTransitionTime":"2026-01-01T00:01:00Z","reason":"DefaultFailurePolicy","message":"m"}]})");
  Children c;
  c.docs.push_back(js::headless_service(d.root()));
  c.docs.push_back(job("js-driver-0", "driver", 0, "", R"(,"active":1)"));
  c.docs.push_back(job("js-workers-0", "workers", 0, "Failed"));
  Document terminating = job("js-workers-1", "workers", 0, "", R"(,"active":2)");
  (void)unitrain::json::set_string(terminating, "/metadata/deletionTimestamp", "2026-01-01T00:09:00Z");
  c.docs.push_back(std::move(terminating));
  WorkloadPlan plan = js::plan(d.root(), c.observed(), kNow);
  std::vector<std::string> deleted;
  for (const auto& x : plan.deletions) deleted.push_back(x.name);
  CHECK(deleted == std::vector<std::string>{"js-driver-0", "js-workers-0"});
  CHECK(plan.creations.empty());  // every name is still taken by a previous attempt

  Children gone;
  gone.docs.push_back(js::headless_service(d.root()));
  gone.docs.push_back(job("js-workers-1", "workers", 0, "", R"(,"active":2)"));
  WorkloadPlan next = js::plan(d.root(), gone.observed(), kNow);
  CHECK(names(next.creations) == std::vector<std::string>{"js-driver-0", "js-workers-0"});
  CHECK(unitrain::json::string_at(next.creations[0].object.root(), "/metadata/labels/jobset.sigs.k8s.io~1restart-attempt") == "1");
  CHECK(condition(next, "RestartingJobSet").rfind("True", 0) == 0);
}

TEST_CASE("BlockingRecreate creates no Job while any Job of a previous attempt exists", "[jobset][plan][restart]") {
  const std::string status = R"({"restarts":1,"restartsCountTowardsMax":1})";
  Children one_left;
  one_left.docs.push_back(js::headless_service(jobset().root()));
  one_left.docs.push_back(job("js-workers-1", "workers", 0, "", R"(,"active":2)"));
  Document blocking = jobset(R"("failurePolicy":{"maxRestarts":3,"restartStrategy":"BlockingRecreate"},)", status);
  CHECK(js::plan(blocking.root(), one_left.observed(), kNow).creations.empty());
  // Recreate replaces each Job whose own predecessor is gone.
  Document recreate = jobset(R"("failurePolicy":{"maxRestarts":3,"restartStrategy":"Recreate"},)", status);
  CHECK(names(js::plan(recreate.root(), one_left.observed(), kNow).creations) ==
        std::vector<std::string>{"js-driver-0", "js-workers-0"});
  // Once the last one is gone, BlockingRecreate creates them all.
  Children none_left;
  none_left.docs.push_back(js::headless_service(jobset().root()));
  CHECK(names(js::plan(blocking.root(), none_left.observed(), kNow).creations) ==
        std::vector<std::string>{"js-driver-0", "js-workers-0", "js-workers-1"});
}

TEST_CASE("volumeClaimPolicies: a claim per template before the Jobs, mounted where a container names it",
          "[jobset][plan][volumes]") {
  const std::string policies = R"("volumeClaimPolicies":[
    {"templates":[{"metadata":{"name":"data","labels":{"tier":"fast"},"annotations":{"note":"n"}},
                   "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]},
    {"retentionPolicy":{"whenDeleted":"Retain"},"templates":[{"metadata":{"name":"ckpt"},"spec":{"resources":{"requests":{"storage":"2Gi"}}}}]}],)";
  Document d = jobset(policies);
  // The driver mounts "data" from an init container, the workers "ckpt" from their container.
  set_json(d, "/spec/replicatedJobs/0/template/spec/template/spec/initContainers", R"([{"name":"init","image":"busybox","volumeMounts":[{"name":"data","mountPath":"/data"}]}])");
  set_json(d, "/spec/replicatedJobs/1/template/spec/template/spec/containers/0/volumeMounts", R"([{"name":"ckpt","mountPath":"/ckpt"}])");
  CHECK(unitrain::json::string_at(d.root(), "/spec/volumeClaimPolicies/0/retentionPolicy/whenDeleted") == "Delete");  // defaulted
  WorkloadPlan plan = js::plan(d.root(), Children{}.observed(), kNow);
  CHECK(names(plan.creations) == std::vector<std::string>{"js", "data-js", "ckpt-js", "js-driver-0", "js-workers-0", "js-workers-1"});
  const auto& data = plan.creations[1];
  CHECK(data.resource.resource == "persistentvolumeclaims");
  CHECK(data.use_existing);  // AlreadyExists is not an error
  CHECK(data.owned_by_job);
  CHECK(data.object.root() == parse(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim",
    "metadata":{"name":"data-js","namespace":"ns","labels":{"tier":"fast","jobset.sigs.k8s.io/jobset-name":"js"},"annotations":{"note":"n"}},
    "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}})").root());
  CHECK_FALSE(plan.creations[2].owned_by_job);  // Retain: it outlives the JobSet
  CHECK(unitrain::json::string_at(plan.creations[2].object.root(), "/metadata/labels/jobset.sigs.k8s.io~1jobset-name") == "js");
  CHECK(unitrain::json::dump(*unitrain::json::find(plan.creations[3].object.root(), "/spec/template/spec/volumes")) ==
        R"([{"name":"data","persistentVolumeClaim":{"claimName":"data-js"}}])");
  CHECK(unitrain::json::dump(*unitrain::json::find(plan.creations[4].object.root(), "/spec/template/spec/volumes")) ==
        R"([{"name":"ckpt","persistentVolumeClaim":{"claimName":"ckpt-js"}}])");
  // A finished JobSet asks for no claim.
  Document done = jobset(policies, R"({"restarts":0,"terminalState":"Completed","conditions":[
    {"type":"Completed","status":"True","lastTransitionTime":"2026-01-01T00:01:00Z","reason":"AllJobsCompleted","message":"jobset completed successfully"}]})");
  CHECK(js::plan(done.root(), Children{}.observed(), kNow).creations.empty());
}

TEST_CASE("exclusive placement by node selector", "[jobset][objects][exclusive]") {
  const std::string topology = "alpha.jobset.sigs.k8s.io~1exclusive-topology";
  const std::string strategy = "alpha.jobset.sigs.k8s.io~1node-selector";
  SECTION("both JobSet annotations: the nodeSelector, the toleration, the annotations on the Job and its pods") {
    Document d = jobset();
    (void)unitrain::json::set_string(d, "/metadata/annotations/" + topology, "cloud.google.com/gke-nodepool");
    (void)unitrain::json::set_string(d, "/metadata/annotations/" + strategy, "true");
    Document j = js::child_job(d.root(), 1, 1);
    const auto& r = j.root();
    for (const std::string base : {"/metadata/annotations/", "/spec/template/metadata/annotations/"}) {
      CHECK(unitrain::json::string_at(r, base + topology) == "cloud.google.com/gke-nodepool");
      CHECK(unitrain::json::string_at(r, base + strategy) == "true");
    }
    CHECK(unitrain::json::dump(*unitrain::json::find(r, "/spec/template/spec/nodeSelector")) ==
          R"({"alpha.jobset.sigs.k8s.io/namespaced-job":"ns_js-workers-1"})");
    CHECK(unitrain::json::dump(*unitrain::json::find(r, "/spec/template/spec/tolerations")) ==
          R"([{"key":"alpha.jobset.sigs.k8s.io/no-schedule","operator":"Exists","effect":"NoSchedule"}])");
  }
  SECTION("the topology alone: annotations only") {
    Document d = jobset();
    (void)unitrain::json::set_string(d, "/metadata/annotations/" + topology, "zone");
    Document j = js::child_job(d.root(), 0, 0);
    CHECK(unitrain::json::string_at(j.root(), "/spec/template/metadata/annotations/" + topology) == "zone");
    CHECK(unitrain::json::find(j.root(), "/spec/template/spec/nodeSelector") == nullptr);
    CHECK(unitrain::json::find(j.root(), "/spec/template/spec/tolerations") == nullptr);
  }
  SECTION("the strategy without a topology key on the same object is not copied") {
    Document d = jobset();
    (void)unitrain::json::set_string(d, "/metadata/annotations/" + strategy, "true");
    Document j = js::child_job(d.root(), 0, 0);
    CHECK(unitrain::json::find(j.root(), "/spec/template/metadata/annotations/" + strategy) == nullptr);
    CHECK(unitrain::json::find(j.root(), "/spec/template/spec/nodeSelector") == nullptr);
  }
  SECTION("the replicated Job's annotations win over the JobSet's") {
    Document d = jobset();
    (void)unitrain::json::set_string(d, "/metadata/annotations/" + topology, "zone");
    (void)unitrain::json::set_string(d, "/spec/replicatedJobs/0/template/metadata/annotations/" + topology, "rack");
    (void)unitrain::json::set_string(d, "/spec/replicatedJobs/0/template/metadata/annotations/" + strategy, "true");
    Document j = js::child_job(d.root(), 0, 0);
    CHECK(unitrain::json::string_at(j.root(), "/spec/template/metadata/annotations/" + topology) == "rack");
    CHECK(unitrain::json::string_at(j.root(), "/spec/template/spec/nodeSelector/alpha.jobset.sigs.k8s.io~1namespaced-job") ==
          "ns_js-driver-0");
    Document worker = js::child_job(d.root(), 1, 0);  // only the JobSet's topology: no selector
    CHECK(unitrain::json::string_at(worker.root(), "/metadata/annotations/" + topology) == "zone");
    CHECK(unitrain::json::find(worker.root(), "/spec/template/spec/nodeSelector") == nullptr);
  }
}

TEST_CASE("InOrder startup creates one replicated Job at a time", "[jobset][plan][startup]") {
  const std::string in_order = R"("startupPolicy":{"startupPolicyOrder":"InOrder"},)";
  WorkloadPlan first = js::plan(jobset(in_order).root(), Children{}.observed(), kNow);
  CHECK(names(first.creations) == std::vector<std::string>{"js", "js-driver-0"});
  CHECK(condition(first, "StartupPolicyInProgress") ==
        "True InOrderStartupPolicyInProgress in order startup policy is in progress");

  Children c;
  c.docs.push_back(js::headless_service(jobset().root()));
  c.docs.push_back(job("js-driver-0", "driver", 0, "", R"(,"active":2,"ready":2)"));
  WorkloadPlan second = js::plan(jobset(in_order).root(), c.observed(), kNow);
  CHECK(names(second.creations) == std::vector<std::string>{"js-workers-0", "js-workers-1"});

  c.docs.push_back(job("js-workers-0", "workers", 0, "", R"(,"active":2,"ready":2)"));
  c.docs.push_back(job("js-workers-1", "workers", 0, "", R"(,"active":2,"ready":2)"));
  Document progressing = jobset(in_order, R"({"restarts":0,"conditions":[{"type":"StartupPolicyInProgress","status":"True",
    "lastTransitionTime":"2026-01-01T00:01:00Z","reason":"InOrderStartupPolicyInProgress","message":"in order startup policy is in progress"}]})");
  WorkloadPlan done = js::plan(progressing.root(), c.observed(), kNow);
  CHECK(done.creations.empty());
  CHECK(condition(done, "StartupPolicyCompleted") == "True InOrderStartupPolicyCompleted in order startup policy has completed");
  CHECK(condition(done, "StartupPolicyInProgress").rfind("False", 0) == 0);
}

TEST_CASE("dependsOn holds a replicated Job until its dependency is Complete", "[jobset][plan][dependsOn]") {
  Document d = jobset();
  (void)unitrain::json::set(d, "/spec/replicatedJobs/1/dependsOn",
                            unitrain::json::clone(parse(R"([{"name":"driver","status":"Complete"}])").root(), d.alloc()));
  Children c;
  c.docs.push_back(js::headless_service(d.root()));
  c.docs.push_back(job("js-driver-0", "driver", 0, "", R"(,"active":1,"ready":2)"));
  CHECK(js::plan(d.root(), c.observed(), kNow).creations.empty());
  c.docs[1] = job("js-driver-0", "driver", 0, "Complete", R"(,"succeeded":2)");
  CHECK(names(js::plan(d.root(), c.observed(), kNow).creations) == std::vector<std::string>{"js-workers-0", "js-workers-1"});
}

TEST_CASE("suspend and resume", "[jobset][plan][suspend]") {
  Children c;
  c.docs.push_back(js::headless_service(jobset().root()));
  c.docs.push_back(job("js-driver-0", "driver", 0, "", R"(,"active":1)"));
  c.docs.push_back(job("js-workers-0", "workers", 0, "", "", true));
  SECTION("suspending suspends the running Jobs and creates missing ones suspended") {
    WorkloadPlan plan = js::plan(jobset(R"("suspend":true,)").root(), c.observed(), kNow);
    REQUIRE(plan.updates.size() == 1);
    CHECK(unitrain::json::string_at(plan.updates[0].object.root(), "/metadata/name") == "js-driver-0");
    CHECK(unitrain::json::get_bool(plan.updates[0].object.root(), "/spec/suspend") == true);
    CHECK(unitrain::json::string_at(plan.updates[0].object.root(), "/metadata/resourceVersion") == "7");
    CHECK(names(plan.creations) == std::vector<std::string>{"js-workers-1"});
    CHECK(unitrain::json::get_bool(plan.creations[0].object.root(), "/spec/suspend") == true);
    CHECK(condition(plan, "Suspended") == "True SuspendedJobs jobset is suspended");
    REQUIRE(plan.events.size() == 1);
    CHECK(plan.events[0].reason == "SuspendedJobs");
  }
  SECTION("resuming clears startTime first, merges the template's labels and lifts suspend") {
    Document d = jobset("", R"({"restarts":0,"conditions":[{"type":"Suspended","status":"True",
      "lastTransitionTime":"2026-01-01T00:01:00Z","reason":"SuspendedJobs","message":"jobset is suspended"}]})");
    (void)unitrain::json::set_string(d, "/spec/replicatedJobs/1/template/spec/template/metadata/labels/queue", "q");
    WorkloadPlan plan = js::plan(d.root(), c.observed(), kNow);
    REQUIRE(plan.updates.size() == 1);
    const auto& resumed = plan.updates[0];
    CHECK(unitrain::json::string_at(resumed.object.root(), "/metadata/name") == "js-workers-0");
    CHECK(unitrain::json::get_bool(resumed.object.root(), "/spec/suspend") == false);
    CHECK(unitrain::json::string_at(resumed.object.root(), "/spec/template/metadata/labels/queue") == "q");
    CHECK(resumed.status_cleared_first == std::vector<std::string>{"/status/startTime"});
    CHECK(condition(plan, "Suspended") == "False ResumeJobs jobset is resumed");
  }
  SECTION("a JobSet never suspended gets no Suspended=False") {
    WorkloadPlan plan = js::plan(jobset().root(), c.observed(), kNow);
    CHECK(condition(plan, "Suspended").empty());
  }
}

TEST_CASE("a JobSet managed by another controller is left alone", "[jobset][plan][managedBy]") {
  WorkloadPlan plan = js::plan(jobset(R"("managedBy":"kueue.x-k8s.io/multikueue",)").root(), Children{}.observed(), kNow);
  CHECK_FALSE(plan.status);
  CHECK(plan.creations.empty());
  WorkloadPlan ours = js::plan(jobset(R"("managedBy":"jobset.sigs.k8s.io/jobset-controller",)").root(), Children{}.observed(), kNow);
  CHECK(ours.creations.size() == 4);
}
