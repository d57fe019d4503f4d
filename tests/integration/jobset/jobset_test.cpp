// JobSet on the local cluster: the module's plans carried out by the core, the child Jobs run by
// the local cluster's batch Job controller. Success, failure with restarts up to maxRestarts,
// suspend and resume, InOrder startup, volumeClaimPolicies' claims.
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

// "<hostname>.<subdomain>" of each pod of the JobSet, sorted, each followed by a space.
std::string pod_dns_names(Cluster& k, std::string_view jobset) {
  kube::ListOptions o;
  o.label_selector = fmt::format("jobset.sigs.k8s.io/jobset-name={}", jobset);
  auto list = k.client->list({"", "v1", "pods"}, "default", o);
  if (!list) return "<error>";
  std::vector<std::string> names;
  for (const auto& item : list->root()["items"].GetArray())
    names.push_back(json::string_at(item, "/spec/hostname") + "." + json::string_at(item, "/spec/subdomain"));
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += n + " ";
  return out;
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
  // The batch Job controller runs them Indexed: each pod's DNS name is
  // <jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>.
  CHECK(pod_dns_names(k, "ok") == "ok-driver-0-0.ok ok-workers-0-0.ok ok-workers-0-1.ok ok-workers-1-0.ok ok-workers-1-1.ok ");
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
  // The second attempt's Jobs replaced the first's. Which of them remain depends on the race the
  // test cannot steer: a failed JobSet deletes its still-active Jobs (upstream does too), so only
  // the second attempt's failed worker is sure to be there.
  REQUIRE(eventually([&] { return jobs_of(k, "flaky").find("@0") == std::string::npos; }));
  CHECK_THAT(jobs_of(k, "flaky"), Catch::Matches(".*flaky-workers-[01]@1 .*"));
  CHECK(k.events.has("Warning RestartJobSetFailurePolicyAction applying RestartJobSet failure policy action"));
}

TEST_CASE("JobSet: suspended, its Jobs are created suspended and run no pods, resumed, it completes") {
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
  // The driver keeps running (and ready) for the whole test.
  (void)json::set_string(js, "/spec/replicatedJobs/0/template/spec/template/metadata/annotations/sim.unitrain.io~1duration", "60s");
  REQUIRE(k.client->create(kJobSets, "default", js.root()));
  REQUIRE(eventually([&] { return k.has_condition(kJobSets, "ordered", "StartupPolicyInProgress"); }));
  REQUIRE(eventually([&] { return jobs_of(k, "ordered") == "ordered-driver-0@0 ordered-workers-0@0 ordered-workers-1@0 "; }));
  // The workers' Jobs were created no earlier than the second the driver's pod turned ready
  // (created together, they would be a second or more older).
  kube::ListOptions o;
  o.label_selector = "jobset.sigs.k8s.io/jobset-name=ordered,jobset.sigs.k8s.io/replicatedjob-name=driver";
  auto pods = k.client->list({"", "v1", "pods"}, "default", o);
  REQUIRE(pods);
  REQUIRE(pods->root()["items"].Size() == 1);
  std::string ready_at;
  for (const auto& c : pods->root()["items"][0]["status"]["conditions"].GetArray())
    if (json::string_at(c, "/type") == "Ready" && json::string_at(c, "/status") == "True")
      ready_at = json::string_at(c, "/lastTransitionTime");
  REQUIRE_FALSE(ready_at.empty());
  auto worker = k.client->get(kJobs, "default", "ordered-workers-0");
  REQUIRE(worker);
  CHECK(json::string_at(worker->root(), "/metadata/creationTimestamp") >= ready_at);
  // Once the workers are ready (or done) too, the startup policy has completed.
  REQUIRE(eventually([&] { return k.has_condition(kJobSets, "ordered", "StartupPolicyCompleted"); }));
  CHECK(k.condition_message(kJobSets, "ordered", "StartupPolicyCompleted") == "in order startup policy has completed");
}

