// MPIJob v1 hooks against fixtures, with the exact strings training-operator v1.8.1 produces
// (training-operator-v1.md §5, mpi-operator.md §3).
#include <catch2/catch.hpp>

#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "core/controller/pod_builder.h"
#include "core/framework/registry.h"
#include "core/json/json.h"
#include "frameworks/mpi/v1/register.h"
#include "frameworks/mpi/v2/register.h"
#include "tests/support/json.h"
#include "tests/support/framework.h"

namespace c = unitrain::controller;
namespace fw = unitrain::framework;
namespace json = unitrain::json;
namespace mpi = unitrain::frameworks::mpi;
using json::Document;

namespace {

using unitrain::testing::yaml;

std::unique_ptr<fw::FrameworkPlugin> plugin(std::string image = "", std::string gang = "") {
  fw::PluginConfig config;
  if (!image.empty()) config.options[mpi::v1::kKubectlDeliveryImageOption] = image;
  config.gang_scheduler_name = std::move(gang);
  return unitrain::testing::instantiate(mpi::v1::register_mpi_v1, "mpijob-v1", std::move(config));
}

Document parse(std::string_view text) {
  auto d = Document::parse(text);
  if (!d) FAIL(d.error().message);
  return *d;
}

std::string dump_at(const json::Value& v, std::string_view pointer) {
  const json::Value* found = json::find(v, pointer);
  return found ? json::dump(*found) : std::string("<missing>");
}

constexpr std::string_view kPi = R"(
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: pi, namespace: default, uid: u-1}
spec:
  slotsPerWorker: 2
  runPolicy: {cleanPodPolicy: Running}
  mpiReplicaSpecs:
    Launcher:
      template:
        metadata: {labels: {team: a}}
        spec:
          volumes: [{name: data, emptyDir: {}}]
          containers:
            - name: mpi
              image: mpi-pi
              command: [mpirun]
              env: [{name: USER, value: u}]
              volumeMounts: [{name: data, mountPath: /data}]
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: mpi
              image: mpi-pi
)";

Document defaulted(std::string_view text, const std::unique_ptr<fw::FrameworkPlugin>& p) {
  Document job = yaml(text);
  p->set_defaults(job);
  return job;
}

// The pod the core creates for a slot: the core's builder, then the framework's decoration.
Document pod_for(const std::unique_ptr<fw::FrameworkPlugin>& p, const Document& job, const fw::PodSlot& slot) {
  auto built = c::build_pod(p->descriptor(), job.root(), slot.replica_type, slot.index);
  REQUIRE(built);
  Document pod = built->pod;
  if (!slot.name.empty()) REQUIRE(json::set_string(pod, "/metadata/name", slot.name));
  REQUIRE(p->decorate_pod(job.root(), slot, pod));
  return pod;
}

const fw::DesiredObject* find_object(const std::vector<fw::DesiredObject>& objs, std::string_view resource) {
  for (const auto& o : objs)
    if (o.resource.resource == resource) return &o;
  return nullptr;
}

Document pod_doc(std::string_view name, std::string_view type, std::string_view phase) {
  return parse(fmt::format(R"({{"metadata":{{"name":"{}","labels":{{"training.kubeflow.org/replica-type":"{}"}}}},"status":{{"phase":"{}"}}}})",
                           name, type, phase));
}

}  // namespace

TEST_CASE("mpi v1: descriptor names, labels and owned kinds") {
  auto p = plugin();
  const auto& d = p->descriptor();
  CHECK(d.name == "kubeflow.org/mpijob@v1");
  CHECK(d.aliases == std::vector<std::string>{"mpijob-v1", "mpijobv1"});
  CHECK(d.kind_alias_default);
  CHECK(d.api_version() == "kubeflow.org/v1");
  CHECK(d.kind == "MPIJob");
  CHECK(d.plural == "mpijobs");
  CHECK(d.replica_specs_field == "mpiReplicaSpecs");
  CHECK(d.replica_types == std::vector<std::string>{"Launcher", "Worker"});
  CHECK(d.controller_name == "mpijob-controller");
  CHECK(d.replica_type_label == "training.kubeflow.org/replica-type");
  CHECK(d.default_container == "mpi");
  CHECK(d.default_port == 0);
  CHECK(d.metrics_framework == "mpi");
  CHECK(d.managed_by == std::vector<std::string>{"kubeflow.org/training-operator"});
  const auto behaviour = fw::pipeline_behaviour(*p);
  CHECK(behaviour.ttl_deletes_job);
  CHECK(behaviour.enforces_run_limits);
  std::vector<std::string> owned;
  for (const auto& r : d.owned_resources) owned.push_back(r.group_resource());
  CHECK(owned == std::vector<std::string>{"configmaps", "serviceaccounts", "roles.rbac.authorization.k8s.io",
                                          "rolebindings.rbac.authorization.k8s.io"});
}

