#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "core/framework/registry.h"
#include "core/json/json.h"
#include "frameworks/mpi/v2/register.h"
#include "frameworks/mpi/v2/ssh_key.h"
#include "tests/support/json.h"
#include "tests/support/framework.h"
#include "tests/support/skip.h"

namespace fw = unitrain::framework;
namespace json = unitrain::json;
namespace mpi = unitrain::frameworks::mpi::v2;
using json::Document;

namespace {

using unitrain::testing::yaml;
using unitrain::testing::skip;

std::unique_ptr<fw::FrameworkPlugin> plugin(std::string cluster_domain = "", std::string gang = "") {
  fw::PluginConfig c;
  c.cluster_domain = std::move(cluster_domain);
  c.gang_scheduler_name = std::move(gang);
  return unitrain::testing::instantiate(mpi::register_mpi_v2, "mpijob-v2", std::move(c));
}

Document parse(std::string_view text) {
  auto d = Document::parse(text);
  if (!d) FAIL(d.error().message);
  return *d;
}

constexpr std::string_view kPi = R"(
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: pi, namespace: default, uid: u-1}
spec:
  runPolicy: {cleanPodPolicy: Running, ttlSecondsAfterFinished: 60, backoffLimit: 3}
  mpiReplicaSpecs:
    Launcher:
      template:
        metadata: {labels: {team: a}}
        spec:
          volumes: [{name: data, emptyDir: {}}]
          containers:
            - name: launcher
              image: mpi-pi
              command: [mpirun]
              env: [{name: USER, value: u}]
              volumeMounts: [{name: data, mountPath: /data}]
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: worker
              image: mpi-pi
)";

Document defaulted(std::string_view text, const std::unique_ptr<fw::FrameworkPlugin>& p) {
  Document job = yaml(text);
  p->set_defaults(job);
  return job;
}

std::vector<std::string> messages(const fw::Validation& v) {
  std::vector<std::string> out;
  for (const auto& e : v.errors) out.push_back(e.to_string());
  return out;
}

Document worker_pod(std::string_view name, std::string_view phase, bool ready = false, std::string_view reason = "") {
  return parse(std::string(R"({"metadata":{"name":")") + std::string(name) +
               R"(","labels":{"training.kubeflow.org/job-name":"pi","training.kubeflow.org/job-role":"worker"}},"status":{"phase":")" +
               std::string(phase) + R"(","reason":")" + std::string(reason) + R"(","conditions":[{"type":"Ready","status":")" +
               (ready ? "True" : "False") + R"("}]}})");
}

Document launcher_pod(std::string_view name, std::string_view phase, std::string_view created = "2024-01-01T00:00:00Z",
                      std::string_view reason = "", std::string_view message = "") {
  return parse(std::string(R"({"metadata":{"name":")") + std::string(name) + R"(","creationTimestamp":")" + std::string(created) +
               R"(","labels":{"training.kubeflow.org/job-name":"pi","training.kubeflow.org/job-role":"launcher"},"ownerReferences":[{"kind":"Job","name":"pi-launcher","uid":"job-uid","controller":true}]},"status":{"phase":")" +
               std::string(phase) + R"(","reason":")" + std::string(reason) + R"(","message":")" + std::string(message) + R"("}})");
}

Document launcher_job(std::string_view conditions, int failed = 0) {
  return parse(std::string(R"({"metadata":{"name":"pi-launcher","uid":"job-uid"},"status":{"failed":)") + std::to_string(failed) +
               R"(,"completionTime":"2024-01-02T03:04:05Z","conditions":)" + std::string(conditions) + "}}");
}

const fw::DesiredObject* find_object(const std::vector<fw::DesiredObject>& objs, std::string_view resource) {
  for (const auto& o : objs) {
    if (o.resource.group_resource() == resource) return &o;
  }
  return nullptr;
}

std::string b64decode(std::string_view s) {
  std::string out(s.size(), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(s.data()),
                          static_cast<int>(s.size()));
  REQUIRE(n >= 0);
  std::size_t pad = 0;
  if (!s.empty() && s.back() == '=') ++pad;
  if (s.size() > 1 && s[s.size() - 2] == '=') ++pad;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

std::string read_string(std::string_view& wire) {
  REQUIRE(wire.size() >= 4);
  uint32_t n = (static_cast<uint32_t>(static_cast<unsigned char>(wire[0])) << 24) |
               (static_cast<uint32_t>(static_cast<unsigned char>(wire[1])) << 16) |
               (static_cast<uint32_t>(static_cast<unsigned char>(wire[2])) << 8) | static_cast<unsigned char>(wire[3]);
  REQUIRE(wire.size() >= 4 + n);
  std::string out(wire.substr(4, n));
  wire.remove_prefix(4 + n);
  return out;
}

std::string public_point_of_pem(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  REQUIRE(bio);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr), &EVP_PKEY_free);
  REQUIRE(key);
  char group[64] = {0};
  size_t glen = 0;
  REQUIRE(EVP_PKEY_get_utf8_string_param(key.get(), OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &glen) == 1);
  CHECK(std::string(group) == "secp521r1");
  size_t len = 0;
  REQUIRE(EVP_PKEY_get_octet_string_param(key.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, nullptr, 0, &len) == 1);
  std::string point(len, '\0');
  REQUIRE(EVP_PKEY_get_octet_string_param(key.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY,
                                          reinterpret_cast<unsigned char*>(point.data()), len, &len) == 1);
  return point;
}

}  // namespace

TEST_CASE("mpi v2: descriptor, aliases and capabilities") {
  fw::Registry r;
  REQUIRE(mpi::register_mpi_v2(r));
  const fw::Registration* reg = r.find("MPIJobV2");
  REQUIRE(reg != nullptr);
  CHECK(r.find("mpijob-v2") == reg);
  const auto& d = reg->descriptor;
  CHECK(d.name == "kubeflow.org/mpijob@v2beta1");
  CHECK(d.api_version() == "kubeflow.org/v2beta1");
  CHECK(d.kind == "MPIJob");
  CHECK_FALSE(d.kind_alias_default);  // the bare kind MPIJob is v1 (training-operator's meaning)
  CHECK(d.replica_types == std::vector<std::string>{"Launcher", "Worker"});
  CHECK(d.controller_name == "mpi-operator");
  CHECK(d.replica_type_label == "training.kubeflow.org/job-role");
  CHECK(d.managed_by == std::vector<std::string>{"kubeflow.org/mpi-operator"});
  std::vector<std::string> owned;
  for (const auto& g : d.owned_resources) owned.push_back(g.group_resource());
  CHECK(owned == std::vector<std::string>{"services", "configmaps", "secrets", "jobs.batch"});
  auto p = plugin();
  auto caps = p->capabilities();
  REQUIRE(caps.gang != nullptr);
  const auto behaviour = fw::pipeline_behaviour(*p);
  CHECK_FALSE(behaviour.ttl_deletes_job);
  CHECK_FALSE(behaviour.enforces_run_limits);
  CHECK_FALSE(behaviour.gang_holds_pod_creation);
  CHECK_FALSE(behaviour.delete_services_with_pods);
  CHECK(behaviour.validates_defaulted);
  Document job = defaulted(kPi, p);
  auto no_classes = [](std::string_view) { return 0; };
  CHECK(caps.gang->pod_group(job.root(), no_classes)->min_member == 3);
  REQUIRE(json::set_int(job, "/spec/runPolicy/schedulingPolicy/minAvailable", 2));
  CHECK(caps.gang->pod_group(job.root(), no_classes)->min_member == 2);
  CHECK(behaviour.reconciles_on_any_child);
  CHECK(behaviour.status_while_suspended);
  CHECK(behaviour.ordered_pod_writes);
}

