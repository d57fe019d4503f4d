#include <fmt/format.h>

#include "core/framework/plugin.h"

namespace unitrain::framework {

CoreWording training_operator_wording(CoreEvent e, std::string_view kind, const json::Value& job,
                                      std::string_view replica_type) {
  const std::string_view name = json::get_string(job, "/metadata/name").value_or("");
  switch (e) {
    case CoreEvent::Created:
      return {fmt::format("{}Created", kind), fmt::format("{} {} is created.", kind, name)};
    case CoreEvent::Suspended:
    case CoreEvent::SuspendedNotRunning:
      return {fmt::format("{}Suspended", kind), fmt::format("{} {} is suspended.", kind, name)};
    case CoreEvent::Resumed:
      return {fmt::format("{}Resumed", kind), fmt::format("{} {} is resumed.", kind, name)};
    case CoreEvent::BackoffLimitExceeded:
      return {fmt::format("{}Failed", kind),
              fmt::format("Job {} has failed because it has reached the specified backoff limit", name)};
    case CoreEvent::DeadlineExceeded:
      return {fmt::format("{}Failed", kind),
              fmt::format("Job {} has failed because it was active longer than specified deadline", name)};
    case CoreEvent::ReplicaRestarting:
      return {fmt::format("{}Restarting", kind),
              fmt::format("job {} is restarting because {} replica(s) failed.", name, replica_type)};
    case CoreEvent::ReplicaFailed:
      return {fmt::format("{}Failed", kind),
              fmt::format("job \"{}\" is failing because \"{}\" replica(s) failed.", name, replica_type)};
    case CoreEvent::ValidationFailed:
      return {fmt::format("{}FailedValidation", kind), ""};
  }
  return {};
}

CoreWording training_operator_foreign_object_wording(std::string_view job_kind, const ForeignObject& object) {
  if (object.resource == "pods" || object.resource == "services") {
    return {object.resource == "pods" ? "FailedCreatePod" : "FailedCreateService",
            fmt::format("Error creating: {} \"{}\" already exists", object.resource, object.name)};
  }
  return {"ErrResourceExists", fmt::format("Resource \"{}\" of Kind \"{}\" already exists and is not managed by {}",
                                           object.name, object.kind, job_kind)};
}

}  // namespace unitrain::framework

namespace unitrain::framework {

PipelineBehaviour pipeline_behaviour(const FrameworkPlugin& plugin) {
  const PipelineDepartures* d = plugin.capabilities().departures;
  if (d == nullptr) return {};
  return {.ttl_deletes_job = d->ttl_deletes_job(),
          .enforces_run_limits = d->enforces_run_limits(),
          .gang_holds_pod_creation = d->gang_holds_pod_creation(),
          .delete_services_with_pods = d->delete_services_with_pods(),
          .validates_defaulted = d->validates_defaulted()};
}

}  // namespace unitrain::framework