TEST_CASE("mpi v1: the bare kind MPIJob is v1, as in training-operator, v2beta1 has its own names") {
  fw::Registry r;
  REQUIRE(mpi::v2::register_mpi_v2(r));
  REQUIRE(mpi::v1::register_mpi_v1(r));
  using Names = std::vector<std::string>;
  CHECK(*r.resolve({"MPIJob"}) == Names{"kubeflow.org/mpijob@v1"});
  CHECK(*r.resolve({"mpijob"}) == Names{"kubeflow.org/mpijob@v1"});
  CHECK(*r.resolve({"mpijob-v1"}) == Names{"kubeflow.org/mpijob@v1"});
  CHECK(*r.resolve({"MPIJOB-V2"}) == Names{"kubeflow.org/mpijob@v2beta1"});
  CHECK(*r.resolve({"mpijobv2"}) == Names{"kubeflow.org/mpijob@v2beta1"});
  CHECK(*r.resolve({"kubeflow.org/mpijob@v1,mpijob-v2"}) == Names{"kubeflow.org/mpijob@v2beta1", "kubeflow.org/mpijob@v1"});
  CHECK(*r.resolve({"-mpijob"}) == Names{"kubeflow.org/mpijob@v2beta1"});
  CHECK(*r.resolve({"-mpijob-v2"}) == Names{"kubeflow.org/mpijob@v1"});
  const auto* reg = r.find("mpijob-v1");
  REQUIRE(reg != nullptr);
  REQUIRE(reg->options.size() == 1);
  CHECK(reg->options[0].name == "mpi-kubectl-delivery-image");
  CHECK(reg->options[0].default_value == "kubeflow/kubectl-delivery:latest");
}

TEST_CASE("mpi v1: defaults merge the two cleanPodPolicy fields and fill replicas and restart policies") {
  auto p = plugin();
  Document job = defaulted(R"(
metadata: {name: j}
spec:
  mpiReplicaSpecs:
    Launcher: {template: {spec: {containers: [{name: m, image: i}]}}}
    Worker: {restartPolicy: "", template: {spec: {containers: [{name: m, image: i}]}}}
)",
                           p);
  CHECK(json::get_string(job.root(), "/spec/cleanPodPolicy") == "None");
  CHECK(json::get_string(job.root(), "/spec/runPolicy/cleanPodPolicy") == "None");
  CHECK(json::get_int(job.root(), "/spec/mpiReplicaSpecs/Launcher/replicas") == 1);
  CHECK(json::get_int(job.root(), "/spec/mpiReplicaSpecs/Worker/replicas") == 0);
  CHECK(json::get_string(job.root(), "/spec/mpiReplicaSpecs/Launcher/restartPolicy") == "Never");
  CHECK(json::get_string(job.root(), "/spec/mpiReplicaSpecs/Worker/restartPolicy") == "Never");

  Document deprecated = defaulted("{spec: {cleanPodPolicy: Running, mpiReplicaSpecs: {}}}", p);
  CHECK(json::get_string(deprecated.root(), "/spec/runPolicy/cleanPodPolicy") == "Running");
  Document both = defaulted("{spec: {cleanPodPolicy: Running, runPolicy: {cleanPodPolicy: All}, mpiReplicaSpecs: {}}}", p);
  CHECK(json::get_string(both.root(), "/spec/cleanPodPolicy") == "All");
  CHECK(json::get_string(both.root(), "/spec/runPolicy/cleanPodPolicy") == "All");
  Document kept = defaulted("{spec: {mpiReplicaSpecs: {Worker: {replicas: 3, restartPolicy: ExitCode}}}}", p);
  CHECK(json::get_int(kept.root(), "/spec/mpiReplicaSpecs/Worker/replicas") == 3);
  CHECK(json::get_string(kept.root(), "/spec/mpiReplicaSpecs/Worker/restartPolicy") == "ExitCode");
}

