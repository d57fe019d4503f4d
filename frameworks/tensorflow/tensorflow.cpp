// TFJob hooks. Behaviour follows training-operator v1.8.1 (defaults, TF_CONFIG, services,
// status) and the v1.9 webhook (validation); docs/compatibility.md lists the quirks fixed here.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/api/field_errors.h"
#include "core/api/kubeflow.h"
#include "core/framework/ascii.h"
#include "core/framework/job_spec.h"
#include "core/framework/job_validation.h"
#include "core/framework/json_members.h"
#include "core/framework/module_plugin.h"
#include "core/framework/pod_decoration.h"
#include "core/framework/registry.h"
#include "core/framework/replica_status.h"
#include "core/json/json.h"
#include "frameworks/tensorflow/register.h"

namespace unitrain::frameworks::tensorflow {
namespace {

using api::FieldError;
using api::FieldPath;
using framework::Observed;
using framework::PodSlot;
using framework::StatusProposal;
using framework::ascii::lower;
using framework::json_members::member;
using framework::replicas_of;
using json::string_at;
using json::Document;
using json::Value;

constexpr std::string_view kKind = "TFJob";
constexpr std::string_view kChief = "Chief";
constexpr std::string_view kMaster = "Master";
constexpr std::string_view kWorker = "Worker";
constexpr std::string_view kContainer = "tensorflow";
constexpr std::string_view kPortName = "tfjob-port";
constexpr int32_t kPort = 2222;
constexpr std::string_view kDefaultRestartPolicy = "Never";

// Replica types in the order the status rules visit them (upstream sorts them).
const framework::KubeflowV1Kind kTensorFlow{.kind = std::string(kKind),
                                            .replica_specs_field = "tfReplicaSpecs",
                                            .replica_types = {"Chief", "Evaluator", "Master", "PS", "Worker"},
                                            .container = std::string(kContainer),
                                            .port_name = std::string(kPortName),
                                            .port = kPort,
                                            .restart_policy = std::string(kDefaultRestartPolicy),
                                            .framework = "tensorflow"};

bool has_chief_or_master(const framework::FrameworkDescriptor& d, const Value& job) {
  return framework::replica_spec(d, job, kChief) != nullptr ||
         framework::replica_spec(d, job, kMaster) != nullptr;
}

// Σ replicas over the five known types; TF_CONFIG is only written when this is not 1.
int32_t known_replicas(const framework::FrameworkDescriptor& d, const Value& job) {
  int32_t n = 0;
  for (const std::string& rt : d.replica_types) {
    if (const Value* spec = framework::replica_spec(d, job, rt)) n += replicas_of(spec);
  }
  return n;
}

std::string quoted(std::string_view s) {
  json::Document d = json::Document::object();
  return json::dump(json::str(s, d.alloc()));
}

// Cluster spec: lower-cased type -> addresses, keys sorted as Go marshals a map.
std::map<std::string, std::vector<std::string>> cluster_spec(const framework::FrameworkDescriptor& d, const Value& job,
                                                             std::string_view domain) {
  std::map<std::string, std::vector<std::string>> cluster;
  const std::string name = string_at(job, "/metadata/name");
  const std::string ns = string_at(job, "/metadata/namespace");
  const Value* specs = framework::replica_specs(d, job);
  if (specs == nullptr) return cluster;
  for (const auto& m : specs->GetObject()) {
    const std::string rt = lower(std::string_view(m.name.GetString(), m.name.GetStringLength()));
    const int32_t port = framework::named_port(d, &m.value, kPortName).value_or(kPort);
    auto& list = cluster[rt];
    for (int32_t i = 0; i < replicas_of(&m.value); ++i) {
      std::string host = fmt::format("{}-{}-{}.{}.svc", name, rt, i, ns);
      if (!domain.empty()) host += fmt::format(".{}", domain);
      list.push_back(fmt::format("{}:{}", host, port));
    }
  }
  return cluster;
}

std::string json_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : ",") + quoted(items[i]);
  return out + "]";
}

std::string task_json(std::string_view rt, int32_t index) {
  return fmt::format("{{\"type\":{},\"index\":{}}}", quoted(rt), index);
}

std::string tf_config(const framework::FrameworkDescriptor& d, const Value& job, const PodSlot& slot,
                      std::string_view domain) {
  const auto cluster = cluster_spec(d, job, domain);
  const std::string rt = lower(slot.replica_type);
  if (json::get_bool(job, "/spec/enableDynamicWorker").value_or(false)) {
    // Sparse form: a worker sees itself and every PS, a PS sees only itself.
    std::string worker = "{}";
    std::string ps = "[]";
    auto ps_it = cluster.find("ps");
    if (rt == "worker") {
      auto w = cluster.find("worker");
      const std::string addr =
          w != cluster.end() && slot.index < static_cast<int32_t>(w->second.size()) ? w->second[static_cast<size_t>(slot.index)] : "";
      worker = fmt::format("{{{}:{}}}", quoted(std::to_string(slot.index)), quoted(addr));
      ps = ps_it == cluster.end() ? "null" : json_list(ps_it->second);
    } else if (rt == "ps" && ps_it != cluster.end() && slot.index < static_cast<int32_t>(ps_it->second.size())) {
      ps = json_list({ps_it->second[static_cast<size_t>(slot.index)]});
    }
    return fmt::format("{{\"cluster\":{{\"worker\":{},\"ps\":{}}},\"task\":{}}}", worker, ps, task_json(rt, slot.index));
  }
  std::string c = "{";
  bool first = true;
  for (const auto& [type, addrs] : cluster) {
    c += fmt::format("{}{}:{}", first ? "" : ",", quoted(type), json_list(addrs));
    first = false;
  }
  c += "}";
  return fmt::format("{{\"cluster\":{},\"task\":{},\"environment\":\"cloud\"}}", c, task_json(rt, slot.index));
}

