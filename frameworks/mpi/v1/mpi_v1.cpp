// Kept whole: one reference controller's hooks, in the order training-operator v1.8.1 runs them.
// MPIJob kubeflow.org/v1 hooks, following training-operator v1.8.1 pkg/controller.v1/mpi
// (defaults, reconcile-time validation messages, object names and contents, env, status).
// Deliberate departures are listed in docs/compatibility.md.
#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/api/field_errors.h"
#include "core/framework/child_objects.h"
#include "core/framework/job_labels.h"
#include "core/framework/job_spec.h"
#include "core/framework/job_validation.h"
#include "core/framework/json_members.h"
#include "core/framework/module_plugin.h"
#include "core/framework/pod_decoration.h"
#include "core/framework/registry.h"
#include "core/json/json.h"
#include "frameworks/mpi/v1/register.h"

namespace unitrain::frameworks::mpi::v1 {
namespace {

using api::FieldError;
using api::FieldPath;
using framework::DesiredObject;
using framework::Observed;
using framework::PodSlot;
using framework::StatusProposal;
using framework::json_members::member;
using json::string_at;
using json::Allocator;
using json::Document;
using json::Value;

constexpr std::string_view kLauncher = "Launcher";
constexpr std::string_view kWorker = "Worker";
constexpr std::string_view kConfigVolume = "mpi-job-config";
constexpr std::string_view kConfigMountPath = "/etc/mpi";
constexpr std::string_view kKubectlVolume = "mpi-job-kubectl";
constexpr std::string_view kKubectlMountPath = "/opt/kube";
constexpr int kScriptMode = 0555;
constexpr int kHostfileMode = 0444;
const std::vector<std::string> kReplicaTypes = {"Launcher", "Worker"};

using framework::ConfigMapFile;
using framework::json_members::ensure_array;
using framework::volume_mount;

Value named(std::string_view name, Allocator& a) {
  Value v(rapidjson::kObjectType);
  v.AddMember("name", json::str(name, a), a);
  return v;
}

// Go's EnvVar omits an empty value: NVIDIA_VISIBLE_DEVICES="" is written as a bare name.
Value env_var(std::string_view name, std::string_view value, Allocator& a) {
  return framework::env_var_json({std::string(name), std::string(value)}, a);
}

Value strings(std::initializer_list<std::string_view> items, Allocator& a) {
  Value v(rapidjson::kArrayType);
  for (auto s : items) v.PushBack(json::str(s, a), a);
  return v;
}

// The ConfigMap volume `mpi-job-config` with the given keys (each with its file mode).
Value config_volume(const std::string& job, std::initializer_list<ConfigMapFile> files, Allocator& a) {
  return framework::config_map_volume(kConfigVolume, job + "-config", files, a);
}

// ---- reading the job -------------------------------------------------------------------------

struct JobView {
  std::string name, ns;
  int32_t slots = 1;
  int32_t workers = 0;
  bool gpu_launcher = false;
  bool suspended = false;
  std::string main_container;
  std::string service_account;  // the launcher's: the template's, else "<job>-launcher"
  const Value* launcher = nullptr;
  const Value* worker = nullptr;