TEST_CASE("mpi v2: the PodGroup mpi-operator asks for") {
  auto p = plugin("", "volcano");
  auto priority = [](std::string_view name) { return name == "high" ? 1000 : name == "low" ? 10 : 0; };
  auto policy = [&](std::string_view text) {
    Document job = defaulted(text, p);
    auto r = p->capabilities().gang->pod_group(job.root(), priority);
    if (!r) FAIL(r.error().message);
    return std::move(*r);
  };
  auto resources = [](const fw::PodGroupPolicy& pg) {
    return pg.min_resources ? json::canonical(pg.min_resources->root()) : std::string("<none>");
  };
  const std::string job = R"(
metadata: {name: pi, namespace: ns, annotations: {scheduling.volcano.sh/queue-name: from-annotation}}
spec:
  runPolicy: {schedulingPolicy: SCHEDULING}
  mpiReplicaSpecs:
    Launcher:
      template: {spec: {priorityClassName: LAUNCHER_CLASS, containers: [{name: l, image: i, resources: {requests: {cpu: 500m}}}]}}
    Worker:
      replicas: 3
      template:
        spec:
          priorityClassName: low
          containers:
            - {name: w, image: i, resources: {requests: {cpu: "1"}, limits: {cpu: "2", memory: 1Gi, nvidia.com/gpu: "1"}}}
            - {name: sidecar, image: i}
)";
  auto with = [&](std::string scheduling, std::string launcher_class) {
    std::string t = job;
    t.replace(t.find("SCHEDULING"), 10, scheduling);
    t.replace(t.find("LAUNCHER_CLASS"), 14, launcher_class);
    return t;
  };
  // Everything from the job: the annotation's queue, the launcher's class, all four pods.
  auto all = policy(with("{}", "high"));
  CHECK(all.min_member == 4);
  CHECK(all.queue == "from-annotation");
  CHECK(all.priority_class == "high");
  CHECK(all.schedule_timeout_seconds == 0);
  CHECK(resources(all) == R"({"cpu":"3500m","memory":"3Gi","nvidia.com/gpu":"3"})");
  // schedulingPolicy wins; minAvailable 2 of 4 pods: the lower-priority workers count one.
  auto given = policy(with("{queue: q, priorityClass: pc, minAvailable: 2, scheduleTimeoutSeconds: 30}", "high"));
  CHECK(given.queue == "q");
  CHECK(given.priority_class == "pc");
  CHECK(given.schedule_timeout_seconds == 30);
  CHECK(resources(given) == R"({"cpu":"1500m","memory":"1Gi","nvidia.com/gpu":"1"})");
  // A launcher below the workers counts minAvailable - 1 = 0 launchers, all workers stay.
  auto low_launcher = policy(with("{minAvailable: 1}", "\"\""));
  CHECK(low_launcher.priority_class == "low");  // the worker template's
  CHECK(resources(low_launcher) == R"({"cpu":"3","memory":"3Gi","nvidia.com/gpu":"3"})");
  // On a tie the workers are trimmed.
  auto tie = policy(with("{minAvailable: 3}", "low"));
  CHECK(resources(tie) == R"({"cpu":"2500m","memory":"2Gi","nvidia.com/gpu":"2"})");
  // minAvailable 0: no minResources at all; given minResources are taken as they are.
  CHECK(resources(policy(with("{minAvailable: 0}", "high"))) == "<none>");
  CHECK(resources(policy(with("{minResources: {cpu: \"7\"}}", "high"))) == R"({"cpu":"7"})");
  // No queue anywhere: none.
  Document bare = defaulted(kPi, p);
  CHECK(p->capabilities().gang->pod_group(bare.root(), priority)->queue.empty());
}

TEST_CASE("mpi v2: defaults") {
  auto p = plugin();
  Document job = defaulted(R"(
metadata: {name: j}
spec:
  mpiReplicaSpecs:
    Launcher: {template: {spec: {containers: [{name: l, image: i}]}}}
    Worker: {template: {spec: {containers: [{name: w, image: i}]}}}
)", p);
  CHECK(json::dump(*json::find(job.root(), "/spec")) ==
        R"({"mpiReplicaSpecs":{"Launcher":{"template":{"spec":{"containers":[{"name":"l","image":"i"}]}},"restartPolicy":"OnFailure","replicas":1},"Worker":{"template":{"spec":{"containers":[{"name":"w","image":"i"}]}},"restartPolicy":"Never","replicas":0}},"runPolicy":{"cleanPodPolicy":"None"},"slotsPerWorker":1,"sshAuthMountPath":"/root/.ssh","mpiImplementation":"OpenMPI","launcherCreationPolicy":"AtStartup"})");
  // The defaulted Worker without replicas fails validation, as upstream.
  CHECK(messages(p->validate(nullptr, job.root())) ==
        std::vector<std::string>{"spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: must be greater than or equal to 1"});
  Document pi = defaulted(kPi, p);
  CHECK(p->validate(nullptr, pi.root()).ok());
}

