// One reconcile pass as a plan: runtime read then pinned in the snapshot, the JobSet and the
// objects beside it, what a running, finished or foreign TrainJob gets, status and deadline.
#include <catch2/catch.hpp>

#include "frameworks/trainer/plan.h"
#include "frameworks/trainer/runtime.h"
#include "tests/unit/trainer/fixtures.h"

namespace json = unitrain::json;
namespace fw = unitrain::framework;
namespace tr = unitrain::frameworks::trainer;
using unitrain::testing::yaml;
using unitrain::testing::trainer::shipped_runtime;

namespace {

unitrain::Result<tr::BuildInput::SshKeys> keys() { return tr::BuildInput::SshKeys{"PRIVATE", "PUBLIC\n"}; }

const auto kNow = *unitrain::api::parse_time("2026-03-01T00:00:10Z");

json::Document demo_trainjob(std::string_view extra = "") {
  return yaml(std::string(R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: demo, namespace: ns, uid: U1, creationTimestamp: "2026-03-01T00:00:00Z"}
spec:
  runtimeRef: {name: torch-distributed, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}
  suspend: false
  managedBy: trainer.kubeflow.org/trainjob-controller
  trainer: {numNodes: 2, command: [torchrun, train.py]}
)") + std::string(extra));
}

fw::Observed with_runtime(const json::Document& runtime) {
  fw::Observed o;
  o.fetched.push_back({fw::ObjectFetch{tr::kClusterTrainingRuntimes, "", json::string_at(runtime.root(), "/metadata/name")},
                       json::Document::copy_of(runtime.root()), ""});
  return o;
}

std::vector<std::string> names(const std::vector<fw::DesiredObject>& objects) {
  std::vector<std::string> out;
  for (const auto& o : objects) out.push_back(o.resource.resource + "/" + json::string_at(o.object.root(), "/metadata/name"));
  return out;
}

}  // namespace

TEST_CASE("plan: the first pass reads the runtime, the next pins it in the snapshot and creates the JobSet") {
  auto tj = demo_trainjob();
  auto first = tr::plan(tj.root(), {}, kNow, &keys);
  REQUIRE(first.fetch.size() == 1);
  CHECK(first.fetch[0].resource == tr::kClusterTrainingRuntimes);
  CHECK(first.fetch[0].namespace_name.empty());
  CHECK(first.fetch[0].name == "torch-distributed");
  CHECK(first.creations.empty());

  auto runtime = shipped_runtime("torch-distributed.yaml");
  auto second = tr::plan(tj.root(), with_runtime(runtime), kNow, &keys);
  CHECK(second.fetch.empty());
  CHECK(names(second.creations) == std::vector<std::string>{"configmaps/demo-runtime-snapshot", "jobsets/demo"});
  CHECK(json::get_int(second.creations[1].object.root(), "/spec/replicatedJobs/0/template/spec/parallelism") == 2);
  REQUIRE(second.status);
  CHECK(second.status->root().ObjectEmpty());  // nothing to report yet
  CHECK(second.events.empty());
}