  std::string launcher_name() const { return name + "-launcher"; }
  std::string worker_name(int32_t i) const { return fmt::format("{}-worker-{}", name, i); }
};

const Value* spec_of(const Value& job, std::string_view rt) {
  return member(json::find(job, "/spec/mpiReplicaSpecs"), rt);
}

// A launcher "needs GPU" when any of its containers limits a resource whose name ends with
// `.com/gpu` or contains `gpu` (training-operator's isGPULauncher).
bool gpu_launcher(const Value* launcher) {
  const Value* containers = framework::containers_of_spec(launcher);
  if (containers == nullptr) return false;
  for (const auto& c : containers->GetArray()) {
    const Value* limits = json::find(c, "/resources/limits");
    if (limits == nullptr || !limits->IsObject()) continue;
    for (const auto& m : limits->GetObject()) {
      std::string_view key(m.name.GetString(), m.name.GetStringLength());
      if (key.ends_with(".com/gpu") || key.find("gpu") != std::string_view::npos) return true;
    }
  }
  return false;
}

JobView view(const Value& job) {
  JobView v;
  v.name = string_at(job, "/metadata/name");
  v.ns = string_at(job, "/metadata/namespace");
  v.slots = static_cast<int32_t>(json::get_int(job, "/spec/slotsPerWorker").value_or(1));
  v.suspended = json::get_bool(job, "/spec/runPolicy/suspend").value_or(false);
  v.main_container = string_at(job, "/spec/mainContainer");
  v.launcher = spec_of(job, kLauncher);
  v.worker = spec_of(job, kWorker);
  if (v.worker != nullptr) v.workers = static_cast<int32_t>(json::get_int(*v.worker, "/replicas").value_or(0));
  v.gpu_launcher = gpu_launcher(v.launcher);
  v.service_account = v.launcher != nullptr ? string_at(*v.launcher, "/template/spec/serviceAccountName") : std::string();
  if (v.service_account.empty()) v.service_account = v.launcher_name();
  return v;
}

std::string label_of(const Value& obj, std::string_view key) {
  return string_at(obj, "/metadata/labels/" + json::escape_pointer_token(key));
}

const Value* launcher_pod(const JobView& j, const Observed& observed) {
  for (const Value* pod : observed.pods) {
    if (pod != nullptr && string_at(*pod, "/metadata/name") == j.launcher_name()) return pod;
  }
  return nullptr;
}

// Worker pods sorted by name; `only_slots` keeps those named for an index below the replicas.
std::vector<const Value*> worker_pods(const JobView& j, const Observed& observed, bool only_slots) {
  std::vector<std::string> slot_names;
  for (int32_t i = 0; i < j.workers; ++i) slot_names.push_back(j.worker_name(i));
  std::vector<const Value*> out;
  for (const Value* pod : observed.pods) {
    if (pod == nullptr || label_of(*pod, framework::job_labels::kReplicaType) != "worker") continue;
    if (only_slots && std::find(slot_names.begin(), slot_names.end(), string_at(*pod, "/metadata/name")) == slot_names.end()) continue;
    out.push_back(pod);
  }
  std::sort(out.begin(), out.end(), [](const Value* a, const Value* b) {
    return string_at(*a, "/metadata/name") < string_at(*b, "/metadata/name");
  });
  return out;
}

bool finished(const Value* pod) {
  if (pod == nullptr) return false;
  const std::string phase = string_at(*pod, "/status/phase");
  return phase == "Succeeded" || phase == "Failed";
}

// ---- objects ---------------------------------------------------------------------------------

Document object(std::string_view api_version, std::string_view kind, const JobView& j, std::string_view name) {
  return framework::child_object(api_version, kind, name, j.ns, {{"app", j.name}});
}

std::string kubexec(const JobView& j) {
  std::string s = fmt::format("#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n{}/kubectl exec ${{POD_NAME}}", kKubectlMountPath);
  if (!j.main_container.empty()) s += " --container " + j.main_container;
  return s + " -- /bin/sh -c \"$*\"";
}

std::string hostfile(const JobView& j) {
  std::string s;
  if (j.gpu_launcher) s += fmt::format("{} slots={}\n", j.launcher_name(), j.slots);
  for (int32_t i = 0; i < j.workers; ++i) s += fmt::format("{} slots={}\n", j.worker_name(i), j.slots);
  return s;
}

// Running workers only, so elastic Horovod grows and shrinks with what actually runs.
std::string discover_hosts(const JobView& j, const Observed& observed) {
  std::string s = "#!/bin/sh";
  if (j.gpu_launcher) s += fmt::format("\necho {}:{}\n", j.launcher_name(), j.slots);
  for (const Value* pod : worker_pods(j, observed, false)) {
    if (string_at(*pod, "/status/phase") != "Running") continue;
    s += fmt::format("\necho {}:{}", string_at(*pod, "/metadata/name"), j.slots);
  }
  return s;
}

Document config_map(const JobView& j, const Observed& observed) {
  Document d = object("v1", "ConfigMap", j, j.name + "-config");
  auto& a = d.alloc();
  Value data(rapidjson::kObjectType);
  data.AddMember("discover_hosts.sh", json::str(discover_hosts(j, observed), a), a);
  data.AddMember("hostfile", json::str(hostfile(j), a), a);
  data.AddMember("kubexec.sh", json::str(kubexec(j), a), a);
  d.root().AddMember("data", data, a);
  return d;
}

Document role(const JobView& j) {
  Document d = object("rbac.authorization.k8s.io/v1", "Role", j, j.launcher_name());
  auto& a = d.alloc();
  Value rules(rapidjson::kArrayType);
  Value read(rapidjson::kObjectType);
  read.AddMember("verbs", strings({"get", "list", "watch"}, a), a);
  read.AddMember("apiGroups", strings({""}, a), a);
  read.AddMember("resources", strings({"pods"}, a), a);
  rules.PushBack(read, a);
  Value exec(rapidjson::kObjectType);
  exec.AddMember("verbs", strings({"create"}, a), a);
  exec.AddMember("apiGroups", strings({""}, a), a);
  exec.AddMember("resources", strings({"pods/exec"}, a), a);
  // Only the workers: the launcher's token can exec into nothing else (empty list omitted, as Go does).
  if (j.workers > 0) {
    Value names(rapidjson::kArrayType);
    for (int32_t i = 0; i < j.workers; ++i) names.PushBack(json::str(j.worker_name(i), a), a);
    exec.AddMember("resourceNames", names, a);
  }
  rules.PushBack(exec, a);
  d.root().AddMember("rules", rules, a);
  return d;
}

Document role_binding(const JobView& j) {
  Document d = object("rbac.authorization.k8s.io/v1", "RoleBinding", j, j.launcher_name());
  auto& a = d.alloc();
  Value subject(rapidjson::kObjectType);
  subject.AddMember("kind", "ServiceAccount", a);
  subject.AddMember("name", json::str(j.service_account, a), a);
  subject.AddMember("namespace", json::str(j.ns, a), a);
  Value subjects(rapidjson::kArrayType);
  subjects.PushBack(subject, a);
  d.root().AddMember("subjects", subjects, a);
  Value role_ref(rapidjson::kObjectType);
  role_ref.AddMember("apiGroup", "rbac.authorization.k8s.io", a);
  role_ref.AddMember("kind", "Role", a);
  role_ref.AddMember("name", json::str(j.launcher_name(), a), a);
  d.root().AddMember("roleRef", role_ref, a);
  return d;
}

Value resource_list(Allocator& a) {
  Value r(rapidjson::kObjectType);
  r.AddMember("cpu", "100m", a);
  r.AddMember("ephemeral-storage", "5Gi", a);
  r.AddMember("memory", "512Mi", a);
  return r;
}

Value kubectl_delivery(const JobView& j, std::string_view image, Allocator& a) {
  Value c = named("kubectl-delivery", a);
  c.AddMember("image", json::str(image, a), a);
  Value env(rapidjson::kArrayType);
  env.PushBack(env_var("TARGET_DIR", kKubectlMountPath, a), a);
  env.PushBack(env_var("NAMESPACE", j.ns, a), a);
  c.AddMember("env", env, a);
  Value resources(rapidjson::kObjectType);
  resources.AddMember("limits", resource_list(a), a);
  resources.AddMember("requests", resource_list(a), a);
  c.AddMember("resources", resources, a);
  Value mounts(rapidjson::kArrayType);
  mounts.PushBack(volume_mount(kKubectlVolume, kKubectlMountPath, a), a);
  mounts.PushBack(volume_mount(kConfigVolume, kConfigMountPath, a), a);
  c.AddMember("volumeMounts", mounts, a);
  c.AddMember("imagePullPolicy", "IfNotPresent", a);
  return c;
}

bool has_env(const Value& container, std::string_view name) {
  const Value* env = member(&container, "env");
  if (env == nullptr || !env->IsArray()) return false;
  return std::any_of(env->Begin(), env->End(), [&](const Value& e) { return string_at(e, "/name") == name; });
}

// ---- the plugin ------------------------------------------------------------------------------

class MpiV1Plugin final : public framework::ModulePlugin {
 public:
  using ModulePlugin::ModulePlugin;

