// PaddleJob hooks, following training-operator v1.8.1 (defaults, env, status) and the v1.9 webhook.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/framework/ascii.h"
#include "core/framework/job_spec.h"
#include "core/framework/job_validation.h"
#include "core/framework/module_plugin.h"
#include "core/framework/pod_decoration.h"
#include "core/framework/registry.h"
#include "core/framework/replica_defaults.h"
#include "core/framework/replica_status.h"
#include "core/json/json.h"
#include "frameworks/paddle/register.h"

namespace unitrain::frameworks::paddle {
namespace {

using framework::Observed;
using framework::PodSlot;
using framework::StatusProposal;
using framework::EnvVar;
using framework::replicas_of;
using json::string_at;
using json::Document;
using json::Value;

constexpr std::string_view kKind = "PaddleJob";
constexpr std::string_view kMaster = "Master";
constexpr std::string_view kWorker = "Worker";
constexpr std::string_view kPortName = "master";
constexpr int32_t kPort = 36543;

const framework::KubeflowV1Kind kPaddle{.kind = std::string(kKind),
                                        .replica_specs_field = "paddleReplicaSpecs",
                                        .replica_types = {"Master", "Worker"},
                                        .container = "paddle",
                                        .port_name = std::string(kPortName),
                                        .port = kPort,
                                        .restart_policy = "OnFailure",
                                        .framework = "paddle"};

class PaddlePlugin final : public framework::KubeflowV1Plugin {
 public:
  using KubeflowV1Plugin::KubeflowV1Plugin;

  void set_defaults(Document& job) const override {
    KubeflowV1Plugin::set_defaults(job);
    framework::set_elastic_replica_defaults(d_, job);
  }

  framework::Validation validate(const Value* old_job, const Value& job) const override {
    framework::Validation out;
    framework::validate_name(job, out.errors);
    framework::validate_managed_by(old_job, job, out.errors);
    framework::validate_replica_specs(d_, job, {.restrict_types = true, .quote_default_name = true}, out.errors);
    framework::validate_common_spec(d_, job, out.errors);
    return out;
  }

  Status decorate_pod(const Value& job, const PodSlot& slot, Document& pod) const override {
    const std::string name = string_at(job, "/metadata/name");
    const bool ps_mode = framework::replica_spec(d_, job, kMaster) != nullptr;
    // The endpoint lives on Master 0 in PS mode and on Worker 0 in collective mode.
    const std::string_view endpoint_type = ps_mode ? kMaster : kWorker;
    const int32_t port =
        framework::named_port(d_, framework::replica_spec(d_, job, endpoint_type), kPortName).value_or(kPort);
    std::vector<EnvVar> env = {
        {"PYTHONUNBUFFERED", "1", ""},
        {"PADDLE_JOB_ID", name, ""},
        {"PADDLE_NNODES", std::to_string(framework::total_replicas(d_, job)), ""},
    };
    if (slot.replica_type == endpoint_type && slot.index == 0) {
      env.push_back({"POD_IP_DUMMY", "", "status.podIP"});
      env.push_back({"PADDLE_MASTER", fmt::format("$(POD_IP_DUMMY):{}", port), ""});
    } else {
      env.push_back({"PADDLE_MASTER", fmt::format("{}-{}-0:{}", name, framework::ascii::lower(endpoint_type), port), ""});
    }
    if (ps_mode) {
      if (slot.replica_type == kMaster) env.push_back({"PADDLE_SERVER_NUM", "1", ""});
      if (slot.replica_type == kWorker) env.push_back({"PADDLE_TRAINER_NUM", "1", ""});
    }
    return framework::decorate_replica_pod(d_, pod, slot.replica_type == kMaster, env);
  }

  // The TTL deletion of the job is recorded with the pod reasons, as upstream's DeleteJob does.
  framework::CoreWording child_event(framework::ChildEvent e, const Value& job,
                                     const framework::ChildSubject& subject) const override {
    return framework::job_deletion_worded_as_pod(e, job, subject);
  }

  StatusProposal compute_status(const Value& job, const Observed& observed) const override {
    const bool master = framework::replica_spec(d_, job, kMaster) != nullptr;
    return framework::replica_status_walk(
        d_, job, observed,
        framework::master_worker_status_rules(std::string(kKind), string_at(job, "/metadata/name"),
                                                      string_at(job, "/metadata/namespace"), master));
  }
};

}  // namespace

Status register_paddle(framework::Registry& registry) {
  return registry.add(framework::kubeflow_v1_registration<PaddlePlugin>(kPaddle));
}

}  // namespace unitrain::frameworks::paddle