TEST_CASE("plan: later passes build from the snapshot, whatever the live runtime became") {
  auto tj = demo_trainjob();
  auto runtime = shipped_runtime("torch-distributed.yaml");
  auto snapshot = tr::snapshot_configmap(tj.root(), runtime.root());
  REQUIRE(unitrain::testing::trainer::set_yaml(snapshot, "/metadata/ownerReferences", "[{apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob, name: demo, uid: U1, controller: true}]"));
  fw::Observed o;
  o.owned["configmaps"].push_back(&snapshot.root());
  auto p = tr::plan(tj.root(), o, kNow, &keys);
  CHECK(p.fetch.empty());
  CHECK(names(p.creations) == std::vector<std::string>{"jobsets/demo"});

  // A running JobSet is never rewritten; the status follows it.
  auto jobset = yaml(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: demo, namespace: ns, resourceVersion: "7"}
spec: {suspend: false}
status:
  replicatedJobsStatus: [{name: node, ready: 1, succeeded: 0, failed: 0, active: 1, suspended: 0}]
)");
  o.owned["jobsets.jobset.x-k8s.io"].push_back(&jobset.root());
  auto running = tr::plan(tj.root(), o, kNow, &keys);
  CHECK(running.creations.empty());
  CHECK(running.updates.empty());
  REQUIRE(running.status);
  CHECK(json::get_int(running.status->root(), "/jobsStatus/0/active") == 1);

  // Suspending it rewrites the JobSet from the observed one (resourceVersion kept).
  auto suspended = demo_trainjob();
  REQUIRE(json::set_bool(suspended, "/spec/suspend", true));
  auto s = tr::plan(suspended.root(), o, kNow, &keys);
  REQUIRE(s.updates.size() == 1);
  CHECK(json::string_at(s.updates[0].object.root(), "/metadata/resourceVersion") == "7");
  CHECK(json::get_bool(s.updates[0].object.root(), "/spec/suspend") == true);
  CHECK(json::string_at(s.status->root(), "/conditions/0/reason") == "Suspended");
}

TEST_CASE("plan: a missing runtime, a bad snapshot, a runtime rule broken: a Warning event and no objects") {
  auto tj = demo_trainjob();
  fw::Observed missing;
  missing.fetched.push_back({fw::ObjectFetch{tr::kClusterTrainingRuntimes, "", "torch-distributed"}, std::nullopt,
                             "clustertrainingruntimes.trainer.kubeflow.org \"torch-distributed\" not found"});
  auto p = tr::plan(tj.root(), missing, kNow, &keys);
  REQUIRE(p.events.size() == 1);
  CHECK(p.events[0].type == "Warning");
  CHECK(p.events[0].reason == "TrainJobResourcesCreationFailed");
  CHECK(p.events[0].message ==
        "TrainJob resources reconciliation failed: not found ClusterTrainingRuntime specified in TrainJob: "
        "clustertrainingruntimes.trainer.kubeflow.org \"torch-distributed\" not found");
  CHECK(p.creations.empty());
  CHECK(p.requeue_after_ms.has_value());

  auto foreign = tr::snapshot_configmap(tj.root(), shipped_runtime("torch-distributed.yaml").root());
  fw::Observed o;
  o.owned["configmaps"].push_back(&foreign.root());
  auto bad = tr::plan(tj.root(), o, kNow, &keys);
  REQUIRE(bad.events.size() == 1);
  CHECK(bad.events[0].message == "TrainJob resources reconciliation failed: invalid runtime snapshot: a snapshot configmap exists but is owned by another object");

  auto reserved = demo_trainjob("  runtimePatches: []\n");
  REQUIRE(unitrain::testing::trainer::set_yaml(reserved, "/spec/trainer/env", "[{name: PET_NNODES, value: '9'}]"));
  auto r = tr::plan(reserved.root(), with_runtime(shipped_runtime("torch-distributed.yaml")), kNow, &keys);
  REQUIRE(r.events.size() == 1);
  CHECK(r.events[0].message.find("spec.trainer.env: Invalid value: ") != std::string::npos);
  CHECK(r.events[0].message.find("must not have reserved envs, invalid envs configured: [PET_NNODES]") != std::string::npos);
  CHECK(r.creations.empty());

  CHECK(tr::resources_failed_message(std::string(1000, 'x')) ==
        "TrainJob resources reconciliation failed: " + std::string(950, 'x') + " ...");
}

