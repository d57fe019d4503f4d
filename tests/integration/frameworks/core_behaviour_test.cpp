// Core behaviour on the local cluster that is not about one framework's lifecycle: gang
// scheduling with both PodGroup backends (and PriorityClass-ordered minResources), managedBy,
// an operator restart over a running job, and a third, test-only framework registered in its
// own registry.
#include "tests/integration/frameworks/lifecycle_fixture.h"

#include "frameworks/tensorflow/register.h"
#include "tests/integration/controller/echo_framework.h"

using namespace unitrain::testing;

namespace {

std::string pytorch_yaml(std::string_view name, std::string_view run_policy, std::string_view pod_spec_extra = "",
                         std::string_view worker_spec_extra = "", std::string_view duration = "1h", int workers = 3) {
  return fmt::format(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: {0}, namespace: default}}
spec:
  runPolicy: {1}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata: {{annotations: {{sim.unitrain.io/duration: {4}}}}}
        spec: {{{2}containers: [{{name: pytorch, image: example.com/train:1, resources: {{requests: {{cpu: "1"}}}}}}]}}
    Worker:
      replicas: {5}
      restartPolicy: OnFailure
      template:
        metadata: {{annotations: {{sim.unitrain.io/duration: {4}}}}}
        spec: {{{3}containers: [{{name: pytorch, image: example.com/train:1, resources: {{requests: {{cpu: "2"}}}}}}]}}
)",
                     name, run_policy, pod_spec_extra, worker_spec_extra, duration, workers);
}

std::string mpi_yaml(std::string_view run_policy, std::string_view launcher_duration = "1h", std::string_view cpu = "1") {
  return fmt::format(R"(
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {{name: pi, namespace: default}}
spec:
  slotsPerWorker: 1
  runPolicy: {0}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        metadata: {{annotations: {{sim.unitrain.io/duration: {1}}}}}
        spec: {{containers: [{{name: launcher, image: example.com/mpi:1, resources: {{requests: {{cpu: "{2}"}}}}}}]}}
    Worker:
      replicas: 2
      template:
        metadata: {{annotations: {{sim.unitrain.io/duration: 1h}}}}
        spec: {{containers: [{{name: worker, image: example.com/mpi:1, resources: {{requests: {{cpu: "{2}"}}}}}}]}}
)",
                     run_policy, launcher_duration, cpu);
}

c::JobControllerOptions gang_options(std::string_view scheduler) {
  c::JobControllerOptions o;
  o.gang = std::shared_ptr<const unitrain::gang::Backend>(unitrain::gang::make_backend(scheduler));
  return o;
}
fw::PluginConfig gang_config(std::string_view scheduler) {
  fw::PluginConfig cfg;
  cfg.gang_scheduler_name = std::string(scheduler);
  return cfg;
}

std::string str(const json::Document& d, const std::string& pointer) {
  return std::string(json::get_string(d.root(), pointer).value_or(""));
}

bool bound(Cluster& k, std::string_view pod) {
  auto p = k.get(kPodsR, pod);
  return p && json::find(p->root(), "/spec/nodeName") != nullptr;
}

std::string launcher_pod(Cluster& k) {
  for (auto& n : k.names(kPodsR))
    if (n.rfind("pi-launcher", 0) == 0) return n;
  return "";
}