TEST_CASE("mpi v1: validation reports ValidateV1MpiJobSpec's messages with field paths") {
  auto p = plugin();
  auto errors = [&](std::string_view text) {
    Document job = yaml(text);
    auto v = p->validate(nullptr, job.root());
    std::vector<std::string> out;
    for (const auto& e : v.errors) out.push_back(e.to_string());
    return out;
  };
  CHECK(errors("{metadata: {name: j}, spec: {}}") ==
        std::vector<std::string>{"spec.mpiReplicaSpecs: Required value: MPIReplicaSpecs is not valid"});
  CHECK(errors(R"(
spec:
  mpiReplicaSpecs:
    Launcher: {replicas: 2, template: {spec: {containers: [{name: m, image: i}, {image: i}]}}}
    Worker: {template: {spec: {containers: []}}}
    PS: {template: {spec: {containers: [{name: m, image: i}]}}}
)") == std::vector<std::string>{
                   "spec.mpiReplicaSpecs[Launcher].template.spec.containers[1].name: Required value: MPIReplicaSpec is not valid: "
                   "ImageName is undefined in the container of Launcher",
                   "spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: 2: MPIReplicaSpec is not valid: There must be only 1 "
                   "launcher replica",
                   "spec.mpiReplicaSpecs[Worker].template.spec.containers: Required value: MPIReplicaSpecs is not valid: containers "
                   "definition expected in Worker",
                   "spec.mpiReplicaSpecs[PS]: Invalid value: \"PS\": MPIReplicaType is PS but must be one of [Launcher Worker]",
               });
  CHECK(errors(R"(
spec:
  runPolicy: {managedBy: example.com/other}
  mpiReplicaSpecs:
    Worker: {template: {spec: {containers: [{name: m}]}}}
)") == std::vector<std::string>{
                   "spec.mpiReplicaSpecs[Worker].template.spec.containers[0].image: Required value: MPIReplicaSpec is not valid: "
                   "Image is undefined in the container of Worker",
                   "spec.mpiReplicaSpecs[Launcher]: Required value: MPIReplicaSpec is not valid: Master ReplicaSpec must be present",
                   "spec.runPolicy.managedBy: Unsupported value: \"example.com/other\": supported values: "
                   "\"kubeflow.org/training-operator\", \"kueue.x-k8s.io/multikueue\"",
               });
  // No DNS-name rule and no restart-policy restriction, as upstream; Launcher replicas 1 is fine.
  CHECK(errors(R"(
metadata: {name: 0-Upper}
spec:
  mpiReplicaSpecs:
    Launcher: {replicas: 1, restartPolicy: ExitCode, template: {spec: {containers: [{name: m, image: i}]}}}
)").empty());
  Document old_job = yaml("{spec: {runPolicy: {managedBy: kubeflow.org/training-operator}, mpiReplicaSpecs: {Launcher: {template: {spec: {containers: [{name: m, image: i}]}}}}}}");
  Document new_job = yaml("{spec: {runPolicy: {managedBy: kueue.x-k8s.io/multikueue}, mpiReplicaSpecs: {Launcher: {template: {spec: {containers: [{name: m, image: i}]}}}}}}");
  auto v = p->validate(&old_job.root(), new_job.root());
  REQUIRE(v.errors.size() == 1);
  CHECK(v.errors[0].to_string() == "spec.runPolicy.managedBy: Invalid value: \"kueue.x-k8s.io/multikueue\": field is immutable");
}

TEST_CASE("mpi v1: slots are the workers, then the launcher named <job>-launcher") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  auto slots = p->pod_slots(job.root());
  REQUIRE(slots.size() == 3);
  CHECK((slots[0].replica_type == "Worker" && slots[0].index == 0 && slots[0].name.empty()));
  CHECK((slots[1].replica_type == "Worker" && slots[1].index == 1 && slots[1].name.empty()));
  CHECK((slots[2].replica_type == "Launcher" && slots[2].index == 0 && slots[2].name == "pi-launcher"));
  Document launcher_only = defaulted("{metadata: {name: l}, spec: {mpiReplicaSpecs: {Launcher: {template: {}}}}}", p);
  auto one = p->pod_slots(launcher_only.root());
  REQUIRE(one.size() == 1);
  CHECK(one[0].name == "l-launcher");
}

