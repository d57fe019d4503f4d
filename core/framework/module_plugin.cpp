#include "core/framework/module_plugin.h"

#include "core/framework/job_spec.h"
#include "core/framework/job_validation.h"
#include "core/framework/replica_defaults.h"
#include "core/framework/replica_services.h"

namespace unitrain::framework {

FrameworkDescriptor descriptor_of(const KubeflowV1Kind& kind) {
  FrameworkDescriptor d = kubeflow_v1_descriptor(kind.kind, kind.replica_specs_field, kind.replica_types, kind.container,
                                                 kind.port_name, kind.port, kind.framework);
  d.owned_resources = kind.owned_resources;
  d.name = kind.group + "/" + d.singular;
  d.group = kind.group;
  d.version = kind.version;
  return d;
}

void KubeflowV1Plugin::set_defaults(json::Document& job) const {
  set_replica_defaults(d_, job, restart_policy_, d_.replica_types);
}

Validation KubeflowV1Plugin::validate(const json::Value* old_job, const json::Value& job) const {
  Validation out;
  validate_name(job, out.errors);
  validate_managed_by(old_job, job, out.errors);
  validate_replica_specs(d_, job, {}, out.errors);
  validate_common_spec(d_, job, out.errors);
  return out;
}

std::vector<PodSlot> KubeflowV1Plugin::pod_slots(const json::Value& job) const { return framework::pod_slots(d_, job); }

Result<std::vector<DesiredObject>> KubeflowV1Plugin::desired_objects(const json::Value& job, const Observed&) const {
  return replica_services(d_, job);
}

WorkloadPlan WorkloadModulePlugin::plan(const json::Value& job, const Observed& observed, std::string_view now) const {
  auto t = api::parse_time(now);
  return plan_at(job, observed, t ? *t : api::Clock::now());
}

}  // namespace unitrain::framework
