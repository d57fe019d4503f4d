// One reconcile pass over a TrainJob (Kubeflow Trainer v2.3.0's Reconcile, with the fixes
// docs/compatibility.md lists), as a plan the core carries out (framework::WorkloadPlanner):
// managedBy, the runtime (snapshot, else the live one, read through WorkloadPlan::fetch), the
// JobSet and the objects beside it, the Suspended condition, the JobSet's terminal condition and
// jobsStatus, the active deadline.
#pragma once

#include <string_view>

#include "core/api/time.h"
#include "core/framework/plugin.h"
#include "frameworks/trainer/build.h"

namespace unitrain::frameworks::trainer {

inline const kube::GroupVersionResource kJobSets{"jobset.x-k8s.io", "v1alpha2", "jobsets"};
inline const kube::GroupVersionResource kConfigMaps{"", "v1", "configmaps"};
inline const kube::GroupVersionResource kSecrets{"", "v1", "secrets"};
inline const kube::GroupVersionResource kCoschedulingPodGroups{"scheduling.x-k8s.io", "v1alpha1", "podgroups"};
inline const kube::GroupVersionResource kVolcanoPodGroups{"scheduling.volcano.sh", "v1beta1", "podgroups"};
inline const kube::GroupVersionResource kTrainingRuntimes{"trainer.kubeflow.org", "v1alpha1", "trainingruntimes"};
inline const kube::GroupVersionResource kClusterTrainingRuntimes{"trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes"};

// `observed.owned` holds the TrainJob's JobSet, ConfigMaps, Secrets (and PodGroups when their
// kinds are watched); `observed.fetched` the runtime once the plan asked for it.
// `status_server` is set when the TrainJobStatus gate is on: each pass of an unfinished TrainJob
// then reads the webhook certificate Secret (with the runtime, in the same round).
framework::WorkloadPlan plan(const json::Value& trainjob, const framework::Observed& observed, api::TimePoint now,
                             Result<BuildInput::SshKeys> (*generate_ssh_keys)(),
                             const StatusServerConfig* status_server = nullptr);

// The Warning event upstream records when building or applying fails: the message cut at 950
// characters, " ..." appended when cut.
std::string resources_failed_message(std::string_view error);

}  // namespace unitrain::frameworks::trainer
