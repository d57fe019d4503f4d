// TrainJob on the local cluster: the runtime pinned in its snapshot, the JobSet built as Trainer
// v2.3.0 builds it and run by the jobset module, the TrainJob Complete; MPI's objects; suspend
// and resume; the deadline; a missing runtime's event; CEL rules of the CRDs.
#include "frameworks/jobset/register.h"
#include "frameworks/trainer/register.h"
#include "localcluster/controllers/podgroup_crds.h"
#include "tests/integration/frameworks/local_cluster_fixture.h"
#include "tests/support/json.h"

namespace json = unitrain::json;
namespace kube = unitrain::kube;
using unitrain::testing::eventually;
using Cluster = unitrain::testing::LocalClusterFixture;

namespace {

const kube::GroupVersionResource kTrainJobs{"trainer.kubeflow.org", "v1alpha1", "trainjobs"};
const kube::GroupVersionResource kRuntimes{"trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes"};
const kube::GroupVersionResource kJobSets{"jobset.x-k8s.io", "v1alpha2", "jobsets"};
const kube::GroupVersionResource kJobs{"batch", "v1", "jobs"};
const kube::GroupVersionResource kConfigMaps{"", "v1", "configmaps"};
const kube::GroupVersionResource kSecrets{"", "v1", "secrets"};

void install(Cluster& k) {
  REQUIRE(unitrain::frameworks::jobset::register_jobset(k.registry));
  REQUIRE(unitrain::frameworks::trainer::register_trainer(k.registry));
  for (const char* file : {"jobset.x-k8s.io_jobsets.yaml", "trainer.kubeflow.org_trainjobs.yaml",
                           "trainer.kubeflow.org_trainingruntimes.yaml", "trainer.kubeflow.org_clustertrainingruntimes.yaml"}) {
    k.install_crd(file);
  }
}

void apply_runtime(Cluster& k, const std::string& file) {
  auto docs = json::parse_yaml(unitrain::testing::read_text(std::string(UNITRAIN_SOURCE_DIR) + "/manifests/runtimes/" + file));
  REQUIRE(docs);
  REQUIRE(k.client->create(kRuntimes, "", (*docs)[0].root()));
}

// A TrainJob whose pods the local cluster runs for `duration`, through a runtime patch on the
// trainer Job's pod template (as Kueue patches pods).
std::string trainjob(std::string_view name, std::string_view runtime, std::string_view rjob, std::string_view duration,
                     std::string_view extra = "") {
  return fmt::format(R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: {0}, namespace: default}}
spec:
  runtimeRef: {{name: {1}}}
  trainer: {{numNodes: 2, command: [torchrun, train.py]}}
  runtimePatches:
    - manager: test.unitrain.io/sim
      trainingRuntimeSpec:
        template:
          spec:
            replicatedJobs:
              - name: {2}
                template:
                  spec:
                    template:
                      metadata: {{annotations: {{sim.unitrain.io/duration: {3}}}}}
{4}
)",
                     name, runtime, rjob, duration, extra);
}

std::string field(Cluster& k, const kube::GroupVersionResource& r, std::string_view name, std::string_view pointer) {
  auto obj = k.client->get(r, "default", name);
  if (!obj) return "<absent>";
  const json::Value* v = json::find(obj->root(), pointer);
  return v == nullptr ? "<unset>" : v->IsString() ? std::string(json::view(*v)) : json::dump(*v);
}

std::string env_of(const json::Value& container, std::string_view name) {
  if (const json::Value* env = json::find(container, "/env"); env && env->IsArray())
    for (const auto& e : env->GetArray())
      if (json::string_at(e, "/name") == name)
        return json::find(e, "/value") ? json::string_at(e, "/value") : json::dump(*json::find(e, "/valueFrom"));
  return "<unset>";
}

}  // namespace

