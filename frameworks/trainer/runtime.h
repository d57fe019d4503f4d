// Which runtime a TrainJob runs on: its runtimeRef, and the runtime snapshot ConfigMap
// (`<trainjob>-runtime-snapshot`, key `runtime`) that pins the runtime a TrainJob first saw, so
// later edits of the runtime never reach it.
#pragma once

#include <string>

#include "core/base/result.h"
#include "core/json/json.h"

namespace unitrain::frameworks::trainer {

struct RuntimeRef {
  std::string name;
  std::string api_group;  // "" when unset
  std::string kind;       // "" when unset
};

// spec.runtimeRef as given (the CRD defaults apiGroup and kind).
RuntimeRef runtime_ref(const json::Value& trainjob);
// "Kind.group", or just "Kind" when the group is empty: the key runtime handlers go by.
std::string gk_key(const RuntimeRef& ref);
// TrainingRuntime.trainer.kubeflow.org or ClusterTrainingRuntime.trainer.kubeflow.org.
bool supported(const RuntimeRef& ref);
bool namespaced(const RuntimeRef& ref);  // a TrainingRuntime, looked up in the TrainJob's namespace

// The error when the live runtime cannot be fetched ("TrainingRuntime specified in TrainJob is
// not found: <err>", "not found ClusterTrainingRuntime specified in TrainJob: <err>").
std::string runtime_fetch_error(const RuntimeRef& ref, std::string_view error);

std::string snapshot_name(const json::Value& trainjob);
// The snapshot of `runtime` (apiVersion, kind, metadata without managedFields, spec) as the
// ConfigMap the TrainJob owns; no labels, no ownerReferences (the caller adds the controller's).
json::Document snapshot_configmap(const json::Value& trainjob, const json::Value& runtime);
// The runtime a snapshot holds, after upstream's checks: owned by this TrainJob (controller
// reference with its UID), key present, YAML parses, name (and group and kind when the
// runtimeRef sets them) match. Errors are upstream's "invalid runtime snapshot: ..." messages.
Result<json::Document> runtime_from_snapshot(const json::Value& trainjob, const json::Value& configmap);

}  // namespace unitrain::frameworks::trainer