  // SetDefaults_MPIJob plus the reconciler's cleanPodPolicy merge: runPolicy's value wins, the
  // deprecated spec.cleanPodPolicy is used otherwise, None when neither is set; both fields end
  // up equal so the core reads the effective policy from runPolicy.
  void set_defaults(Document& job) const override {
    std::string policy = string_at(job.root(), "/spec/runPolicy/cleanPodPolicy");
    if (policy.empty()) policy = string_at(job.root(), "/spec/cleanPodPolicy");
    if (policy.empty()) policy = "None";
    if (json::find(job.root(), "/spec") == nullptr || !json::find(job.root(), "/spec")->IsObject()) return;
    (void)json::set_string(job, "/spec/cleanPodPolicy", policy);
    (void)json::set_string(job, "/spec/runPolicy/cleanPodPolicy", policy);
    auto& a = job.alloc();
    for (auto [rt, replicas] : {std::pair{kLauncher, 1}, std::pair{kWorker, 0}}) {
      Value* spec = member(json::find(job.root(), "/spec/mpiReplicaSpecs"), rt);
      if (spec == nullptr || !spec->IsObject()) continue;
      if (member(spec, "replicas") == nullptr) framework::json_members::put(*spec, "replicas", Value(replicas), a);
      const Value* rp = member(spec, "restartPolicy");
      if (rp == nullptr || (rp->IsString() && rp->GetStringLength() == 0)) {
        framework::json_members::put(*spec, "restartPolicy", "Never", a);
      }
    }
  }