TEST_CASE("plan: MultiKueue's TrainJobs are left alone, an unsupported runtime kind is Failed") {
  auto mk = demo_trainjob();
  REQUIRE(json::set_string(mk, "/spec/managedBy", "kueue.x-k8s.io/multikueue"));
  auto p = tr::plan(mk.root(), {}, kNow, &keys);
  CHECK_FALSE(p.status);
  CHECK(p.fetch.empty());
  CHECK(p.creations.empty());

  auto other = demo_trainjob();
  REQUIRE(json::set_string(other, "/spec/runtimeRef/kind", "Runtime"));
  auto u = tr::plan(other.root(), {}, kNow, &keys);
  REQUIRE(u.status);
  CHECK(json::string_at(u.status->root(), "/conditions/0/type") == "Failed");
  CHECK(json::string_at(u.status->root(), "/conditions/0/reason") == "TrainingRuntimeNotSupported");
  CHECK(json::string_at(u.status->root(), "/conditions/0/message") == "unsupported runtime: Runtime.trainer.kubeflow.org");
}

TEST_CASE("plan: MPI runtimes get the SSH Secret once and the hostfile kept current") {
  auto tj = demo_trainjob();
  REQUIRE(json::set_string(tj, "/spec/runtimeRef/name", "deepspeed-distributed"));
  auto p = tr::plan(tj.root(), with_runtime(shipped_runtime("deepspeed-distributed.yaml")), kNow, &keys);
  CHECK(names(p.creations) == std::vector<std::string>{"configmaps/demo-runtime-snapshot", "jobsets/demo",
                                                       "secrets/demo-mpi-ssh-auth", "configmaps/demo-mpi-hostfile"});
  // Present already: the Secret is left as it is, a stale hostfile is replaced.
  auto secret = yaml("{apiVersion: v1, kind: Secret, metadata: {name: demo-mpi-ssh-auth, namespace: ns}}");
  auto stale = yaml("{apiVersion: v1, kind: ConfigMap, metadata: {name: demo-mpi-hostfile, namespace: ns, resourceVersion: '3'}, data: {hostfile: old}}");
  fw::Observed o = with_runtime(shipped_runtime("deepspeed-distributed.yaml"));
  o.owned["secrets"].push_back(&secret.root());
  o.owned["configmaps"].push_back(&stale.root());
  auto again = tr::plan(tj.root(), o, kNow, &keys);
  CHECK(names(again.creations) == std::vector<std::string>{"configmaps/demo-runtime-snapshot", "jobsets/demo"});
  REQUIRE(again.updates.size() == 1);
  CHECK(json::string_at(again.updates[0].object.root(), "/data/hostfile") == "demo-node-0-0.demo slots=1\ndemo-launcher-0-0.demo slots=1\n");
  CHECK(json::string_at(again.updates[0].object.root(), "/metadata/resourceVersion") == "3");
}

TEST_CASE("plan: the deadline fails the TrainJob and deletes its JobSet, a finished TrainJob gets nothing built") {
  auto tj = demo_trainjob("  activeDeadlineSeconds: 5\n");
  auto jobset = yaml("{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, metadata: {name: demo, namespace: ns}, spec: {suspend: false}}");
  fw::Observed o = with_runtime(shipped_runtime("torch-distributed.yaml"));
  o.owned["jobsets.jobset.x-k8s.io"].push_back(&jobset.root());
  auto p = tr::plan(tj.root(), o, kNow, &keys);
  REQUIRE(p.deletions.size() == 1);
  CHECK(p.deletions[0].resource == tr::kJobSets);
  CHECK(p.deletions[0].name == "demo");
  CHECK(p.creations.empty());
  CHECK(json::string_at(p.status->root(), "/conditions/0/reason") == "DeadlineExceeded");

  auto done = demo_trainjob(R"(status:
  conditions: [{type: Complete, status: "True", reason: AllJobsCompleted, message: jobset completed successfully, lastTransitionTime: "2026-03-01T00:00:05Z"}]
)");
  auto d = tr::plan(done.root(), {}, kNow, &keys);
  CHECK(d.fetch.empty());
  CHECK(d.creations.empty());
  CHECK(json::equal(d.status->root(), *json::find(done.root(), "/status")));
}