TEST_CASE("mpi v2: validation errors in upstream order with upstream messages") {
  auto p = plugin();
  Document job = yaml(R"(
metadata: {name: Pi}
spec:
  slotsPerWorker: -1
  sshAuthMountPath: ""
  mpiImplementation: Foo
  runPolicy: {cleanPodPolicy: Sometimes, ttlSecondsAfterFinished: -1, activeDeadlineSeconds: -2, backoffLimit: -3, managedBy: example.com/x}
  mpiReplicaSpecs:
    Launcher: {replicas: 2, restartPolicy: Always, template: {spec: {containers: []}}}
    Worker: {replicas: 0, template: {spec: {containers: [{name: w, image: i}]}}}
)");
  const std::string dns =
      "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, "
      "and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
      "'[a-z]([-a-z0-9]*[a-z0-9])?')";
  CHECK(messages(p->validate(nullptr, job.root())) ==
        std::vector<std::string>{
            "metadata.name: Invalid value: \"Pi\": will not able to create pod and service with invalid DNS label \"Pi-worker-0\": " + dns,
            "spec.mpiReplicaSpecs[Launcher].restartPolicy: Unsupported value: \"Always\": supported values: \"Never\", \"OnFailure\"",
            "spec.mpiReplicaSpecs[Launcher].template.spec.containers: Required value: must define at least one container",
            "spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: 2: must be 1",
            "spec.mpiReplicaSpecs[Worker].restartPolicy: Unsupported value: \"\": supported values: \"Never\", \"OnFailure\"",
            "spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: must be greater than or equal to 1",
            "spec.slotsPerWorker: Invalid value: -1: must be greater than or equal to 0",
            "spec.runPolicy.cleanPodPolicy: Unsupported value: \"Sometimes\": supported values: \"All\", \"None\", \"Running\"",
            "spec.runPolicy.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0",
            "spec.runPolicy.activeDeadlineSeconds: Invalid value: -2: must be greater than or equal to 0",
            "spec.runPolicy.backoffLimit: Invalid value: -3: must be greater than or equal to 0",
            "spec.runPolicy.managedBy: Unsupported value: \"example.com/x\": supported values: \"kubeflow.org/mpi-operator\", "
            "\"kueue.x-k8s.io/multikueue\"",
            "spec.sshAuthMountPath: Required value: must have a mount path for SSH credentials",
            "spec.mpiImplementation: Unsupported value: \"Foo\": supported values: \"Intel\", \"MPICH\", \"OpenMPI\"",
        });

  Document empty = yaml("metadata: {name: j}\nspec: {}\n");
  CHECK(messages(p->validate(nullptr, empty.root())) ==
        std::vector<std::string>{
            "spec.mpiReplicaSpecs: Required value: must have replica specs",
            "spec.slotsPerWorker: Required value: must have number of slots per worker",
            "spec.runPolicy.cleanPodPolicy: Required value: must have clean Pod policy",
            "spec.sshAuthMountPath: Required value: must have a mount path for SSH credentials",
            "spec.mpiImplementation: Unsupported value: \"\": supported values: \"Intel\", \"MPICH\", \"OpenMPI\"",
        });

  Document no_launcher = defaulted("metadata: {name: j}\nspec:\n  mpiReplicaSpecs:\n    Worker: {template: {spec: {containers: [{name: w, image: i}]}}}\n", p);
  REQUIRE(json::remove(no_launcher, "/spec/mpiReplicaSpecs/Worker/replicas"));
  CHECK(messages(p->validate(nullptr, no_launcher.root())) ==
        std::vector<std::string>{"spec.mpiReplicaSpecs[Launcher]: Required value: must have Launcher replica spec",
                                 "spec.mpiReplicaSpecs[Worker].replicas: Required value: must define number of replicas"});

  // The longest worker name decides: 60 characters + "-worker-9" is too long.
  Document long_name = defaulted(kPi, p);
  REQUIRE(json::set_string(long_name, "/metadata/name", std::string(60, 'a')));
  REQUIRE(json::set_int(long_name, "/spec/mpiReplicaSpecs/Worker/replicas", 10));
  auto v = messages(p->validate(nullptr, long_name.root()));
  REQUIRE(v.size() == 1);
  CHECK(v[0].find(std::string(60, 'a') + "-worker-9\": must be no more than 63 characters") != std::string::npos);
}

TEST_CASE("mpi v2: worker slots and the decorated worker pod") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  auto slots = p->pod_slots(job.root());
  REQUIRE(slots.size() == 2);
  CHECK(slots[1].replica_type == "Worker");
  CHECK(slots[1].index == 1);

  Document pod = parse(R"({"metadata":{"name":"pi-worker-1","labels":{"training.kubeflow.org/job-role":"worker"}},"spec":{"containers":[{"name":"worker","image":"mpi-pi"}],"restartPolicy":"Never"}})");
  REQUIRE(p->decorate_pod(job.root(), slots[1], pod));
  CHECK(pod.dump() ==
        R"({"metadata":{"name":"pi-worker-1","labels":{"training.kubeflow.org/job-role":"worker"}},"spec":{"containers":[{"name":"worker","image":"mpi-pi","command":["/usr/sbin/sshd","-De"],"env":[{"name":"K_MPI_JOB_ROLE","value":"worker"}],"volumeMounts":[{"name":"ssh-auth","mountPath":"/root/.ssh"}]}],"restartPolicy":"Never","hostname":"pi-worker-1","subdomain":"pi","dnsConfig":{"searches":["pi.default.svc.cluster.local"]},"volumes":[{"name":"ssh-auth","secret":{"secretName":"pi-ssh","items":[{"key":"ssh-privatekey","path":"id_rsa"},{"key":"ssh-publickey","path":"id_rsa.pub"},{"key":"ssh-publickey","path":"authorized_keys"}],"defaultMode":384}}]}})");
}

TEST_CASE("mpi v2: worker pod with launcher-as-worker, host network, own command, custom ssh path and cluster domain") {
  auto p = plugin("example.org");
  Document job = defaulted(kPi, p);
  REQUIRE(json::set_bool(job, "/spec/runLauncherAsWorker", true));
  REQUIRE(json::set_string(job, "/spec/sshAuthMountPath", "/home/mpiuser/.ssh"));
  Document pod = parse(R"({"metadata":{"name":"pi-worker-0","labels":{"training.kubeflow.org/replica-index":"0"}},"spec":{"hostNetwork":true,"dnsConfig":{"searches":["user.local"]},"containers":[{"name":"w","args":["-x"]}]}})");
  REQUIRE(p->decorate_pod(job.root(), {"Worker", 0}, pod));
  CHECK(json::get_string(pod.root(), "/metadata/labels/training.kubeflow.org~1replica-index") == "1");
  CHECK(json::get_string(pod.root(), "/spec/dnsPolicy") == "ClusterFirstWithHostNet");
  CHECK(json::dump(*json::find(pod.root(), "/spec/dnsConfig/searches")) == R"(["user.local","pi.default.svc.example.org"])");
  CHECK(json::find(pod.root(), "/spec/containers/0/command") == nullptr);
  CHECK(json::get_string(pod.root(), "/spec/containers/0/volumeMounts/0/mountPath") == "/home/mpiuser/.ssh");
  CHECK(json::find(pod.root(), "/spec/volumes/0/secret/defaultMode") == nullptr);
  CHECK_FALSE(p->decorate_pod(job.root(), {"Launcher", 0}, pod));
}

