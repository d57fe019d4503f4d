// The local cluster's batch/v1 Job controller, following kube-controller-manager (Kubernetes 1.32):
//  - pods from spec.template named `<job>-<5 chars>` (generateName), labelled
//    batch.kubernetes.io/job-name, batch.kubernetes.io/controller-uid and the legacy job-name,
//    controller-uid, annotated batch.kubernetes.io/job-tracking, controller owner reference
//    with blockOwnerDeletion;
//  - completionMode Indexed: one pod per index at a time, named `<job>-<index>-<5 chars>`, with
//    the batch.kubernetes.io/job-completion-index annotation and label, spec.hostname
//    `<job>-<index>` (the template's subdomain kept), env JOB_COMPLETION_INDEX from the label
//    (fieldRef) in every container and init container; the lowest free indexes first; pods with
//    a repeated or out-of-range index deleted; status.completedIndexes ("0-2,4");
//  - spec defaults where the store did not apply them at create (selector on
//    batch.kubernetes.io/controller-uid, template labels, completions/parallelism 1 when both
//    are unset, backoffLimit 6 (MaxInt32 with backoffLimitPerIndex), completionMode NonIndexed,
//    podReplacementPolicy TerminatingOrFailed (Failed with a podFailurePolicy)), written back once;
//  - completions/parallelism, backoffLimit (failed pods, and container restarts of active pods
//    for restartPolicy OnFailure), activeDeadlineSeconds, suspend/resume, ttlSecondsAfterFinished
//    (background deletion), podReplacementPolicy (Failed: no replacement while a pod terminates);
//  - podFailurePolicy (job_policies.h): FailJob, Ignore (not counted), Count, FailIndex;
//    backoffLimitPerIndex (the batch.kubernetes.io/job-index-failure-count annotation carried to
//    an index's next pod; status.failedIndexes) and maxFailedIndexes; successPolicy;
//  - status active, ready, succeeded, failed, terminating, startTime, completionTime and the
//    conditions FailureTarget → Failed (PodFailurePolicy, BackoffLimitExceeded,
//    DeadlineExceeded, MaxFailedIndexesExceeded, FailedIndexes) and SuccessCriteriaMet →
//    Complete (CompletionsReached, SuccessPolicy), Suspended (JobSuspended/JobResumed).
//    status.startTime stays while a Job is suspended (as in Kubernetes: JobSet and Kueue clear it
//    through the status subresource before they change a suspended Job's template).
// Differences from Kubernetes, for a fast simulation: no exponential delay before re-creating
// failed pods; terminal pods are counted once by uid in memory (no job-tracking finalizer, so
// uncountedTerminatedPods stays empty), and pods the controller deleted for suspend or scale-down
// never count as failed, while those it deleted because the Job reached its end do (as in
// Kubernetes). A Job whose spec.managedBy names another controller is left alone.
#pragma once

#include <memory>

#include "localcluster/store.h"

namespace unitrain::localcluster::controllers {

class JobController {
 public:
  explicit JobController(Store& store);
  ~JobController();
  JobController(const JobController&) = delete;
  JobController& operator=(const JobController&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace unitrain::localcluster::controllers