TEST_CASE("plan: while suspended the PodGroup is applied again (read first when its kind is not watched), once running only created") {
  using unitrain::testing::trainer::set_yaml;
  auto tj = demo_trainjob();
  REQUIRE(set_yaml(tj, "/spec/suspend", "true"));
  auto runtime = shipped_runtime("torch-distributed.yaml");
  REQUIRE(set_yaml(runtime, "/spec/podGroupPolicy", "{coscheduling: {scheduleTimeoutSeconds: 60}}"));
  auto snapshot = tr::snapshot_configmap(tj.root(), runtime.root());
  const char* owner = "[{apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob, name: demo, uid: U1, controller: true}]";
  REQUIRE(set_yaml(snapshot, "/metadata/ownerReferences", owner));
  fw::Observed o;
  o.owned["configmaps"].push_back(&snapshot.root());

  // The first round only reads the PodGroup.
  auto read = tr::plan(tj.root(), o, kNow, &keys);
  REQUIRE(read.fetch.size() == 1);
  CHECK(read.fetch[0].resource == tr::kCoschedulingPodGroups);
  CHECK(read.fetch[0].namespace_name == "ns");
  CHECK(read.fetch[0].name == "demo");
  CHECK(read.creations.empty());
  CHECK(!read.status);

  // Read as the last suspended apply left it (one node then): updated to two.
  auto live = yaml(R"(
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: demo, namespace: ns, resourceVersion: "7"}
spec: {minMember: 1, scheduleTimeoutSeconds: 60}
status: {phase: Pending}
)");
  REQUIRE(set_yaml(live, "/metadata/ownerReferences", owner));
  fw::Observed with_live = o;
  with_live.fetched.push_back({fw::ObjectFetch{tr::kCoschedulingPodGroups, "ns", "demo"}, json::Document::copy_of(live.root()), ""});
  auto applied = tr::plan(tj.root(), with_live, kNow, &keys);
  CHECK(applied.fetch.empty());
  REQUIRE(names(applied.updates) == std::vector<std::string>{"podgroups/demo"});
  CHECK(json::get_int(applied.updates[0].object.root(), "/spec/minMember") == 2);
  CHECK(json::string_at(applied.updates[0].object.root(), "/metadata/resourceVersion") == "7");
  CHECK(json::string_at(applied.updates[0].object.root(), "/status/phase") == "Pending");
  CHECK(names(applied.creations) == std::vector<std::string>{"jobsets/demo"});

  // Already as wanted: nothing to write.
  with_live.fetched.back().object = json::Document::copy_of(applied.updates[0].object.root());
  CHECK(tr::plan(tj.root(), with_live, kNow, &keys).updates.empty());

  // Missing, or another owner's: created (the core leaves a foreign one alone and says so).
  fw::Observed missing = o;
  missing.fetched.push_back({fw::ObjectFetch{tr::kCoschedulingPodGroups, "ns", "demo"}, std::nullopt, "not found"});
  CHECK(names(tr::plan(tj.root(), missing, kNow, &keys).creations) ==
        std::vector<std::string>{"jobsets/demo", "podgroups/demo"});

  // A kind the caches watch is not read: the cached PodGroup is the live one.
  fw::Observed watched = o;
  watched.owned["podgroups.scheduling.x-k8s.io"].push_back(&live.root());
  auto cached = tr::plan(tj.root(), watched, kNow, &keys);
  CHECK(cached.fetch.empty());
  REQUIRE(names(cached.updates) == std::vector<std::string>{"podgroups/demo"});
  CHECK(json::get_int(cached.updates[0].object.root(), "/spec/minMember") == 2);
  watched.owned["podgroups.scheduling.x-k8s.io"].clear();
  CHECK(tr::plan(tj.root(), watched, kNow, &keys).fetch.empty());

  // Running: no read, the PodGroup only created when missing.
  REQUIRE(set_yaml(tj, "/spec/suspend", "false"));
  auto running = tr::plan(tj.root(), o, kNow, &keys);
  CHECK(running.fetch.empty());
  CHECK(names(running.creations) == std::vector<std::string>{"jobsets/demo", "podgroups/demo"});
}
