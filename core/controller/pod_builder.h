// The parts of a job's children every framework shares: names, the common labels, owner
// references and the projection of a replica template into a pod.
// Pure functions of the job and the descriptor, so the exact strings are unit-tested.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/result.h"
#include "core/controller/restart_policy.h"
#include "core/framework/descriptor.h"
#include "core/json/json.h"

namespace unitrain::controller {

inline constexpr std::string_view kOperatorNameLabel = "training.kubeflow.org/operator-name";
inline constexpr std::string_view kJobNameLabel = "training.kubeflow.org/job-name";
inline constexpr std::string_view kReplicaIndexLabel = "training.kubeflow.org/replica-index";
inline constexpr std::string_view kJobRoleLabel = "training.kubeflow.org/job-role";

std::string lower(std::string_view s);

// "<job>-<rt>-<index>" with '/' replaced by '-', as training-operator names pods and services.
std::string replica_name(std::string_view job, std::string_view replica_type, int32_t index);

// {operator-name, job-name} (the selector of all of a job's pods).
json::Document job_selector_labels(const framework::FrameworkDescriptor& descriptor, std::string_view job);
// The selector above plus the replica-type label and, when index >= 0, the replica index.
json::Document replica_labels(const framework::FrameworkDescriptor& descriptor, std::string_view job,
                              std::string_view replica_type, int32_t index);
// The API server is deleting the object (deletionTimestamp set): a terminating pod still shows
// in the caches but no longer counts as the slot's pod or as a surplus one.
inline bool terminating(const json::Value& obj) { return json::find(obj, "/metadata/deletionTimestamp") != nullptr; }

// "k1=v1,k2=v2" with keys sorted, the label-selector string of a label map.
std::string selector_string(const json::Value& labels);

// The replica spec of `replica_type` in the (defaulted) job, or null.
const json::Value* replica_spec(const framework::FrameworkDescriptor& descriptor, const json::Value& job,
                                std::string_view replica_type);
// Replicas of a type (a missing count is 1, as the defaults make it).
int32_t replicas_of(const framework::FrameworkDescriptor& descriptor, const json::Value& job, std::string_view replica_type);

struct BuiltPod {
  json::Document pod;
  bool template_restart_policy_overridden = false;  // warn SetPodTemplateRestartPolicy
};
// A pod for one slot: template metadata and spec, common labels, name, namespace, restart
// policy, owner reference. Framework decoration comes after.
Result<BuiltPod> build_pod(const framework::FrameworkDescriptor& descriptor, const json::Value& job,
                           std::string_view replica_type, int32_t index);

}  // namespace unitrain::controller
