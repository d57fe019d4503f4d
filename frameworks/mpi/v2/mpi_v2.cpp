// MPIJob v2beta1 hooks, following mpi-operator v0.8.2 (defaults, validation order and messages,
// object names, env, volumes, status); job_view.h reads the job and its children, objects.h builds
// what it owns. Deliberate departures are listed in docs/compatibility.md.
#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/api/field_errors.h"
#include "core/api/kubeflow.h"
#include "core/api/labels.h"
#include "core/framework/job_labels.h"
#include "core/framework/job_validation.h"
#include "core/framework/json_members.h"
#include "core/framework/module_plugin.h"
#include "core/framework/pod_decoration.h"
#include "core/framework/registry.h"
#include "core/gang/gang.h"
#include "core/json/json.h"
#include "frameworks/mpi/v2/job_view.h"
#include "frameworks/mpi/v2/objects.h"
#include "frameworks/mpi/v2/pod_group.h"
#include "frameworks/mpi/v2/register.h"

namespace unitrain::frameworks::mpi::v2 {
namespace {

using api::FieldError;
using api::FieldPath;
using framework::DesiredObject;
using framework::Observed;
using framework::PodSlot;
using framework::StatusProposal;
using json::Document;
using json::Value;

constexpr std::size_t kMaxMessage = 1024;

const std::vector<std::string> kRestartPolicies = {"Never", "OnFailure"};
const std::vector<std::string> kCleanPolicies = {"All", "None", "Running"};
const std::vector<std::string> kImplementations = {"Intel", "MPICH", "OpenMPI"};
const std::vector<std::string> kManagers = {"kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"};

namespace job_labels = framework::job_labels;
using framework::json_members::ensure_array;
using framework::json_members::ensure_object;
using framework::json_members::member;
using framework::json_members::put;
using framework::volume_mount;
using json::string_at;

class MpiV2Plugin final : public framework::ModulePlugin,
                          public framework::GangContribution,
                          public framework::PipelineDepartures {
 public:
  MpiV2Plugin(framework::FrameworkDescriptor d, framework::PluginConfig c)
      : ModulePlugin(std::move(d), std::move(c)), gang_(gang::make_backend(config_.gang_scheduler_name)) {}

  framework::Capabilities capabilities() const override { return {.gang = this, .departures = this}; }

  // The launcher batch/v1 Job carries runPolicy's TTL, deadline and backoff limit; Volcano's
  // PodGroup phase does not hold worker creation; workers have no per-pod Services; the webhook
  // validates the defaulted job (mpi-operator's SetDefaults, then ValidateMPIJob).
  bool ttl_deletes_job() const override { return false; }
  bool enforces_run_limits() const override { return false; }
  bool gang_holds_pod_creation() const override { return false; }
  bool delete_services_with_pods() const override { return false; }
  bool validates_defaulted() const override { return true; }
  // mpi-operator reacts to every create and delete of the objects it owns (its Service,
  // ConfigMap and Secret carry no replica-type label), computes the status of a suspended job
  // too, and writes its workers one at a time in index order.
  bool reconciles_on_any_child() const override { return true; }
  bool status_while_suspended() const override { return true; }
  bool ordered_pod_writes() const override { return true; }

  void set_defaults(Document& job) const override {
    auto& a = job.alloc();
    if (!json::find(job.root(), "/spec") || !json::find(job.root(), "/spec")->IsObject()) {
      (void)json::set(job, "/spec", Value(rapidjson::kObjectType));
    }
    Value& spec = *json::find(job.root(), "/spec");
    Value& run = ensure_object(spec, "runPolicy", a);
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
    // mpi-operator's rules above cover most of these; what they leave (a wrongly typed run
    // policy or replica count, negative replicas of another replica type) comes from here.
    framework::validate_common_spec(d_, job, errs);
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
      Value& labels = ensure_object(ensure_object(root, "metadata", a), "labels", a);
      put(labels, job_labels::kReplicaIndex, std::to_string(slot.index + 1), a);
    }
    Value& spec = ensure_object(root, "spec", a);
    put(spec, "hostname", fmt::format("{}-worker-{}", j.name, slot.index), a);
    put(spec, "subdomain", j.name, a);
    if (json::get_bool(spec, "/hostNetwork").value_or(false)) put(spec, "dnsPolicy", "ClusterFirstWithHostNet", a);
    Value& dns = ensure_object(spec, "dnsConfig", a);
    Value& searches = ensure_array(dns, "searches", a);
    const std::string domain = config_.cluster_domain.empty() ? std::string("cluster.local") : config_.cluster_domain;
    searches.PushBack(json::str(fmt::format("{}.{}.svc.{}", j.name, j.ns, domain), a), a);
    Value& containers = ensure_array(spec, "containers", a);
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
    ensure_array(c0, "env", a).PushBack(env_var("K_MPI_JOB_ROLE", "worker", a), a);
    ensure_array(c0, "volumeMounts", a).PushBack(volume_mount("ssh-auth", j.ssh_path, a), a);
    ensure_array(spec, "volumes", a).PushBack(ssh_volume(j, a), a);
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
      auto tmpl = launcher_template(j, gang_.get());
      if (!tmpl) return fail(tmpl.error());
      Document d = child(j, "batch/v1", "Job", j.name + "-launcher");
      auto& a = d.alloc();
      Value& r = d.root();
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
      // After the workers: created once they exist, unsuspended once they are back.
      l.after_pods = true;
      // Resuming a suspended launcher Job: its pod template may change only now (it is
      // immutable while the Job runs), so the scheduling directives follow the MPIJob in the
      // same update that unsuspends it; labels and annotations keep what others added.
      if (launcher != nullptr && !j.suspended && json::get_bool(*launcher, "/spec/suspend").value_or(false)) {
        Value& tmeta = ensure_object(*json::find(d.root(), "/spec/template"), "metadata", a);
        for (std::string_view key : {"labels", "annotations"}) {
          const Value* old = json::find(*launcher, "/spec/template/metadata/" + std::string(key));
          if (old == nullptr || !old->IsObject()) continue;
          Value& merged = ensure_object(tmeta, key, a);
          for (const auto& m : old->GetObject()) {
            if (!merged.HasMember(m.name)) merged.AddMember(Value(m.name, a), Value(m.value, a), a);
          }
        }
        l.compared.insert(l.compared.end(), {"/spec/template/metadata/labels", "/spec/template/metadata/annotations",
                                             "/spec/template/spec/nodeSelector", "/spec/template/spec/tolerations",
                                             "/spec/template/spec/schedulingGates"});
        // The API server keeps a Job's template immutable once it has started.
        l.status_cleared_first = {"/status/startTime"};
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
    // The launcher Job fails after its pod does, but the two reach us through different caches: a
    // launcher pod still seen live (not terminal, not being deleted) beside a failed Job means the
    // pod cache is behind, and the pod's update brings another pass. Judging now would lose the
    // pod's reason and message, which the Failed condition carries after BackoffLimitExceeded.
    const bool pod_cache_behind = failed && std::any_of(lpods.begin(), lpods.end(), [](const Value* pod) {
      const std::string phase = string_at(*pod, "/status/phase");
      return phase != "Failed" && phase != "Succeeded" && json::find(*pod, "/metadata/deletionTimestamp") == nullptr;
    });
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
    auto status = api::job_status_of(job);
    const bool had_running = status && status->condition(api::condition_type::kRunning) != nullptr;
    auto is_true = [&](std::string_view type, std::string_view reason = {}) {
      const api::JobCondition* c = status ? status->condition(type) : nullptr;
      return c != nullptr && c->status == "True" && (reason.empty() || c->reason == reason);
    };
    auto synthesize_running = [&] {
      if (!had_running) {
        p.conditions.push_back({"Running", "False", "MPIJobRunning",
                                fmt::format("MPIJob {} is finished but Running condition was never set.", who)});
      }
    };
    // mpi-operator records an event with each of these conditions; here once, when it is new.
    if (complete) {
      synthesize_running();
      const std::string message = fmt::format("MPIJob {} successfully completed.", who);
      p.conditions.push_back({"Succeeded", "True", "MPIJobSucceeded", message});
      if (!is_true("Succeeded")) p.events.push_back({"Normal", "MPIJobSucceeded", message});
      p.set_completion_time = true;
      if (auto t = json::get_string(*launcher, "/status/completionTime")) p.completion_time = std::string(*t);
    } else if (failed && !pod_cache_behind) {
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
      if (!is_true("Failed", reason)) p.events.push_back({"Warning", reason, message});
      p.set_completion_time = true;
    }
    if (evicted > 0) {
      const std::string message = fmt::format("{}/{} workers are evicted", evicted, worker_count);
      p.conditions.push_back({"Failed", "True", "MPIJobEvicted", message});
      if (!is_true("Failed", "MPIJobEvicted")) p.events.push_back({"Warning", "MPIJobEvicted", message});
      p.set_completion_time = true;
    }
    // The Suspended and Resumed conditions are the core's (worded by wording() below); the
    // Running=False of a suspended job comes after Suspended, as mpi-operator orders them.
    if (j.suspended) {
      p.conditions.push_back({"Running", "False", "MPIJobSuspended", fmt::format("MPIJob {} is suspended.", who)});
    } else if (launcher != nullptr && !done && launcher_running >= 1 && worker_running == worker_count) {
      p.conditions.push_back({"Running", "True", "MPIJobRunning", fmt::format("MPIJob {} is running.", who)});
      // mpi-operator's event message has no final period.
      if (!is_true("Running")) p.events.push_back({"Normal", "MPIJobRunning", fmt::format("MPIJob {} is running", who)});
    }
    return p;
  }

  // mpi-operator's wording of the conditions the core raises: reasons "MPIJob<Event>", messages
  // naming "<ns>/<name>" (the Suspended and Resumed conditions say only "MPIJob suspended" and
  // "MPIJob resumed"). Backoff and deadline are the launcher Job's limits in v2, so they read
  // like the Job controller's.
  framework::CoreWording wording(framework::CoreEvent e, const Value& job, std::string_view replica_type) const override {
    const std::string who = string_at(job, "/metadata/namespace") + "/" + string_at(job, "/metadata/name");
    switch (e) {
      case framework::CoreEvent::Created:
        return {"MPIJobCreated", fmt::format("MPIJob {} is created.", who), "Normal"};
      case framework::CoreEvent::Suspended:
        return {"MPIJobSuspended", "MPIJob suspended", "Normal"};
      case framework::CoreEvent::SuspendedNotRunning:
        return {"MPIJobSuspended", fmt::format("MPIJob {} is suspended.", who)};
      case framework::CoreEvent::Resumed:
        return {"MPIJobResumed", "MPIJob resumed", "Normal"};
      case framework::CoreEvent::BackoffLimitExceeded:
        return {"BackoffLimitExceeded", "Job has reached the specified backoff limit"};
      case framework::CoreEvent::DeadlineExceeded:
        return {"DeadlineExceeded", "Job was active longer than specified deadline"};
      case framework::CoreEvent::ValidationFailed:
        return {"ValidationError", "", "Warning"};
      case framework::CoreEvent::ReplicaRestarting:
      case framework::CoreEvent::ReplicaFailed:
        break;
    }
    return framework::training_operator_wording(e, d_.kind, job, replica_type);
  }

  // mpi-operator records no event for what it creates or deletes, only for a worker pod or the
  // launcher Job that fails to be created.
  framework::CoreWording child_event(framework::ChildEvent e, const Value&, const framework::ChildSubject& s) const override {
    if (e != framework::ChildEvent::CreateFailed) return {};
    if (s.kind == "Pod") return {"MPIJobFailed", fmt::format("worker pod created failed: {}", s.detail), "Warning"};
    if (s.kind == "Job") return {"MPIJobFailed", fmt::format("launcher pod created failed: {}", s.detail), "Warning"};
    return {};
  }

  // mpi-operator's ErrResourceExists, the same for every kind it creates (Service, ConfigMap,
  // Secret, workers, launcher Job, PodGroup).
  framework::CoreWording foreign_object_wording(const Value&, const framework::ForeignObject& object) const override {
    return {"ErrResourceExists", fmt::format("Resource \"{}\" of Kind \"{}\" already exists and is not managed by MPIJob",
                                             object.name, object.kind)};
  }

  // AtStartup starts the launcher at once; WaitForWorkersReady (any other value, as upstream)
  // waits until every worker index exists and is Ready. Unlike upstream, an empty worker list
  // does not count as "all ready" unless there are no workers to wait for.
  bool launcher_may_start(const Value& job, const Observed& observed) const {
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

  Result<framework::PodGroupPolicy> pod_group(const Value& job,
                                               const std::function<int32_t(std::string_view)>& priority_of) const override {
    return pod_group_policy(job, priority_of);
  }

 private:
  std::unique_ptr<const gang::Backend> gang_;  // null without --gang-scheduler-name
};

framework::FrameworkDescriptor make_descriptor() {
  framework::FrameworkDescriptor d;
  d.name = "kubeflow.org/mpijob@v2beta1";
  // The bare kind MPIJob means v1 (training-operator's meaning); v2beta1 goes by its own names.
  d.aliases = {"mpijob-v2", "mpijobv2"};
  d.kind_alias_default = false;
  d.group = "kubeflow.org";
  d.version = "v2beta1";
  d.kind = "MPIJob";
  d.plural = "mpijobs";
  d.singular = "mpijob";
  d.replica_specs_field = "mpiReplicaSpecs";
  d.replica_types = {"Launcher", "Worker"};
  // Exit codes are the launcher Job's business and workers have no ports: no default container.
  d.controller_name = std::string(kOperator);
  d.child_label_selector = fmt::format("{}={}", job_labels::kOperatorName, kOperator);
  d.replica_type_label = std::string(job_labels::kJobRole);
  d.metrics_framework = "mpi";
  d.managed_by = {"kubeflow.org/mpi-operator"};
  d.owns_unset_managed_by = true;
  d.owned_resources = {{"", "v1", "services"}, {"", "v1", "configmaps"}, {"", "v1", "secrets"}, {"batch", "v1", "jobs"}};
  return d;
}

}  // namespace

Status register_mpi_v2(framework::Registry& registry) {
  auto r = framework::registration_of<MpiV2Plugin>(make_descriptor());
  r.permissions = {
      {{""}, {"configmaps", "secrets"}, {"get", "list", "watch", "create", "update", "delete"},
       "MPIJob v2: the hostfile ConfigMap and the SSH key Secret."},
      {{"batch"}, {"jobs"}, {"get", "list", "watch", "create", "update", "delete"}, "MPIJob v2: the launcher batch/v1 Job."},
      {{"batch"}, {"jobs/status"}, {"update"},
       "MPIJob v2: before a suspended launcher that ran is resumed, its status.startTime is cleared (a started Job's "
       "template is immutable)."}};
  return registry.add(std::move(r));
}

}  // namespace unitrain::frameworks::mpi::v2