TEST_CASE("mpi v1: worker pods sleep, carry kubexec.sh and the worker labels") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  Document pod = pod_for(p, job, {"Worker", 1, {}});
  CHECK(json::get_string(pod.root(), "/metadata/name") == "pi-worker-1");
  CHECK(dump_at(pod.root(), "/metadata/labels") ==
        R"({"training.kubeflow.org/operator-name":"mpijob-controller","training.kubeflow.org/job-name":"pi","training.kubeflow.org/replica-type":"worker","training.kubeflow.org/replica-index":"1"})");
  CHECK(dump_at(pod.root(), "/spec") ==
        R"({"containers":[{"name":"mpi","image":"mpi-pi","command":["sleep"],"args":["365d"],"volumeMounts":[{"name":"mpi-job-config","mountPath":"/etc/mpi"}]}],"restartPolicy":"Never","volumes":[{"name":"mpi-job-config","configMap":{"name":"pi-config","items":[{"key":"kubexec.sh","path":"kubexec.sh","mode":365}]}}]})");
  CHECK(dump_at(pod.root(), "/metadata/ownerReferences/0/apiVersion") == R"("kubeflow.org/v1")");

  // A worker with its own command keeps it (and its args).
  Document custom = defaulted(R"(
metadata: {name: c, namespace: ns}
spec:
  mpiReplicaSpecs:
    Launcher: {template: {spec: {containers: [{name: m, image: i}]}}}
    Worker: {replicas: 1, template: {spec: {containers: [{name: m, image: i, command: [sshd], args: [-D]}]}}}
)",
                            p);
  Document w = pod_for(p, custom, {"Worker", 0, {}});
  CHECK(dump_at(w.root(), "/spec/containers/0/command") == R"(["sshd"])");
  CHECK(dump_at(w.root(), "/spec/containers/0/args") == R"(["-D"])");
}

TEST_CASE("mpi v1: the launcher pod gets kubectl-delivery, the exec env, both volumes and its ServiceAccount") {
  auto p = plugin("registry.example/kubectl-delivery:v1");
  Document job = defaulted(kPi, p);
  auto slots = p->pod_slots(job.root());
  Document pod = pod_for(p, job, slots.back());
  const auto& r = pod.root();
  CHECK(json::get_string(r, "/metadata/name") == "pi-launcher");
  CHECK(dump_at(r, "/metadata/labels") ==
        R"({"team":"a","training.kubeflow.org/operator-name":"mpijob-controller","training.kubeflow.org/job-name":"pi","training.kubeflow.org/replica-type":"launcher","training.kubeflow.org/job-role":"master"})");
  CHECK(json::get_string(r, "/spec/serviceAccountName") == "pi-launcher");
  CHECK(json::get_string(r, "/spec/restartPolicy") == "Never");
  CHECK(dump_at(r, "/spec/initContainers") ==
        R"([{"name":"kubectl-delivery","image":"registry.example/kubectl-delivery:v1","env":[{"name":"TARGET_DIR","value":"/opt/kube"},{"name":"NAMESPACE","value":"default"}],"resources":{"limits":{"cpu":"100m","ephemeral-storage":"5Gi","memory":"512Mi"},"requests":{"cpu":"100m","ephemeral-storage":"5Gi","memory":"512Mi"}},"volumeMounts":[{"name":"mpi-job-kubectl","mountPath":"/opt/kube"},{"name":"mpi-job-config","mountPath":"/etc/mpi"}],"imagePullPolicy":"IfNotPresent"}])");
  CHECK(dump_at(r, "/spec/containers/0/env") ==
        R"([{"name":"USER","value":"u"},{"name":"OMPI_MCA_plm_rsh_agent","value":"/etc/mpi/kubexec.sh"},{"name":"OMPI_MCA_orte_default_hostfile","value":"/etc/mpi/hostfile"},{"name":"NVIDIA_VISIBLE_DEVICES"},{"name":"NVIDIA_DRIVER_CAPABILITIES"},{"name":"I_MPI_HYDRA_BOOTSTRAP","value":"rsh"},{"name":"I_MPI_HYDRA_BOOTSTRAP_EXEC","value":"/etc/mpi/kubexec.sh"}])");
  CHECK(dump_at(r, "/spec/containers/0/command") == R"(["mpirun"])");
  CHECK(dump_at(r, "/spec/containers/0/volumeMounts") ==
        R"([{"name":"data","mountPath":"/data"},{"name":"mpi-job-kubectl","mountPath":"/opt/kube"},{"name":"mpi-job-config","mountPath":"/etc/mpi"}])");
  CHECK(dump_at(r, "/spec/volumes") ==
        R"([{"name":"data","emptyDir":{}},{"name":"mpi-job-kubectl","emptyDir":{}},{"name":"mpi-job-config","configMap":{"name":"pi-config","items":[{"key":"kubexec.sh","path":"kubexec.sh","mode":365},{"key":"hostfile","path":"hostfile","mode":292},{"key":"discover_hosts.sh","path":"discover_hosts.sh","mode":365}]}}])");

  // Default image; a GPU launcher keeps NVIDIA_*; user-set Intel MPI bootstrap values win; the
  // template's ServiceAccount stays.
  auto plain = plugin();
  Document gpu = defaulted(R"(
metadata: {name: g, namespace: ns}
spec:
  mpiReplicaSpecs:
    Launcher:
      restartPolicy: OnFailure
      template:
        spec:
          serviceAccountName: mine
          containers:
            - name: m
              image: i
              env: [{name: I_MPI_HYDRA_BOOTSTRAP, value: ssh}]
              resources: {limits: {nvidia.com/gpu: 1}}
)",
                           plain);
  Document g = pod_for(plain, gpu, plain->pod_slots(gpu.root()).back());
  CHECK(json::get_string(g.root(), "/spec/initContainers/0/image") == "kubeflow/kubectl-delivery:latest");
  CHECK(json::get_string(g.root(), "/spec/serviceAccountName") == "mine");
  CHECK(json::get_string(g.root(), "/spec/restartPolicy") == "OnFailure");
  CHECK(dump_at(g.root(), "/spec/containers/0/env") ==
        R"([{"name":"I_MPI_HYDRA_BOOTSTRAP","value":"ssh"},{"name":"OMPI_MCA_plm_rsh_agent","value":"/etc/mpi/kubexec.sh"},{"name":"OMPI_MCA_orte_default_hostfile","value":"/etc/mpi/hostfile"},{"name":"I_MPI_HYDRA_BOOTSTRAP_EXEC","value":"/etc/mpi/kubexec.sh"}])");
}