// TFJob whose validate() also refuses what admission refuses (negative replicas, an empty
// replica-spec map): the controller's own path for a job no webhook has checked.
class StrictTFJob final : public fw::FrameworkPlugin {
 public:
  StrictTFJob() {
    fw::Registry registry;
    REQUIRE(unitrain::frameworks::tensorflow::register_tensorflow(registry));
    auto plugin = registry.instantiate("tfjob", {});
    REQUIRE(plugin);
    tf_ = std::move(*plugin);
  }
  const fw::FrameworkDescriptor& descriptor() const override { return tf_->descriptor(); }
  void set_defaults(json::Document& job) const override { tf_->set_defaults(job); }
  fw::Validation validate(const json::Value* old_job, const json::Value& job) const override {
    auto v = tf_->validate(old_job, job);
    const auto specs_path = unitrain::api::FieldPath("spec").child("tfReplicaSpecs");
    const json::Value* specs = json::find(job, "/spec/tfReplicaSpecs");
    if (!specs || !specs->IsObject() || specs->ObjectEmpty()) {
      v.errors.push_back(unitrain::api::FieldError::required(specs_path, "must have at least one replica spec"));
      return v;
    }
    for (const auto& m : specs->GetObject()) {
      const json::Value* replicas = json::find(m.value, "/replicas");
      if (replicas && replicas->IsInt() && replicas->GetInt() < 0)
        v.errors.push_back(unitrain::api::FieldError::invalid(specs_path.key(m.name.GetString()).child("replicas"),
                                                              unitrain::api::FieldValue::of_json(*replicas),
                                                              "must be greater than or equal to 0"));
    }
    return v;
  }
  std::vector<fw::PodSlot> pod_slots(const json::Value& job) const override { return tf_->pod_slots(job); }
  unitrain::Status decorate_pod(const json::Value& job, const fw::PodSlot& slot, json::Document& pod) const override {
    return tf_->decorate_pod(job, slot, pod);
  }
  unitrain::Result<std::vector<fw::DesiredObject>> desired_objects(const json::Value& job, const fw::Observed& observed) const override {
    return tf_->desired_objects(job, observed);
  }
  fw::StatusProposal compute_status(const json::Value& job, const fw::Observed& observed) const override {
    return tf_->compute_status(job, observed);
  }

 private:
  std::unique_ptr<fw::FrameworkPlugin> tf_;
};

}  // namespace

TEST_CASE("an invalid spec without webhooks: the job is Failed once with the validation message and gets no children") {
  struct Invalid {
    std::string what, replica_specs, message;
  };
  const auto invalid = GENERATE(values<Invalid>({
      {"negative replicas", "{Worker: {replicas: -1, template: {spec: {containers: [{name: tensorflow, image: x}]}}}}",
       R"(TFJob.kubeflow.org "bad" is invalid: spec.tfReplicaSpecs[Worker].replicas: Invalid value: -1: must be greater than or equal to 0)"},
      {"empty replica specs", "{}",
       R"(TFJob.kubeflow.org "bad" is invalid: spec.tfReplicaSpecs: Required value: must have at least one replica spec)"},
  }));
  INFO(invalid.what);
  const kube::GroupVersionResource tfjobs{"kubeflow.org", "v1", "tfjobs"};
  Cluster k;
  k.install_crd("kubeflow.org_tfjobs.yaml");
  c::JobController ctl(*k.client, k.clock, k.events, std::make_unique<StrictTFJob>(), {});
  ctl.start();
  REQUIRE(ctl.wait_for_sync(std::chrono::seconds(10)));
  k.create_yaml(tfjobs, fmt::format("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {{name: bad, namespace: default}}\n"
                                    "spec: {{tfReplicaSpecs: {}}}\n",
                                    invalid.replica_specs));
  REQUIRE(eventually([&] { return k.has_true(tfjobs, "bad", "Failed"); }));
  CHECK(k.conditions(tfjobs, "bad").find(fmt::format("Failed=True(TFJobFailedValidation: {})", invalid.message)) != std::string::npos);
  // Settled: one Failed write, one event, no children, no retries. The server counts a write
  // after it is stored, so the Failed status can be read before its write is counted.
  REQUIRE(eventually([&] { return writes_since(k.cluster).get("PUT tfjobs/status") == 1; }));
  const auto failed = writes_since(k.cluster);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  INFO(writes_since(k.cluster, failed).describe());
  CHECK(writes_since(k.cluster, failed).total(true) == 0);
  CHECK(k.names(kPodsR).empty());
  CHECK(k.names(kServicesR).empty());
  int events = 0;
  for (const auto& e : k.events.events()) events += e == "Warning TFJobFailedValidation " + invalid.message;
  CHECK(events == 1);
  CHECK(eventually([&] { return ctl.counters()["default"].failed == 1; }));
  CHECK(ctl.reconcile_stats().errors == 0);
  ctl.stop();
}