  // ValidateV1MpiJobSpec's rules and messages as field errors (every error, not only the first
  // one Go's map iteration happens to reach), the managedBy rules of training-operator v1.9, then
  // the rules every kind gets (both cleanPodPolicy fields among them).
  framework::Validation validate(const Value* old_job, const Value& job) const override {
    framework::Validation out;
    auto& errs = out.errors;
    const FieldPath specs_path = FieldPath("spec").child("mpiReplicaSpecs");
    const Value* specs = json::find(job, "/spec/mpiReplicaSpecs");
    if (specs == nullptr || !specs->IsObject()) {
      errs.push_back(FieldError::required(specs_path, "MPIReplicaSpecs is not valid"));
    } else {
      for (const auto& m : specs->GetObject()) {
        const std::string rt(m.name.GetString(), m.name.GetStringLength());
        const FieldPath role = specs_path.key(rt);
        const FieldPath containers_path = role.child("template").child("spec").child("containers");
        const Value* containers = framework::containers_of_spec(&m.value);
        if (containers == nullptr || containers->Empty()) {
          errs.push_back(FieldError::required(containers_path,
                                              fmt::format("MPIReplicaSpecs is not valid: containers definition expected in {}", rt)));
          continue;
        }
        if (rt != kLauncher && rt != kWorker) {
          errs.push_back(FieldError::invalid(role, rt, fmt::format("MPIReplicaType is {} but must be one of [Launcher Worker]", rt)));
          continue;
        }
        for (rapidjson::SizeType i = 0; i < containers->Size(); ++i) {
          const Value& c = (*containers)[i];
          if (string_at(c, "/image").empty()) {
            errs.push_back(FieldError::required(containers_path.index(i).child("image"),
                                                fmt::format("MPIReplicaSpec is not valid: Image is undefined in the container of {}", rt)));
          }
          if (string_at(c, "/name").empty()) {
            errs.push_back(FieldError::required(containers_path.index(i).child("name"),
                                                fmt::format("MPIReplicaSpec is not valid: ImageName is undefined in the container of {}", rt)));
          }
        }
        if (rt == kLauncher) {
          const Value* r = member(&m.value, "replicas");
          if (r != nullptr && !(r->IsInt() && r->GetInt() == 1)) {
            errs.push_back(FieldError::invalid(role.child("replicas"), api::FieldValue::of_json(*r),
                                               "MPIReplicaSpec is not valid: There must be only 1 launcher replica"));
          }
        }
      }
      if (member(specs, kLauncher) == nullptr) {
        errs.push_back(FieldError::required(specs_path.key(kLauncher), "MPIReplicaSpec is not valid: Master ReplicaSpec must be present"));
      }
    }
    framework::validate_managed_by(old_job, job, errs);
    // The deprecated location of cleanPodPolicy counts only while runPolicy's is unset (set_defaults
    // then copies it there, so the controller reports it under spec.runPolicy).
    if (const Value* clean = json::find(job, "/spec/cleanPodPolicy"); clean != nullptr && !json::find(job, "/spec/runPolicy/cleanPodPolicy")) {
      if (auto e = framework::clean_pod_policy_error(*clean, FieldPath("spec").child("cleanPodPolicy"))) errs.push_back(*e);
    }
    framework::validate_common_spec(d_, job, errs);
    return out;
  }