TEST_CASE("TrainJob on torch-distributed: snapshot, upstream's JobSet, Jobs and pods run, Complete") {
  Cluster k;
  install(k);
  apply_runtime(k, "torch-distributed.yaml");
  auto jobsets = k.controller("jobset");
  auto trainjobs = k.controller("trainer");
  auto tj = unitrain::testing::yaml(trainjob("demo", "torch-distributed", "node", "300ms"));
  REQUIRE(k.client->create(kTrainJobs, "default", tj.root()));

  REQUIRE(eventually([&] { return k.has_condition(kTrainJobs, "demo", "Complete"); }));
  CHECK(k.condition_message(kTrainJobs, "demo", "Complete") == "jobset completed successfully");
  CHECK(field(k, kTrainJobs, "demo", "/status/conditions/0/reason") == "AllJobsCompleted");
  CHECK(field(k, kTrainJobs, "demo", "/status/jobsStatus") ==
        R"([{"name":"node","ready":0,"succeeded":1,"failed":0,"active":0,"suspended":0}])");

  // The runtime is pinned in the snapshot, owned by the TrainJob.
  CHECK(field(k, kConfigMaps, "demo-runtime-snapshot", "/metadata/ownerReferences/0/kind") == "TrainJob");
  CHECK_THAT(field(k, kConfigMaps, "demo-runtime-snapshot", "/data/runtime"), Catch::Contains("name: torch-distributed"));

  // The JobSet and its Job as Trainer v2.3.0 and JobSet v0.12.0 make them.
  CHECK(field(k, kJobSets, "demo", "/metadata/ownerReferences/0/kind") == "TrainJob");
  CHECK(field(k, kJobSets, "demo", "/spec/replicatedJobs/0/template/spec/parallelism") == "2");
  auto job = k.client->get(kJobs, "default", "demo-node-0");
  REQUIRE(job);
  CHECK(json::string_at(job->root(), "/spec/completionMode") == "Indexed");
  CHECK(json::string_at(job->root(), "/spec/template/spec/subdomain") == "demo");
  CHECK(json::string_at(job->root(), "/metadata/labels/trainer.kubeflow.org~1trainjob-ancestor-step") == "trainer");
  const json::Value& c = *json::find(job->root(), "/spec/template/spec/containers/0");
  CHECK(json::string_at(c, "/image") == "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime");
  CHECK(env_of(c, "PET_NNODES") == "2");
  CHECK(env_of(c, "PET_NPROC_PER_NODE") == "1");
  CHECK(env_of(c, "PET_MASTER_ADDR") == "demo-node-0-0.demo");
  CHECK(env_of(c, "PET_MASTER_PORT") == "29500");
  CHECK(env_of(c, "PET_NODE_RANK") ==
        R"({"fieldRef":{"fieldPath":"metadata.annotations['batch.kubernetes.io/job-completion-index']"}})");
  CHECK(json::dump(*json::find(c, "/ports")) == R"([{"containerPort":29500,"protocol":"TCP"}])");  // protocol: the API server's default
  CHECK(field(k, {"", "v1", "services"}, "demo", "/spec/clusterIP") == "None");
}