namespace {

const kube::GroupVersionResource kClaims{"", "v1", "persistentvolumeclaims"};

// A JobSet whose one Job mounts the claims "data" (whenDeleted: Delete, the default class) and
// "keep" (Retain, storageClassName "": bound to a static volume), `data_size` requested for "data".
std::string with_claims(std::string_view name, std::string_view data_size) {
  return fmt::format(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {{name: {}, namespace: default}}
spec:
  volumeClaimPolicies:
    - templates:
        - metadata: {{name: data, labels: {{tier: fast}}}}
          spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: {}}}}}}}
    - retentionPolicy: {{whenDeleted: Retain}}
      templates:
        - metadata: {{name: keep}}
          spec: {{storageClassName: "", accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}
  replicatedJobs:
    - name: w
      template:
        spec:
          parallelism: 2
          completions: 2
          backoffLimit: 0
          template:
            metadata: {{annotations: {{sim.unitrain.io/duration: 300ms}}}}
            spec:
              restartPolicy: Never
              containers:
                - name: c
                  image: busybox
                  volumeMounts: [{{name: data, mountPath: /data}}, {{name: keep, mountPath: /keep}}]
)",
                     name, data_size);
}

}  // namespace

TEST_CASE("JobSet: volumeClaimPolicies claims are created, owned per retention, mounted, Retain outlives the JobSet") {
  Cluster k;
  install_jobset(k);
  auto ctl = k.controller("jobset");
  auto pv = unitrain::testing::yaml(R"(
apiVersion: v1
kind: PersistentVolume
metadata: {name: static-keep}
spec: {storageClassName: "", capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /tmp/keep}}
)");
  REQUIRE(k.client->create({"", "v1", "persistentvolumes"}, "", pv.root()));
  auto js = unitrain::testing::yaml(with_claims("vc", "1Gi"));
  REQUIRE(k.client->create(kJobSets, "default", js.root()));
  REQUIRE(eventually([&] { return status_of(k, "vc", "/status/terminalState") == "Completed"; }));
  auto owner = k.client->get(kJobSets, "default", "vc");
  REQUIRE(owner);

  auto data = k.client->get(kClaims, "default", "data-vc");
  REQUIRE(data);
  CHECK(json::string_at(data->root(), "/metadata/labels/tier") == "fast");
  CHECK(json::string_at(data->root(), "/metadata/labels/jobset.sigs.k8s.io~1jobset-name") == "vc");
  CHECK(json::string_at(data->root(), "/metadata/ownerReferences/0/kind") == "JobSet");
  CHECK(json::string_at(data->root(), "/metadata/ownerReferences/0/uid") == json::string_at(owner->root(), "/metadata/uid"));
  CHECK(json::get_bool(data->root(), "/metadata/ownerReferences/0/controller") == true);
  REQUIRE(eventually([&] {
    auto c = k.client->get(kClaims, "default", "data-vc");
    return c && json::string_at(c->root(), "/status/phase") == "Bound";
  }));
  auto keep = k.client->get(kClaims, "default", "keep-vc");
  REQUIRE(keep);
  CHECK(json::find(keep->root(), "/metadata/ownerReferences") == nullptr);
  REQUIRE(eventually([&] {
    auto c = k.client->get(kClaims, "default", "keep-vc");
    return c && json::string_at(c->root(), "/spec/volumeName") == "static-keep";
  }));

  // Every pod of the Job mounts both claims.
  kube::ListOptions o;
  o.label_selector = "jobset.sigs.k8s.io/jobset-name=vc";
  auto pods = k.client->list({"", "v1", "pods"}, "default", o);
  REQUIRE(pods);
  REQUIRE(pods->root()["items"].Size() == 2);
  for (const auto& pod : pods->root()["items"].GetArray())
    CHECK(json::dump(*json::find(pod, "/spec/volumes")) ==
          R"([{"name":"data","persistentVolumeClaim":{"claimName":"data-vc"}},{"name":"keep","persistentVolumeClaim":{"claimName":"keep-vc"}}])");

  // Deleted, the JobSet takes its Delete claim along and leaves the Retain one.
  REQUIRE(k.client->remove(kJobSets, "default", "vc"));
  REQUIRE(eventually([&] { return !k.client->get(kClaims, "default", "data-vc").has_value(); }));
  CHECK(k.client->get(kClaims, "default", "keep-vc").has_value());
}