  // Workers first, then the launcher (training-operator creates them in that order); the
  // launcher pod is "<job>-launcher", not "<job>-launcher-0".
  std::vector<PodSlot> pod_slots(const Value& job) const override {
    const JobView j = view(job);
    std::vector<PodSlot> slots;
    for (int32_t i = 0; i < j.workers; ++i) slots.push_back({std::string(kWorker), i, {}});
    if (j.launcher != nullptr) slots.push_back({std::string(kLauncher), 0, j.launcher_name()});
    return slots;
  }

  Status decorate_pod(const Value& job, const PodSlot& slot, Document& pod) const override {
    const JobView j = view(job);
    auto& a = pod.alloc();
    Value* spec = json::find(pod.root(), "/spec");
    Value* containers = spec != nullptr ? member(spec, "containers") : nullptr;
    if (containers == nullptr || !containers->IsArray() || containers->Empty() || !(*containers)[0].IsObject()) {
      return fail(fmt::format("MPIJob {}: spec.mpiReplicaSpecs[{}].template.spec.containers is empty", j.name, slot.replica_type));
    }
    Value& c0 = (*containers)[0];
    if (slot.replica_type == kWorker) {
      // Workers idle until the launcher execs into them.
      const Value* command = member(&c0, "command");
      if (command == nullptr || !command->IsArray() || command->Empty()) {
        c0.EraseMember("command");
        c0.EraseMember("args");
        c0.AddMember("command", strings({"sleep"}, a), a);
        c0.AddMember("args", strings({"365d"}, a), a);
      }
      // Open MPI checks the rsh agent's path on every rank, so workers carry kubexec.sh too.
      ensure_array(c0, "volumeMounts", a).PushBack(volume_mount(kConfigVolume, kConfigMountPath, a), a);
      ensure_array(*spec, "volumes", a).PushBack(config_volume(j.name, {{"kubexec.sh", kScriptMode}}, a), a);
      return {};
    }

    json::remove(pod, "/metadata/labels/" + json::escape_pointer_token(framework::job_labels::kReplicaIndex));
    if (auto s = framework::set_master_role(pod); !s) return s;
    if (string_at(*spec, "/serviceAccountName").empty()) {
      spec->EraseMember("serviceAccountName");
      spec->AddMember("serviceAccountName", json::str(j.launcher_name(), a), a);
    }
    ensure_array(*spec, "initContainers", a).PushBack(kubectl_delivery(j, config_.option(kKubectlDeliveryImageOption), a), a);
    const std::string kubexec_path = fmt::format("{}/kubexec.sh", kConfigMountPath);
    const bool bootstrap = has_env(c0, "I_MPI_HYDRA_BOOTSTRAP");
    const bool bootstrap_exec = has_env(c0, "I_MPI_HYDRA_BOOTSTRAP_EXEC");
    Value& env = ensure_array(c0, "env", a);
    env.PushBack(env_var("OMPI_MCA_plm_rsh_agent", kubexec_path, a), a);
    env.PushBack(env_var("OMPI_MCA_orte_default_hostfile", fmt::format("{}/hostfile", kConfigMountPath), a), a);
    if (!j.gpu_launcher) {
      // A CPU launcher must not grab GPUs through the NVIDIA runtime's defaults.
      env.PushBack(env_var("NVIDIA_VISIBLE_DEVICES", "", a), a);
      env.PushBack(env_var("NVIDIA_DRIVER_CAPABILITIES", "", a), a);
    }
    if (!bootstrap) env.PushBack(env_var("I_MPI_HYDRA_BOOTSTRAP", "rsh", a), a);
    if (!bootstrap_exec) env.PushBack(env_var("I_MPI_HYDRA_BOOTSTRAP_EXEC", kubexec_path, a), a);
    Value& mounts = ensure_array(c0, "volumeMounts", a);
    mounts.PushBack(volume_mount(kKubectlVolume, kKubectlMountPath, a), a);
    mounts.PushBack(volume_mount(kConfigVolume, kConfigMountPath, a), a);
    Value& volumes = ensure_array(*spec, "volumes", a);
    Value empty_dir = named(kKubectlVolume, a);
    empty_dir.AddMember("emptyDir", Value(rapidjson::kObjectType), a);
    volumes.PushBack(empty_dir, a);
    volumes.PushBack(config_volume(j.name, {{"kubexec.sh", kScriptMode}, {"hostfile", kHostfileMode}, {"discover_hosts.sh", kScriptMode}}, a), a);
    return {};
  }

