// The labels training-operator and mpi-operator put on a job's pods and Services. Selectors,
// replica counting and users' tooling match on these exact keys.
#pragma once

#include <string_view>

namespace unitrain::framework::job_labels {

inline constexpr std::string_view kJobName = "training.kubeflow.org/job-name";
inline constexpr std::string_view kOperatorName = "training.kubeflow.org/operator-name";
// The lower-cased replica type, under training-operator's key (mpi-operator v2 uses kJobRole).
inline constexpr std::string_view kReplicaType = "training.kubeflow.org/replica-type";
inline constexpr std::string_view kReplicaIndex = "training.kubeflow.org/replica-index";
// "master" on the pod that leads the job; mpi-operator v2: "launcher" or "worker".
inline constexpr std::string_view kJobRole = "training.kubeflow.org/job-role";

}  // namespace unitrain::framework::job_labels
