// The validating webhooks of Kubeflow Trainer v2.3.0 (TrainJob, TrainingRuntime,
// ClusterTrainingRuntime): field paths and details exactly as upstream reports them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/field_errors.h"
#include "core/json/json.h"

namespace unitrain::frameworks::trainer {

struct WebhookVerdict {
  // A denial without a field path ("unsupported runtime: <GK key>").
  std::optional<std::string> denial;
  api::FieldErrorList errors;
  std::vector<std::string> warnings;
  bool ok() const { return !denial && errors.empty(); }
};

struct TrainJobAdmission {
  const json::Value* old_trainjob = nullptr;  // null on CREATE
  const json::Value& trainjob;
  // The live runtime runtimeRef names, or null with the API error text that said why.
  const json::Value* runtime = nullptr;
  std::string runtime_error;
  // The JobSet <trainjob> on UPDATE, null when there is none; `jobset_error` set when reading
  // it failed other than NotFound.
  const json::Value* jobset = nullptr;
  std::string jobset_error;
  // Whether a PriorityClass exists (Volcano's check); the error text when it does not.
  std::function<std::optional<std::string>(std::string_view)> priority_class_error;
};

WebhookVerdict validate_trainjob(const TrainJobAdmission& in);
// The part that needs no runtime: each runtimePatches[].manager is a domain-prefixed path.
api::FieldErrorList validate_runtime_patch_managers(const json::Value& trainjob);

// TrainingRuntime and ClusterTrainingRuntime, on CREATE and on an UPDATE that changes the spec
// (upstream leaves every TrainingRuntime UPDATE unchecked): replicas 1 and the required container
// of each ancestor Job; the deprecation warning on a ClusterTrainingRuntime's CREATE.
WebhookVerdict validate_runtime(const json::Value* old_runtime, const json::Value& runtime);

// The mutating webhook: stamps runtimePatches[].time (now on CREATE when unset; on UPDATE kept
// when the patch of the same manager is unchanged apart from time, else now). Returns whether
// it changed anything.
bool default_runtime_patch_times(const json::Value* old_trainjob, json::Document& trainjob, std::string_view now);

}  // namespace unitrain::frameworks::trainer