TEST_CASE("TrainJob on deepspeed-distributed: SSH Secret, hostfile, the launcher after its nodes, Complete") {
  Cluster k;
  install(k);
  apply_runtime(k, "deepspeed-distributed.yaml");
  auto jobsets = k.controller("jobset");
  auto trainjobs = k.controller("trainer");
  // The sshd nodes run until the JobSet is done; the launcher finishes first.
  auto tj = unitrain::testing::yaml(trainjob("ds", "deepspeed-distributed", "launcher", "300ms", R"(
              - name: node
                template:
                  spec:
                    template:
                      metadata: {annotations: {sim.unitrain.io/duration: 60s}})"));
  REQUIRE(k.client->create(kTrainJobs, "default", tj.root()));
  REQUIRE(eventually([&] { return k.has_condition(kTrainJobs, "ds", "Complete"); }));
  CHECK(field(k, kSecrets, "ds-mpi-ssh-auth", "/type") == "kubernetes.io/ssh-auth");
  CHECK(field(k, kSecrets, "ds-mpi-ssh-auth", "/immutable") == "true");
  CHECK(field(k, kConfigMaps, "ds-mpi-hostfile", "/data/hostfile") == "ds-node-0-0.ds slots=1\nds-launcher-0-0.ds slots=1\n");
  auto launcher = k.client->get(kJobs, "default", "ds-launcher-0");
  REQUIRE(launcher);
  const json::Value& c = *json::find(launcher->root(), "/spec/template/spec/containers/0");
  CHECK(env_of(c, "OMPI_MCA_orte_default_hostfile") == "/etc/mpi/hostfile");
  CHECK(env_of(c, "OMPI_MCA_orte_set_default_slots") == "1");
  CHECK(json::dump(*json::find(c, "/command")) == R"(["torchrun","train.py"])");
}

TEST_CASE("TrainJob suspended: a suspended JobSet and no pods, resumed: Complete, Suspended False/Resumed") {
  Cluster k;
  install(k);
  apply_runtime(k, "torch-distributed.yaml");
  auto jobsets = k.controller("jobset");
  auto trainjobs = k.controller("trainer");
  auto tj = unitrain::testing::yaml(trainjob("held", "torch-distributed", "node", "200ms"));
  REQUIRE(json::set_bool(tj, "/spec/suspend", true));
  REQUIRE(k.client->create(kTrainJobs, "default", tj.root()));
  REQUIRE(eventually([&] { return k.has_condition(kTrainJobs, "held", "Suspended"); }));
  CHECK(k.condition_message(kTrainJobs, "held", "Suspended") == "TrainJob is suspended");
  REQUIRE(eventually([&] { return field(k, kJobSets, "held", "/spec/suspend") == "true"; }));
  auto patch = json::Document::parse(R"({"spec":{"suspend":false}})");
  REQUIRE(patch);
  REQUIRE(k.client->patch(kTrainJobs, "default", "held", kube::PatchType::Merge, patch->dump()));
  REQUIRE(eventually([&] { return k.has_condition(kTrainJobs, "held", "Complete"); }));
  CHECK(field(k, kTrainJobs, "held", "/status/conditions/0/reason") == "Resumed");
  CHECK(field(k, kTrainJobs, "held", "/status/conditions/1/type") == "Complete");
}

TEST_CASE("TrainJob past its activeDeadlineSeconds: Failed/DeadlineExceeded, its JobSet deleted") {
  Cluster k;
  install(k);
  apply_runtime(k, "torch-distributed.yaml");
  auto jobsets = k.controller("jobset");
  auto trainjobs = k.controller("trainer");
  auto tj = unitrain::testing::yaml(trainjob("late", "torch-distributed", "node", "60s"));
  REQUIRE(json::set_int(tj, "/spec/activeDeadlineSeconds", 1));
  REQUIRE(k.client->create(kTrainJobs, "default", tj.root()));
  REQUIRE(eventually([&] { return k.has_condition(kTrainJobs, "late", "Failed"); }));
  CHECK(k.condition_message(kTrainJobs, "late", "Failed") == "TrainJob exceeded its active deadline");
  REQUIRE(eventually([&] { return field(k, kJobSets, "late", "/metadata/name") == "<absent>"; }));
}

TEST_CASE("TrainJob naming a runtime that does not exist: a Warning event, no JobSet, CRD CEL rules") {
  Cluster k;
  install(k);
  auto jobsets = k.controller("jobset");
  auto trainjobs = k.controller("trainer");
  auto tj = unitrain::testing::yaml(trainjob("lost", "nowhere", "node", "1s"));
  REQUIRE(k.client->create(kTrainJobs, "default", tj.root()));
  REQUIRE(eventually([&] {
    return k.events.has("Warning TrainJobResourcesCreationFailed TrainJob resources reconciliation failed: not found "
                        "ClusterTrainingRuntime specified in TrainJob: ");
  }));
  CHECK(field(k, kJobSets, "lost", "/metadata/name") == "<absent>");

  // The CRD's CEL: immutable trainer, allowed managedBy values, name format.
  auto change = json::Document::parse(R"({"spec":{"trainer":{"numNodes":3}}})");
  REQUIRE(change);
  auto r = k.client->patch(kTrainJobs, "default", "lost", kube::PatchType::Merge, change->dump());
  REQUIRE_FALSE(r);
  CHECK(r.error().is(kube::ApiError::Reason::Invalid));
  CHECK_THAT(r.error().message, Catch::Contains("spec.trainer: Invalid value: \"object\": field is immutable"));
  auto other = unitrain::testing::yaml(trainjob("x", "torch-distributed", "node", "1s"));
  REQUIRE(json::set_string(other, "/spec/managedBy", "example.com/mine"));
  auto m = k.client->create(kTrainJobs, "default", other.root());
  REQUIRE_FALSE(m);
  CHECK_THAT(m.error().message,
             Catch::Contains("ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set"));
}

TEST_CASE("TrainJob with a coscheduling runtime: its PodGroup watched, recreated and re-applied while suspended") {
  Cluster k;
  install(k);
  // scheduler-plugins' PodGroup is served before the controller starts; Volcano's is not (the
  // controller syncs without it).
  REQUIRE(unitrain::localcluster::controllers::install_podgroup_crds(k.cluster.store(), {false, true}));
  const kube::GroupVersionResource pod_groups{"scheduling.x-k8s.io", "v1alpha1", "podgroups"};
  auto docs = json::parse_yaml(unitrain::testing::read_text(std::string(UNITRAIN_SOURCE_DIR) + "/manifests/runtimes/torch-distributed.yaml"));
  REQUIRE(docs);
  json::Document runtime = std::move((*docs)[0]);
  REQUIRE(json::set_string(runtime, "/metadata/name", "torch-gang"));
  REQUIRE(json::set(runtime, "/spec/podGroupPolicy",
                    json::clone(unitrain::testing::yaml("{coscheduling: {scheduleTimeoutSeconds: 30}}").root(), runtime.alloc())));
  REQUIRE(k.client->create(kRuntimes, "", runtime.root()));
  auto jobsets = k.controller("jobset");
  auto trainjobs = k.controller("trainer");
  auto tj = unitrain::testing::yaml(trainjob("gang", "torch-gang", "node", "300ms"));
  REQUIRE(json::set_bool(tj, "/spec/suspend", true));
  REQUIRE(k.client->create(kTrainJobs, "default", tj.root()));

  REQUIRE(eventually([&] { return field(k, pod_groups, "gang", "/spec/minMember") == "2"; }));
  CHECK(field(k, pod_groups, "gang", "/spec/scheduleTimeoutSeconds") == "30");
  CHECK(field(k, pod_groups, "gang", "/metadata/ownerReferences/0/kind") == "TrainJob");
  const std::string uid = field(k, pod_groups, "gang", "/metadata/uid");

  // Deleted: its delete event brings the TrainJob back, which creates it again.
  REQUIRE(k.client->remove(pod_groups, "default", "gang"));
  REQUIRE(eventually([&] {
    const std::string now = field(k, pod_groups, "gang", "/metadata/uid");
    return now != "<absent>" && now != uid;
  }));
  // Changed while the TrainJob is suspended: applied again. The scheduler writes the PodGroup's
  // status and the controller may still be re-applying it, so an update from a read a moment ago
  // can meet a newer resourceVersion (409): read again and retry, as any client would.
  REQUIRE(eventually([&] {
    auto live = k.client->get(pod_groups, "default", "gang");
    return live && json::set_int(*live, "/spec/minMember", 5) && k.client->update(pod_groups, "default", live->root());
  }));
  REQUIRE(eventually([&] { return field(k, pod_groups, "gang", "/spec/minMember") == "2"; }));

  // Resumed: the TrainJob runs to Complete with its PodGroup in place.
  REQUIRE(k.client->patch(kTrainJobs, "default", "gang", kube::PatchType::Merge, R"({"spec":{"suspend":false}})"));
  REQUIRE(eventually([&] { return k.has_condition(kTrainJobs, "gang", "Complete"); }));
  CHECK(field(k, pod_groups, "gang", "/spec/minMember") == "2");
}