TEST_CASE("mpi v1: ServiceAccount, ConfigMap, Role and RoleBinding, in upstream order") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  Document w1 = pod_doc("pi-worker-1", "worker", "Running");
  Document w0 = pod_doc("pi-worker-0", "worker", "Running");
  Document pending = pod_doc("pi-worker-2", "worker", "Pending");
  fw::Observed obs;
  obs.pods = {&w1.root(), &pending.root(), &w0.root()};
  auto objs = p->desired_objects(job.root(), obs);
  REQUIRE(objs);
  REQUIRE(objs->size() == 4);
  CHECK((*objs)[0].resource.resource == "serviceaccounts");
  CHECK((*objs)[1].resource.resource == "configmaps");
  CHECK((*objs)[2].resource.resource == "roles");
  CHECK((*objs)[3].resource.resource == "rolebindings");

  CHECK((*objs)[0].object.dump() ==
        R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"pi-launcher","namespace":"default","labels":{"app":"pi"}}})");
  CHECK((*objs)[0].use_existing);
  CHECK((*objs)[0].update == fw::DesiredObject::Update::Never);

  const auto& cm = (*objs)[1];
  CHECK(json::get_string(cm.object.root(), "/metadata/name") == "pi-config");
  CHECK(dump_at(cm.object.root(), "/metadata/labels") == R"({"app":"pi"})");
  CHECK(json::get_string(cm.object.root(), "/data/hostfile") == "pi-worker-0 slots=2\npi-worker-1 slots=2\n");
  CHECK(json::get_string(cm.object.root(), "/data/kubexec.sh") ==
        "#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n/opt/kube/kubectl exec ${POD_NAME} -- /bin/sh -c \"$*\"");
  CHECK(json::get_string(cm.object.root(), "/data/discover_hosts.sh") == "#!/bin/sh\necho pi-worker-0:2\necho pi-worker-1:2");
  CHECK(cm.update == fw::DesiredObject::Update::WhenDiffers);
  CHECK(cm.compared == std::vector<std::string>{"/data"});

  CHECK((*objs)[2].object.dump() ==
        R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"pi-launcher","namespace":"default","labels":{"app":"pi"}},"rules":[{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["pods"]},{"verbs":["create"],"apiGroups":[""],"resources":["pods/exec"],"resourceNames":["pi-worker-0","pi-worker-1"]}]})");
  CHECK((*objs)[2].compared == std::vector<std::string>{"/rules"});
  CHECK((*objs)[3].object.dump() ==
        R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"pi-launcher","namespace":"default","labels":{"app":"pi"}},"subjects":[{"kind":"ServiceAccount","name":"pi-launcher","namespace":"default"}],"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"pi-launcher"}})");
  CHECK((*objs)[3].update == fw::DesiredObject::Update::Never);
}

