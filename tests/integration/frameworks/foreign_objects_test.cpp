// Foreign objects under a job's names: for every framework and every kind of child it creates, an
// object of that name the job does not control is left alone, the reference operator's Warning
// event says so with its exact text, the pass fails (retried with backoff), and once the object is
// gone the job creates its own.
#include "tests/integration/frameworks/lifecycle_fixture.h"

#include "core/api/meta.h"
#include "core/gang/gang.h"
#include "frameworks/mpi/v1/register.h"
#include "frameworks/mxnet/register.h"
#include "frameworks/paddle/register.h"
#include "frameworks/tensorflow/register.h"
#include "frameworks/xgboost/register.h"

using namespace unitrain::testing;

namespace {

struct ForeignCase {
  std::string framework;  // the registry name
  std::string crd;        // file under manifests/crds
  kube::GroupVersionResource jobs;
  std::string job_yaml;  // a job named "j"
  kube::GroupVersionResource resource;
  std::string foreign_yaml;  // the object of that name nobody gave to the job
  std::string event;         // "Warning <reason> <message>", exactly
  std::string gang{};        // gang scheduler name, for PodGroup cases
};

const kube::GroupVersionResource kRoles{"rbac.authorization.k8s.io", "v1", "roles"};
const kube::GroupVersionResource kRoleBindings{"rbac.authorization.k8s.io", "v1", "rolebindings"};

// A training-operator job of `kind` named "j": one replica of each type, pods that run for an hour.
std::string kubeflow_job(std::string_view kind, std::string_view specs_field, std::string_view container,
                         std::initializer_list<std::string_view> types, std::string_view extra_spec = "") {
  std::string yaml = fmt::format("apiVersion: kubeflow.org/v1\nkind: {}\nmetadata: {{name: j, namespace: default}}\nspec:\n{}  {}:\n",
                                 kind, extra_spec, specs_field);
  for (auto type : types)
    yaml += fmt::format(
        "    {}:\n      replicas: 1\n      template:\n        metadata: {{annotations: {{sim.unitrain.io/duration: 1h}}}}\n"
        "        spec: {{containers: [{{name: {}, image: example.com/train:1}}]}}\n",
        type, container);
  return yaml;
}

std::string mpi_job(std::string_view version) {
  return fmt::format(R"(
apiVersion: kubeflow.org/{}
kind: MPIJob
metadata: {{name: j, namespace: default}}
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        metadata: {{annotations: {{sim.unitrain.io/duration: 1h}}}}
        spec: {{containers: [{{name: launcher, image: example.com/mpi:1}}]}}
    Worker:
      replicas: 1
      template:
        metadata: {{annotations: {{sim.unitrain.io/duration: 1h}}}}
        spec: {{containers: [{{name: worker, image: example.com/mpi:1}}]}}
)",
                     version);
}

std::string foreign_pod(std::string_view name) {
  return fmt::format("apiVersion: v1\nkind: Pod\nmetadata: {{name: {}, namespace: default}}\n"
                     "spec: {{containers: [{{name: c, image: example.com/other:1}}]}}\n",
                     name);
}

// A pod under the job's name that carries the job's own labels (so label selectors match it) but
// no owner reference: still not the job's.
std::string labelled_pod(std::string_view name, std::string_view labels) {
  return fmt::format("apiVersion: v1\nkind: Pod\nmetadata: {{name: {}, namespace: default, labels: {{{}}}}}\n"
                     "spec: {{containers: [{{name: c, image: example.com/other:1}}]}}\n",
                     name, labels);
}

std::string foreign(std::string_view api_version, std::string_view kind, std::string_view name, std::string_view body = "") {
  return fmt::format("apiVersion: {}\nkind: {}\nmetadata: {{name: {}, namespace: default}}\n{}", api_version, kind, name, body);
}

const std::string kForeignService = "spec: {ports: [{port: 80}]}\n";
const std::string kForeignRoleBinding = "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: someone-else}\n";
const std::string kForeignBatchJob =
    "spec: {suspend: true, template: {spec: {restartPolicy: Never, containers: [{name: c, image: example.com/other:1}]}}}\n";
const std::string kForeignPodGroup = "spec: {minMember: 1}\n";

// Every framework registered, and each case's own gang scheduling.
struct ForeignObjectCluster : Cluster {
  explicit ForeignObjectCluster(const ForeignCase& fc) : Cluster({.podgroup_crds = !fc.gang.empty()}) {
    for (auto add : {&unitrain::frameworks::tensorflow::register_tensorflow, &unitrain::frameworks::mxnet::register_mxnet,
                     &unitrain::frameworks::xgboost::register_xgboost, &unitrain::frameworks::paddle::register_paddle,
                     &unitrain::frameworks::mpi::v1::register_mpi_v1})
      REQUIRE(add(registry));
  }

  std::unique_ptr<c::JobController> start(const ForeignCase& fc) {
    fw::PluginConfig config;
    c::JobControllerOptions options;
    if (!fc.gang.empty()) {
      config.gang_scheduler_name = fc.gang;
      options.gang = std::shared_ptr<const unitrain::gang::Backend>(unitrain::gang::make_backend(fc.gang));
    }
    return controller(fc.framework, std::move(options), std::move(config));
  }