TEST_CASE("mpi v2: first pass objects: Service, ConfigMap, Secret and launcher Job") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  auto objs = p->desired_objects(job.root(), {});
  REQUIRE(objs);
  REQUIRE(objs->size() == 4);

  const auto* svc = find_object(*objs, "services");
  REQUIRE(svc != nullptr);
  CHECK(svc->object.dump() ==
        R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"pi","namespace":"default","labels":{"app":"pi"}},"spec":{"clusterIP":"None","selector":{"training.kubeflow.org/job-name":"pi","training.kubeflow.org/operator-name":"mpi-operator"}}})");
  CHECK(svc->update == fw::DesiredObject::Update::WhenDiffers);
  CHECK(svc->compared == std::vector<std::string>{"/spec/selector", "/spec/publishNotReadyAddresses"});

  const auto* cm = find_object(*objs, "configmaps");
  REQUIRE(cm != nullptr);
  CHECK(cm->object.dump() ==
        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pi-config","namespace":"default","labels":{"app":"pi"}},"data":{"discover_hosts.sh":"#!/bin/sh\n","hostfile":"pi-worker-0.pi.default.svc slots=1\npi-worker-1.pi.default.svc slots=1\n"}})");
  CHECK(cm->compared == std::vector<std::string>{"/data"});

  const auto* secret = find_object(*objs, "secrets");
  REQUIRE(secret != nullptr);
  CHECK(secret->update == fw::DesiredObject::Update::Never);
  CHECK(json::get_string(secret->object.root(), "/metadata/name") == "pi-ssh");
  CHECK(json::get_string(secret->object.root(), "/type") == "kubernetes.io/ssh-auth");
  const std::string pem = b64decode(*json::get_string(secret->object.root(), "/data/ssh-privatekey"));
  const std::string pub = b64decode(*json::get_string(secret->object.root(), "/data/ssh-publickey"));
  CHECK(pem.rfind("-----BEGIN EC PRIVATE KEY-----\n", 0) == 0);
  CHECK(pub.rfind("ecdsa-sha2-nistp521 ", 0) == 0);

  const auto* launcher = find_object(*objs, "jobs.batch");
  REQUIRE(launcher != nullptr);
  CHECK(launcher->compared == std::vector<std::string>{"/spec/suspend"});
  const auto& l = launcher->object.root();
  CHECK(json::dump(*json::find(l, "/metadata")) == R"({"name":"pi-launcher","namespace":"default","labels":{"app":"pi"}})");
  CHECK(json::get_int(l, "/spec/backoffLimit") == 3);
  CHECK(json::get_int(l, "/spec/ttlSecondsAfterFinished") == 60);
  CHECK(json::find(l, "/spec/activeDeadlineSeconds") == nullptr);
  CHECK(json::get_bool(l, "/spec/suspend") == false);
  CHECK(json::get_string(l, "/spec/podReplacementPolicy") == "Failed");
  CHECK(json::dump(*json::find(l, "/spec/template/metadata")) ==
        R"({"labels":{"team":"a","training.kubeflow.org/operator-name":"mpi-operator","training.kubeflow.org/job-name":"pi","training.kubeflow.org/job-role":"launcher"},"ownerReferences":[{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","name":"pi","uid":"u-1","controller":true,"blockOwnerDeletion":true}]})");
  CHECK(json::get_string(l, "/spec/template/spec/hostname") == "pi-launcher");
  CHECK(json::get_string(l, "/spec/template/spec/subdomain") == "pi");
  CHECK(json::get_string(l, "/spec/template/spec/restartPolicy") == "OnFailure");
  CHECK(json::find(l, "/spec/template/spec/dnsConfig") == nullptr);
  CHECK(json::dump(*json::find(l, "/spec/template/spec/containers/0/env")) ==
        R"([{"name":"USER","value":"u"},{"name":"K_MPI_JOB_ROLE","value":"launcher"},{"name":"OMPI_MCA_orte_keep_fqdn_hostnames","value":"true"},{"name":"OMPI_MCA_orte_default_hostfile","value":"/etc/mpi/hostfile"},{"name":"OMPI_MCA_plm_rsh_args","value":"-o ConnectionAttempts=10"},{"name":"OMPI_MCA_orte_set_default_slots","value":"1"},{"name":"NVIDIA_VISIBLE_DEVICES"},{"name":"NVIDIA_DRIVER_CAPABILITIES"}])");
  CHECK(json::dump(*json::find(l, "/spec/template/spec/containers/0/volumeMounts")) ==
        R"([{"name":"data","mountPath":"/data"},{"name":"ssh-auth","mountPath":"/root/.ssh"},{"name":"mpi-job-config","mountPath":"/etc/mpi"}])");
  CHECK(json::dump(*json::find(l, "/spec/template/spec/volumes")) ==
        R"([{"name":"data","emptyDir":{}},{"name":"ssh-auth","secret":{"secretName":"pi-ssh","items":[{"key":"ssh-privatekey","path":"id_rsa"},{"key":"ssh-publickey","path":"id_rsa.pub"},{"key":"ssh-publickey","path":"authorized_keys"}],"defaultMode":384}},{"name":"mpi-job-config","configMap":{"name":"pi-config","items":[{"key":"hostfile","path":"hostfile","mode":292},{"key":"discover_hosts.sh","path":"discover_hosts.sh","mode":365}]}}])");
}

TEST_CASE("mpi v2: the launcher template joins the gang") {
  auto volcano = plugin("", "Volcano");
  Document job = defaulted(kPi, volcano);
  auto v = volcano->desired_objects(job.root(), {});
  REQUIRE(v);
  const auto& vt = *json::find(find_object(*v, "jobs.batch")->object.root(), "/spec/template");
  CHECK(json::get_string(vt, "/spec/schedulerName") == "volcano");
  CHECK(json::get_string(vt, "/metadata/annotations/scheduling.k8s.io~1group-name") == "pi");
  CHECK(json::find(vt, "/metadata/labels/scheduling.x-k8s.io~1pod-group") == nullptr);

  auto plugins = plugin("", "scheduler-plugins-scheduler");
  auto sp = plugins->desired_objects(job.root(), {});
  REQUIRE(sp);
  const auto& st = *json::find(find_object(*sp, "jobs.batch")->object.root(), "/spec/template");
  CHECK(json::get_string(st, "/spec/schedulerName") == "scheduler-plugins-scheduler");
  CHECK(json::get_string(st, "/metadata/labels/scheduling.x-k8s.io~1pod-group") == "pi");
  CHECK(json::get_string(st, "/metadata/labels/team") == "a");
  CHECK(json::find(st, "/metadata/annotations") == nullptr);

  auto none = plugin();
  auto n = none->desired_objects(job.root(), {});
  REQUIRE(n);
  CHECK(json::find(find_object(*n, "jobs.batch")->object.root(), "/spec/template/spec/schedulerName") == nullptr);
}

