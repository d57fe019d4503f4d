// Validation rules for the frameworks' validate() hooks: those training-operator's webhooks share
// (TF, PyTorch, XGBoost, Paddle), worded as they word them, and the rules every kind gets on top
// of its reference operator's, for specs those operators accept and then never run.
#pragma once

#include <optional>

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

// ---- Rules every kind gets --------------------------------------------------------------------
// The reference operators accept these specs and then leave the job without pods and without a
// message (negative replicas, an empty replica map), fail it at once (a negative deadline) or
// read an unknown value as something else (cleanPodPolicy). Refusing them at admission, and
// failing the job with the same message when it was stored without webhooks, is a deliberate fix
// (docs/compatibility.md). Worded as apimachinery's validators word them.

// spec.runPolicy: its typed fields decode (integers, strings, booleans where the API has them);
// activeDeadlineSeconds, backoffLimit and ttlSecondsAfterFinished are >= 0; cleanPodPolicy, when
// set, is one of All, None, Running.
void validate_run_policy(const json::Value& job, api::FieldErrorList& errs);
// A cleanPodPolicy value outside All, None, Running (an unset field is fine), as NotSupported at `path`.
std::optional<api::FieldError> clean_pod_policy_error(const json::Value& value, const api::FieldPath& path);
// spec.<replica map>, when present: at least one replica type; each spec decodes and has
// replicas >= 0. A missing map is each framework's own (Required) error.
void validate_replica_counts(const FrameworkDescriptor& d, const json::Value& job, api::FieldErrorList& errs);
// spec.elasticPolicy, when present: minReplicas and maxReplicas integers >= 1, minReplicas <= maxReplicas.
void validate_elastic_replicas(const json::Value& job, api::FieldErrorList& errs);

// Appends to `errs` each error of `more` whose field `errs` does not name yet, at that path or
// below it: one complaint per field, the reference operator's wording first.
void add_unreported(api::FieldErrorList& errs, const api::FieldErrorList& more);
// validate_run_policy and validate_replica_counts, added with add_unreported after the
// framework's own rules: what each module's validate() ends with.
void validate_common_spec(const FrameworkDescriptor& d, const json::Value& job, api::FieldErrorList& errs);

}  // namespace unitrain::framework
