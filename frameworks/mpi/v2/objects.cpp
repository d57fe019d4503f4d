#include "frameworks/mpi/v2/objects.h"

#include <initializer_list>

#include <fmt/format.h>

#include "core/base/base64.h"
#include "core/framework/child_objects.h"
#include "core/framework/job_labels.h"
#include "core/framework/json_members.h"
#include "core/framework/pod_decoration.h"
#include "core/ssh/ssh_key.h"

namespace unitrain::frameworks::mpi::v2 {

using framework::Observed;
using framework::json_members::ensure_array;
using framework::json_members::ensure_object;
using framework::json_members::member;
using framework::json_members::put;
using framework::volume_mount;
using json::Allocator;
using json::Document;
using json::string_at;
using json::Value;
namespace job_labels = framework::job_labels;

namespace {

std::string host_line(const JobView& j, const std::string& host, const std::string& domain) {
  if (j.implementation == "OpenMPI") return fmt::format("{}.{} slots={}\n", host, domain, j.slots);
  return fmt::format("{}.{}:{}\n", host, domain, j.slots);
}

}  // namespace

Value env_var(std::string_view name, std::string_view value, Allocator& a) {
  return framework::env_var_json({std::string(name), std::string(value)}, a);
}

Value ssh_volume(const JobView& j, Allocator& a) {
  Value items(rapidjson::kArrayType);
  using Item = std::pair<const char*, const char*>;
  for (auto [key, path] : std::initializer_list<Item>{{"ssh-privatekey", "id_rsa"}, {"ssh-publickey", "id_rsa.pub"}, {"ssh-publickey", "authorized_keys"}}) {
    Value item(rapidjson::kObjectType);
    item.AddMember("key", json::str(key, a), a);
    item.AddMember("path", json::str(path, a), a);
    items.PushBack(item, a);
  }
  Value secret(rapidjson::kObjectType);
  secret.AddMember("secretName", json::str(j.name + "-ssh", a), a);
  secret.AddMember("items", items, a);
  // 0600 only at the root default path: OpenSSH refuses group/world-readable keys there, and
  // upstream leaves other paths at the API default so non-root users keep read access.
  if (j.ssh_path == kDefaultSshPath) secret.AddMember("defaultMode", Value(0600), a);
  Value v(rapidjson::kObjectType);
  v.AddMember("name", "ssh-auth", a);
  v.AddMember("secret", secret, a);
  return v;
}

Value config_volume(const JobView& j, Allocator& a) {
  return framework::config_map_volume("mpi-job-config", j.name + "-config", {{"hostfile", 0444}, {"discover_hosts.sh", 0555}}, a);
}

Document child(const JobView& j, std::string_view api_version, std::string_view kind, std::string_view name) {
  return framework::child_object(api_version, kind, name, j.ns, {{"app", j.name}});
}

Document service(const JobView& j) {
  Document d = child(j, "v1", "Service", j.name);
  auto& a = d.alloc();
  Value& r = d.root();
  Value spec(rapidjson::kObjectType);
  spec.AddMember("clusterIP", "None", a);
  Value sel(rapidjson::kObjectType);
  sel.AddMember(json::str(job_labels::kJobName, a), json::str(j.name, a), a);
  sel.AddMember(json::str(job_labels::kOperatorName, a), json::str(kOperator, a), a);
  spec.AddMember("selector", sel, a);
  // Written only when true: the API server omits the false default, so comparing stays stable.
  if (j.launcher_as_worker) spec.AddMember("publishNotReadyAddresses", true, a);
  r.AddMember("spec", spec, a);
  return d;
}

Document config_map(const JobView& j, const std::string& cluster_domain, const Observed& observed) {
  const std::string domain = service_domain(j, cluster_domain);
  std::string hostfile;
  std::string discover = "#!/bin/sh\n";
  if (j.launcher_as_worker) {
    hostfile += host_line(j, j.name + "-launcher", domain);
    discover += fmt::format("echo {}-launcher.{}\n", j.name, domain);
  }
  for (int32_t i = 0; i < j.workers; ++i) hostfile += host_line(j, fmt::format("{}-worker-{}", j.name, i), domain);
  for (const Value* pod : worker_pods(j, observed)) {
    if (string_at(*pod, "/status/phase") != "Running") continue;
    discover += fmt::format("echo {}.{}\n", string_at(*pod, "/metadata/name"), domain);
  }
  Document d = child(j, "v1", "ConfigMap", j.name + "-config");
  auto& a = d.alloc();
  Value& r = d.root();
  Value data(rapidjson::kObjectType);
  data.AddMember("discover_hosts.sh", json::str(discover, a), a);
  data.AddMember("hostfile", json::str(hostfile, a), a);
  r.AddMember("data", data, a);
  return d;
}

Result<Document> ssh_secret(const JobView& j) {
  auto key = ssh::generate_ssh_key();
  if (!key) return fail(key.error());
  Document d = child(j, "v1", "Secret", j.name + "-ssh");
  auto& a = d.alloc();
  Value& r = d.root();
  r.AddMember("type", "kubernetes.io/ssh-auth", a);
  Value data(rapidjson::kObjectType);
  data.AddMember("ssh-privatekey", json::str(base64_encode(key->private_key_pem), a), a);
  data.AddMember("ssh-publickey", json::str(base64_encode(key->authorized_key), a), a);
  r.AddMember("data", data, a);
  return d;
}

std::vector<std::pair<std::string, std::string>> launcher_env(const JobView& j) {
  std::vector<std::pair<std::string, std::string>> env{{"K_MPI_JOB_ROLE", "launcher"}};
  const std::string slots = std::to_string(j.slots);
  if (j.implementation == "OpenMPI") {
    env.insert(env.end(), {{"OMPI_MCA_orte_keep_fqdn_hostnames", "true"},
                           {"OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"},
                           {"OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"},
                           {"OMPI_MCA_orte_set_default_slots", slots}});
  } else if (j.implementation == "Intel") {
    env.insert(env.end(), {{"I_MPI_HYDRA_HOST_FILE", "/etc/mpi/hostfile"},
                           {"I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "-o ConnectionAttempts=10"},
                           {"I_MPI_PERHOST", slots}});
  } else if (j.implementation == "MPICH") {
    env.insert(env.end(), {{"HYDRA_HOST_FILE", "/etc/mpi/hostfile"}, {"HYDRA_LAUNCH_EXTRA_ARGS", "-o ConnectionAttempts=10"}});
  }
  if (!j.launcher_as_worker) {
    // Keeps the NVIDIA container runtime from exposing GPUs to a launcher that is not a worker.
    env.insert(env.end(), {{"NVIDIA_VISIBLE_DEVICES", ""}, {"NVIDIA_DRIVER_CAPABILITIES", ""}});
  }
  return env;
}

std::string pod_restart_policy(const Value* spec) {
  std::string p = spec != nullptr ? string_at(*spec, "/restartPolicy") : std::string();
  return p == "ExitCode" ? "Never" : p;
}

Result<Document> launcher_template(const JobView& j, const gang::Backend* gang) {
  if (j.launcher == nullptr) return fail(fmt::format("MPIJob {}: spec.mpiReplicaSpecs[Launcher] is missing", j.name));
  Document d = Document::object();
  auto& a = d.alloc();
  Value& tmpl = d.root();
  if (const Value* t = member(j.launcher, "template"); t != nullptr && t->IsObject()) tmpl.CopyFrom(*t, a);
  Value& meta = ensure_object(tmpl, "metadata", a);
  Value& labels = ensure_object(meta, "labels", a);
  put(labels, job_labels::kOperatorName, kOperator, a);
  put(labels, job_labels::kJobName, j.name, a);
  put(labels, job_labels::kJobRole, "launcher", a);
  if (j.launcher_as_worker) put(labels, job_labels::kReplicaIndex, "0", a);
  if (!j.uid.empty()) {
    Value owner(rapidjson::kObjectType);
    owner.AddMember("apiVersion", "kubeflow.org/v2beta1", a);
    owner.AddMember("kind", "MPIJob", a);
    owner.AddMember("name", json::str(j.name, a), a);
    owner.AddMember("uid", json::str(j.uid, a), a);
    owner.AddMember("controller", true, a);
    owner.AddMember("blockOwnerDeletion", true, a);
    Value owners(rapidjson::kArrayType);
    owners.PushBack(owner, a);
    put(meta, "ownerReferences", std::move(owners), a);
  }
  // The launcher pod joins the job's PodGroup like the workers. The core marks slot pods only,
  // and this template is not one; mpi-operator names the gang scheduler on it whatever the
  // template says and adds no Volcano task-spec.
  if (gang != nullptr) gang->decorate_pod(d, j.name, "launcher", {.force_scheduler_name = true, .volcano_task_spec = false});
  Value& spec = ensure_object(tmpl, "spec", a);
  put(spec, "hostname", j.name + "-launcher", a);
  put(spec, "subdomain", j.name, a);
  if (json::get_bool(spec, "/hostNetwork").value_or(false)) put(spec, "dnsPolicy", "ClusterFirstWithHostNet", a);
  put(spec, "restartPolicy", pod_restart_policy(j.launcher), a);
  Value& containers = ensure_array(spec, "containers", a);
  if (containers.Empty() || !containers[0].IsObject()) {
    return fail(fmt::format("MPIJob {}: spec.mpiReplicaSpecs[Launcher].template.spec.containers is empty", j.name));
  }
  Value& c0 = containers[0];
  Value& env = ensure_array(c0, "env", a);
  for (const auto& [k, v] : launcher_env(j)) env.PushBack(env_var(k, v, a), a);
  Value& mounts = ensure_array(c0, "volumeMounts", a);
  mounts.PushBack(volume_mount("ssh-auth", j.ssh_path, a), a);
  mounts.PushBack(volume_mount("mpi-job-config", kConfigMountPath, a), a);
  Value& volumes = ensure_array(spec, "volumes", a);
  volumes.PushBack(ssh_volume(j, a), a);
  volumes.PushBack(config_volume(j, a), a);
  return d;
}

}  // namespace unitrain::frameworks::mpi::v2