// mpi-operator marks its launcher for the gang scheduler unlike training-operator marks pods: the
// scheduler it names replaces the template's, and Volcano gets no task-spec annotation.
TEST_CASE("mpi v2: the launcher's gang marking overrides the template's scheduler and adds no task spec") {
  std::string text(kPi);
  const std::string at = "        spec:\n          volumes: [{name: data, emptyDir: {}}]";
  REQUIRE(text.find(at) != std::string::npos);
  text.replace(text.find(at), at.size(),
               "        spec:\n          schedulerName: default-scheduler\n          volumes: [{name: data, emptyDir: {}}]");
  for (const auto& [gang, scheduler] : {std::pair{"volcano", "volcano"}, std::pair{"sched-x", "sched-x"}}) {
    INFO(gang);
    auto p = plugin("", gang);
    Document job = defaulted(text, p);
    auto objects = p->desired_objects(job.root(), {});
    REQUIRE(objects);
    const auto& t = *json::find(find_object(*objects, "jobs.batch")->object.root(), "/spec/template");
    CHECK(json::get_string(t, "/spec/schedulerName") == std::string_view(scheduler));
    CHECK(json::find(t, "/metadata/annotations/volcano.sh~1task-spec") == nullptr);
    const bool volcano = std::string_view(gang) == "volcano";
    CHECK((json::find(t, "/metadata/annotations/scheduling.k8s.io~1group-name") != nullptr) == volcano);
    CHECK((json::find(t, "/metadata/labels/scheduling.x-k8s.io~1pod-group") != nullptr) == !volcano);
  }
}

TEST_CASE("mpi v2: resuming a suspended launcher Job syncs its scheduling directives") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  REQUIRE(json::set(job, "/spec/mpiReplicaSpecs/Launcher/template/spec/nodeSelector",
                    json::clone(parse(R"({"pool":"gpu"})").root(), job.alloc())));
  Document observed_job = parse(R"({"metadata":{"name":"pi-launcher","uid":"job-uid"},"spec":{"suspend":true,"template":{"metadata":{"labels":{"team":"old","added-by-kueue":"yes"},"annotations":{"note":"kept"}},"spec":{"nodeSelector":{"pool":"cpu"}}}}})");
  fw::Observed obs;
  obs.owned["jobs.batch"] = {&observed_job.root()};
  auto objs = p->desired_objects(job.root(), obs);
  REQUIRE(objs);
  const auto* l = find_object(*objs, "jobs.batch");
  REQUIRE(l != nullptr);
  CHECK(l->compared == std::vector<std::string>{"/spec/suspend", "/spec/template/metadata/labels",
                                                "/spec/template/metadata/annotations", "/spec/template/spec/nodeSelector",
                                                "/spec/template/spec/tolerations", "/spec/template/spec/schedulingGates"});
  const auto& t = *json::find(l->object.root(), "/spec/template");
  CHECK(json::get_string(t, "/metadata/labels/team") == "a");
  CHECK(json::get_string(t, "/metadata/labels/added-by-kueue") == "yes");
  CHECK(json::get_string(t, "/metadata/annotations/note") == "kept");
  CHECK(json::get_string(t, "/spec/nodeSelector/pool") == "gpu");
  CHECK(json::get_bool(l->object.root(), "/spec/suspend") == false);
  // The launcher comes after the workers; its startTime goes first (the template is immutable
  // while it is set).
  CHECK(l->after_pods);
  CHECK(l->status_cleared_first == std::vector<std::string>{"/status/startTime"});

  // While the Job runs (not suspended) only spec.suspend is compared.
  REQUIRE(json::set_bool(observed_job, "/spec/suspend", false));
  auto running = p->desired_objects(job.root(), obs);
  REQUIRE(running);
  CHECK(find_object(*running, "jobs.batch")->compared == std::vector<std::string>{"/spec/suspend"});
  CHECK(find_object(*running, "jobs.batch")->status_cleared_first.empty());
  CHECK(find_object(*running, "services")->after_pods == false);
}

TEST_CASE("mpi v2: hostfile and launcher env per MPI implementation") {
  auto p = plugin("cluster.example");
  Document job = defaulted(kPi, p);
  REQUIRE(json::set_int(job, "/spec/slotsPerWorker", 4));
  REQUIRE(json::set_string(job, "/spec/mpiImplementation", "Intel"));
  REQUIRE(json::set_bool(job, "/spec/runLauncherAsWorker", true));
  auto objs = p->desired_objects(job.root(), {});
  REQUIRE(objs);
  const auto& cm = find_object(*objs, "configmaps")->object.root();
  CHECK(json::get_string(cm, "/data/hostfile") ==
        "pi-launcher.pi.default.svc.cluster.example:4\npi-worker-0.pi.default.svc.cluster.example:4\n"
        "pi-worker-1.pi.default.svc.cluster.example:4\n");
  CHECK(json::get_string(cm, "/data/discover_hosts.sh") == "#!/bin/sh\necho pi-launcher.pi.default.svc.cluster.example\n");
  const auto& svc = find_object(*objs, "services")->object.root();
  CHECK(json::get_bool(svc, "/spec/publishNotReadyAddresses") == true);
  const auto& l = find_object(*objs, "jobs.batch")->object.root();
  CHECK(json::dump(*json::find(l, "/spec/template/spec/containers/0/env")) ==
        R"([{"name":"USER","value":"u"},{"name":"K_MPI_JOB_ROLE","value":"launcher"},{"name":"I_MPI_HYDRA_HOST_FILE","value":"/etc/mpi/hostfile"},{"name":"I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS","value":"-o ConnectionAttempts=10"},{"name":"I_MPI_PERHOST","value":"4"}])");
  CHECK(json::get_string(l, "/spec/template/metadata/labels/training.kubeflow.org~1replica-index") == "0");

  REQUIRE(json::set_string(job, "/spec/mpiImplementation", "MPICH"));
  REQUIRE(json::set_bool(job, "/spec/runLauncherAsWorker", false));
  auto mpich = p->desired_objects(job.root(), {});
  REQUIRE(mpich);
  CHECK(json::get_string(find_object(*mpich, "configmaps")->object.root(), "/data/hostfile") ==
        "pi-worker-0.pi.default.svc.cluster.example:4\npi-worker-1.pi.default.svc.cluster.example:4\n");
  CHECK(json::dump(*json::find(find_object(*mpich, "jobs.batch")->object.root(), "/spec/template/spec/containers/0/env")) ==
        R"([{"name":"USER","value":"u"},{"name":"K_MPI_JOB_ROLE","value":"launcher"},{"name":"HYDRA_HOST_FILE","value":"/etc/mpi/hostfile"},{"name":"HYDRA_LAUNCH_EXTRA_ARGS","value":"-o ConnectionAttempts=10"},{"name":"NVIDIA_VISIBLE_DEVICES"},{"name":"NVIDIA_DRIVER_CAPABILITIES"}])");
}