bool is_master_role(const framework::FrameworkDescriptor& d, const Value& job, const PodSlot& slot) {
  if (has_chief_or_master(d, job)) return slot.replica_type == kChief || slot.replica_type == kMaster;
  return slot.replica_type == kWorker && slot.index == 0;
}

class TFPlugin final : public framework::KubeflowV1Plugin {
 public:
  using KubeflowV1Plugin::KubeflowV1Plugin;

  void set_defaults(Document& job) const override {
    KubeflowV1Plugin::set_defaults(job);
    const Value* sp = json::find(job.root(), "/spec/successPolicy");
    if (sp == nullptr || sp->IsNull()) (void)json::set_string(job, "/spec/successPolicy", "");
  }

  framework::Validation validate(const Value* old_job, const Value& job) const override {
    framework::Validation out;
    framework::validate_name(job, out.errors);
    framework::validate_managed_by(old_job, job, out.errors);
    // TF accepts any replica key (upstream does not restrict them).
    framework::validate_replica_specs(d_, job, {.restrict_types = false}, out.errors);
    if (const Value* specs = framework::replica_specs(d_, job)) {
      const int keys = (member(specs, kChief) != nullptr ? 1 : 0) + (member(specs, kMaster) != nullptr ? 1 : 0);
      if (keys > 1) {
        out.errors.push_back(FieldError::forbidden(FieldPath("spec").child(d_.replica_specs_field),
                                                   "must not have more than 1 Chief or Master role"));
      }
    }
    framework::validate_common_spec(d_, job, out.errors);
    return out;
  }

  Status decorate_pod(const Value& job, const PodSlot& slot, Document& pod) const override {
    std::vector<framework::EnvVar> env;
    if (known_replicas(d_, job) != 1) env.push_back({"TF_CONFIG", tf_config(d_, job, slot, config_.cluster_domain)});
    return framework::decorate_replica_pod(d_, pod, is_master_role(d_, job, slot), env, kContainer);
  }

  StatusProposal compute_status(const Value& job, const Observed& observed) const override {
    using Rules = framework::ReplicaStatusRules;
    const std::string name = string_at(job, "/metadata/name");
    const std::string ns = string_at(job, "/metadata/namespace");
    const bool chief = has_chief_or_master(d_, job);
    const bool dynamic = json::get_bool(job, "/spec/enableDynamicWorker").value_or(false);
    const bool all_workers = string_at(job, "/spec/successPolicy") == "AllWorkers";
    auto status = api::job_status_of(job);
    const bool was_restarting = status && status->has_condition(api::condition_type::kRestarting);
    bool worker0_completed = true;
    if (framework::replica_spec(d_, job, kWorker) != nullptr) {
      const Value* pod = framework::pod_at(d_, std::string(kWorker), 0, observed);
      worker0_completed = pod != nullptr && string_at(*pod, "/status/phase") == "Succeeded" &&
                          framework::container_exit_code(*pod, kContainer) == 0;
    }
    Rules rules;
    rules.lead = [&](const framework::ReplicaState& s) {
      if (chief) return s.type == kChief || s.type == kMaster ? Rules::Lead::RunningFirst : Rules::Lead::None;
      return s.type == kWorker ? Rules::Lead::CompletionFirst : Rules::Lead::None;
    };
    rules.complete = [&](const framework::ReplicaState& s) {
      return s.expected() == 0 || (!chief && worker0_completed && !all_workers);
    };
    // Upstream re-asserts a Restarting condition that existed when the pass started; otherwise
    // any failed replica fails the job. Upstream also keeps visiting types after Succeeded and
    // may add Failed too; the shared walk stops at the first terminal condition instead.
    rules.on_failed = [&](const framework::ReplicaState& s) {
      if (was_restarting) return Rules::OnFailed::Restart;
      if (dynamic && s.type == kWorker) return Rules::OnFailed::Ignore;
      return Rules::OnFailed::Fail;
    };
    // TFJob re-asserts an existing Restarting condition without an event.
    rules.event_type = [](std::string_view type) {
      return type == "Restarting" ? std::string() : framework::training_operator_status_event(type);
    };
    rules.message = [&](std::string_view type, const framework::ReplicaState& s) {
      if (type == "Running") return fmt::format("TFJob {}/{} is running.", ns, name);
      if (type == "Succeeded") return fmt::format("TFJob {}/{} successfully completed.", ns, name);
      if (type == "Restarting")
        return fmt::format("TFJob {}/{} is restarting because {} {} replica(s) failed.", ns, name, s.counts.failed, s.type);
      return fmt::format("TFJob {}/{} has failed because {} {} replica(s) failed.", ns, name, s.counts.failed, s.type);
    };
    return framework::replica_status_walk(d_, job, observed, rules);
  }
};

}  // namespace

Status register_tensorflow(framework::Registry& registry) {
  return registry.add(framework::kubeflow_v1_registration<TFPlugin>(kTensorFlow));
}

}  // namespace unitrain::frameworks::tensorflow
