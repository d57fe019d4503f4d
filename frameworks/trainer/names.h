// The names, keys and values Kubeflow Trainer v2.3.0 (trainer.kubeflow.org/v1alpha1) uses:
// clients and the JobSet controller observe each of them, so they are exact.
#pragma once

#include <string_view>

namespace unitrain::frameworks::trainer {

inline constexpr std::string_view kGroup = "trainer.kubeflow.org";
inline constexpr std::string_view kVersion = "v1alpha1";
inline constexpr std::string_view kApiVersion = "trainer.kubeflow.org/v1alpha1";
inline constexpr std::string_view kTrainJob = "TrainJob";
inline constexpr std::string_view kTrainingRuntime = "TrainingRuntime";
inline constexpr std::string_view kClusterTrainingRuntime = "ClusterTrainingRuntime";

inline constexpr std::string_view kJobSetApiVersion = "jobset.x-k8s.io/v1alpha2";

inline constexpr std::string_view kControllerManager = "trainer.kubeflow.org/trainjob-controller";
inline constexpr std::string_view kMultiKueue = "kueue.x-k8s.io/multikueue";

// Job-template label of a runtime's replicated Job: which TrainJob fields it receives.
inline constexpr std::string_view kAncestorLabel = "trainer.kubeflow.org/trainjob-ancestor-step";
inline constexpr std::string_view kAncestorTrainer = "trainer";
inline constexpr std::string_view kAncestorDataset = "dataset-initializer";
inline constexpr std::string_view kAncestorModel = "model-initializer";
inline constexpr std::string_view kNode = "node";  // the trainer container and replicated Job
inline constexpr std::string_view kLauncher = "launcher";

inline constexpr std::string_view kSupportLabel = "trainer.kubeflow.org/support";
// Runtimes labelled with it "disabled" skip the runtime webhooks (the shipped ones are).
inline constexpr std::string_view kWebhookValidationLabel = "trainer.kubeflow.org/webhook-validation";
// Set on runtimes in use by Trainer v2.0-v2.2; v2.3 only removes it.
inline constexpr std::string_view kResourceInUseFinalizer = "trainer.kubeflow.org/resource-in-use";
inline constexpr std::string_view kSupportDeprecated = "deprecated";
inline constexpr std::string_view kDeprecationPolicyUrl =
    "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy";

inline constexpr std::string_view kCompletionIndexFieldPath =
    "metadata.annotations['batch.kubernetes.io/job-completion-index']";
inline constexpr int kContainerPort = 29500;

inline constexpr std::string_view kCoschedulingLabel = "scheduling.x-k8s.io/pod-group";
inline constexpr std::string_view kVolcanoGroupAnnotation = "scheduling.k8s.io/group-name";
inline constexpr std::string_view kVolcanoQueueAnnotation = "scheduling.volcano.sh/queue-name";

inline constexpr std::string_view kSnapshotSuffix = "-runtime-snapshot";
inline constexpr std::string_view kSnapshotKey = "runtime";

}  // namespace unitrain::frameworks::trainer