TEST_CASE("mpi v2: discover_hosts.sh lists running workers sorted by name") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  REQUIRE(json::set_int(job, "/spec/mpiReplicaSpecs/Worker/replicas", 11));
  Document w2 = worker_pod("pi-worker-2", "Running");
  Document w10 = worker_pod("pi-worker-10", "Running");
  Document w0 = worker_pod("pi-worker-0", "Pending");
  Document other = parse(R"({"metadata":{"name":"x","labels":{"training.kubeflow.org/job-name":"other","training.kubeflow.org/job-role":"worker"}},"status":{"phase":"Running"}})");
  fw::Observed obs;
  obs.pods = {&w2.root(), &w10.root(), &w0.root(), &other.root()};
  auto objs = p->desired_objects(job.root(), obs);
  REQUIRE(objs);
  CHECK(json::get_string(find_object(*objs, "configmaps")->object.root(), "/data/discover_hosts.sh") ==
        "#!/bin/sh\necho pi-worker-10.pi.default.svc\necho pi-worker-2.pi.default.svc\n");
}

TEST_CASE("mpi v2: the SSH Secret is generated only when missing or incomplete") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  Document good = parse(R"({"metadata":{"name":"pi-ssh"},"data":{"ssh-privatekey":"a","ssh-publickey":"b"}})");
  fw::Observed obs;
  obs.owned["secrets"] = {&good.root()};
  auto objs = p->desired_objects(job.root(), obs);
  REQUIRE(objs);
  CHECK(find_object(*objs, "secrets") == nullptr);

  Document partial = parse(R"({"metadata":{"name":"pi-ssh"},"data":{"ssh-privatekey":"a"}})");
  obs.owned["secrets"] = {&partial.root()};
  auto fixed = p->desired_objects(job.root(), obs);
  REQUIRE(fixed);
  const auto* s = find_object(*fixed, "secrets");
  REQUIRE(s != nullptr);
  CHECK(s->update == fw::DesiredObject::Update::WhenDiffers);
  CHECK(s->compared == std::vector<std::string>{"/data"});
}

TEST_CASE("mpi v2: generated key pair: SEC1 PEM and a matching OpenSSH authorized key") {
  auto key = mpi::generate_ssh_key();
  REQUIRE(key);
  CHECK(key->private_key_pem.rfind("-----BEGIN EC PRIVATE KEY-----\n", 0) == 0);
  CHECK(key->private_key_pem.find("-----END EC PRIVATE KEY-----\n") != std::string::npos);
  const std::string& line = key->authorized_key;
  REQUIRE(line.back() == '\n');
  REQUIRE(line.rfind("ecdsa-sha2-nistp521 ", 0) == 0);
  const std::string blob = b64decode(std::string_view(line).substr(20, line.size() - 21));
  std::string_view wire = blob;
  CHECK(read_string(wire) == "ecdsa-sha2-nistp521");
  CHECK(read_string(wire) == "nistp521");
  const std::string q = read_string(wire);
  CHECK(wire.empty());
  REQUIRE(q.size() == 133);  // 0x04 || X || Y, 66 bytes each
  CHECK(q[0] == '\x04');
  CHECK(q == public_point_of_pem(key->private_key_pem));

  auto other = mpi::generate_ssh_key();
  REQUIRE(other);
  CHECK(other->authorized_key != key->authorized_key);
}

TEST_CASE("mpi v2: WaitForWorkersReady holds the launcher until every worker is Ready") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  REQUIRE(json::set_string(job, "/spec/launcherCreationPolicy", "WaitForWorkersReady"));
  fw::Observed none;
  auto objs = p->desired_objects(job.root(), none);
  REQUIRE(objs);
  CHECK(find_object(*objs, "jobs.batch") == nullptr);

  Document w0 = worker_pod("pi-worker-0", "Running", true);
  Document w1 = worker_pod("pi-worker-1", "Running", false);
  fw::Observed obs;
  obs.pods = {&w0.root(), &w1.root()};
  auto one_ready = p->desired_objects(job.root(), obs);
  REQUIRE(one_ready);
  CHECK(find_object(*one_ready, "jobs.batch") == nullptr);
  Document w1r = worker_pod("pi-worker-1", "Running", true);
  obs.pods = {&w0.root(), &w1r.root()};
  auto ready = p->desired_objects(job.root(), obs);
  REQUIRE(ready);
  CHECK(find_object(*ready, "jobs.batch") != nullptr);

  // Suspended: the launcher Job is created suspended right away.
  REQUIRE(json::set_bool(job, "/spec/runPolicy/suspend", true));
  auto suspended = p->desired_objects(job.root(), none);
  REQUIRE(suspended);
  const auto* l = find_object(*suspended, "jobs.batch");
  REQUIRE(l != nullptr);
  CHECK(json::get_bool(l->object.root(), "/spec/suspend") == true);

  Document at_startup = defaulted(kPi, p);
  auto started = p->desired_objects(at_startup.root(), none);
  REQUIRE(started);
  CHECK(find_object(*started, "jobs.batch") != nullptr);
}

TEST_CASE("mpi v2: nothing is desired once the launcher finished") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  Document done = launcher_job(R"([{"type":"Complete","status":"True"}])");
  fw::Observed obs;
  obs.owned["jobs.batch"] = {&done.root()};
  auto objs = p->desired_objects(job.root(), obs);
  REQUIRE(objs);
  CHECK(objs->empty());
}

TEST_CASE("mpi v2: status while starting and running") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  fw::Observed obs;
  auto s = p->compute_status(job.root(), obs);
  CHECK(s.replica_statuses.count("Launcher") == 0);
  CHECK(s.replica_statuses.count("Worker") == 1);
  CHECK(s.conditions.empty());

  Document lj = launcher_job("[]", 1);
  Document lp = launcher_pod("pi-launcher-abcde", "Running");
  Document w0 = worker_pod("pi-worker-0", "Running");
  Document w1 = worker_pod("pi-worker-1", "Pending");
  obs.owned["jobs.batch"] = {&lj.root()};
  obs.owned["pods/jobs.batch"] = {&lp.root()};
  obs.pods = {&w0.root(), &w1.root()};
  auto starting = p->compute_status(job.root(), obs);
  CHECK(starting.replica_statuses["Launcher"].active == 1);
  CHECK(starting.replica_statuses["Launcher"].failed == 1);
  CHECK(starting.replica_statuses["Worker"].active == 1);
  CHECK(starting.conditions.empty());

  Document w1r = worker_pod("pi-worker-1", "Running");
  obs.pods = {&w0.root(), &w1r.root()};
  auto running = p->compute_status(job.root(), obs);
  CHECK(running.replica_statuses["Worker"].active == 2);
  REQUIRE(running.conditions.size() == 1);
  CHECK(running.conditions[0].type == "Running");
  CHECK(running.conditions[0].status == "True");
  CHECK(running.conditions[0].reason == "MPIJobRunning");
  CHECK(running.conditions[0].message == "MPIJob default/pi is running.");
  CHECK_FALSE(running.set_completion_time);
  // The event of the transition, worded as mpi-operator's (no final period); none once Running.
  REQUIRE(running.events.size() == 1);
  CHECK(running.events[0].type == "Normal");
  CHECK(running.events[0].reason == "MPIJobRunning");
  CHECK(running.events[0].message == "MPIJob default/pi is running");
  Document already = json::Document::copy_of(job.root());
  REQUIRE(json::set(already, "/status/conditions",
                    json::clone(parse(R"([{"type":"Running","status":"True","reason":"MPIJobRunning"}])").root(), already.alloc())));
  CHECK(p->compute_status(already.root(), obs).events.empty());

  // Without the core's launcher pod list the job's pods are searched; a pod of another Job does not count.
  obs.owned.erase("pods/jobs.batch");
  obs.pods = {&lp.root(), &w0.root(), &w1r.root()};
  CHECK(p->compute_status(job.root(), obs).conditions.size() == 1);
  Document stranger = parse(R"({"metadata":{"name":"x","labels":{"training.kubeflow.org/job-role":"launcher"},"ownerReferences":[{"uid":"other","controller":true}]},"status":{"phase":"Running"}})");
  obs.pods = {&stranger.root(), &w0.root(), &w1r.root()};
  CHECK(p->compute_status(job.root(), obs).conditions.empty());
}

