// MXJob hooks, following training-operator v1.8.1 (validation inside the reconciler, env, status).
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/api/field_errors.h"
#include "core/api/labels.h"
#include "core/framework/ascii.h"
#include "core/framework/job_spec.h"
#include "core/framework/job_validation.h"
#include "core/framework/json_members.h"
#include "core/framework/module_plugin.h"
#include "core/framework/pod_decoration.h"
#include "core/framework/registry.h"
#include "core/framework/replica_defaults.h"
#include "core/framework/replica_status.h"
#include "core/json/json.h"
#include "frameworks/mxnet/register.h"

namespace unitrain::frameworks::mxnet {
namespace {

using api::FieldError;
using api::FieldPath;
using framework::Observed;
using framework::PodSlot;
using framework::StatusProposal;
using framework::EnvVar;
using framework::ascii::lower;
using framework::json_members::member;
using framework::replicas_of;
using json::string_at;
using json::Document;
using json::Value;

constexpr std::string_view kKind = "MXJob";
constexpr std::string_view kScheduler = "Scheduler";
constexpr std::string_view kServer = "Server";
constexpr std::string_view kWorker = "Worker";
constexpr std::string_view kPortName = "mxjob-port";
constexpr std::string_view kTunerServerKey = "tuner-server-key";

const framework::KubeflowV1Kind kMXNet{
    .kind = std::string(kKind),
    .replica_specs_field = "mxReplicaSpecs",
    .replica_types = {"Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner"},
    .container = "mxnet",
    .port_name = std::string(kPortName),
    .port = 9091,
    .restart_policy = "Never",
    .framework = "mxnet"};
// Upstream re-cases only the training types; Tuner* keys are left as written.
const std::vector<std::string> kRecased = {"Scheduler", "Server", "Worker"};

std::string quoted(std::string_view s) {
  json::Document d = json::Document::object();
  return json::dump(json::str(s, d.alloc()));
}

class Deprecation final : public framework::DeprecationNotice {
 public:
  std::string warning() const override { return kDeprecationWarning; }
};

class MXPlugin final : public framework::KubeflowV1Plugin {
 public:
  using KubeflowV1Plugin::KubeflowV1Plugin;

  framework::Capabilities capabilities() const override { return {.deprecation = &deprecation_}; }

  void set_defaults(Document& job) const override {
    framework::set_replica_defaults(d_, job, "Never", kRecased);
  }

  // Upstream validates MXJobs in the reconciler and stops at the first problem; the message
  // (the detail here) is upstream's. The rules every kind gets follow. The webhook upstream
  // never rejects, it only warns.
  framework::Validation validate(const Value*, const Value& job) const override {
    framework::Validation out;
    out.warnings.emplace_back(kDeprecationWarning);
    first_problem(job, out.errors);
    framework::validate_common_spec(d_, job, out.errors);
    return out;
  }

  Status decorate_pod(const Value& job, const PodSlot& slot, Document& pod) const override {
    const std::string name = string_at(job, "/metadata/name");
    const Value* specs = framework::replica_specs(d_, job);
    if (specs == nullptr) return fail(fmt::format("MXJob {}: spec.mxReplicaSpecs is missing", name));
    // Cluster and labels maps keyed by lower-cased type, sorted as Go marshals maps.
    std::map<std::string, std::string> cluster;
    std::map<std::string, std::string> labels;
    std::map<std::string, std::pair<std::string, int32_t>> first;  // type -> (url, port) of index 0
    std::map<std::string, int32_t> replicas;
    for (const auto& m : specs->GetObject()) {
      const std::string rt(m.name.GetString(), m.name.GetStringLength());
      const std::string lrt = lower(rt);
      auto port = framework::named_port(d_, &m.value, kPortName);
      if (!port) {
        return fail(fmt::format("MXJob {}: spec.mxReplicaSpecs[{}]: container \"{}\" has no port named \"{}\"", name, rt,
                                d_.default_container, kPortName));
      }
      std::string list = "[";
      for (int32_t i = 0; i < replicas_of(&m.value); ++i) {
        const std::string url = fmt::format("{}-{}-{}", name, lrt, i);
        if (i == 0) first[lrt] = {url, *port};
        list += fmt::format("{}{{\"url\":{},\"port\":{}}}", i == 0 ? "" : ",", quoted(url), *port);
      }
      cluster[lrt] = list + "]";
      labels[lrt] = string_at(m.value, "/template/metadata/annotations/" + json::escape_pointer_token(kTunerServerKey));
      replicas[lrt] = replicas_of(&m.value);
    }
    std::string cluster_json = "{";
    std::string labels_json = "{";
    for (const auto& [k, v] : cluster) cluster_json += fmt::format("{}{}:{}", cluster_json.size() == 1 ? "" : ",", quoted(k), v);
    for (const auto& [k, v] : labels) labels_json += fmt::format("{}{}:{}", labels_json.size() == 1 ? "" : ",", quoted(k), quoted(v));
    const std::string role = lower(slot.replica_type);
    const std::string config = fmt::format("{{\"cluster\":{}}},\"labels\":{}}},\"task\":{{\"type\":{},\"index\":{}}}}}", cluster_json,
                                           labels_json, quoted(role), slot.index);
    auto sched = first.find("scheduler");
    std::vector<EnvVar> env = {
        {"MX_CONFIG", config, ""},
        {"DMLC_PS_ROOT_PORT", std::to_string(sched == first.end() ? 0 : sched->second.second), ""},
        {"DMLC_PS_ROOT_URI", sched == first.end() ? "" : sched->second.first, ""},
        {"DMLC_NUM_SERVER", std::to_string(replicas.count("server") ? replicas["server"] : 0), ""},
        {"DMLC_NUM_WORKER", std::to_string(replicas.count("worker") ? replicas["worker"] : 0), ""},
        {"DMLC_ROLE", role, ""},
        {"DMLC_USE_KUBERNETES", "1", ""},
    };
    if (slot.replica_type == kWorker) env.push_back({"DMLC_WORKER_ID", std::to_string(slot.index), ""});
    return framework::decorate_replica_pod(d_, pod, slot.replica_type == kServer, env);
  }

