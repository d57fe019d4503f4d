// Every worker gets ECHO_RANK and ECHO_WORLD_SIZE; the job succeeds when every worker has.
// Everything else (defaults, webhook rules, a headless Service per pod, the status walk) is the
// SDK's KubeflowV1Plugin.
#include "echojob.h"

#include <string>

#include "core/framework/job_spec.h"
#include "core/framework/module_plugin.h"
#include "core/framework/pod_decoration.h"
#include "core/framework/replica_status.h"

namespace example::echojob {
namespace {

namespace fw = unitrain::framework;
namespace json = unitrain::json;

const fw::KubeflowV1Kind kEcho{.kind = "EchoJob",
                               .replica_specs_field = "echoReplicaSpecs",
                               .replica_types = {"Worker"},
                               .container = "echo",
                               .port_name = "",
                               .port = 0,
                               .restart_policy = "Never",
                               .framework = "echo",
                               .group = "example.unitrain.io",
                               .version = "v1alpha1"};

class EchoPlugin final : public fw::KubeflowV1Plugin {
 public:
  using KubeflowV1Plugin::KubeflowV1Plugin;

  unitrain::Status decorate_pod(const json::Value& job, const fw::PodSlot& slot, json::Document& pod) const override {
    return fw::decorate_replica_pod(d_, pod, slot.index == 0,
                                    {{"ECHO_RANK", std::to_string(slot.index), ""},
                                     {"ECHO_WORLD_SIZE", std::to_string(fw::total_replicas(d_, job)), ""}});
  }

  fw::StatusProposal compute_status(const json::Value& job, const fw::Observed& observed) const override {
    return fw::replica_status_walk(d_, job, observed,
                                   fw::master_worker_status_rules(d_.kind, json::string_at(job, "/metadata/name"),
                                                                  json::string_at(job, "/metadata/namespace"), false));
  }
};

}  // namespace

unitrain::Status register_echojob(fw::Registry& registry) {
  return registry.add(fw::kubeflow_v1_registration<EchoPlugin>(kEcho));
}

}  // namespace example::echojob