TEST_CASE("mpi v2: status on success synthesizes Running=False and copies completionTime") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  Document lj = launcher_job(R"([{"type":"Complete","status":"True"}])");
  Document w0 = worker_pod("pi-worker-0", "Running");
  fw::Observed obs;
  obs.owned["jobs.batch"] = {&lj.root()};
  obs.pods = {&w0.root()};
  auto s = p->compute_status(job.root(), obs);
  CHECK(s.replica_statuses["Launcher"].succeeded == 1);
  CHECK(s.replica_statuses["Launcher"].active == 0);
  CHECK(s.replica_statuses["Worker"].active == 0);
  REQUIRE(s.conditions.size() == 2);
  CHECK(s.conditions[0].type == "Running");
  CHECK(s.conditions[0].status == "False");
  CHECK(s.conditions[0].reason == "MPIJobRunning");
  CHECK(s.conditions[0].message == "MPIJob default/pi is finished but Running condition was never set.");
  CHECK(s.conditions[1].type == "Succeeded");
  CHECK(s.conditions[1].reason == "MPIJobSucceeded");
  CHECK(s.conditions[1].message == "MPIJob default/pi successfully completed.");
  CHECK(s.set_completion_time);
  CHECK(s.completion_time == "2024-01-02T03:04:05Z");
  REQUIRE(s.events.size() == 1);
  CHECK(s.events[0].type == "Normal");
  CHECK(s.events[0].reason == "MPIJobSucceeded");
  CHECK(s.events[0].message == "MPIJob default/pi successfully completed.");

  REQUIRE(json::set(job, "/status/conditions", json::clone(parse(R"([{"type":"Running","status":"True"}])").root(), job.alloc())));
  auto again = p->compute_status(job.root(), obs);
  REQUIRE(again.conditions.size() == 1);
  CHECK(again.conditions[0].type == "Succeeded");
}

TEST_CASE("mpi v2: status on launcher failure names the failed pod for BackoffLimitExceeded") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  REQUIRE(json::set(job, "/status/conditions", json::clone(parse(R"([{"type":"Running","status":"True"}])").root(), job.alloc())));
  Document lj = launcher_job(R"([{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit"}])", 4);
  Document old_pod = launcher_pod("pi-launcher-a", "Failed", "2024-01-01T00:00:00Z", "Error", "old");
  Document new_pod = launcher_pod("pi-launcher-b", "Failed", "2024-01-01T00:05:00Z", "OOMKilled", "out of memory");
  fw::Observed obs;
  obs.owned["jobs.batch"] = {&lj.root()};
  obs.pods = {&old_pod.root(), &new_pod.root()};
  auto s = p->compute_status(job.root(), obs);
  CHECK(s.replica_statuses["Launcher"].failed == 4);
  CHECK(s.replica_statuses["Launcher"].active == 0);
  REQUIRE(s.conditions.size() == 1);
  CHECK(s.conditions[0].type == "Failed");
  CHECK(s.conditions[0].reason == "BackoffLimitExceeded/OOMKilled");
  CHECK(s.conditions[0].message == "Job has reached the specified backoff limit: out of memory");
  CHECK(s.set_completion_time);
  CHECK_FALSE(s.completion_time.has_value());
  REQUIRE(s.events.size() == 1);
  CHECK(s.events[0].type == "Warning");
  CHECK(s.events[0].reason == "BackoffLimitExceeded/OOMKilled");
  CHECK(s.events[0].message == "Job has reached the specified backoff limit: out of memory");

  Document plain = launcher_job(R"([{"type":"Failed","status":"True"}])");
  obs.owned["jobs.batch"] = {&plain.root()};
  auto d = p->compute_status(job.root(), obs);
  REQUIRE(d.conditions.size() == 1);
  CHECK(d.conditions[0].reason == "MPIJobFailed");
  CHECK(d.conditions[0].message == "MPIJob default/pi has failed");
}

TEST_CASE("mpi v2: a failed launcher Job waits for its pod's failure to reach the pod cache") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  Document lj = launcher_job(R"([{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit"}])", 1);
  // The Job cache already has the failure; the pod cache still shows the pod running.
  Document stale = launcher_pod("pi-launcher-a", "Running");
  fw::Observed obs;
  obs.owned["jobs.batch"] = {&lj.root()};
  obs.pods = {&stale.root()};
  auto early = p->compute_status(job.root(), obs);
  for (const auto& c : early.conditions) CHECK(c.type != "Failed");
  CHECK(early.events.empty());
  CHECK_FALSE(early.set_completion_time);
  CHECK(early.replica_statuses["Launcher"].failed == 1);
  CHECK(early.replica_statuses["Launcher"].active == 0);

  Document failed = launcher_pod("pi-launcher-a", "Failed", "2024-01-01T00:00:00Z", "Error", "mpirun exited with status 3");
  obs.pods = {&failed.root()};
  auto s = p->compute_status(job.root(), obs);
  REQUIRE_FALSE(s.conditions.empty());
  CHECK(s.conditions.back().type == "Failed");
  CHECK(s.conditions.back().reason == "BackoffLimitExceeded/Error");
  CHECK(s.conditions.back().message == "Job has reached the specified backoff limit: mpirun exited with status 3");

  // A launcher pod being deleted (the Job controller removes its active pods when it gives up) is no reason to wait.
  Document deleting = launcher_pod("pi-launcher-b", "Running", "2024-01-01T00:05:00Z");
  REQUIRE(json::set_string(deleting, "/metadata/deletionTimestamp", "2024-01-01T00:06:00Z"));
  obs.pods = {&failed.root(), &deleting.root()};
  CHECK(p->compute_status(job.root(), obs).conditions.back().reason == "BackoffLimitExceeded/Error");
}

