// One reconcile pass over a job of a workload-planning kind (framework::WorkloadPlanner: JobSet,
// whose children are batch Jobs run by their own controller): the module decides everything
// from the job and its observed children, and the pass carries the plan out in the order the
// plan documents, status first, so a decision is on the server before anything acts on it.
#pragma once

#include "core/api/time.h"
#include "core/controller/child_writes.h"
#include "core/controller/pass_log.h"
#include "core/controller/reconcile_pass.h"

namespace unitrain::controller {

class WorkloadPass {
 public:
  WorkloadPass(const PassDependencies& dependencies, const framework::WorkloadPlanner& planner, kube::ObjectPtr cached,
               api::TimePoint now, PassLog& log);
  WorkloadPass(const WorkloadPass&) = delete;
  WorkloadPass& operator=(const WorkloadPass&) = delete;

  ReconcileResult run();

 private:
  std::optional<kube::ApiError> write_status(const framework::WorkloadPlan& plan);
  std::optional<kube::ApiError> delete_job();
  std::optional<kube::ApiError> delete_child(const framework::ChildDeletion& deletion);
  std::optional<kube::ApiError> update_child(const framework::DesiredObject& want);
  std::optional<kube::ApiError> create_children(const std::vector<framework::DesiredObject>& creations);
  // The object as the pass creates it: in the job's namespace, owned by the job (unless the plan
  // says otherwise), with the module's child labels.
  kube::ApiResult<json::Document> prepared(const framework::DesiredObject& want) const;
  // The answer to one create: events, log, and an AlreadyExists looked up (ours or someone else's).
  std::optional<kube::ApiError> settle_child(const framework::DesiredObject& want, kube::CreateOutcome outcome);
  const json::Value& cached() const { return cached_->root(); }

  const PassDependencies& deps_;
  const framework::WorkloadPlanner& planner_;
  const framework::FrameworkDescriptor& descriptor_;
  kube::ObjectPtr cached_;
  std::string ns_, name_, uid_;
  api::TimePoint now_;
  PassLog& log_;
  ChildWrites writes_;
};

}  // namespace unitrain::controller
