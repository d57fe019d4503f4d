#include <fmt/format.h>

#include "core/framework/plugin.h"

namespace unitrain::framework {

CoreWording training_operator_wording(CoreEvent e, std::string_view kind, const json::Value& job,
                                      std::string_view replica_type) {
  const std::string_view name = json::get_string(job, "/metadata/name").value_or("");
  switch (e) {
    case CoreEvent::Created:
      // The Created condition is set in the informer's create handler, without an event.
      return {fmt::format("{}Created", kind), fmt::format("{} {} is created.", kind, name)};
    case CoreEvent::Suspended:
      return {fmt::format("{}Suspended", kind), fmt::format("{} {} is suspended.", kind, name), "Normal"};
    case CoreEvent::SuspendedNotRunning:
      return {fmt::format("{}Suspended", kind), fmt::format("{} {} is suspended.", kind, name)};
    case CoreEvent::Resumed:
      return {fmt::format("{}Resumed", kind), fmt::format("{} {} is resumed.", kind, name), "Normal"};
    case CoreEvent::BackoffLimitExceeded:
      return {fmt::format("{}Failed", kind),
              fmt::format("Job {} has failed because it has reached the specified backoff limit", name), "Normal"};
    case CoreEvent::DeadlineExceeded:
      return {fmt::format("{}Failed", kind),
              fmt::format("Job {} has failed because it was active longer than specified deadline", name), "Normal"};
    case CoreEvent::ReplicaRestarting:
      return {fmt::format("{}Restarting", kind),
              fmt::format("job {} is restarting because {} replica(s) failed.", name, replica_type), "Warning"};
    case CoreEvent::ReplicaFailed:
      return {fmt::format("{}Failed", kind),
              fmt::format("job \"{}\" is failing because \"{}\" replica(s) failed.", name, replica_type), "Warning"};
    case CoreEvent::ValidationFailed:
      return {fmt::format("{}FailedValidation", kind), "", "Warning"};
  }
  return {};
}

CoreWording training_operator_child_event(ChildEvent e, const json::Value& job, const ChildSubject& s) {
  const bool pod = s.kind == "Pod", service = s.kind == "Service", pod_group = s.kind == "PodGroup";
  switch (e) {
    case ChildEvent::Created:
      if (pod) return {"SuccessfulCreatePod", fmt::format("Created pod: {}", s.name), "Normal"};
      if (service) return {"SuccessfulCreateService", fmt::format("Created service: {}", s.name), "Normal"};
      return {};
    case ChildEvent::CreateFailed:
      if (pod) return {"FailedCreatePod", fmt::format("Error creating: {}", s.detail), "Warning"};
      if (service) return {"FailedCreateService", fmt::format("Error creating: {}", s.detail), "Warning"};
      return {};
    case ChildEvent::Deleted:
      if (pod) return {"SuccessfulDeletePod", fmt::format("Deleted pod: {}", s.name), "Normal"};
      if (service) return {"SuccessfulDeleteService", fmt::format("Deleted service: {}", s.name), "Normal"};
      if (pod_group) return {"SuccessfulDeletePodGroup", fmt::format("Deleted PodGroup: {}", s.name), "Normal"};
      return {};
    case ChildEvent::DeleteFailed:
      if (pod) return {"FailedDeletePod", fmt::format("Error deleting: {}", s.detail), "Warning"};
      if (service) return {"FailedDeleteService", fmt::format("Error deleting: {}", s.detail), "Warning"};
      if (pod_group) return {"FailedDeletePodGroup", fmt::format("Error deleting: {}", s.detail), "Warning"};
      return {};
    case ChildEvent::ExitedWithCode:
      return {"ExitedWithCode",
              fmt::format("Pod: {}.{} exited with code {}", json::get_string(job, "/metadata/namespace").value_or(""),
                          s.name, s.detail),
              "Normal"};
    case ChildEvent::TemplateRestartPolicy:
      return {"SetPodTemplateRestartPolicy",
              "Restart policy in pod template will be overwritten by restart policy in replica spec", "Warning"};
    case ChildEvent::TemplateSchedulerName:
      return {"SetPodTemplateSchedulerName",
              "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten", "Warning"};
    case ChildEvent::AbnormalPod:
      return {std::string(s.reason), std::string(s.detail), "Warning"};
    case ChildEvent::PodGroupDeleting:
      return {"JobTerminated", "Job has been terminated. Deleting PodGroup", "Normal"};
    case ChildEvent::JobDeleted:
      return {"SuccessfulDeleteJob", fmt::format("Deleted job: {}", s.name), "Normal"};
    case ChildEvent::JobDeleteFailed:
      return {"FailedDeleteJob", fmt::format("Error deleting: {}", s.detail), "Warning"};
  }
  return {};
}

CoreWording job_deletion_worded_as_pod(ChildEvent e, const json::Value& job, const ChildSubject& subject) {
  CoreWording w = training_operator_child_event(e, job, subject);
  if (e == ChildEvent::JobDeleted) w.reason = "SuccessfulDeletePod";
  if (e == ChildEvent::JobDeleteFailed) w.reason = "FailedDeletePod";
  return w;
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
          .validates_defaulted = d->validates_defaulted(),
          .reconciles_on_any_child = d->reconciles_on_any_child(),
          .status_while_suspended = d->status_while_suspended(),
          .ordered_pod_writes = d->ordered_pod_writes()};
}

}  // namespace unitrain::framework
