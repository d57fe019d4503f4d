#include "frameworks/trainer/plan.h"

#include <fmt/format.h>

#include "core/api/meta.h"
#include "core/framework/json_members.h"
#include "frameworks/trainer/names.h"
#include "frameworks/trainer/runtime.h"
#include "frameworks/trainer/status.h"
#include "frameworks/trainer/validation.h"

namespace unitrain::frameworks::trainer {
namespace {

namespace jm = framework::json_members;
using json::string_at;

// A pass that could not build retries (upstream: rate-limited requeue on the returned error).
constexpr int64_t kRetryAfterErrorMs = 5000;

const json::Value* owned_named(const framework::Observed& observed, const kube::GroupVersionResource& resource,
                               std::string_view name) {
  auto it = observed.owned.find(resource.group_resource());
  if (it == observed.owned.end()) return nullptr;
  for (const json::Value* o : it->second) {
    if (api::name_of(*o) == name) return o;
  }
  return nullptr;
}

framework::ObjectFetch runtime_fetch(const json::Value& trainjob, const RuntimeRef& ref) {
  if (namespaced(ref)) return {kTrainingRuntimes, std::string(api::namespace_of(trainjob)), ref.name};
  return {kClusterTrainingRuntimes, "", ref.name};
}

const kube::GroupVersionResource* resource_of(const json::Value& obj) {
  const std::string_view api_version = api::api_version_of(obj);
  const std::string_view kind = api::kind_of(obj);
  if (kind == "ConfigMap") return &kConfigMaps;
  if (kind == "Secret") return &kSecrets;
  if (kind == "JobSet") return &kJobSets;
  if (kind == "PodGroup" && api_version == "scheduling.x-k8s.io/v1alpha1") return &kCoschedulingPodGroups;
  if (kind == "PodGroup") return &kVolcanoPodGroups;
  return nullptr;
}

// The observed object with `want`'s labels, annotations and every top-level member but
// metadata and status: what an apply of `want` leaves.
json::Document applied_over(const json::Value& live, const json::Value& want) {
  json::Document out = json::Document::copy_of(live);
  auto& a = out.alloc();
  for (const auto& m : want.GetObject()) {
    const std::string_view key = json::view(m.name);
    if (key == "metadata" || key == "status") continue;
    jm::put(out.root(), key, json::clone(m.value, a), a);
  }
  for (const char* map : {"labels", "annotations"}) {
    const json::Value* wanted = json::find(want, std::string("/metadata/") + map);
    if (wanted == nullptr || !wanted->IsObject()) continue;
    json::Value& into = jm::ensure_object(jm::ensure_object(out.root(), "metadata", a), map, a);
    for (const auto& kv : wanted->GetObject()) jm::put(into, json::view(kv.name), json::clone(kv.value, a), a);
  }
  return out;
}

bool is_pod_group(const kube::GroupVersionResource& resource) {
  return resource == kCoschedulingPodGroups || resource == kVolcanoPodGroups;
}

// The object this pass read (WorkloadPlan::fetch) under `resource` and `name`, when `trainjob`
// controls it.
const json::Value* fetched_controlled(const framework::Observed& observed, const json::Value& trainjob,
                                      const kube::GroupVersionResource& resource, std::string_view name) {
  for (const auto& f : observed.fetched) {
    if (f.ref.resource != resource || f.ref.name != name || !f.object) continue;
    const auto owner = api::controller_of(f.object->root());
    if (owner && owner->uid == api::uid_of(trainjob)) return &f.object->root();
  }
  return nullptr;
}

void add_write(framework::WorkloadPlan& plan, const framework::Observed& observed, const json::Value& trainjob,
               json::Document want) {
  const kube::GroupVersionResource* resource = resource_of(want.root());
  if (resource == nullptr) return;
  const json::Value* live = owned_named(observed, *resource, api::name_of(want.root()));
  // A PodGroup kind not watched: the read of a suspended pass is its live state.
  if (live == nullptr && is_pod_group(*resource)) live = fetched_controlled(observed, trainjob, *resource, api::name_of(want.root()));
  if (live == nullptr) {
    framework::DesiredObject create;
    create.resource = *resource;
    create.object = std::move(want);
    plan.creations.push_back(std::move(create));
    return;
  }
  if (*resource == kSecrets) return;  // the SSH Secret is immutable
  json::Document updated = applied_over(*live, want.root());
  if (json::equal(updated.root(), *live)) return;
  framework::DesiredObject update;
  update.resource = *resource;
  update.object = std::move(updated);
  plan.updates.push_back(std::move(update));
}

// The runtime to build from: the snapshot's, else the live one (the snapshot is created then).
// nullopt with `plan.fetch` set when the live one must be read first.
Result<std::optional<json::Document>> resolve_runtime(const json::Value& trainjob, const framework::Observed& observed,
                                                      const RuntimeRef& ref, framework::WorkloadPlan& plan) {
  if (const json::Value* snapshot = owned_named(observed, kConfigMaps, snapshot_name(trainjob))) {
    auto runtime = runtime_from_snapshot(trainjob, *snapshot);
    if (!runtime) return fail(runtime.error());
    return std::optional<json::Document>(std::move(*runtime));
  }
  const framework::ObjectFetch want = runtime_fetch(trainjob, ref);
  for (const auto& f : observed.fetched) {
    if (f.ref.resource != want.resource || f.ref.name != want.name || f.ref.namespace_name != want.namespace_name) continue;
    if (!f.object) return fail(runtime_fetch_error(ref, f.error));
    return std::optional<json::Document>(json::Document::copy_of(f.object->root()));
  }
  plan.fetch.push_back(want);
  return std::optional<json::Document>();
}

// The webhook certificate Secret the TrainJobStatus plugin copies the CA from, as this round
// read it; nullptr with `plan.fetch` extended when it must be read first.
const framework::FetchedObject* fetched_tls_secret(const StatusServerConfig& config, const framework::Observed& observed,
                                                   framework::WorkloadPlan& plan) {
  const framework::ObjectFetch want{kSecrets, config.operator_namespace, config.certificate_secret};
  for (const auto& f : observed.fetched) {
    if (f.ref.resource == want.resource && f.ref.name == want.name && f.ref.namespace_name == want.namespace_name) return &f;
  }
  plan.fetch.push_back(want);
  return nullptr;
}

}  // namespace

std::string resources_failed_message(std::string_view error) {
  constexpr std::size_t kMax = 950;
  if (error.size() <= kMax) return fmt::format("TrainJob resources reconciliation failed: {}", error);
  return fmt::format("TrainJob resources reconciliation failed: {} ...", error.substr(0, kMax));
}

framework::WorkloadPlan plan(const json::Value& trainjob, const framework::Observed& observed, api::TimePoint now,
                             Result<BuildInput::SshKeys> (*generate_ssh_keys)(), const StatusServerConfig* status_server) {
  framework::WorkloadPlan out;
  // Another manager's TrainJob (MultiKueue) gets no objects and no status.
  const std::string managed_by = string_at(trainjob, "/spec/managedBy");
  if (!managed_by.empty() && managed_by != kControllerManager) return out;

  const RuntimeRef ref = runtime_ref(trainjob);
  const json::Value* jobset = owned_named(observed, kJobSets, api::name_of(trainjob));
  if (!supported(ref)) {
    // Persisted (upstream's nil handler loses it).
    json::Document job = json::Document::copy_of(trainjob);
    json::Document status = next_status(job.root(), jobset, now).status;
    api::set_status_condition(jm::ensure_array(status.root(), "conditions", status.alloc()),
                              {"Failed", "True", 0, std::nullopt, "TrainingRuntimeNotSupported",
                               "unsupported runtime: " + gk_key(ref)},
                              now, status.alloc());
    out.status = std::move(status);
    return out;
  }

  if (!finished(trainjob)) {
    std::string error;
    auto runtime = resolve_runtime(trainjob, observed, ref, out);
    const framework::FetchedObject* tls_secret = status_server ? fetched_tls_secret(*status_server, observed, out) : nullptr;
    if (!out.fetch.empty()) {
      return out;  // read the runtime (and the certificate Secret) first
    } else if (!runtime) {
      error = runtime.error().message;
    } else {
      const json::Value& rt = (*runtime)->root();
      // The rules upstream's admission webhook checks against the runtime, checked here on the
      // runtime the job is pinned to.
      const WebhookVerdict verdict = validate_trainjob({.old_trainjob = nullptr, .trainjob = trainjob, .runtime = &rt,
                                                        .runtime_error = {}, .jobset = nullptr, .jobset_error = {},
                                                        .priority_class_error = {}});
      if (!verdict.ok()) {
        error = verdict.denial ? *verdict.denial : api::aggregate(verdict.errors);
      } else {
        BuildInput input;
        input.existing_jobset = jobset;
        input.ssh_secret_exists = owned_named(observed, kSecrets, std::string(api::name_of(trainjob)) + "-mpi-ssh-auth") != nullptr;
        input.pod_group_exists = owned_named(observed, kCoschedulingPodGroups, api::name_of(trainjob)) != nullptr ||
                                 owned_named(observed, kVolcanoPodGroups, api::name_of(trainjob)) != nullptr;
        input.generate_ssh_keys = generate_ssh_keys;
        input.status_server = status_server;
        if (tls_secret != nullptr && tls_secret->object) input.status_tls_secret = &tls_secret->object->root();
        if (tls_secret != nullptr) input.status_tls_secret_error = tls_secret->error;
        auto built = build(trainjob, rt, input);
        if (!built) {
          error = built.error().message;
        } else {
          if (owned_named(observed, kConfigMaps, snapshot_name(trainjob)) == nullptr) {
            framework::DesiredObject snapshot;
            snapshot.resource = kConfigMaps;
            snapshot.object = snapshot_configmap(trainjob, rt);
            out.creations.push_back(std::move(snapshot));
          }
          // While suspended, the PodGroups are applied again (a runtimePatches or resources change
          // reaches minMember and minResources): a kind the caches do not watch (its CRD was not
          // served at start-up) is read first, in a pass that read nothing yet.
          if (json::get_bool(trainjob, "/spec/suspend").value_or(false) && observed.fetched.empty()) {
            framework::WorkloadPlan reread;
            for (const auto& o : built->objects)
              if (const auto* r = resource_of(o.root());
                  r != nullptr && is_pod_group(*r) && observed.owned.count(r->group_resource()) == 0)
                reread.fetch.push_back({*r, std::string(api::namespace_of(trainjob)), std::string(api::name_of(o.root()))});
            if (!reread.fetch.empty()) return reread;
          }
          if (!built->jobset.root().IsNull()) add_write(out, observed, trainjob, std::move(built->jobset));
          for (auto& o : built->objects) add_write(out, observed, trainjob, std::move(o));
        }
      }
    }
    if (!error.empty()) {
      out.events.push_back({"Warning", "TrainJobResourcesCreationFailed", resources_failed_message(error)});
      out.requeue_after_ms = kRetryAfterErrorMs;
    }
  }

  StatusDecision decision = next_status(trainjob, jobset, now);
  out.status = std::move(decision.status);
  if (decision.delete_jobset && jobset != nullptr) {
    out.deletions.push_back({kJobSets, std::string(api::name_of(trainjob)), "Background"});
  }
  if (decision.delete_jobset) {
    // Nothing more is created for a job that just failed.
    out.creations.clear();
    out.updates.clear();
  }
  if (decision.requeue_after && !out.requeue_after_ms) out.requeue_after_ms = std::chrono::duration_cast<std::chrono::milliseconds>(*decision.requeue_after).count();
  return out;
}

}  // namespace unitrain::frameworks::trainer
