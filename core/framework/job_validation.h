// Validation rules training-operator's webhooks share (TF, PyTorch, XGBoost, Paddle), worded as
// they word them, for the frameworks' validate() hooks.
#pragma once

#include "core/api/field_errors.h"
#include "core/framework/descriptor.h"
#include "core/json/json.h"

namespace unitrain::framework {

// metadata.name must be a DNS-1035 label.
void validate_name(const json::Value& job, api::FieldErrorList& errs);
// spec.runPolicy.managedBy: one of kubeflow.org/training-operator and kueue.x-k8s.io/multikueue,
// and on update (old_job set) unchanged.
void validate_managed_by(const json::Value* old_job, const json::Value& job, api::FieldErrorList& errs);

struct ReplicaSpecRules {
  bool restrict_types = true;        // RT not in d.replica_types -> NotSupported (TF: false)
  bool quote_default_name = false;   // Paddle words the default-container error with quotes
};
// The replica map is required; per RT: containers present, images set, the default container exists.
void validate_replica_specs(const FrameworkDescriptor& d, const json::Value& job, const ReplicaSpecRules& rules,
                            api::FieldErrorList& errs);

}  // namespace unitrain::framework
