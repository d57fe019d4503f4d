// XGBoostJob hooks, following training-operator v1.8.1 (env, status) and the v1.9 webhook.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/api/field_errors.h"
#include "core/framework/job_spec.h"
#include "core/framework/job_validation.h"
#include "core/framework/json_members.h"
#include "core/framework/module_plugin.h"
#include "core/framework/pod_decoration.h"
#include "core/framework/registry.h"
#include "core/framework/replica_status.h"
#include "core/json/json.h"
#include "frameworks/xgboost/register.h"

namespace unitrain::frameworks::xgboost {
namespace {

using api::FieldError;
using api::FieldPath;
using framework::Observed;
using framework::PodSlot;
using framework::StatusProposal;
using framework::EnvVar;
using framework::json_members::member;
using framework::replicas_of;
using json::string_at;
using json::Document;
using json::Value;

constexpr std::string_view kKind = "XGBoostJob";
constexpr std::string_view kMaster = "Master";
constexpr std::string_view kWorker = "Worker";
constexpr std::string_view kPortName = "xgboostjob-port";

const framework::KubeflowV1Kind kXGBoost{.kind = std::string(kKind),
                                         .replica_specs_field = "xgbReplicaSpecs",
                                         .replica_types = {"Master", "Worker"},
                                         .container = "xgboost",
                                         .port_name = std::string(kPortName),
                                         .port = 9999,
                                         .restart_policy = "Never",
                                         .framework = "xgboost"};

class XGBoostPlugin final : public framework::KubeflowV1Plugin {
 public:
  using KubeflowV1Plugin::KubeflowV1Plugin;

  framework::Validation validate(const Value* old_job, const Value& job) const override {
    framework::Validation out;
    auto& errs = out.errors;
    framework::validate_name(job, errs);
    framework::validate_managed_by(old_job, job, errs);
    framework::validate_replica_specs(d_, job, {}, errs);
    const FieldPath specs_path = FieldPath("spec").child(d_.replica_specs_field);
    if (const Value* specs = framework::replica_specs(d_, job)) {
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
    framework::validate_common_spec(d_, job, out.errors);
    return out;
  }

  Status decorate_pod(const Value& job, const PodSlot& slot, Document& pod) const override {
    const std::string name = string_at(job, "/metadata/name");
    const Value* master = framework::replica_spec(d_, job, kMaster);
    auto master_port = framework::named_port(d_, master, kPortName);
    if (!master_port) {
      return fail(fmt::format("XGBoostJob {}: spec.xgbReplicaSpecs[Master]: container \"{}\" has no port named \"{}\"", name,
                              d_.default_container, kPortName));
    }
    const int32_t total = framework::total_replicas(d_, job);
    const int32_t rank = slot.index + (slot.replica_type == kWorker ? replicas_of(master) : 0);
    std::vector<EnvVar> env = {
        {"MASTER_PORT", std::to_string(*master_port), ""},
        {"MASTER_ADDR", name + "-master-0", ""},
        {"WORLD_SIZE", std::to_string(total), ""},
        {"RANK", std::to_string(rank), ""},
        {"PYTHONUNBUFFERED", "1", ""},
    };
    if (total > 1) {
      auto worker_port = framework::named_port(d_, framework::replica_spec(d_, job, kWorker), kPortName);
      if (!worker_port) {
        return fail(fmt::format("XGBoostJob {}: spec.xgbReplicaSpecs[Worker]: container \"{}\" has no port named \"{}\"", name,
                                d_.default_container, kPortName));
      }
      std::string addrs;
      for (int32_t i = 0; i < total - 1; ++i) addrs += fmt::format("{}{}-worker-{}", i == 0 ? "" : ",", name, i);
      env.push_back({"WORKER_PORT", std::to_string(*worker_port), ""});
      env.push_back({"WORKER_ADDRS", addrs, ""});
    }
    return framework::decorate_replica_pod(d_, pod, slot.replica_type == kMaster, env);
  }

  StatusProposal compute_status(const Value& job, const Observed& observed) const override {
    using Rules = framework::ReplicaStatusRules;
    const std::string name = string_at(job, "/metadata/name");
    Rules rules;
    rules.lead = [](const framework::ReplicaState& s) {
      return s.type == kMaster ? Rules::Lead::RunningFirst : Rules::Lead::None;
    };
    rules.complete = [](const framework::ReplicaState& s) { return s.expected() == 0; };
    rules.on_failed = &framework::restart_on_exit_code_policy;
    rules.message = framework::messages_by_name(std::string(kKind), name, "XGBoostJob");
    rules.running_before_terminal = true;
    return framework::replica_status_walk(d_, job, observed, rules);
  }
};

}  // namespace

Status register_xgboost(framework::Registry& registry) {
  return registry.add(framework::kubeflow_v1_registration<XGBoostPlugin>(kXGBoost));
}

}  // namespace unitrain::frameworks::xgboost