TEST_CASE("mpi v1: GPU launcher, mainContainer and the template's ServiceAccount shape the objects") {
  auto p = plugin();
  Document job = defaulted(R"(
metadata: {name: g, namespace: ns}
spec:
  mainContainer: trainer
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          serviceAccountName: mine
          containers: [{name: m, image: i, resources: {limits: {example.com/gpu: 1}}}]
    Worker: {replicas: 1, template: {spec: {containers: [{name: m, image: i}]}}}
)",
                           p);
  Document w0 = pod_doc("g-worker-0", "worker", "Running");
  fw::Observed obs;
  obs.pods = {&w0.root()};
  auto objs = p->desired_objects(job.root(), obs);
  REQUIRE(objs);
  const auto& cm = find_object(*objs, "configmaps")->object.root();
  CHECK(json::get_string(cm, "/data/hostfile") == "g-launcher slots=1\ng-worker-0 slots=1\n");
  CHECK(json::get_string(cm, "/data/discover_hosts.sh") == "#!/bin/sh\necho g-launcher:1\n\necho g-worker-0:1");
  CHECK(json::get_string(cm, "/data/kubexec.sh") ==
        "#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n/opt/kube/kubectl exec ${POD_NAME} --container trainer -- /bin/sh -c \"$*\"");
  CHECK(json::get_string(find_object(*objs, "serviceaccounts")->object.root(), "/metadata/name") == "mine");
  CHECK(dump_at(find_object(*objs, "rolebindings")->object.root(), "/subjects") ==
        R"([{"kind":"ServiceAccount","name":"mine","namespace":"ns"}])");

  // A launcher with no workers: no hosts and no resourceNames.
  Document alone = defaulted("{metadata: {name: a, namespace: ns}, spec: {mpiReplicaSpecs: {Launcher: {template: {spec: {containers: [{name: m, image: i}]}}}}}}", p);
  auto solo = p->desired_objects(alone.root(), {});
  REQUIRE(solo);
  CHECK(json::get_string(find_object(*solo, "configmaps")->object.root(), "/data/hostfile") == "");
  CHECK(json::get_string(find_object(*solo, "configmaps")->object.root(), "/data/discover_hosts.sh") == "#!/bin/sh");
  CHECK(dump_at(find_object(*solo, "roles")->object.root(), "/rules/1") ==
        R"({"verbs":["create"],"apiGroups":[""],"resources":["pods/exec"]})");
}

TEST_CASE("mpi v1: nothing is created or updated while suspended or once the launcher finished") {
  auto p = plugin();
  Document suspended = defaulted(R"(
metadata: {name: pi, namespace: default}
spec:
  runPolicy: {suspend: true}
  mpiReplicaSpecs: {Launcher: {template: {spec: {containers: [{name: m, image: i}]}}}}
)",
                                 p);
  auto none = p->desired_objects(suspended.root(), {});
  REQUIRE(none);
  CHECK(none->empty());
  Document job = defaulted(kPi, p);
  Document done = pod_doc("pi-launcher", "launcher", "Succeeded");
  fw::Observed obs;
  obs.pods = {&done.root()};
  auto after = p->desired_objects(job.root(), obs);
  REQUIRE(after);
  CHECK(after->empty());
}