  json::Document create(const kube::GroupVersionResource& r, const std::string& yaml) {
    auto docs = json::parse_yaml(yaml);
    REQUIRE(docs);
    auto created = client->create(r, "default", (*docs)[0].root());
    INFO(yaml << (created ? std::string() : created.error().to_string()));
    REQUIRE(created);
    return std::move(*created);
  }
};

std::string name_of(const std::string& yaml) {
  auto docs = json::parse_yaml(yaml);
  REQUIRE(docs);
  return std::string(json::get_string((*docs)[0].root(), "/metadata/name").value_or(""));
}

void check_foreign_object(const ForeignCase& fc) {
  INFO(fc.framework << ": a foreign " << fc.resource.resource << " " << name_of(fc.foreign_yaml));
  ForeignObjectCluster k(fc);
  k.install_crd(fc.crd);
  const json::Document squatter = k.create(fc.resource, fc.foreign_yaml);
  const std::string name = name_of(fc.foreign_yaml);
  const std::string squatter_uid(json::get_string(squatter.root(), "/metadata/uid").value_or(""));
  auto ctl = k.start(fc);
  const json::Document job = k.create(fc.jobs, fc.job_yaml);
  const std::string job_uid(json::get_string(job.root(), "/metadata/uid").value_or(""));

  if (!eventually([&] { return k.events.has(fc.event); })) {
    for (const auto& e : k.events.events()) UNSCOPED_INFO(e);
    FAIL("no event: " << fc.event);
  }
  // Left alone: not deleted, not adopted, not rewritten.
  auto kept = k.client->get(fc.resource, "default", name);
  REQUIRE(kept);
  CHECK(json::get_string(kept->root(), "/metadata/uid") == squatter_uid);
  CHECK(json::find(kept->root(), "/metadata/ownerReferences") == nullptr);
  // The pass failed (requeued with backoff) and the job did not start.
  REQUIRE(eventually([&] { return ctl->reconcile_stats().errors > 0; }));
  CHECK(k.true_conditions(fc.jobs, "j").find("Running") == std::string::npos);
  CHECK(k.true_conditions(fc.jobs, "j").find("Failed") == std::string::npos);

  // Once the object is gone the job creates its own under that name.
  kube::DeleteOptions now;
  now.grace_period_seconds = 0;
  REQUIRE(k.client->remove(fc.resource, "default", name, now));
  REQUIRE(eventually([&] {
    auto own = k.client->get(fc.resource, "default", name);
    return own && unitrain::api::is_controlled_by(own->root(), job_uid);
  }));
}

}  // namespace

TEST_CASE("foreign objects: TFJob") {
  const std::string job = kubeflow_job("TFJob", "tfReplicaSpecs", "tensorflow", {"Worker"});
  const kube::GroupVersionResource jobs{"kubeflow.org", "v1", "tfjobs"};
  check_foreign_object(GENERATE_COPY(values<ForeignCase>({
      {"tfjob", "kubeflow.org_tfjobs.yaml", jobs, job, kPodsR, foreign_pod("j-worker-0"),
       R"(Warning FailedCreatePod Error creating: pods "j-worker-0" already exists)"},
      {"tfjob", "kubeflow.org_tfjobs.yaml", jobs, job, kServicesR, foreign("v1", "Service", "j-worker-0", kForeignService),
       R"(Warning FailedCreateService Error creating: services "j-worker-0" already exists)"},
  })));
}

TEST_CASE("foreign objects: PyTorchJob") {
  const std::string job = kubeflow_job("PyTorchJob", "pytorchReplicaSpecs", "pytorch", {"Master", "Worker"});
  const kube::GroupVersionResource jobs{"kubeflow.org", "v1", "pytorchjobs"};
  check_foreign_object(GENERATE_COPY(values<ForeignCase>({
      {"pytorchjob", "kubeflow.org_pytorchjobs.yaml", jobs, job, kPodsR, foreign_pod("j-master-0"),
       R"(Warning FailedCreatePod Error creating: pods "j-master-0" already exists)"},
      {"pytorchjob", "kubeflow.org_pytorchjobs.yaml", jobs, job, kServicesR, foreign("v1", "Service", "j-worker-0", kForeignService),
       R"(Warning FailedCreateService Error creating: services "j-worker-0" already exists)"},
      {"pytorchjob", "kubeflow.org_pytorchjobs.yaml", jobs, job, kVolcanoPodGroups,
       foreign("scheduling.volcano.sh/v1beta1", "PodGroup", "j", kForeignPodGroup),
       R"(Warning ErrResourceExists Resource "j" of Kind "PodGroup" already exists and is not managed by PyTorchJob)", "volcano"},
  })));
}

