// The local cluster's batch/v1 Job controller (NonIndexed completion mode), following
// Kubernetes 1.31+:
//  - pods from spec.template named `<job>-<5 chars>` (generateName), labelled
//    batch.kubernetes.io/job-name, batch.kubernetes.io/controller-uid and the legacy job-name,
//    controller-uid, annotated batch.kubernetes.io/job-tracking, controller owner reference
//    with blockOwnerDeletion;
//  - spec defaults where the store did not apply them at create (selector on
//    batch.kubernetes.io/controller-uid, template labels, completions/parallelism 1 when both
//    are unset, backoffLimit 6, completionMode NonIndexed, podReplacementPolicy
//    TerminatingOrFailed), written back to the Job once;
//  - completions/parallelism, backoffLimit (failed pods, and container restarts of active pods
//    for restartPolicy OnFailure), activeDeadlineSeconds, suspend/resume, ttlSecondsAfterFinished
//    (background deletion), podReplacementPolicy (Failed: no replacement while a pod terminates);
//  - status active, ready, succeeded, failed, terminating, startTime, completionTime and the
//    conditions FailureTarget → Failed (BackoffLimitExceeded, DeadlineExceeded) and
//    SuccessCriteriaMet → Complete (CompletionsReached), Suspended (JobSuspended/JobResumed).
// Differences from Kubernetes, for a fast simulation: no exponential delay before re-creating
// failed pods; terminal pods are counted once by uid in memory (no job-tracking finalizer), and
// pods the controller deleted for suspend or scale-down never count as failed, while those it
// deleted because the Job reached its end do (as in Kubernetes).
// Indexed completion mode, podFailurePolicy and successPolicy are not implemented.
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