  // ServiceAccount, ConfigMap, Role, RoleBinding, in training-operator's order. Like upstream,
  // nothing is created or updated while the job is suspended or once its launcher finished.
  Result<std::vector<DesiredObject>> desired_objects(const Value& job, const Observed& observed) const override {
    const JobView j = view(job);
    std::vector<DesiredObject> out;
    if (j.suspended || j.launcher == nullptr || finished(launcher_pod(j, observed))) return out;

    DesiredObject sa;
    sa.resource = {"", "v1", "serviceaccounts"};
    sa.object = object("v1", "ServiceAccount", j, j.service_account);
    // A ServiceAccount the template names may well exist already (and belong to someone else).
    sa.use_existing = true;
    out.push_back(std::move(sa));

    DesiredObject cm;
    cm.resource = {"", "v1", "configmaps"};
    cm.object = config_map(j, observed);
    cm.update = DesiredObject::Update::WhenDiffers;
    cm.compared = {"/data"};
    out.push_back(std::move(cm));

    DesiredObject r;
    r.resource = {"rbac.authorization.k8s.io", "v1", "roles"};
    r.object = role(j);
    r.update = DesiredObject::Update::WhenDiffers;  // scaling changes the exec'able workers
    r.compared = {"/rules"};
    out.push_back(std::move(r));

    DesiredObject rb;
    rb.resource = {"rbac.authorization.k8s.io", "v1", "rolebindings"};
    rb.object = role_binding(j);
    out.push_back(std::move(rb));
    return out;
  }