  // The TTL deletion of the job is recorded with the pod reasons, as upstream's DeleteJob does.
  framework::CoreWording child_event(framework::ChildEvent e, const Value& job,
                                     const framework::ChildSubject& subject) const override {
    return framework::job_deletion_worded_as_pod(e, job, subject);
  }

  StatusProposal compute_status(const Value& job, const Observed& observed) const override {
    using Rules = framework::ReplicaStatusRules;
    const std::string name = string_at(job, "/metadata/name");
    const Value* worker = framework::replica_spec(d_, job, kWorker);
    // Single training: one Worker and no Scheduler or Server; then every type leads.
    const bool single = worker != nullptr && replicas_of(worker) == 1 &&
                        framework::replica_spec(d_, job, kScheduler) == nullptr &&
                        framework::replica_spec(d_, job, kServer) == nullptr;
    Rules rules;
    rules.lead = [single](const framework::ReplicaState& s) {
      return s.type == kScheduler || single ? Rules::Lead::RunningFirst : Rules::Lead::None;
    };
    rules.complete = [](const framework::ReplicaState& s) { return s.expected() == 0; };
    rules.on_failed = &framework::restart_on_exit_code_policy;
    rules.message = framework::messages_by_name(std::string(kKind), name, "mxjob");
    return framework::replica_status_walk(d_, job, observed, rules);
  }

 private:
  // ValidateV1MXJob: the first problem only.
  void first_problem(const Value& job, api::FieldErrorList& errs) const {
    const std::string name = string_at(job, "/metadata/name");
    if (auto reasons = api::validate_dns1035_label(name); !reasons.empty()) {
      std::string joined;
      for (const auto& r : reasons) joined += (joined.empty() ? "" : " ") + r;
      errs.push_back(FieldError::invalid(FieldPath("metadata").child("name"), name, fmt::format("MXJob name is invalid: [{}]", joined)));
      return;
    }
    const FieldPath specs_path = FieldPath("spec").child(d_.replica_specs_field);
    const Value* specs = framework::replica_specs(d_, job);
    if (specs == nullptr) {
      errs.push_back(FieldError::required(specs_path, "MXJobSpec is not valid"));
      return;
    }
    for (const auto& m : specs->GetObject()) {
      const std::string rt(m.name.GetString(), m.name.GetStringLength());
      const FieldPath containers_path = specs_path.key(rt).child("template").child("spec").child("containers");
      const Value* containers = framework::containers_of_spec(&m.value);
      if (containers == nullptr || containers->Empty()) {
        errs.push_back(FieldError::required(containers_path, fmt::format("MXJobSpec is not valid: containers definition expected in {}", rt)));
        return;
      }
      bool named = false;
      for (rapidjson::SizeType i = 0; i < containers->Size(); ++i) {
        if (string_at((*containers)[i], "/image").empty()) {
          errs.push_back(FieldError::required(containers_path.index(i).child("image"),
                                              fmt::format("MXJobSpec is not valid: Image is undefined in the container of {}", rt)));
          return;
        }
        if (string_at((*containers)[i], "/name") == d_.default_container) named = true;
      }
      if (!named) {
        errs.push_back(FieldError::required(
            containers_path, fmt::format("MXJobSpec is not valid: There is no container named {} in {}", d_.default_container, rt)));
        return;
      }
    }
    // Upstream counts Scheduler keys, which a map cannot repeat; we check the replica count.
    if (const Value* scheduler = member(specs, kScheduler); scheduler != nullptr && replicas_of(scheduler) > 1) {
      errs.push_back(FieldError::forbidden(specs_path.key(kScheduler).child("replicas"), "more than 1 scheduler found"));
    }
  }

  Deprecation deprecation_;
};

}  // namespace

Status register_mxnet(framework::Registry& registry) {
  auto r = framework::kubeflow_v1_registration<MXPlugin>(kMXNet);
  // The deprecation warning goes back on delete too, as upstream's webhook does.
  r.webhooks.validate = {"CREATE", "UPDATE", "DELETE"};
  return registry.add(std::move(r));
}

}  // namespace unitrain::frameworks::mxnet
