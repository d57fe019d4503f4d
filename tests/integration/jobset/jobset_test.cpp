// JobSet on the local cluster: the module's plans carried out by the core, the child Jobs run by
// the local cluster's batch Job controller. Success, failure with restarts up to maxRestarts,
// suspend and resume, and InOrder startup.
#include "frameworks/jobset/register.h"
#include "tests/integration/frameworks/local_cluster_fixture.h"
#include "tests/support/json.h"

namespace json = unitrain::json;
namespace kube = unitrain::kube;
using unitrain::testing::eventually;
using Cluster = unitrain::testing::LocalClusterFixture;

namespace {

const kube::GroupVersionResource kJobSets{"jobset.x-k8s.io", "v1alpha2", "jobsets"};
const kube::GroupVersionResource kJobs{"batch", "v1", "jobs"};

void install_jobset(Cluster& k) {
  REQUIRE(unitrain::frameworks::jobset::register_jobset(k.registry));
  auto docs = json::parse_yaml(unitrain::testing::read_text(std::string(UNITRAIN_SOURCE_DIR) +
                                                            "/frameworks/jobset/jobset.x-k8s.io_jobsets.yaml"));
  REQUIRE(docs);
  for (const auto& d : *docs) REQUIRE(k.client->create({"apiextensions.k8s.io", "v1", "customresourcedefinitions"}, "", d.root()));
}

// The JobSet's Jobs (by the jobset-name label), sorted, each "<name>@<restart-attempt>" and a space.
std::string jobs_of(Cluster& k, std::string_view jobset) {
  kube::ListOptions o;
  o.label_selector = fmt::format("jobset.sigs.k8s.io/jobset-name={}", jobset);
  auto list = k.client->list(kJobs, "default", o);
  if (!list) return "<error>";
  std::vector<std::string> names;
  for (const auto& item : list->root()["items"].GetArray())
    names.push_back(json::string_at(item, "/metadata/name") + "@" +
                    json::string_at(item, "/metadata/labels/jobset.sigs.k8s.io~1restart-attempt"));
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += n + " ";
  return out;
}

// How many pods of the JobSet exist (by the jobset-name label on its pod templates).
size_t pods_of(Cluster& k, std::string_view jobset) {
  kube::ListOptions o;
  o.label_selector = fmt::format("jobset.sigs.k8s.io/jobset-name={}", jobset);
  auto list = k.client->list({"", "v1", "pods"}, "default", o);
  REQUIRE(list);
  return list->root()["items"].Size();
}

std::string status_of(Cluster& k, std::string_view name, std::string_view pointer) {
  auto js = k.client->get(kJobSets, "default", name);
  if (!js) return "<absent>";
  const json::Value* v = json::find(js->root(), pointer);
  return v == nullptr ? "<unset>" : v->IsString() ? std::string(json::view(*v)) : json::dump(*v);
}

std::string two_jobs(std::string_view name, std::string_view extra_spec, std::string_view worker_annotations) {
  return fmt::format(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {{name: {}, namespace: default}}
spec:
{}
  replicatedJobs:
    - name: driver
      template:
        spec:
          parallelism: 1
          completions: 1
          backoffLimit: 0
          template:
            metadata: {{annotations: {{sim.unitrain.io/duration: 300ms}}}}
            spec: {{restartPolicy: Never, containers: [{{name: c, image: busybox}}]}}
    - name: workers
      replicas: 2
      template:
        spec:
          parallelism: 2
          completions: 2
          backoffLimit: 0
          template:
            metadata: {{annotations: {{{}}}}}
            spec: {{restartPolicy: Never, containers: [{{name: c, image: busybox}}]}}
)",
                     name, extra_spec, worker_annotations);
}

}  // namespace

TEST_CASE("JobSet: every Job completes, the JobSet is Completed with upstream's status") {
  Cluster k;
  install_jobset(k);
  auto ctl = k.controller("jobset");
  auto js = unitrain::testing::yaml(two_jobs("ok", "", "sim.unitrain.io/duration: 300ms"));
  REQUIRE(k.client->create(kJobSets, "default", js.root()));
  REQUIRE(eventually([&] { return status_of(k, "ok", "/status/terminalState") == "Completed"; }));
  CHECK(k.condition_message(kJobSets, "ok", "Completed") == "jobset completed successfully");
  CHECK(jobs_of(k, "ok") == "ok-driver-0@0 ok-workers-0@0 ok-workers-1@0 ");
  CHECK(status_of(k, "ok", "/status/restarts") == "0");
  CHECK(status_of(k, "ok", "/status/replicatedJobsStatus") ==
        R"([{"name":"workers","ready":0,"succeeded":2,"failed":0,"active":0,"suspended":0},)"
        R"({"name":"driver","ready":0,"succeeded":1,"failed":0,"active":0,"suspended":0}])");
  auto svc = k.client->get({"", "v1", "services"}, "default", "ok");
  REQUIRE(svc);
  CHECK(json::string_at(svc->root(), "/spec/clusterIP") == "None");
  CHECK(json::string_at(svc->root(), "/spec/selector/jobset.sigs.k8s.io~1jobset-name") == "ok");
  auto job = k.client->get(kJobs, "default", "ok-workers-1");
  REQUIRE(job);
  CHECK(json::string_at(job->root(), "/spec/template/spec/subdomain") == "ok");
  CHECK(json::string_at(job->root(), "/spec/completionMode") == "Indexed");
  CHECK(json::string_at(job->root(), "/metadata/labels/jobset.sigs.k8s.io~1job-global-index") == "2");
  CHECK(json::string_at(job->root(), "/metadata/ownerReferences/0/kind") == "JobSet");
}