  // The status training-operator v1.8.1 makes observable: per-type counts from the launcher pod
  // and the worker slots, then the common rules visited Launcher first (so a finished launcher
  // decides before any worker does).
  StatusProposal compute_status(const Value& job, const Observed& observed) const override {
    StatusProposal p;
    const JobView j = view(job);
    const Value* launcher = launcher_pod(j, observed);
    if (j.launcher != nullptr) {
      auto& l = p.replica_statuses[std::string(kLauncher)];
      const std::string phase = launcher != nullptr ? string_at(*launcher, "/status/phase") : std::string();
      if (phase == "Running") l.active = 1;
      else if (phase == "Succeeded") l.succeeded = 1;
      else if (phase == "Failed") l.failed = 1;
    }
    int32_t workers_seen = 0, workers_evicted = 0;
    if (j.worker != nullptr) {
      auto& w = p.replica_statuses[std::string(kWorker)];
      if (!finished(launcher)) {
        for (const Value* pod : worker_pods(j, observed, true)) {
          ++workers_seen;
          const std::string phase = string_at(*pod, "/status/phase");
          if (phase == "Running") ++w.active;
          else if (phase == "Succeeded") ++w.succeeded;
          else if (phase == "Failed") ++w.failed;
          if (phase == "Failed" && string_at(*pod, "/status/reason") == "Evicted") ++workers_evicted;
        }
      }
    }
    // The events of upstream's launcher and worker status routine (its conditions are
    // overwritten by the common ones below, its events are not).
    const std::string who = j.ns + "/" + j.name;
    const std::string launcher_phase = launcher != nullptr ? string_at(*launcher, "/status/phase") : std::string();
    if (launcher_phase == "Succeeded") {
      // The plural kind in the reason is upstream's.
      p.events.push_back({"Normal", "mpijobsSucceeded", fmt::format("MPIJob {} successfully completed.", who)});
    } else if (launcher_phase == "Failed") {
      std::string reason = string_at(*launcher, "/status/reason");
      p.events.push_back({"Warning", reason.empty() ? "MPIJobFailed" : reason, fmt::format("MPIJob {} has failed", who)});
    }
    if (workers_evicted > 0)
      p.events.push_back({"Warning", "MPIJobEvicted", fmt::format("{}/{} workers are evicted", workers_evicted, workers_seen)});
    if (launcher_phase == "Running" && workers_seen == j.workers &&
        p.replica_statuses[std::string(kWorker)].active == workers_seen)
      p.events.push_back({"Normal", "MPIJobRunning", fmt::format("MPIJob {} is running", who)});
    for (const std::string& rt : kReplicaTypes) {
      const Value* spec = spec_of(job, rt);
      if (spec == nullptr) continue;
      const auto& c = p.replica_statuses[rt];
      if (rt == kLauncher) {
        if (c.active > 0) p.conditions.push_back({"Running", "True", "MPIJobRunning", fmt::format("MPIJob {} is running.", j.name)});
        const int32_t replicas = static_cast<int32_t>(json::get_int(*spec, "/replicas").value_or(1));
        if (replicas - c.succeeded == 0) {
          p.conditions.push_back({"Succeeded", "True", "MPIJobSucceeded", fmt::format("MPIJob {} is successfully completed.", j.name)});
          p.events.push_back({"Normal", "MPIJobSucceeded", p.conditions.back().message});
          p.set_completion_time = true;
          return p;
        }
      }
      if (c.failed > 0) {
        if (string_at(*spec, "/restartPolicy") == "ExitCode") {
          p.conditions.push_back({"Restarting", "True", "MPIJobRestarting",
                                  fmt::format("MPIJob {} is restarting because {} {} replica(s) failed.", j.name, c.failed, rt)});
          p.events.push_back({"Warning", "MPIJobRestarting", p.conditions.back().message});
        } else {
          // Upstream writes the reason "MPIJobMPIJobFailed" (the kind prefixed twice).
          p.conditions.push_back({"Failed", "True", "MPIJobFailed",
                                  fmt::format("MPIJob {} is failed because {} {} replica(s) failed.", j.name, c.failed, rt)});
          p.events.push_back({"Normal", "MPIJobFailed", p.conditions.back().message});
          p.set_completion_time = true;
          return p;
        }
      }
    }
    return p;
  }

