// MPIJob v2beta1 hooks, following mpi-operator v0.8.2 (defaults, validation order and messages,
// object names, env, volumes, status). Deliberate departures are listed in /docs/compatibility.md.
#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <utility>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/api/field_errors.h"
#include "core/api/labels.h"
#include "core/framework/plugin.h"
#include "core/framework/registry.h"
#include "core/json/json.h"
#include "frameworks/mpi/v2/register.h"
#include "frameworks/mpi/v2/ssh_key.h"

namespace unitrain::frameworks::mpi::v2 {
namespace {

using api::FieldError;
using api::FieldPath;
using framework::DesiredObject;
using framework::Observed;
using framework::PodSlot;
using framework::StatusProposal;
using json::Allocator;
using json::Document;
using json::Value;

constexpr std::string_view kLauncher = "Launcher";
constexpr std::string_view kWorker = "Worker";
constexpr std::string_view kOperator = "mpi-operator";
constexpr std::string_view kLabelOperator = "training.kubeflow.org/operator-name";
constexpr std::string_view kLabelJobName = "training.kubeflow.org/job-name";
constexpr std::string_view kLabelJobRole = "training.kubeflow.org/job-role";
constexpr std::string_view kLabelReplicaIndex = "training.kubeflow.org/replica-index";
constexpr std::string_view kDefaultSshPath = "/root/.ssh";
constexpr std::string_view kConfigMountPath = "/etc/mpi";
constexpr std::size_t kMaxMessage = 1024;

const std::vector<std::string> kRestartPolicies = {"Never", "OnFailure"};
const std::vector<std::string> kCleanPolicies = {"All", "None", "Running"};
const std::vector<std::string> kImplementations = {"Intel", "MPICH", "OpenMPI"};
const std::vector<std::string> kManagers = {"kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"};

rapidjson::GenericStringRef<char> ref(std::string_view s) {
  return rapidjson::StringRef(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}
const Value* member(const Value* obj, std::string_view key) {
  if (obj == nullptr || !obj->IsObject()) return nullptr;
  auto it = obj->FindMember(ref(key));
  return it == obj->MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
}
Value* member(Value* obj, std::string_view key) {
  if (obj == nullptr || !obj->IsObject()) return nullptr;
  auto it = obj->FindMember(ref(key));
  return it == obj->MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
}
std::string string_at(const Value& root, std::string_view pointer) {
  auto s = json::get_string(root, pointer);
  return s ? std::string(*s) : std::string();
}
std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
std::string label_of(const Value& obj, std::string_view key) {
  return string_at(obj, "/metadata/labels/" + json::escape_pointer_token(key));
}

// Ensures obj[key] is an array and returns it.
Value& array_member(Value& obj, std::string_view key, Allocator& a) {
  auto it = obj.FindMember(ref(key));
  if (it != obj.MemberEnd() && it->value.IsArray()) return it->value;
  if (it != obj.MemberEnd()) obj.RemoveMember(it);
  obj.AddMember(json::str(key, a), Value(rapidjson::kArrayType), a);
  return obj.FindMember(ref(key))->value;
}
Value& object_member(Value& obj, std::string_view key, Allocator& a) {
  auto it = obj.FindMember(ref(key));
  if (it != obj.MemberEnd() && it->value.IsObject()) return it->value;
  if (it != obj.MemberEnd()) obj.RemoveMember(it);
  obj.AddMember(json::str(key, a), Value(rapidjson::kObjectType), a);
  return obj.FindMember(ref(key))->value;
}
void put(Value& obj, std::string_view key, Value v, Allocator& a) {
  auto it = obj.FindMember(ref(key));
  if (it != obj.MemberEnd()) {
    it->value = std::move(v);
  } else {
    obj.AddMember(json::str(key, a), v, a);
  }
}
void put(Value& obj, std::string_view key, std::string_view s, Allocator& a) { put(obj, key, json::str(s, a), a); }

Value env_var(std::string_view name, std::string_view value, Allocator& a) {
  Value e(rapidjson::kObjectType);
  e.AddMember("name", json::str(name, a), a);
  if (!value.empty()) e.AddMember("value", json::str(value, a), a);
  return e;
}

// ---- reading the job -------------------------------------------------------------------------

struct JobView {
  std::string name, ns, uid;
  int32_t slots = 1;
  bool launcher_as_worker = false;
  bool suspended = false;
  std::string implementation = "OpenMPI";
  std::string ssh_path = std::string(kDefaultSshPath);
  std::string creation_policy = "AtStartup";
  const Value* launcher = nullptr;
  const Value* worker = nullptr;
  int32_t workers = 0;
};

const Value* replica_spec(const Value& job, std::string_view rt) {
  return member(json::find(job, "/spec/mpiReplicaSpecs"), rt);
}

JobView view(const Value& job) {
  JobView v;
  v.name = string_at(job, "/metadata/name");
  v.ns = string_at(job, "/metadata/namespace");
  v.uid = string_at(job, "/metadata/uid");
  v.slots = static_cast<int32_t>(json::get_int(job, "/spec/slotsPerWorker").value_or(1));
  v.launcher_as_worker = json::get_bool(job, "/spec/runLauncherAsWorker").value_or(false);
  v.suspended = json::get_bool(job, "/spec/runPolicy/suspend").value_or(false);
  if (auto s = string_at(job, "/spec/mpiImplementation"); !s.empty()) v.implementation = s;
  if (auto s = string_at(job, "/spec/sshAuthMountPath"); !s.empty()) v.ssh_path = s;
  if (auto s = string_at(job, "/spec/launcherCreationPolicy"); !s.empty()) v.creation_policy = s;
  v.launcher = replica_spec(job, kLauncher);
  v.worker = replica_spec(job, kWorker);
  if (v.worker != nullptr) v.workers = static_cast<int32_t>(json::get_int(*v.worker, "/replicas").value_or(0));
  return v;
}

std::string service_domain(const JobView& j, const std::string& cluster_domain) {
  std::string d = j.name + "." + j.ns + ".svc";
  if (!cluster_domain.empty()) d += "." + cluster_domain;
  return d;
}

// ---- observed children -----------------------------------------------------------------------

const Value* launcher_job(const JobView& j, const Observed& observed) {
  auto it = observed.owned.find("jobs.batch");
  if (it == observed.owned.end()) return nullptr;
  for (const Value* job : it->second) {
    if (job != nullptr && string_at(*job, "/metadata/name") == j.name + "-launcher") return job;
  }
  return nullptr;
}

bool condition_true(const Value* obj, std::string_view pointer, std::string_view type) {
  if (obj == nullptr) return false;
  const Value* conds = json::find(*obj, pointer);
  if (conds == nullptr || !conds->IsArray()) return false;
  for (const auto& c : conds->GetArray()) {
    if (string_at(c, "/type") == type && string_at(c, "/status") == "True") return true;
  }
  return false;
}
const Value* condition(const Value* obj, std::string_view type) {
  if (obj == nullptr) return nullptr;
  const Value* conds = json::find(*obj, "/status/conditions");
  if (conds == nullptr || !conds->IsArray()) return nullptr;
  for (const auto& c : conds->GetArray()) {
    if (string_at(c, "/type") == type && string_at(c, "/status") == "True") return &c;
  }
  return nullptr;
}
bool job_complete(const Value* job) { return condition_true(job, "/status/conditions", "Complete"); }
bool job_failed(const Value* job) { return condition_true(job, "/status/conditions", "Failed"); }

std::vector<const Value*> worker_pods(const JobView& j, const Observed& observed) {
  std::vector<const Value*> out;
  for (const Value* pod : observed.pods) {
    if (pod == nullptr || label_of(*pod, kLabelJobRole) != "worker") continue;
    if (auto owner = label_of(*pod, kLabelJobName); !owner.empty() && owner != j.name) continue;
    out.push_back(pod);
  }
  std::sort(out.begin(), out.end(), [](const Value* a, const Value* b) {
    return string_at(*a, "/metadata/name") < string_at(*b, "/metadata/name");
  });
  return out;
}

// Pods of the launcher Job: the core hands them over as owned["pods/jobs.batch"]; without that
// key, the job's own pod list is searched. Either way a pod counts when it is labelled launcher
// and, if the Job's uid is known, controlled by that Job.
std::vector<const Value*> launcher_pods(const JobView& j, const Value* launcher, const Observed& observed) {
  std::vector<const Value*> out;
  if (launcher == nullptr) return out;
  const std::string uid = string_at(*launcher, "/metadata/uid");
  auto owned = observed.owned.find("pods/jobs.batch");
  const std::vector<const Value*>& candidates = owned != observed.owned.end() ? owned->second : observed.pods;
  for (const Value* pod : candidates) {
    if (pod == nullptr || label_of(*pod, kLabelJobRole) != "launcher") continue;
    if (auto owner = label_of(*pod, kLabelJobName); !owner.empty() && owner != j.name) continue;
    if (!uid.empty()) {
      bool controlled = false;
      if (const Value* refs = json::find(*pod, "/metadata/ownerReferences"); refs != nullptr && refs->IsArray()) {
        for (const auto& r : refs->GetArray()) {
          if (string_at(r, "/uid") == uid && json::get_bool(r, "/controller").value_or(false)) controlled = true;
        }
      }
      if (!controlled) continue;
    }
    out.push_back(pod);
  }
  return out;
}

bool pod_ready(const Value& pod) { return condition_true(&pod, "/status/conditions", "Ready"); }

// ---- objects ---------------------------------------------------------------------------------

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

Value mount(std::string_view name, std::string_view path, Allocator& a) {
  Value m(rapidjson::kObjectType);
  m.AddMember("name", json::str(name, a), a);
  m.AddMember("mountPath", json::str(path, a), a);
  return m;
}

Value config_volume(const JobView& j, Allocator& a) {
  Value items(rapidjson::kArrayType);
  using Item = std::pair<const char*, int>;
  for (auto [key, mode] : std::initializer_list<Item>{{"hostfile", 0444}, {"discover_hosts.sh", 0555}}) {
    Value item(rapidjson::kObjectType);
    item.AddMember("key", json::str(key, a), a);
    item.AddMember("path", json::str(key, a), a);
    item.AddMember("mode", Value(mode), a);
    items.PushBack(item, a);
  }
  Value cm(rapidjson::kObjectType);
  cm.AddMember("name", json::str(j.name + "-config", a), a);
  cm.AddMember("items", items, a);
  Value v(rapidjson::kObjectType);
  v.AddMember("name", "mpi-job-config", a);
  v.AddMember("configMap", cm, a);
  return v;
}

Value app_labels(const JobView& j, Allocator& a) {
  Value l(rapidjson::kObjectType);
  l.AddMember("app", json::str(j.name, a), a);
  return l;
}

Value metadata(const JobView& j, std::string_view name, Allocator& a) {
  Value m(rapidjson::kObjectType);
  m.AddMember("name", json::str(name, a), a);
  if (!j.ns.empty()) m.AddMember("namespace", json::str(j.ns, a), a);
  m.AddMember("labels", app_labels(j, a), a);
  return m;
}

std::string host_line(const JobView& j, const std::string& host, const std::string& domain) {
  if (j.implementation == "OpenMPI") return fmt::format("{}.{} slots={}\n", host, domain, j.slots);
  return fmt::format("{}.{}:{}\n", host, domain, j.slots);
}

Document service(const JobView& j) {
  Document d = Document::object();
  auto& a = d.alloc();
  Value& r = d.root();
  r.AddMember("apiVersion", "v1", a);
  r.AddMember("kind", "Service", a);
  r.AddMember("metadata", metadata(j, j.name, a), a);
  Value spec(rapidjson::kObjectType);
  spec.AddMember("clusterIP", "None", a);
  Value sel(rapidjson::kObjectType);
  sel.AddMember(json::str(kLabelJobName, a), json::str(j.name, a), a);
  sel.AddMember(json::str(kLabelOperator, a), json::str(kOperator, a), a);
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
  Document d = Document::object();
  auto& a = d.alloc();
  Value& r = d.root();
  r.AddMember("apiVersion", "v1", a);
  r.AddMember("kind", "ConfigMap", a);
  r.AddMember("metadata", metadata(j, j.name + "-config", a), a);
  Value data(rapidjson::kObjectType);
  data.AddMember("discover_hosts.sh", json::str(discover, a), a);
  data.AddMember("hostfile", json::str(hostfile, a), a);
  r.AddMember("data", data, a);
  return d;
}

Result<Document> ssh_secret(const JobView& j) {
  auto key = generate_ssh_key();
  if (!key) return fail(key.error());
  Document d = Document::object();
  auto& a = d.alloc();
  Value& r = d.root();
  r.AddMember("apiVersion", "v1", a);
  r.AddMember("kind", "Secret", a);
  r.AddMember("metadata", metadata(j, j.name + "-ssh", a), a);
  r.AddMember("type", "kubernetes.io/ssh-auth", a);
  Value data(rapidjson::kObjectType);
  data.AddMember("ssh-privatekey", json::str(base64(key->private_key_pem), a), a);
  data.AddMember("ssh-publickey", json::str(base64(key->authorized_key), a), a);
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

class MpiV2Plugin final : public framework::FrameworkPlugin,
                          public framework::LauncherOrdering,
                          public framework::GangContribution {
 public:
  MpiV2Plugin(framework::FrameworkDescriptor d, framework::PluginConfig c) : d_(std::move(d)), config_(std::move(c)) {}

  const framework::FrameworkDescriptor& descriptor() const override { return d_; }
  framework::Capabilities capabilities() const override { return {this, this, nullptr}; }

  void set_defaults(Document& job) const override {
    auto& a = job.alloc();
    if (!json::find(job.root(), "/spec") || !json::find(job.root(), "/spec")->IsObject()) {
      (void)json::set(job, "/spec", Value(rapidjson::kObjectType));
    }
    Value& spec = *json::find(job.root(), "/spec");
    Value& run = object_member(spec, "runPolicy", a);
    if (member(&run, "cleanPodPolicy") == nullptr) put(run, "cleanPodPolicy", "None", a);
    if (member(&spec, "slotsPerWorker") == nullptr) put(spec, "slotsPerWorker", Value(1), a);
    auto empty_string = [&](std::string_view key) {
      const Value* v = member(&spec, key);
      return v == nullptr || (v->IsString() && v->GetStringLength() == 0);
    };
    if (empty_string("sshAuthMountPath")) put(spec, "sshAuthMountPath", kDefaultSshPath, a);
    if (empty_string("mpiImplementation")) put(spec, "mpiImplementation", "OpenMPI", a);
    if (empty_string("launcherCreationPolicy")) put(spec, "launcherCreationPolicy", "AtStartup", a);
    auto replica = [&](std::string_view rt, std::string_view restart, int replicas) {
      Value* rs = member(member(&spec, "mpiReplicaSpecs"), rt);
      if (rs == nullptr || !rs->IsObject()) return;
      const Value* rp = member(rs, "restartPolicy");
      if (rp == nullptr || (rp->IsString() && rp->GetStringLength() == 0)) put(*rs, "restartPolicy", restart, a);
      if (member(rs, "replicas") == nullptr) put(*rs, "replicas", Value(replicas), a);
    };
    replica(kLauncher, "OnFailure", 1);
    replica(kWorker, "Never", 0);
  }

  framework::Validation validate(const Value*, const Value& job) const override {
    framework::Validation out;
    auto& errs = out.errors;
    const JobView j = view(job);
    int32_t r = j.worker != nullptr && j.workers > 0 ? j.workers : 1;
    const std::string host = fmt::format("{}-worker-{}", j.name, r - 1);
    if (auto reasons = api::validate_dns1035_label(host); !reasons.empty()) {
      std::string joined;
      for (const auto& s : reasons) joined += (joined.empty() ? "" : ", ") + s;
      errs.push_back(FieldError::invalid(FieldPath("metadata").child("name"), j.name,
                                         fmt::format("will not able to create pod and service with invalid DNS label {}: {}",
                                                     api::go_quote(host), joined)));
    }
    const FieldPath spec("spec");
    const FieldPath specs = spec.child("mpiReplicaSpecs");
    const Value* map = json::find(job, "/spec/mpiReplicaSpecs");
    if (map == nullptr || map->IsNull()) {
      errs.push_back(FieldError::required(specs, "must have replica specs"));
    } else {
      auto replica_spec_errors = [&](const Value& rs, const FieldPath& path) {
        if (member(&rs, "replicas") == nullptr) errs.push_back(FieldError::required(path.child("replicas"), "must define number of replicas"));
        std::string rp = string_at(rs, "/restartPolicy");
        if (std::find(kRestartPolicies.begin(), kRestartPolicies.end(), rp) == kRestartPolicies.end()) {
          errs.push_back(FieldError::not_supported(path.child("restartPolicy"), rp, kRestartPolicies));
        }
        const Value* cs = json::find(rs, "/template/spec/containers");
        if (cs == nullptr || !cs->IsArray() || cs->Empty()) {
          errs.push_back(FieldError::required(path.child("template").child("spec").child("containers"),
                                              "must define at least one container"));
        }
      };
      if (j.launcher == nullptr) {
        errs.push_back(FieldError::required(specs.key(kLauncher), "must have Launcher replica spec"));
      } else {
        replica_spec_errors(*j.launcher, specs.key(kLauncher));
        if (auto n = json::get_int(*j.launcher, "/replicas"); n && *n != 1) {
          errs.push_back(FieldError::invalid(specs.key(kLauncher).child("replicas"), *n, "must be 1"));
        }
      }
      if (j.worker != nullptr) {
        replica_spec_errors(*j.worker, specs.key(kWorker));
        if (auto n = json::get_int(*j.worker, "/replicas"); n && *n <= 0) {
          errs.push_back(FieldError::invalid(specs.key(kWorker).child("replicas"), *n, "must be greater than or equal to 1"));
        }
      }
    }
    auto nonnegative = [&](std::string_view pointer, const FieldPath& path) {
      if (auto n = json::get_int(job, pointer); n && *n < 0) {
        errs.push_back(FieldError::invalid(path, *n, "must be greater than or equal to 0"));
      }
    };
    if (member(json::find(job, "/spec"), "slotsPerWorker") == nullptr) {
      errs.push_back(FieldError::required(spec.child("slotsPerWorker"), "must have number of slots per worker"));
    } else {
      nonnegative("/spec/slotsPerWorker", spec.child("slotsPerWorker"));
    }
    const FieldPath run = spec.child("runPolicy");
    const Value* clean = member(json::find(job, "/spec/runPolicy"), "cleanPodPolicy");
    if (clean == nullptr) {
      errs.push_back(FieldError::required(run.child("cleanPodPolicy"), "must have clean Pod policy"));
    } else {
      std::string c = clean->IsString() ? clean->GetString() : json::dump(*clean);
      if (std::find(kCleanPolicies.begin(), kCleanPolicies.end(), c) == kCleanPolicies.end()) {
        errs.push_back(FieldError::not_supported(run.child("cleanPodPolicy"), c, kCleanPolicies));
      }
    }
    nonnegative("/spec/runPolicy/ttlSecondsAfterFinished", run.child("ttlSecondsAfterFinished"));
    nonnegative("/spec/runPolicy/activeDeadlineSeconds", run.child("activeDeadlineSeconds"));
    nonnegative("/spec/runPolicy/backoffLimit", run.child("backoffLimit"));
    if (auto m = json::get_string(job, "/spec/runPolicy/managedBy")) {
      if (std::find(kManagers.begin(), kManagers.end(), *m) == kManagers.end()) {
        errs.push_back(FieldError::not_supported(run.child("managedBy"), std::string(*m), kManagers));
      }
    }
    if (string_at(job, "/spec/sshAuthMountPath").empty()) {
      errs.push_back(FieldError::required(spec.child("sshAuthMountPath"), "must have a mount path for SSH credentials"));
    }
    std::string impl = string_at(job, "/spec/mpiImplementation");
    if (std::find(kImplementations.begin(), kImplementations.end(), impl) == kImplementations.end()) {
      errs.push_back(FieldError::not_supported(spec.child("mpiImplementation"), impl, kImplementations));
    }
    return out;
  }

  std::vector<PodSlot> pod_slots(const Value& job) const override {
    std::vector<PodSlot> slots;
    const JobView j = view(job);
    if (j.worker == nullptr) return slots;
    for (int32_t i = 0; i < j.workers; ++i) slots.push_back({std::string(kWorker), i});
    return slots;
  }

  Status decorate_pod(const Value& job, const PodSlot& slot, Document& pod) const override {
    if (slot.replica_type != kWorker) {
      return fail(fmt::format("MPIJob: only Worker pods are slots, not {}", slot.replica_type));
    }
    const JobView j = view(job);
    if (!pod.root().IsObject()) pod = Document::object();
    auto& a = pod.alloc();
    Value& root = pod.root();
    if (j.launcher_as_worker) {
      Value& labels = object_member(object_member(root, "metadata", a), "labels", a);
      put(labels, kLabelReplicaIndex, std::to_string(slot.index + 1), a);
    }
    Value& spec = object_member(root, "spec", a);
    put(spec, "hostname", fmt::format("{}-worker-{}", j.name, slot.index), a);
    put(spec, "subdomain", j.name, a);
    if (json::get_bool(spec, "/hostNetwork").value_or(false)) put(spec, "dnsPolicy", "ClusterFirstWithHostNet", a);
    Value& dns = object_member(spec, "dnsConfig", a);
    Value& searches = array_member(dns, "searches", a);
    const std::string domain = config_.cluster_domain.empty() ? std::string("cluster.local") : config_.cluster_domain;
    searches.PushBack(json::str(fmt::format("{}.{}.svc.{}", j.name, j.ns, domain), a), a);
    Value& containers = array_member(spec, "containers", a);
    if (containers.Empty() || !containers[0].IsObject()) {
      return fail(fmt::format("MPIJob {}: worker pod {} has no containers", j.name, slot.index));
    }
    Value& c0 = containers[0];
    const Value* cmd = member(&c0, "command");
    const Value* args = member(&c0, "args");
    const bool no_cmd = cmd == nullptr || (cmd->IsArray() && cmd->Empty());
    const bool no_args = args == nullptr || (args->IsArray() && args->Empty());
    if (no_cmd && no_args) {
      Value command(rapidjson::kArrayType);
      command.PushBack("/usr/sbin/sshd", a);
      command.PushBack("-De", a);
      put(c0, "command", std::move(command), a);
    }
    array_member(c0, "env", a).PushBack(env_var("K_MPI_JOB_ROLE", "worker", a), a);
    array_member(c0, "volumeMounts", a).PushBack(mount("ssh-auth", j.ssh_path, a), a);
    array_member(spec, "volumes", a).PushBack(ssh_volume(j, a), a);
    return {};
  }

  Result<std::vector<DesiredObject>> desired_objects(const Value& job, const Observed& observed) const override {
    std::vector<DesiredObject> out;
    const JobView j = view(job);
    const Value* launcher = launcher_job(j, observed);
    // Once the launcher finished, nothing is created or updated any more.
    if (job_complete(launcher) || job_failed(launcher)) return out;

    DesiredObject svc;
    svc.resource = {"", "v1", "services"};
    svc.object = service(j);
    svc.update = DesiredObject::Update::WhenDiffers;
    svc.compared = {"/spec/selector", "/spec/publishNotReadyAddresses"};
    out.push_back(std::move(svc));

    DesiredObject cm;
    cm.resource = {"", "v1", "configmaps"};
    cm.object = config_map(j, config_.cluster_domain, observed);
    cm.update = DesiredObject::Update::WhenDiffers;
    cm.compared = {"/data"};
    out.push_back(std::move(cm));

    // The key pair is made only when the Secret is missing or lacks a key: a new pair on every
    // pass (upstream) costs a P-521 keygen per sync for nothing.
    const Value* existing = nullptr;
    if (auto it = observed.owned.find("secrets"); it != observed.owned.end()) {
      for (const Value* s : it->second) {
        if (s != nullptr && string_at(*s, "/metadata/name") == j.name + "-ssh") existing = s;
      }
    }
    bool keys_ok = false;
    if (existing != nullptr) {
      const Value* data = json::find(*existing, "/data");
      keys_ok = data != nullptr && data->IsObject() && data->MemberCount() == 2 && data->HasMember("ssh-privatekey") &&
                data->HasMember("ssh-publickey");
    }
    if (!keys_ok) {
      auto secret = ssh_secret(j);
      if (!secret) return fail(secret.error());
      DesiredObject s;
      s.resource = {"", "v1", "secrets"};
      s.object = std::move(*secret);
      s.update = existing != nullptr ? DesiredObject::Update::WhenDiffers : DesiredObject::Update::Never;
      if (existing != nullptr) s.compared = {"/data"};
      out.push_back(std::move(s));
    }

    if (launcher != nullptr || launcher_may_start(job, observed)) {
      auto tmpl = launcher_template(j);
      if (!tmpl) return fail(tmpl.error());
      Document d = Document::object();
      auto& a = d.alloc();
      Value& r = d.root();
      r.AddMember("apiVersion", "batch/v1", a);
      r.AddMember("kind", "Job", a);
      r.AddMember("metadata", metadata(j, j.name + "-launcher", a), a);
      r.AddMember("spec", Value(rapidjson::kObjectType), a);
      Value& jspec = *json::find(r, "/spec");
      const Value* run = json::find(job, "/spec/runPolicy");
      if (const Value* v = member(run, "activeDeadlineSeconds")) jspec.AddMember("activeDeadlineSeconds", Value(*v, a), a);
      if (const Value* v = member(run, "backoffLimit")) jspec.AddMember("backoffLimit", Value(*v, a), a);
      jspec.AddMember("template", Value(tmpl->root(), a), a);
      if (const Value* v = member(run, "ttlSecondsAfterFinished")) jspec.AddMember("ttlSecondsAfterFinished", Value(*v, a), a);
      // Always explicit: the API server defaults it to false, so an omitted field would compare unequal.
      jspec.AddMember("suspend", j.suspended, a);
      jspec.AddMember("podReplacementPolicy", "Failed", a);
      DesiredObject l;
      l.resource = {"batch", "v1", "jobs"};
      l.update = DesiredObject::Update::WhenDiffers;
      l.compared = {"/spec/suspend"};
      // Resuming a suspended launcher Job: its pod template may change only now (it is
      // immutable while the Job runs), so the scheduling directives follow the MPIJob in the
      // same update that unsuspends it; labels and annotations keep what others added.
      if (launcher != nullptr && !j.suspended && json::get_bool(*launcher, "/spec/suspend").value_or(false)) {
        Value& tmeta = object_member(*json::find(d.root(), "/spec/template"), "metadata", a);
        for (std::string_view key : {"labels", "annotations"}) {
          const Value* old = json::find(*launcher, "/spec/template/metadata/" + std::string(key));
          if (old == nullptr || !old->IsObject()) continue;
          Value& merged = object_member(tmeta, key, a);
          for (const auto& m : old->GetObject()) {
            if (!merged.HasMember(m.name)) merged.AddMember(Value(m.name, a), Value(m.value, a), a);
          }
        }
        l.compared.insert(l.compared.end(), {"/spec/template/metadata/labels", "/spec/template/metadata/annotations",
                                             "/spec/template/spec/nodeSelector", "/spec/template/spec/tolerations",
                                             "/spec/template/spec/schedulingGates"});
      }
      l.object = std::move(d);
      out.push_back(std::move(l));
    }
    return out;
  }

  StatusProposal compute_status(const Value& job, const Observed& observed) const override {
    StatusProposal p;
    const JobView j = view(job);
    const Value* launcher = launcher_job(j, observed);
    const bool complete = job_complete(launcher);
    const bool failed = job_failed(launcher);
    const bool done = complete || failed;
    int32_t launcher_running = 0;
    std::vector<const Value*> lpods = launcher_pods(j, launcher, observed);
    for (const Value* pod : lpods) {
      if (string_at(*pod, "/status/phase") == "Running") ++launcher_running;
    }
    if (launcher != nullptr) {
      auto& l = p.replica_statuses[std::string(kLauncher)];
      l.failed = static_cast<int32_t>(json::get_int(*launcher, "/status/failed").value_or(0));
      if (complete) l.succeeded = 1;
      else if (!failed) l.active = launcher_running;
    }
    auto& w = p.replica_statuses[std::string(kWorker)];
    int32_t evicted = 0;
    int32_t worker_count = 0;
    int32_t worker_running = 0;
    if (!done && !j.suspended) {
      for (const Value* pod : worker_pods(j, observed)) {
        ++worker_count;
        const std::string phase = string_at(*pod, "/status/phase");
        if (phase == "Running") {
          ++w.active;
          ++worker_running;
        } else if (phase == "Succeeded") {
          ++w.succeeded;
        } else if (phase == "Failed") {
          ++w.failed;
          if (string_at(*pod, "/status/reason") == "Evicted") ++evicted;
        }
      }
    }
    const std::string who = j.ns + "/" + j.name;
    const Value* existing_conditions = json::find(job, "/status/conditions");
    const bool had_running = existing_conditions != nullptr && existing_conditions->IsArray() && [&] {
      for (const auto& c : existing_conditions->GetArray()) {
        if (string_at(c, "/type") == "Running") return true;
      }
      return false;
    }();
    auto synthesize_running = [&] {
      if (!had_running) {
        p.conditions.push_back({"Running", "False", "MPIJobRunning",
                                fmt::format("MPIJob {} is finished but Running condition was never set.", who)});
      }
    };
    if (complete) {
      synthesize_running();
      p.conditions.push_back({"Succeeded", "True", "MPIJobSucceeded", fmt::format("MPIJob {} successfully completed.", who)});
      p.set_completion_time = true;
      if (auto t = json::get_string(*launcher, "/status/completionTime")) p.completion_time = std::string(*t);
    } else if (failed) {
      const Value* cond = condition(launcher, "Failed");
      std::string reason = cond != nullptr ? string_at(*cond, "/reason") : std::string();
      std::string message = cond != nullptr ? string_at(*cond, "/message") : std::string();
      if (reason.empty()) reason = "MPIJobFailed";
      if (message.empty()) message = fmt::format("MPIJob {} has failed", who);
      if (reason == "BackoffLimitExceeded") {
        const Value* newest = nullptr;
        for (const Value* pod : lpods) {
          if (string_at(*pod, "/status/phase") != "Failed") continue;
          if (newest == nullptr || string_at(*pod, "/metadata/creationTimestamp") > string_at(*newest, "/metadata/creationTimestamp")) {
            newest = pod;
          }
        }
        if (newest != nullptr) {
          reason += "/" + string_at(*newest, "/status/reason");
          message += ": " + string_at(*newest, "/status/message");
        }
      }
      if (message.size() > kMaxMessage) message = message.substr(0, kMaxMessage - 3) + "...";
      synthesize_running();
      p.conditions.push_back({"Failed", "True", reason, message});
      p.set_completion_time = true;
    }
    if (evicted > 0) {
      p.conditions.push_back({"Failed", "True", "MPIJobEvicted", fmt::format("{}/{} workers are evicted", evicted, worker_count)});
      p.set_completion_time = true;
    }
    // Suspended/Resumed conditions are the core's (worded by wording() below).
    if (!j.suspended && launcher != nullptr && !done && launcher_running >= 1 && worker_running == worker_count) {
      p.conditions.push_back({"Running", "True", "MPIJobRunning", fmt::format("MPIJob {} is running.", who)});
    }
    return p;
  }

  // mpi-operator's wording of the conditions the core raises (mpi-operator.md §1.6). Backoff and
  // deadline are the launcher Job's limits in v2, so they read like the Job controller's.
  framework::CoreWording wording(framework::CoreEvent e, const Value& job, std::string_view replica_type) const override {
    const std::string who = string_at(job, "/metadata/namespace") + "/" + string_at(job, "/metadata/name");
    switch (e) {
      case framework::CoreEvent::Created:
        return {"MPIJobCreated", fmt::format("MPIJob {} is created.", who)};
      case framework::CoreEvent::Suspended:
        return {"MPIJobSuspended", "MPIJob suspended"};
      case framework::CoreEvent::SuspendedNotRunning:
        return {"MPIJobSuspended", fmt::format("MPIJob {} is suspended.", who)};
      case framework::CoreEvent::Resumed:
        return {"MPIJobResumed", "MPIJob resumed"};
      case framework::CoreEvent::BackoffLimitExceeded:
        return {"BackoffLimitExceeded", "Job has reached the specified backoff limit"};
      case framework::CoreEvent::DeadlineExceeded:
        return {"DeadlineExceeded", "Job was active longer than specified deadline"};
      case framework::CoreEvent::ValidationFailed:
        return {"ValidationError", ""};
      case framework::CoreEvent::ReplicaRestarting:
      case framework::CoreEvent::ReplicaFailed:
        break;
    }
    return framework::training_operator_wording(e, d_.kind, job, replica_type);
  }

  // mpi-operator's ErrResourceExists, the same for every kind it creates (Service, ConfigMap,
  // Secret, workers, launcher Job, PodGroup).
  framework::CoreWording foreign_object_wording(const Value&, const framework::ForeignObject& object) const override {
    return {"ErrResourceExists", fmt::format("Resource \"{}\" of Kind \"{}\" already exists and is not managed by MPIJob",
                                             object.name, object.kind)};
  }

  // LauncherOrdering: AtStartup starts at once; WaitForWorkersReady (any other value, as
  // upstream) waits until every worker index exists and is Ready. Unlike upstream, an empty
  // worker list does not count as "all ready" unless there are no workers to wait for.
  bool launcher_may_start(const Value& job, const Observed& observed) const override {
    const JobView j = view(job);
    if (j.creation_policy == "AtStartup" || j.suspended) return true;
    std::set<std::string> ready;
    for (const Value* pod : worker_pods(j, observed)) {
      if (pod_ready(*pod)) ready.insert(string_at(*pod, "/metadata/name"));
    }
    for (int32_t i = 0; i < j.workers; ++i) {
      if (ready.count(fmt::format("{}-worker-{}", j.name, i)) == 0) return false;
    }
    return true;
  }

  int32_t min_member(const Value& job) const override {
    if (auto m = json::get_int(job, "/spec/runPolicy/schedulingPolicy/minAvailable")) return static_cast<int32_t>(*m);
    return view(job).workers + 1;
  }

 private:
  // The launcher pod template: a deep copy of the Launcher template plus labels, hostname,
  // subdomain, env, SSH and config volumes (mpi-operator §2.8).
  Result<Document> launcher_template(const JobView& j) const {
    if (j.launcher == nullptr) return fail(fmt::format("MPIJob {}: spec.mpiReplicaSpecs[Launcher] is missing", j.name));
    Document d = Document::object();
    auto& a = d.alloc();
    Value& tmpl = d.root();
    if (const Value* t = member(j.launcher, "template"); t != nullptr && t->IsObject()) tmpl.CopyFrom(*t, a);
    Value& meta = object_member(tmpl, "metadata", a);
    Value& labels = object_member(meta, "labels", a);
    put(labels, kLabelOperator, kOperator, a);
    put(labels, kLabelJobName, j.name, a);
    put(labels, kLabelJobRole, "launcher", a);
    if (j.launcher_as_worker) put(labels, kLabelReplicaIndex, "0", a);
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
    // The launcher pod joins the job's PodGroup like the workers (mpi-operator §2.16); the core
    // decorates slot pods only, and this template is not one.
    if (const std::string& gang = config_.gang_scheduler_name; !gang.empty()) {
      const bool volcano = lower(gang) == "volcano";
      if (volcano) {
        put(object_member(meta, "annotations", a), "scheduling.k8s.io/group-name", j.name, a);
      } else {
        put(object_member(meta, "labels", a), "scheduling.x-k8s.io/pod-group", j.name, a);
      }
      put(object_member(tmpl, "spec", a), "schedulerName", volcano ? std::string("volcano") : gang, a);
    }
    Value& spec = object_member(tmpl, "spec", a);
    put(spec, "hostname", j.name + "-launcher", a);
    put(spec, "subdomain", j.name, a);
    if (json::get_bool(spec, "/hostNetwork").value_or(false)) put(spec, "dnsPolicy", "ClusterFirstWithHostNet", a);
    put(spec, "restartPolicy", pod_restart_policy(j.launcher), a);
    Value& containers = array_member(spec, "containers", a);
    if (containers.Empty() || !containers[0].IsObject()) {
      return fail(fmt::format("MPIJob {}: spec.mpiReplicaSpecs[Launcher].template.spec.containers is empty", j.name));
    }
    Value& c0 = containers[0];
    Value& env = array_member(c0, "env", a);
    for (const auto& [k, v] : launcher_env(j)) env.PushBack(env_var(k, v, a), a);
    Value& mounts = array_member(c0, "volumeMounts", a);
    mounts.PushBack(mount("ssh-auth", j.ssh_path, a), a);
    mounts.PushBack(mount("mpi-job-config", kConfigMountPath, a), a);
    Value& volumes = array_member(spec, "volumes", a);
    volumes.PushBack(ssh_volume(j, a), a);
    volumes.PushBack(config_volume(j, a), a);
    return d;
  }

  framework::FrameworkDescriptor d_;
  framework::PluginConfig config_;
};

framework::FrameworkDescriptor make_descriptor() {
  framework::FrameworkDescriptor d;
  d.name = "kubeflow.org/mpijob@v2beta1";
  d.aliases = {"mpijob-v2", "mpijobv2"};
  d.kind_alias_default = true;
  d.group = "kubeflow.org";
  d.version = "v2beta1";
  d.kind = "MPIJob";
  d.plural = "mpijobs";
  d.singular = "mpijob";
  d.replica_specs_field = "mpiReplicaSpecs";
  d.replica_types = {"Launcher", "Worker"};
  // Exit codes are the launcher Job's business and workers have no ports: no default container.
  d.controller_name = std::string(kOperator);
  d.child_label_selector = fmt::format("{}={}", kLabelOperator, kOperator);
  // mpi-operator reacts to every create and delete of the objects it owns (its Service,
  // ConfigMap and Secret carry no replica-type label).
  d.reconciles_on_any_child = true;
  d.replica_type_label = std::string(kLabelJobRole);
  d.metrics_framework = "mpi";
  d.managed_by = {"kubeflow.org/mpi-operator"};
  d.owns_unset_managed_by = true;
  // The launcher batch/v1 Job carries runPolicy's TTL, deadline and backoff limit; Volcano's
  // PodGroup phase does not hold worker creation; workers have no per-pod Services.
  d.ttl_deletes_job = false;
  d.enforces_run_limits = false;
  d.gang_holds_pod_creation = false;
  d.delete_services_with_pods = false;
  d.validates_defaulted = true;
  d.owned_resources = {{"", "v1", "services"}, {"", "v1", "configmaps"}, {"", "v1", "secrets"}, {"batch", "v1", "jobs"}};
  return d;
}

std::unique_ptr<framework::FrameworkPlugin> make_plugin(const framework::PluginConfig& config) {
  return std::make_unique<MpiV2Plugin>(make_descriptor(), config);
}

}  // namespace

Status register_mpi_v2(framework::Registry& registry) {
  framework::Registration r;
  r.descriptor = make_descriptor();
  r.factory = &make_plugin;
  return registry.add(std::move(r));
}

}  // namespace unitrain::frameworks::mpi::v2