TEST_CASE("gang volcano: PyTorchJob pods wait for the PodGroup, carry its scheduler and annotation, and the group is written once") {
  Cluster k({.podgroup_crds = true});
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob", gang_options("volcano"), gang_config("volcano"));
  const auto before = writes_since(k.cluster);
  k.create_yaml(kPyTorchJobs, pytorch_yaml("pt", "{schedulingPolicy: {queue: research}}", "", "", "2s"));
  REQUIRE(eventually([&] { return k.exists(kVolcanoPodGroups, "pt"); }));
  auto pg = k.get(kVolcanoPodGroups, "pt");
  REQUIRE(pg);
  CHECK(json::get_int(pg->root(), "/spec/minMember") == 4);
  CHECK(str(*pg, "/spec/queue") == "research");
  CHECK(str(*pg, "/spec/minResources/cpu") == "7");
  CHECK(str(*pg, "/metadata/ownerReferences/0/kind") == "PyTorchJob");

  REQUIRE(eventually([&] { return k.names(kPodsR).size() == 4; }));
  for (const auto& name : k.names(kPodsR)) {
    auto pod = k.get(kPodsR, name);
    REQUIRE(pod);
    CHECK(str(*pod, "/spec/schedulerName") == "volcano");
    CHECK(str(*pod, "/metadata/annotations/scheduling.k8s.io~1group-name") == "pt");
    CHECK(!str(*pod, "/metadata/annotations/volcano.sh~1task-spec").empty());
  }
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Succeeded"); }));
  // Finishing deletes the PodGroup.
  REQUIRE(eventually([&] { return !k.exists(kVolcanoPodGroups, "pt"); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto w = writes_since(k.cluster, before);
  INFO(w.describe());
  CHECK(w.get("POST podgroups") == 1);
  CHECK(w.get("PUT podgroups") == 0);  // the spec never differed: no rewrite per pass
  CHECK(w.get("DELETE podgroups") == 1);
  CHECK(eventually([&] { return k.events.has("Normal SuccessfulDeletePodGroup Deleted PodGroup: pt"); }));
}

TEST_CASE("gang volcano: a PodGroup whose minResources do not fit stays Pending and no pod is created") {
  Cluster k({.podgroup_crds = true});
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob", gang_options("volcano"), gang_config("volcano"));
  // 3 nodes of 32 cpu; the group needs 1000 cpu at once.
  k.create_yaml(kPyTorchJobs, pytorch_yaml("big", R"({schedulingPolicy: {minResources: {cpu: "1000"}}})"));
  REQUIRE(eventually([&] { return k.exists(kVolcanoPodGroups, "big"); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  auto pg = k.get(kVolcanoPodGroups, "big");
  REQUIRE(pg);
  CHECK(str(*pg, "/status/phase") == "Pending");
  CHECK(k.names(kPodsR).empty());
  CHECK(!k.has_true(kPyTorchJobs, "big", "Running"));
  CHECK(json::find(k.get(kPyTorchJobs, "big")->root(), "/status/lastReconcileTime") != nullptr);
}

TEST_CASE("gang scheduler-plugins: the local scheduler binds no member until the whole group fits") {
  Cluster k({.podgroup_crds = true});
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  auto ctl = k.controller("pytorchjob", gang_options("scheduler-plugins-scheduler"), gang_config("scheduler-plugins-scheduler"));
  // Four pods of 20 cpu on three 32-cpu nodes: three would fit one by one, the gang of four never.
  k.create_yaml(kPyTorchJobs, R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: wide, namespace: default}
spec:
  runPolicy: {schedulingPolicy: {scheduleTimeoutSeconds: 30}}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 1h}}
        spec: {containers: [{name: pytorch, image: example.com/train:1, resources: {requests: {cpu: "20"}}}]}
    Worker:
      replicas: 3
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 1h}}
        spec: {containers: [{name: pytorch, image: example.com/train:1, resources: {requests: {cpu: "20"}}}]}
)");
  REQUIRE(eventually([&] { return k.names(kPodsR).size() == 4; }));
  auto pg = k.get(kPluginsPodGroups, "wide");
  REQUIRE(pg);
  CHECK(json::get_int(pg->root(), "/spec/minMember") == 4);
  CHECK(json::get_int(pg->root(), "/spec/scheduleTimeoutSeconds") == 30);
  CHECK(str(*pg, "/spec/minResources/cpu") == "80");
  for (const auto& name : k.names(kPodsR)) {
    auto pod = k.get(kPodsR, name);
    REQUIRE(pod);
    CHECK(str(*pod, "/spec/schedulerName") == "scheduler-plugins-scheduler");
    CHECK(str(*pod, "/metadata/labels/scheduling.x-k8s.io~1pod-group") == "wide");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  for (const auto& name : k.names(kPodsR)) CHECK(!bound(k, name));
  CHECK(!k.has_true(kPyTorchJobs, "wide", "Running"));

  // Shrinking the gang to three makes it fit; the PodGroup is updated once, then all bind.
  const auto before = writes_since(k.cluster);
  k.patch_job(kPyTorchJobs, "wide", R"({"spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":2}}}})");
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "wide", "Running"); }));
  for (const auto& name : k.names(kPodsR)) CHECK(bound(k, name));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(json::get_int(k.get(kPluginsPodGroups, "wide")->root(), "/spec/minMember") == 3);
  CHECK(writes_since(k.cluster, before).get("PUT podgroups") == 1);
}

