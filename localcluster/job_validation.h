// kube-apiserver's validation of batch/v1 Jobs (Kubernetes 1.32) that the local cluster enforces,
// with its field paths and wording (422):
//  - spec: non-negative counts and limits; completionMode; Indexed needs completions (and the
//    highest pod hostname `<name>-<completions-1>` must be a DNS label); backoffLimitPerIndex and
//    maxFailedIndexes need Indexed; podFailurePolicy rules (actions, onExitCodes, onPodConditions)
//    and restartPolicy Never with it; successPolicy (Indexed only, its rules and index ranges);
//    podReplacementPolicy; restartPolicy OnFailure or Never;
//  - updates: completions (an Indexed Job may change it together with parallelism), selector,
//    completionMode, podFailurePolicy, backoffLimitPerIndex, successPolicy and managedBy are
//    immutable; the pod template too, except that a suspended Job that never started
//    (no status.startTime) may change its scheduling directives: template labels and
//    annotations, nodeSelector, tolerations, schedulingGates and affinity.nodeAffinity.
// Not checked: the pod template's own validation and status-subresource rules.
#pragma once

#include <vector>

#include "core/json/json.h"
#include "localcluster/schema.h"

namespace unitrain::localcluster {

std::vector<FieldError> job_create_errors(const json::Value& job);
std::vector<FieldError> job_update_errors(const json::Value& old_job, const json::Value& new_job);

}  // namespace unitrain::localcluster