TEST_CASE("JobSet: a failing Job restarts the JobSet up to maxRestarts, then it fails") {
  Cluster k;
  install_jobset(k);
  auto ctl = k.controller("jobset");
  auto js = unitrain::testing::yaml(two_jobs("flaky", "  failurePolicy: {maxRestarts: 1}",
                                             R"(sim.unitrain.io/duration: 200ms, sim.unitrain.io/exit-code: "1")"));
  REQUIRE(k.client->create(kJobSets, "default", js.root()));
  REQUIRE(eventually([&] { return status_of(k, "flaky", "/status/terminalState") == "Failed"; }));
  CHECK(status_of(k, "flaky", "/status/restarts") == "1");
  CHECK(status_of(k, "flaky", "/status/restartsCountTowardsMax") == "1");
  CHECK_THAT(k.condition_message(kJobSets, "flaky", "Failed"),
             Catch::StartsWith("jobset failed due to reaching max number of restarts (first failed job: flaky-workers-"));
  CHECK_THAT(k.condition_message(kJobSets, "flaky", "RestartingJobSet"), Catch::StartsWith("jobset failed"));
  // The second attempt's Jobs replaced the first's.
  REQUIRE(eventually([&] { return jobs_of(k, "flaky").find("@0") == std::string::npos; }));
  CHECK_THAT(jobs_of(k, "flaky"), Catch::Contains("flaky-workers-0@1"));
  CHECK(k.events.has("Warning RestartJobSetFailurePolicyAction applying RestartJobSet failure policy action"));
}

TEST_CASE("JobSet: suspended, its Jobs are created suspended and run no pods; resumed, it completes") {
  Cluster k;
  install_jobset(k);
  auto ctl = k.controller("jobset");
  auto js = unitrain::testing::yaml(two_jobs("held", "  suspend: true", "sim.unitrain.io/duration: 200ms"));
  REQUIRE(k.client->create(kJobSets, "default", js.root()));
  REQUIRE(eventually([&] { return k.has_condition(kJobSets, "held", "Suspended"); }));
  REQUIRE(eventually([&] { return jobs_of(k, "held") == "held-driver-0@0 held-workers-0@0 held-workers-1@0 "; }));
  auto job = k.client->get(kJobs, "default", "held-driver-0");
  REQUIRE(job);
  CHECK(json::get_bool(job->root(), "/spec/suspend") == true);
  CHECK(pods_of(k, "held") == 0);
  REQUIRE(eventually([&] { return status_of(k, "held", "/status/replicatedJobsStatus/0/suspended") == "2"; }));

  auto patch = json::Document::parse(R"({"spec":{"suspend":false}})");
  REQUIRE(patch);
  REQUIRE(k.client->patch(kJobSets, "default", "held", kube::PatchType::Merge, patch->dump()));
  REQUIRE(eventually([&] { return status_of(k, "held", "/status/terminalState") == "Completed"; }));
  CHECK(k.condition_message(kJobSets, "held", "Suspended") == "jobset is resumed");
}

TEST_CASE("JobSet: InOrder startup creates the workers only once the driver is ready") {
  Cluster k;
  install_jobset(k);
  auto ctl = k.controller("jobset");
  // The driver's pod turns ready only after 1.5s: until then no worker Job may exist.
  auto js = unitrain::testing::yaml(two_jobs("ordered", "  startupPolicy: {startupPolicyOrder: InOrder}",
                                             "sim.unitrain.io/duration: 200ms"));
  (void)json::set_string(js, "/spec/replicatedJobs/0/template/spec/template/metadata/annotations/sim.unitrain.io~1ready-after",
                         "1500ms");
  (void)json::set_string(js, "/spec/replicatedJobs/0/template/spec/template/metadata/annotations/sim.unitrain.io~1duration", "3s");
  REQUIRE(k.client->create(kJobSets, "default", js.root()));
  REQUIRE(eventually([&] { return k.has_condition(kJobSets, "ordered", "StartupPolicyInProgress"); }));
  CHECK(jobs_of(k, "ordered") == "ordered-driver-0@0 ");
  REQUIRE(eventually([&] { return jobs_of(k, "ordered") == "ordered-driver-0@0 ordered-workers-0@0 ordered-workers-1@0 "; }));
  auto driver = k.client->get(kJobs, "default", "ordered-driver-0");
  REQUIRE(driver);
  CHECK(json::get_int(driver->root(), "/status/ready").value_or(0) + json::get_int(driver->root(), "/status/succeeded").value_or(0) >= 1);
  REQUIRE(eventually([&] { return status_of(k, "ordered", "/status/terminalState") == "Completed"; }));
  CHECK(k.condition_message(kJobSets, "ordered", "StartupPolicyCompleted") == "in order startup policy has completed");
}