TEST_CASE("foreign objects: MXJob, XGBoostJob, PaddleJob") {
  check_foreign_object(GENERATE(values<ForeignCase>({
      {"mxjob", "kubeflow.org_mxjobs.yaml", {"kubeflow.org", "v1", "mxjobs"},
       kubeflow_job("MXJob", "mxReplicaSpecs", "mxnet", {"Scheduler", "Server", "Worker"}, "  jobMode: MXTrain\n"), kPodsR,
       foreign_pod("j-scheduler-0"), R"(Warning FailedCreatePod Error creating: pods "j-scheduler-0" already exists)"},
      {"xgboostjob", "kubeflow.org_xgboostjobs.yaml", {"kubeflow.org", "v1", "xgboostjobs"},
       kubeflow_job("XGBoostJob", "xgbReplicaSpecs", "xgboost", {"Master", "Worker"}), kPodsR, foreign_pod("j-worker-0"),
       R"(Warning FailedCreatePod Error creating: pods "j-worker-0" already exists)"},
      {"paddlejob", "kubeflow.org_paddlejobs.yaml", {"kubeflow.org", "v1", "paddlejobs"},
       kubeflow_job("PaddleJob", "paddleReplicaSpecs", "paddle", {"Master", "Worker"}), kServicesR,
       foreign("v1", "Service", "j-master-0", kForeignService),
       R"(Warning FailedCreateService Error creating: services "j-master-0" already exists)"},
  })));
}

TEST_CASE("foreign objects: MPIJob v1 (training-operator's MPIJobKind wording)") {
  const std::string job = mpi_job("v1");
  const kube::GroupVersionResource jobs{"kubeflow.org", "v1", "mpijobs"};
  const std::string crd = "kubeflow.org_mpijobs_v1.yaml";
  auto exists = [](std::string_view name, std::string_view kind) {
    return fmt::format(R"(Warning ErrResourceExists Resource "{}" of MPIJobKind "{}" already exists and is not managed by MPIJob)",
                       name, kind);
  };
  check_foreign_object(GENERATE_COPY(values<ForeignCase>({
      {"mpijob-v1", crd, jobs, job, kPodsR, foreign_pod("j-launcher"), exists("j-launcher", "Pod")},
      {"mpijob-v1", crd, jobs, job, kPodsR, foreign_pod("j-worker-0"), exists("j-worker-0", "Pod")},
      {"mpijob-v1", crd, jobs, job, kPodsR,
       labelled_pod("j-launcher", "training.kubeflow.org/operator-name: mpijob-controller, training.kubeflow.org/job-name: j, "
                                  "training.kubeflow.org/replica-type: launcher, training.kubeflow.org/job-role: master"),
       exists("j-launcher", "Pod")},
      {"mpijob-v1", crd, jobs, job, kConfigMapsR, foreign("v1", "ConfigMap", "j-config"), exists("j-config", "ConfigMap")},
      {"mpijob-v1", crd, jobs, job, kRoles, foreign("rbac.authorization.k8s.io/v1", "Role", "j-launcher", "rules: []\n"),
       exists("j-launcher", "Role")},
      {"mpijob-v1", crd, jobs, job, kRoleBindings,
       foreign("rbac.authorization.k8s.io/v1", "RoleBinding", "j-launcher", kForeignRoleBinding), exists("j-launcher", "RoleBinding")},
  })));
}

TEST_CASE("foreign objects: MPIJob v2beta1 (mpi-operator's Kind wording)") {
  const std::string job = mpi_job("v2beta1");
  const kube::GroupVersionResource jobs{"kubeflow.org", "v2beta1", "mpijobs"};
  const std::string crd = "kubeflow.org_mpijobs_v2beta1.yaml";
  auto exists = [](std::string_view name, std::string_view kind) {
    return fmt::format(R"(Warning ErrResourceExists Resource "{}" of Kind "{}" already exists and is not managed by MPIJob)", name, kind);
  };
  check_foreign_object(GENERATE_COPY(values<ForeignCase>({
      {"mpijob-v2", crd, jobs, job, kPodsR, foreign_pod("j-worker-0"), exists("j-worker-0", "Pod")},
      {"mpijob-v2", crd, jobs, job, kPodsR,
       labelled_pod("j-worker-0", "training.kubeflow.org/operator-name: mpi-operator, training.kubeflow.org/job-name: j, "
                                  "training.kubeflow.org/job-role: worker, training.kubeflow.org/replica-index: \"0\""),
       exists("j-worker-0", "Pod")},
      {"mpijob-v2", crd, jobs, job, kServicesR, foreign("v1", "Service", "j", kForeignService), exists("j", "Service")},
      {"mpijob-v2", crd, jobs, job, kConfigMapsR, foreign("v1", "ConfigMap", "j-config"), exists("j-config", "ConfigMap")},
      {"mpijob-v2", crd, jobs, job, kSecretsR, foreign("v1", "Secret", "j-ssh"), exists("j-ssh", "Secret")},
      {"mpijob-v2", crd, jobs, job, kBatchJobsR, foreign("batch/v1", "Job", "j-launcher", kForeignBatchJob), exists("j-launcher", "Job")},
      {"mpijob-v2", crd, jobs, job, kPluginsPodGroups, foreign("scheduling.x-k8s.io/v1alpha1", "PodGroup", "j", kForeignPodGroup),
       exists("j", "PodGroup"), "scheduler-plugins-scheduler"},
  })));
}
