// JAXJob hooks, following training-operator v1.9.0 (defaults, env, status, webhook).
#include <string>
#include <string_view>
#include <vector>

#include "core/framework/job_spec.h"
#include "core/framework/job_validation.h"
#include "core/framework/module_plugin.h"
#include "core/framework/pod_decoration.h"
#include "core/framework/replica_status.h"
#include "frameworks/jax/register.h"

namespace unitrain::frameworks::jax {
namespace {

using json::string_at;

const framework::KubeflowV1Kind kJax{.kind = "JAXJob",
                                     .replica_specs_field = "jaxReplicaSpecs",
                                     .replica_types = {"Worker"},
                                     .container = "jax",
                                     .port_name = "jaxjob-port",
                                     .port = 6666,
                                     .restart_policy = "Never",
                                     .framework = "jax"};

class JaxPlugin final : public framework::KubeflowV1Plugin {
 public:
  using KubeflowV1Plugin::KubeflowV1Plugin;

  // Upstream's JAX webhook checks the name and the replica specs only (no managedBy rule).
  framework::Validation validate(const json::Value*, const json::Value& job) const override {
    framework::Validation out;
    framework::validate_name(job, out.errors);
    framework::validate_replica_specs(d_, job, {}, out.errors);
    framework::validate_common_spec(d_, job, out.errors);
    return out;
  }

  // Every container gets the coordinator's address (worker 0) and port, the process count and
  // its index; worker 0 carries the master role label.
  Status decorate_pod(const json::Value& job, const framework::PodSlot& slot, json::Document& pod) const override {
    const auto port = framework::named_port(d_, framework::replica_spec(d_, job, "Worker"), d_.default_port_name);
    if (!port) return fail("default container port is not exposed");
    const std::string name = string_at(job, "/metadata/name");
    return framework::decorate_replica_pod(d_, pod, slot.index == 0,
                                           {{"PYTHONUNBUFFERED", "1", ""},
                                            {"COORDINATOR_PORT", std::to_string(*port), ""},
                                            {"COORDINATOR_ADDRESS", name + "-worker-0", ""},
                                            {"NUM_PROCESSES", std::to_string(framework::total_replicas(d_, job)), ""},
                                            {"PROCESS_ID", std::to_string(slot.index), ""}});
  }

  framework::StatusProposal compute_status(const json::Value& job, const framework::Observed& observed) const override {
    return framework::replica_status_walk(
        d_, job, observed,
        framework::master_worker_status_rules(d_.kind, string_at(job, "/metadata/name"),
                                              string_at(job, "/metadata/namespace"), false));
  }
};

}  // namespace

Status register_jax(framework::Registry& registry) {
  return registry.add(framework::kubeflow_v1_registration<JaxPlugin>(kJax));
}

}  // namespace unitrain::frameworks::jax