TEST_CASE("JobSet: a claim the API server refuses gives PVCCreationFailed and no Job until it is created") {
  Cluster k;
  install_jobset(k);
  auto ctl = k.controller("jobset");
  auto limit = unitrain::testing::yaml(R"(
apiVersion: v1
kind: LimitRange
metadata: {name: small-claims, namespace: default}
spec: {limits: [{type: PersistentVolumeClaim, max: {storage: 1Gi}}]}
)");
  REQUIRE(k.client->create({"", "v1", "limitranges"}, "default", limit.root()));
  auto pv = unitrain::testing::yaml(R"(
apiVersion: v1
kind: PersistentVolume
metadata: {name: static-keep}
spec: {storageClassName: "", capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /tmp/keep}}
)");
  REQUIRE(k.client->create({"", "v1", "persistentvolumes"}, "", pv.root()));
  auto js = unitrain::testing::yaml(with_claims("big", "2Gi"));
  REQUIRE(k.client->create(kJobSets, "default", js.root()));
  REQUIRE(eventually([&] { return k.events.has("Warning PVCCreationFailed "); }));
  // The claims come before the Jobs: while one is refused, no Job exists.
  CHECK(jobs_of(k, "big") == "");
  REQUIRE(k.client->remove({"", "v1", "limitranges"}, "default", "small-claims"));
  REQUIRE(eventually([&] { return status_of(k, "big", "/status/terminalState") == "Completed"; }));
  CHECK(k.client->get(kClaims, "default", "data-big").has_value());
}

namespace {

void set_finalizers(json::Document& obj, const std::vector<std::string>& finalizers) {
  json::Value list(rapidjson::kArrayType);
  for (const auto& f : finalizers) list.PushBack(json::str(f, obj.alloc()), obj.alloc());
  REQUIRE(json::set(obj, "/metadata/finalizers", std::move(list)));
}

}  // namespace

TEST_CASE("JobSet: BlockingRecreate creates the next attempt's Jobs only once every previous Job is gone") {
  Cluster k;
  install_jobset(k);
  auto ctl = k.controller("jobset");
  auto start = k.client->list(kJobs, "default", {});
  REQUIRE(start);
  kube::WatchOptions wo;
  wo.resource_version = json::string_at(start->root(), "/metadata/resourceVersion");
  wo.label_selector = "jobset.sigs.k8s.io/jobset-name=blocking";
  auto watch = k.client->watch(kJobs, "default", wo);
  REQUIRE(watch);
  // The workers fail at once; the driver runs on, and its first Job is held (a finalizer of the
  // test's) after the restart deletes it, while the old workers' Jobs are gone.
  auto js = unitrain::testing::yaml(two_jobs("blocking", "  failurePolicy: {maxRestarts: 1, restartStrategy: BlockingRecreate}",
                                             R"(sim.unitrain.io/duration: 200ms, sim.unitrain.io/exit-code: "1")"));
  (void)json::set_string(js, "/spec/replicatedJobs/0/template/spec/template/metadata/annotations/sim.unitrain.io~1duration", "60s");
  REQUIRE(k.client->create(kJobSets, "default", js.root()));
  REQUIRE(eventually([&] {
    auto driver = k.client->get(kJobs, "default", "blocking-driver-0");
    if (!driver) return false;
    set_finalizers(*driver, {"test.unitrain.io/hold"});
    return k.client->update(kJobs, "default", driver->root()).has_value();
  }));
  REQUIRE(eventually([&] { return status_of(k, "blocking", "/status/restarts") == "1"; }));
  REQUIRE(eventually([&] { return jobs_of(k, "blocking") == "blocking-driver-0@0 "; }));
  // Held: no Job of attempt 1 (Recreate would have made the workers' at once).
  CHECK_FALSE(eventually([&] { return jobs_of(k, "blocking") != "blocking-driver-0@0 "; }, std::chrono::seconds(1)));
  auto held = k.client->get(kJobs, "default", "blocking-driver-0");
  REQUIRE(held);
  set_finalizers(*held, {});
  REQUIRE(k.client->update(kJobs, "default", held->root()));
  REQUIRE(eventually([&] { return status_of(k, "blocking", "/status/terminalState") == "Failed"; }));

  // In the watch: every Job of attempt 1 was added after the last Job of attempt 0 was deleted.
  std::vector<std::string> order;
  for (;;) {
    auto e = (*watch)->next(std::chrono::milliseconds(500));
    REQUIRE(e);
    if (!e->has_value()) break;
    const auto& obj = (*e)->object.root();
    const std::string attempt = json::string_at(obj, "/metadata/labels/jobset.sigs.k8s.io~1restart-attempt");
    if ((*e)->type == kube::WatchEvent::Type::Added) order.push_back("add@" + attempt);
    if ((*e)->type == kube::WatchEvent::Type::Deleted) order.push_back("delete@" + attempt);
  }
  const auto last_delete = std::find(order.rbegin(), order.rend(), "delete@0");
  const auto first_add = std::find(order.begin(), order.end(), "add@1");
  REQUIRE(last_delete != order.rend());
  REQUIRE(first_add != order.end());
  CHECK(std::distance(order.begin(), first_add) > std::distance(last_delete, order.rend()) - 1);
}