  // training-operator's MPIJob controller creates its pods itself: workers with their own message,
  // the launcher as MPIJobRunning; its pods' exit codes are not announced. Everything else (pod
  // deletions on clean-up, the PodGroup, TTL) is the common job controller's.
  framework::CoreWording child_event(framework::ChildEvent e, const Value& job,
                                     const framework::ChildSubject& s) const override {
    const bool launcher = s.kind == "Pod" && s.replica_type == kLauncher;
    const bool worker = s.kind == "Pod" && s.replica_type == kWorker;
    switch (e) {
      case framework::ChildEvent::Created:
        if (launcher) return {"MPIJobRunning", fmt::format("launcher pod created success: {}", s.name), "Normal"};
        if (worker) return {"SuccessfulCreatePod", fmt::format("Created worker pod: {}", s.name), "Normal"};
        break;
      case framework::ChildEvent::CreateFailed:
        if (launcher) return {"MPIJobFailed", fmt::format("launcher pod created failed: {}", s.detail), "Warning"};
        if (worker) return {"MPIJobFailed", fmt::format("worker pod created failed: {}", s.detail), "Warning"};
        break;
      case framework::ChildEvent::ExitedWithCode:
        return {};
      default:
        break;
    }
    return framework::training_operator_child_event(e, job, s);
  }

  // training-operator's MPIJob controller words an object it does not control under the job's
  // name (its launcher pod, a worker, the ConfigMap, Role or RoleBinding) with its own constant.
  framework::CoreWording foreign_object_wording(const Value&, const framework::ForeignObject& object) const override {
    return {"ErrResourceExists", fmt::format("Resource \"{}\" of MPIJobKind \"{}\" already exists and is not managed by MPIJob",
                                             object.name, object.kind)};
  }
};

framework::FrameworkDescriptor make_descriptor() {
  auto d = framework::kubeflow_v1_descriptor("MPIJob", "mpiReplicaSpecs", kReplicaTypes, "mpi", "mpi-port", 0, "mpi");
  // Two modules serve MPIJob: this one answers to its versioned names and to the bare kind, which
  // names kubeflow.org/v1 in training-operator's --enable-scheme.
  d.name = "kubeflow.org/mpijob@v1";
  d.aliases = {"mpijob-v1", "mpijobv1"};
  d.kind_alias_default = true;
  // No Services: the launcher reaches workers by pod name through the API server.
  d.owned_resources = {{"", "v1", "configmaps"},
                       {"", "v1", "serviceaccounts"},
                       {"rbac.authorization.k8s.io", "v1", "roles"},
                       {"rbac.authorization.k8s.io", "v1", "rolebindings"}};
  return d;
}

}  // namespace

Status register_mpi_v1(framework::Registry& registry) {
  auto r = framework::registration_of<MpiV1Plugin>(
      make_descriptor(), {{kKubectlDeliveryImageOption, "kubeflow/kubectl-delivery:latest",
                           "image of the MPIJob v1 launcher's kubectl-delivery init container"}});
  r.permissions = {
      {{""}, {"configmaps"}, {"get", "list", "watch", "create", "update", "delete"}, "MPIJob v1: the hostfile ConfigMap."},
      {{""}, {"serviceaccounts"}, {"get", "list", "watch", "create"},
       "MPIJob v1: each launcher gets a ServiceAccount, a Role and a RoleBinding that let it `kubectl exec` into its workers."},
      {{""}, {"pods/exec"}, {"create"}, "MPIJob v1: granting pods/exec in a Role requires holding it (RBAC escalation rule)."},
      {{"rbac.authorization.k8s.io"}, {"roles", "rolebindings"}, {"get", "list", "watch", "create", "update"},
       "MPIJob v1: the launcher's Role and RoleBinding."}};
  return registry.add(std::move(r));
}

}  // namespace unitrain::frameworks::mpi::v1