TEST_CASE("mpi v1: status follows the launcher pod, worker failures fail the job with reason MPIJobFailed") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  auto status = [&](std::vector<const Document*> pods) {
    fw::Observed obs;
    for (const auto* d : pods) obs.pods.push_back(&d->root());
    return p->compute_status(job.root(), obs);
  };
  auto conditions = [](const fw::StatusProposal& s) {
    std::string out;
    for (const auto& c : s.conditions) out += c.type + "/" + c.reason + "/" + c.message + ";";
    return out;
  };
  Document lp = pod_doc("pi-launcher", "launcher", "Pending");
  Document lr = pod_doc("pi-launcher", "launcher", "Running");
  Document ls = pod_doc("pi-launcher", "launcher", "Succeeded");
  Document lf = pod_doc("pi-launcher", "launcher", "Failed");
  Document w0 = pod_doc("pi-worker-0", "worker", "Running");
  Document w1 = pod_doc("pi-worker-1", "worker", "Running");
  Document w1f = pod_doc("pi-worker-1", "worker", "Failed");
  Document w5 = pod_doc("pi-worker-5", "worker", "Running");  // beyond the replicas: not counted

  auto created = status({&lp, &w0, &w5});
  CHECK(conditions(created).empty());
  CHECK(created.replica_statuses["Launcher"].active == 0);
  CHECK(created.replica_statuses["Worker"].active == 1);

  auto running = status({&lr, &w0, &w1});
  CHECK(conditions(running) == "Running/MPIJobRunning/MPIJob pi is running.;");
  CHECK(running.replica_statuses["Launcher"].active == 1);
  CHECK(running.replica_statuses["Worker"].active == 2);
  CHECK_FALSE(running.set_completion_time);

  auto succeeded = status({&ls, &w0, &w1f});
  CHECK(conditions(succeeded) == "Succeeded/MPIJobSucceeded/MPIJob pi is successfully completed.;");
  CHECK(succeeded.set_completion_time);
  CHECK(succeeded.replica_statuses["Launcher"].succeeded == 1);
  CHECK(succeeded.replica_statuses["Worker"].active == 0);  // the launcher finished: workers no longer count
  CHECK(succeeded.replica_statuses["Worker"].failed == 0);

  auto launcher_failed = status({&lf, &w0, &w1});
  CHECK(conditions(launcher_failed) == "Failed/MPIJobFailed/MPIJob pi is failed because 1 Launcher replica(s) failed.;");
  CHECK(launcher_failed.set_completion_time);
  CHECK(launcher_failed.replica_statuses["Launcher"].failed == 1);

  auto worker_failed = status({&lr, &w0, &w1f});
  CHECK(conditions(worker_failed) ==
        "Running/MPIJobRunning/MPIJob pi is running.;Failed/MPIJobFailed/MPIJob pi is failed because 1 Worker replica(s) failed.;");

  Document exit_code = defaulted(R"(
metadata: {name: pi, namespace: default}
spec:
  mpiReplicaSpecs:
    Launcher: {template: {spec: {containers: [{name: m, image: i}]}}}
    Worker: {replicas: 2, restartPolicy: ExitCode, template: {spec: {containers: [{name: m, image: i}]}}}
)",
                                 p);
  fw::Observed obs;
  obs.pods = {&lr.root(), &w0.root(), &w1f.root()};
  auto restarting = p->compute_status(exit_code.root(), obs);
  CHECK(conditions(restarting) ==
        "Running/MPIJobRunning/MPIJob pi is running.;Restarting/MPIJobRestarting/MPIJob pi is restarting because 1 Worker replica(s) failed.;");
  CHECK_FALSE(restarting.set_completion_time);
}

TEST_CASE("mpi v1: conditions the core raises use training-operator's MPIJob wording") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  auto created = p->wording(fw::CoreEvent::Created, job.root(), "");
  CHECK(created.reason == "MPIJobCreated");
  CHECK(created.message == "MPIJob pi is created.");
  auto suspended = p->wording(fw::CoreEvent::Suspended, job.root(), "");
  CHECK(suspended.reason == "MPIJobSuspended");
  CHECK(suspended.message == "MPIJob pi is suspended.");
  auto backoff = p->wording(fw::CoreEvent::BackoffLimitExceeded, job.root(), "");
  CHECK(backoff.reason == "MPIJobFailed");
  CHECK(backoff.message == "Job pi has failed because it has reached the specified backoff limit");
  CHECK(p->wording(fw::CoreEvent::ValidationFailed, job.root(), "").reason == "MPIJobFailedValidation");
}

