// XGBoostJob hooks, following training-operator v1.8.1 (env, status) and the v1.9 webhook.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/api/field_errors.h"
#include "core/framework/common_hooks.h"
#include "core/framework/plugin.h"
#include "core/framework/registry.h"
#include "core/json/json.h"
#include "frameworks/xgboost/register.h"

namespace unitrain::frameworks::xgboost {
namespace {

using api::FieldError;
using api::FieldPath;
using framework::DesiredObject;
using framework::Observed;
using framework::PodSlot;
using framework::StatusProposal;
using framework::common::EnvVar;
using framework::common::member;
using framework::common::replicas_of;
using framework::common::string_at;
using json::Document;
using json::Value;

constexpr std::string_view kKind = "XGBoostJob";
constexpr std::string_view kMaster = "Master";
constexpr std::string_view kWorker = "Worker";
constexpr std::string_view kPortName = "xgboostjob-port";

const std::vector<std::string> kReplicaTypes = {"Master", "Worker"};

class XGBoostPlugin final : public framework::FrameworkPlugin {
 public:
  XGBoostPlugin(framework::FrameworkDescriptor d, const framework::PluginConfig&) : d_(std::move(d)) {}

  const framework::FrameworkDescriptor& descriptor() const override { return d_; }

  void set_defaults(Document& job) const override {
    framework::common::set_replica_defaults(d_, job, "Never", kReplicaTypes);
  }

  framework::Validation validate(const Value* old_job, const Value& job) const override {
    framework::Validation out;
    auto& errs = out.errors;
    framework::common::validate_name(job, errs);
    framework::common::validate_managed_by(old_job, job, errs);
    framework::common::validate_replica_specs(d_, job, {}, errs);
    const FieldPath specs_path = FieldPath("spec").child(d_.replica_specs_field);
    if (const Value* specs = framework::common::replica_specs(d_, job)) {
      const Value* master = member(specs, kMaster);
      if (master != nullptr) {
        const Value* r = member(master, "replicas");
        if (r == nullptr || !r->IsInt() || r->GetInt() != 1) {
          errs.push_back(FieldError::forbidden(specs_path.key(kMaster).child("replicas"), "must be 1"));
        }
      } else {
        errs.push_back(FieldError::required(specs_path.key(kMaster), "must be present"));
      }
    }
    return out;
  }

  std::vector<PodSlot> pod_slots(const Value& job) const override { return framework::common::pod_slots(d_, job); }

  Status decorate_pod(const Value& job, const PodSlot& slot, Document& pod) const override {
    const std::string name = string_at(job, "/metadata/name");
    const Value* master = framework::common::replica_spec(d_, job, kMaster);
    auto master_port = framework::common::named_port(d_, master, kPortName);
    if (!master_port) {
      return fail(fmt::format("XGBoostJob {}: spec.xgbReplicaSpecs[Master]: container \"{}\" has no port named \"{}\"", name,
                              d_.default_container, kPortName));
    }
    const int32_t total = framework::common::total_replicas(d_, job);
    const int32_t rank = slot.index + (slot.replica_type == kWorker ? replicas_of(master) : 0);
    std::vector<EnvVar> env = {
        {"MASTER_PORT", std::to_string(*master_port), ""},
        {"MASTER_ADDR", name + "-master-0", ""},
        {"WORLD_SIZE", std::to_string(total), ""},
        {"RANK", std::to_string(rank), ""},
        {"PYTHONUNBUFFERED", "1", ""},
    };
    if (total > 1) {
      auto worker_port = framework::common::named_port(d_, framework::common::replica_spec(d_, job, kWorker), kPortName);
      if (!worker_port) {
        return fail(fmt::format("XGBoostJob {}: spec.xgbReplicaSpecs[Worker]: container \"{}\" has no port named \"{}\"", name,
                                d_.default_container, kPortName));
      }
      std::string addrs;
      for (int32_t i = 0; i < total - 1; ++i) addrs += fmt::format("{}{}-worker-{}", i == 0 ? "" : ",", name, i);
      env.push_back({"WORKER_PORT", std::to_string(*worker_port), ""});
      env.push_back({"WORKER_ADDRS", addrs, ""});
    }
    if (slot.replica_type == kMaster) {
      if (auto s = framework::common::set_master_role(pod); !s) return s;
    }
    if (Value* containers = json::find(pod.root(), "/spec/containers")) {
      framework::common::ensure_default_port(d_, *containers, pod.alloc());
    }
    return framework::common::append_env(pod, env);
  }

  Result<std::vector<DesiredObject>> desired_objects(const Value& job, const Observed&) const override {
    return framework::common::replica_services(d_, job);
  }

  StatusProposal compute_status(const Value& job, const Observed& observed) const override {
    using Rules = framework::common::ReplicaStatusRules;
    const std::string name = string_at(job, "/metadata/name");
    Rules rules;
    rules.lead = [](const framework::common::ReplicaState& s) {
      return s.type == kMaster ? Rules::Lead::RunningFirst : Rules::Lead::None;
    };
    rules.complete = [](const framework::common::ReplicaState& s) { return s.expected() == 0; };
    rules.on_failed = &framework::common::restart_on_exit_code_policy;
    rules.message = [&](std::string_view type, const framework::common::ReplicaState& s) {
      if (type == "Running") return fmt::format("XGBoostJob {} is running.", name);
      if (type == "Succeeded") return fmt::format("XGBoostJob {} is successfully completed.", name);
      const std::string_view verb = type == "Restarting" ? "is restarting" : "is failed";
      return fmt::format("XGBoostJob {} {} because {} {} replica(s) failed.", name, verb, s.counts.failed, s.type);
    };
    rules.running_before_terminal = true;
    return framework::common::replica_status_walk(d_, job, observed, rules);
  }

 private:
  framework::FrameworkDescriptor d_;
};

framework::FrameworkDescriptor make_descriptor() {
  auto d = framework::common::kubeflow_v1_descriptor(kKind, "xgbReplicaSpecs", kReplicaTypes, "xgboost", kPortName, 9999, "xgboost");
  return d;
}

}  // namespace

Status register_xgboost(framework::Registry& registry) {
  return registry.add(framework::registration_of<XGBoostPlugin, &make_descriptor>());
}

}  // namespace unitrain::frameworks::xgboost