TEST_CASE("mpi v2: evicted workers and suspension") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  Document w0 = worker_pod("pi-worker-0", "Failed", false, "Evicted");
  Document w1 = worker_pod("pi-worker-1", "Running");
  fw::Observed obs;
  obs.pods = {&w0.root(), &w1.root()};
  auto e = p->compute_status(job.root(), obs);
  CHECK(e.replica_statuses["Worker"].failed == 1);
  REQUIRE(e.conditions.size() == 1);
  CHECK(e.conditions[0].type == "Failed");
  CHECK(e.conditions[0].reason == "MPIJobEvicted");
  CHECK(e.conditions[0].message == "1/2 workers are evicted");
  CHECK(e.set_completion_time);

  REQUIRE(e.events.size() == 1);
  CHECK(e.events[0].type == "Warning");
  CHECK(e.events[0].reason == "MPIJobEvicted");

  REQUIRE(json::set_bool(job, "/spec/runPolicy/suspend", true));
  obs.pods = {&w1.root()};
  auto s = p->compute_status(job.root(), obs);
  CHECK(s.replica_statuses["Worker"].active == 0);
  // mpi-operator's Running=False of a suspended job, proposed after the core's Suspended.
  REQUIRE(s.conditions.size() == 1);
  CHECK(s.conditions[0].type == "Running");
  CHECK(s.conditions[0].status == "False");
  CHECK(s.conditions[0].reason == "MPIJobSuspended");
  CHECK(s.conditions[0].message == "MPIJob default/pi is suspended.");
  CHECK(s.events.empty());
}

TEST_CASE("mpi v2: wording of the conditions the core raises") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  auto w = [&](fw::CoreEvent e) {
    auto cw = p->wording(e, job.root(), "Worker");
    return cw.reason + "|" + cw.message + "|" + cw.event_type;
  };
  // The events mpi-operator records with them: Created, Suspended and Resumed.
  CHECK(w(fw::CoreEvent::Created) == "MPIJobCreated|MPIJob default/pi is created.|Normal");
  CHECK(w(fw::CoreEvent::Suspended) == "MPIJobSuspended|MPIJob suspended|Normal");
  CHECK(w(fw::CoreEvent::SuspendedNotRunning) == "MPIJobSuspended|MPIJob default/pi is suspended.|");
  CHECK(w(fw::CoreEvent::Resumed) == "MPIJobResumed|MPIJob resumed|Normal");
  CHECK(w(fw::CoreEvent::DeadlineExceeded) == "DeadlineExceeded|Job was active longer than specified deadline|");
  CHECK(w(fw::CoreEvent::ValidationFailed) == "ValidationError||Warning");
}

TEST_CASE("mpi v2: mpi-operator records no event for what it creates or deletes, only failed creates") {
  auto p = plugin();
  Document job = defaulted(kPi, p);
  auto w = [&](fw::ChildEvent e, std::string_view kind) {
    auto cw = p->child_event(e, job.root(), {kind, "pi-worker-0", "Worker", "boom"});
    return cw.event_type + "|" + cw.reason + "|" + cw.message;
  };
  for (auto e : {fw::ChildEvent::Created, fw::ChildEvent::Deleted, fw::ChildEvent::DeleteFailed, fw::ChildEvent::ExitedWithCode,
                 fw::ChildEvent::TemplateRestartPolicy, fw::ChildEvent::PodGroupDeleting})
    CHECK(w(e, "Pod") == "||");
  CHECK(w(fw::ChildEvent::CreateFailed, "Pod") == "Warning|MPIJobFailed|worker pod created failed: boom");
  CHECK(w(fw::ChildEvent::CreateFailed, "Job") == "Warning|MPIJobFailed|launcher pod created failed: boom");
  CHECK(w(fw::ChildEvent::CreateFailed, "ConfigMap") == "||");
}

TEST_CASE("mpi v2: the upstream pi example") {
  const std::filesystem::path path = std::string(UNITRAIN_REFERENCE_EXAMPLES) + "/mpi-v2/pi.yaml";
  if (!std::filesystem::exists(path)) {
    return skip("upstream example " + path.string() + " not found");
  }
  WARN("ran against the upstream example(s) in " << path);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto docs = json::parse_yaml(ss.str());
  REQUIRE(docs);
  Document job = (*docs)[0];
  REQUIRE(json::set_string(job, "/metadata/namespace", "default"));
  auto p = plugin();
  p->set_defaults(job);
  CHECK(p->validate(nullptr, job.root()).ok());
  auto objs = p->desired_objects(job.root(), {});
  REQUIRE(objs);
  CHECK(objs->size() == 4);
  const auto& l = find_object(*objs, "jobs.batch")->object.root();
  CHECK(json::get_int(l, "/spec/ttlSecondsAfterFinished") == 60);
  CHECK(json::get_string(l, "/spec/template/spec/containers/0/volumeMounts/0/mountPath") == "/home/mpiuser/.ssh");
  CHECK(json::find(l, "/spec/template/spec/volumes/0/secret/defaultMode") == nullptr);
  Document pod = Document::object();
  REQUIRE(json::set(pod, "/spec", json::clone(*json::find(job.root(), "/spec/mpiReplicaSpecs/Worker/template/spec"), pod.alloc())));
  REQUIRE(p->decorate_pod(job.root(), {"Worker", 0}, pod));
  CHECK(json::dump(*json::find(pod.root(), "/spec/containers/0/command")) == R"(["/usr/sbin/sshd"])");
  CHECK(json::get_string(pod.root(), "/spec/hostname") == "pi-worker-0");
}

// mpi-operator already refuses most nonsense (negative Worker replicas, negative limits, unknown
// cleanPodPolicy), in its own words; the rules every kind gets add what it leaves, never a second
// complaint about the same field. The same at admission (defaulted, as mpi-operator) and in the
// controller.
TEST_CASE("mpi v2: nonsense specs are refused with their field paths") {
  auto p = plugin();
  const Document base = yaml(kPi);
  unitrain::testing::check_refusals(*p, base, {
      {{R"({"spec":{"mpiReplicaSpecs":{"Worker":{"replicas":-2}}}})"},
       {"spec.mpiReplicaSpecs[Worker].replicas: Invalid value: -2: must be greater than or equal to 1"}},
      {{R"({"spec":{"mpiReplicaSpecs":null}})", R"({"spec":{"mpiReplicaSpecs":{}}})"},
       {"spec.mpiReplicaSpecs[Launcher]: Required value: must have Launcher replica spec"}},
      {{R"({"spec":{"runPolicy":{"activeDeadlineSeconds":-1,"backoffLimit":-1}}})"},
       {"spec.runPolicy.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
        "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0"}},
      {{R"({"spec":{"runPolicy":{"cleanPodPolicy":"Sometimes"}}})"},
       {R"(spec.runPolicy.cleanPodPolicy: Unsupported value: "Sometimes": supported values: "All", "None", "Running")"}},
      {{R"({"spec":{"runPolicy":{"backoffLimit":"3"}}})"},
       {R"(spec.runPolicy.backoffLimit: Invalid value: "3": must be an integer)"}},
  });
}