TEST_CASE("crd: MPIJob v1 serves only v1 with training-operator's schema") {
  std::ifstream in(std::string(UNITRAIN_SOURCE_DIR) + "/frameworks/mpi/v1/kubeflow.org_mpijobs_v1.yaml");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  auto docs = json::parse_yaml(ss.str());
  REQUIRE(docs);
  REQUIRE(docs->size() == 1);
  const auto& crd = (*docs)[0].root();
  CHECK(json::get_string(crd, "/metadata/name") == "mpijobs.kubeflow.org");
  CHECK(dump_at(crd, "/spec/names") == R"({"kind":"MPIJob","listKind":"MPIJobList","plural":"mpijobs","singular":"mpijob"})");
  REQUIRE(json::find(crd, "/spec/versions")->Size() == 1);
  CHECK(json::get_string(crd, "/spec/versions/0/name") == "v1");
  CHECK(json::get_bool(crd, "/spec/versions/0/served") == true);
  CHECK(json::get_bool(crd, "/spec/versions/0/storage") == true);
  CHECK(dump_at(crd, "/spec/versions/0/subresources") == R"({"status":{}})");
  CHECK(dump_at(crd, "/spec/versions/0/additionalPrinterColumns") ==
        R"([{"name":"State","type":"string","jsonPath":".status.conditions[-1:].type"},)"
              R"({"name":"Managed-By","type":"string","description":"The controller that runs the job (spec.runPolicy.managedBy).",)"
              R"("jsonPath":".spec.runPolicy.managedBy"},{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}])");
  const std::string schema = "/spec/versions/0/schema/openAPIV3Schema";
  const std::string spec = schema + "/properties/spec/properties";
  CHECK(dump_at(crd, schema + "/properties/spec/required") == R"(["mpiReplicaSpecs"])");
  CHECK(json::get_string(crd, spec + "/slotsPerWorker/format") == "int32");
  CHECK(json::find(crd, spec + "/slotsPerWorker/default") == nullptr);  // 1 is the controller's, not the CRD's
  CHECK(json::get_string(crd, spec + "/cleanPodPolicy/type") == "string");
  CHECK(json::get_string(crd, spec + "/mainContainer/type") == "string");
  CHECK(json::get_bool(crd, spec + "/runPolicy/properties/suspend/default") == false);
  CHECK(json::get_bool(crd, spec + "/mpiReplicaSpecs/additionalProperties/properties/template/x-kubernetes-preserve-unknown-fields") == true);
  CHECK(json::find(crd, spec + "/mpiReplicaSpecs/additionalProperties/properties/restartPolicy/enum") == nullptr);
  CHECK(json::find(crd, spec + "/sshAuthMountPath") == nullptr);  // a v2beta1 field
}

// Specs training-operator accepts and then never runs: refused with field paths, the same at
// admission and in the controller; upstream's own messages stand where it already refuses.
TEST_CASE("mpi v1: nonsense specs are refused with their field paths") {
  auto p = plugin();
  const Document base = yaml(kPi);
  unitrain::testing::check_refusals(*p, base, {
      {{R"({"spec":{"mpiReplicaSpecs":{"Worker":{"replicas":-1}}}})"},
       {"spec.mpiReplicaSpecs[Worker].replicas: Invalid value: -1: must be greater than or equal to 0"}},
      {{R"({"spec":{"mpiReplicaSpecs":{"Launcher":{"replicas":-1}}}})"},
       {"spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: -1: MPIReplicaSpec is not valid: There must be only 1 launcher replica"}},
      // An empty map lacks the Launcher: upstream's message, and no second complaint about the map.
      {{R"({"spec":{"mpiReplicaSpecs":null}})", R"({"spec":{"mpiReplicaSpecs":{}}})"},
       {"spec.mpiReplicaSpecs[Launcher]: Required value: MPIReplicaSpec is not valid: Master ReplicaSpec must be present"}},
      {{R"({"spec":{"runPolicy":{"activeDeadlineSeconds":-1,"backoffLimit":-2}}})"},
       {"spec.runPolicy.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
        "spec.runPolicy.backoffLimit: Invalid value: -2: must be greater than or equal to 0"}},
      {{R"({"spec":{"runPolicy":{"cleanPodPolicy":"Sometimes"}}})"},
       {R"(spec.runPolicy.cleanPodPolicy: Unsupported value: "Sometimes": supported values: "All", "None", "Running")"}},
  });
  // The deprecated spec.cleanPodPolicy, when runPolicy's is unset: admission names the field the
  // user wrote; the controller sees the value copied into runPolicy by the defaults.
  const auto deprecated = unitrain::testing::validation_views(
      *p, unitrain::testing::patched(base, {R"({"spec":{"runPolicy":null,"cleanPodPolicy":"Sometimes"}})"}));
  CHECK(deprecated.admission ==
        std::vector<std::string>{R"(spec.cleanPodPolicy: Unsupported value: "Sometimes": supported values: "All", "None", "Running")"});
  CHECK(deprecated.controller ==
        std::vector<std::string>{R"(spec.runPolicy.cleanPodPolicy: Unsupported value: "Sometimes": supported values: "All", "None", "Running")"});
}
