// The pure decisions of the batch/v1 Job controller that depend on a Job's policies, as
// kube-controller-manager (Kubernetes 1.32) takes them:
//  - spec.podFailurePolicy against a failed pod: the first rule (in order) whose onExitCodes
//    match a terminated container with a non-zero exit code (containers, then init containers;
//    containerName narrows it) or whose onPodConditions match a pod condition's type and status
//    gives the action. FailJob carries the message kube-controller-manager puts on the Job's
//    FailureTarget/Failed conditions; Ignore means the failure is not counted;
//  - spec.successPolicy against the succeeded indexes: the first rule met (all of its
//    succeededIndexes, or succeededCount of them, or succeededCount indexes at all) and the
//    message "Matched rules at index N".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json/json.h"
#include "localcluster/completion_indexes.h"

namespace unitrain::localcluster::controllers {

// What of a pod the pod failure policy reads.
struct PodFailureFacts {
  struct Terminated {
    std::string name;
    int64_t exit_code = 0;
  };
  std::string ns, name;
  std::vector<Terminated> containers, init_containers;  // containers whose state is terminated
  std::vector<std::pair<std::string, std::string>> conditions;  // type, status
};
PodFailureFacts pod_failure_facts(const json::Value& pod);

enum class FailureAction { None, FailJob, FailIndex, Count, Ignore };

struct FailureMatch {
  FailureAction action = FailureAction::None;  // None: no rule matched (the failure counts)
  std::string fail_job_message;                // FailJob only
  bool counts() const { return action != FailureAction::Ignore; }
};

// `policy`: the Job's spec.podFailurePolicy, or nullptr.
FailureMatch match_pod_failure_policy(const json::Value* policy, const PodFailureFacts& pod);

// The message of the first successPolicy rule the succeeded indexes meet, or nullopt.
std::optional<std::string> match_success_policy(const json::Value* policy, int64_t completions,
                                                const CompletionIndexes& succeeded);

}  // namespace unitrain::localcluster::controllers