TEST_CASE("gang scheduler-plugins: MPIJob v2 launcher and workers join one group and run") {
  Cluster k({.podgroup_crds = true});
  k.install_crd("kubeflow.org_mpijobs.yaml");
  auto ctl = k.controller("mpijob-v2", gang_options("scheduler-plugins-scheduler"), gang_config("scheduler-plugins-scheduler"));
  const auto before = writes_since(k.cluster);
  k.create_yaml(kMPIJobs, mpi_yaml("{}", "500ms"));
  REQUIRE(eventually([&] { return k.exists(kPluginsPodGroups, "pi"); }));
  auto pg = k.get(kPluginsPodGroups, "pi");
  REQUIRE(pg);
  CHECK(json::get_int(pg->root(), "/spec/minMember") == 3);  // workers + launcher
  REQUIRE(eventually([&] { return !launcher_pod(k).empty() && k.exists(kPodsR, "pi-worker-0") && k.exists(kPodsR, "pi-worker-1"); }));
  const std::string launcher = launcher_pod(k);
  for (const auto& name : {std::string("pi-worker-0"), std::string("pi-worker-1"), launcher}) {
    auto pod = k.get(kPodsR, name);
    INFO(name << "\n" << k.dump());
    REQUIRE(pod);
    CHECK(str(*pod, "/spec/schedulerName") == "scheduler-plugins-scheduler");
    CHECK(str(*pod, "/metadata/labels/scheduling.x-k8s.io~1pod-group") == "pi");
  }
  REQUIRE(eventually([&] { return k.has_true(kMPIJobs, "pi", "Succeeded"); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto w = writes_since(k.cluster, before);
  INFO(w.describe());
  CHECK(w.get("POST podgroups") == 1);
  CHECK(w.get("PUT podgroups") == 0);
}

TEST_CASE("gang minResources: the PriorityClass of each replica template decides which replicas count first") {
  Cluster k({.podgroup_crds = true});
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  k.create_yaml(kPriorityClasses, R"(
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
)");
  auto ctl = k.controller("pytorchjob", gang_options("scheduler-plugins-scheduler"), gang_config("scheduler-plugins-scheduler"));
  // minAvailable 2 of Master (1 cpu) and 3 Workers (2 cpu, priority 1000): the two counted
  // pods are workers (4 cpu), not the master and a worker (3 cpu) as template order would say.
  k.create_yaml(kPyTorchJobs, pytorch_yaml("prio", "{schedulingPolicy: {minAvailable: 2}}", "", "priorityClassName: high, "));
  REQUIRE(eventually([&] { return k.exists(kPluginsPodGroups, "prio"); }));
  auto pg = k.get(kPluginsPodGroups, "prio");
  REQUIRE(pg);
  CHECK(json::get_int(pg->root(), "/spec/minMember") == 2);
  CHECK(str(*pg, "/spec/minResources/cpu") == "4");
}

TEST_CASE("managedBy another controller: the operator makes no write at all") {
  Cluster k;
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  k.install_crd("kubeflow.org_mpijobs.yaml");
  auto pt = k.controller("pytorchjob");
  auto mpi = k.controller("mpijob-v2");
  k.create_yaml(kPyTorchJobs, pytorch_yaml("pt", "{managedBy: kueue.x-k8s.io/multikueue}"));
  k.create_yaml(kMPIJobs, mpi_yaml("{managedBy: kueue.x-k8s.io/multikueue}"));
  const auto after_create = writes_since(k.cluster);
  REQUIRE(eventually([&] { return pt->reconcile_stats().total >= 1 && mpi->reconcile_stats().total >= 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  auto w = writes_since(k.cluster, after_create);
  INFO(w.describe());
  CHECK(w.total(true) == 0);
  CHECK(k.names(kPodsR).empty());
  CHECK(k.names(kServicesR).empty());
  CHECK(json::find(k.get(kPyTorchJobs, "pt")->root(), "/status") == nullptr);
  CHECK(json::find(k.get(kMPIJobs, "pi")->root(), "/status") == nullptr);
  CHECK(k.events.events().empty());
}

TEST_CASE("operator restart mid-job: a new controller writes nothing over a steady cluster, then finishes the job") {
  Cluster k({.manual_kubelet = true});
  k.install_crd("kubeflow.org_pytorchjobs.yaml");
  k.install_crd("kubeflow.org_mpijobs.yaml");
  const auto start = writes_since(k.cluster);
  auto pt = k.controller("pytorchjob");
  auto mpi = k.controller("mpijob-v2");
  k.create_yaml(kPyTorchJobs, pytorch_yaml("pt", "{}"));
  k.create_yaml(kMPIJobs, mpi_yaml("{}"));
  const std::vector<std::string> pt_pods{"pt-master-0", "pt-worker-0", "pt-worker-1", "pt-worker-2"};
  REQUIRE(eventually([&] {
    for (const auto& p : pt_pods)
      if (!k.exists(kPodsR, p)) return false;
    return k.exists(kPodsR, "pi-worker-0") && k.exists(kPodsR, "pi-worker-1") && !launcher_pod(k).empty();
  }));
  for (const auto& p : pt_pods) k.set_pod_phase(p, "Running");
  k.set_pod_phase("pi-worker-0", "Running", std::nullopt, "worker");
  k.set_pod_phase("pi-worker-1", "Running", std::nullopt, "worker");
  k.set_pod_phase(launcher_pod(k), "Running", std::nullopt, "launcher");
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Running") && k.has_true(kMPIJobs, "pi", "Running"); }));
  REQUIRE(eventually([&] {
    auto p = k.get(kPyTorchJobs, "pt");
    auto m = k.get(kMPIJobs, "pi");
    auto cm = k.get(kConfigMapsR, "pi-config");
    return p && m && cm && json::get_int(p->root(), "/status/replicaStatuses/Worker/active").value_or(0) == 3 &&
           json::get_int(m->root(), "/status/replicaStatuses/Worker/active").value_or(0) == 2 &&
           json::get_string(cm->root(), "/data/discover_hosts.sh").value_or("").find("pi-worker-1") != std::string_view::npos;
  }));
  // Let the first controllers settle (the ConfigMap's discover_hosts.sh follows running workers).
  WriteCounts settled;
  REQUIRE(eventually([&] {
    auto now = writes_since(k.cluster);
    const bool same = now.by_verb_resource == settled.by_verb_resource;
    settled = now;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return same;
  }));
  pt.reset();
  mpi.reset();

  const auto before_restart = writes_since(k.cluster);
  auto pt2 = k.controller("pytorchjob");
  auto mpi2 = k.controller("mpijob-v2");
  REQUIRE(eventually([&] { return pt2->reconcile_stats().total >= 1 && mpi2->reconcile_stats().total >= 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto steady = writes_since(k.cluster, before_restart);
  INFO("writes after restart: " << steady.describe());
  CHECK(steady.total(true) == 0);

  for (const auto& p : pt_pods) k.set_pod_phase(p, "Succeeded", 0);
  k.set_pod_phase(launcher_pod(k), "Succeeded", 0, "launcher");
  REQUIRE(eventually([&] { return k.has_true(kPyTorchJobs, "pt", "Succeeded") && k.has_true(kMPIJobs, "pi", "Succeeded"); }));
  auto all = writes_since(k.cluster, start);
  INFO(all.describe());
  CHECK(all.get("POST pods") == 6);  // 4 PyTorch + 2 MPI workers; the launcher pod is the batch Job controller's, not counted here
  CHECK(all.get("POST services") == 5);
  CHECK(all.get("POST jobs") == 1);
  CHECK(all.get("POST secrets") == 1);
  CHECK(all.get("POST configmaps") == 1);
}

TEST_CASE("a third, test-only framework registered in its own registry runs on the local cluster") {
  namespace echo = unitrain::testing::echo;
  Cluster k;
  k.create_yaml({"apiextensions.k8s.io", "v1", "customresourcedefinitions"}, R"(
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: echojobs.test.unitrain.io}
spec:
  group: test.unitrain.io
  scope: Namespaced
  names: {kind: EchoJob, plural: echojobs, singular: echojob, listKind: EchoJobList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
)");
  fw::Registry registry;  // no PyTorch, no MPI: only what this test registers
  fw::Registration reg;
  reg.descriptor = echo::echo_descriptor();
  reg.factory = [](const fw::PluginConfig&) -> std::unique_ptr<fw::FrameworkPlugin> { return std::make_unique<echo::EchoPlugin>(); };
  REQUIRE(registry.add(std::move(reg)));
  auto enabled = registry.resolve({"echojob"});
  REQUIRE(enabled);
  REQUIRE(*enabled == std::vector<std::string>{"test.unitrain.io/echojob"});
  auto plugin = registry.instantiate("test.unitrain.io/echojob", {});
  REQUIRE(plugin);
  c::JobController ctl(*k.client, k.clock, k.events, std::move(*plugin), {});
  ctl.start();
  REQUIRE(ctl.wait_for_sync(std::chrono::seconds(10)));

  k.create_yaml(echo::kJobs, R"(
apiVersion: test.unitrain.io/v1
kind: EchoJob
metadata: {name: hello, namespace: default}
spec:
  echoReplicaSpecs:
    Worker:
      replicas: 2
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 200ms}}
        spec: {containers: [{name: echo, image: busybox}]}
)");
  REQUIRE(eventually([&] { return k.has_true(echo::kJobs, "hello", "Succeeded"); }));
  CHECK(k.conditions(echo::kJobs, "hello").find("Succeeded=True(EchoJobSucceeded: EchoJob hello is successfully completed.)") !=
        std::string::npos);
  auto pod = k.get(kPodsR, "hello-worker-1");
  REQUIRE(pod);
  CHECK(str(*pod, "/metadata/annotations/echo-index") == "1");
  CHECK(str(*pod, "/metadata/labels/training.kubeflow.org~1operator-name") == "echojob-controller");
  CHECK(str(*pod, "/metadata/ownerReferences/0/kind") == "EchoJob");
  CHECK(k.names(kServicesR) == std::vector<std::string>{"hello-worker-0", "hello-worker-1"});
  CHECK(eventually([&] { return ctl.counters()["default"].successful == 1; }));
  ctl.stop();
}
