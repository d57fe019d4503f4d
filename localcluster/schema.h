// Structural-schema handling for custom resources (openAPIV3Schema of a CRD version): pruning of
// unknown fields, defaulting, and validation with kube-apiserver's field-error wording.
#pragma once

#include <string>
#include <vector>

#include "core/json/json.h"

namespace unitrain::localcluster {

// One field error, formatted as k8s.io/apimachinery's field.Error prints it.
struct FieldError {
  std::string reason;  // metav1.CauseType: FieldValueInvalid, FieldValueRequired, ...
  std::string field;   // "spec.runPolicy.backoffLimit"
  std::string detail;  // text after "<field>: ", e.g. `Invalid value: "x": must be ...`
  std::string full() const { return field.empty() ? detail : field + ": " + detail; }
};

FieldError invalid_value(std::string field, const json::Value& value, std::string_view detail);
FieldError invalid_value_text(std::string field, std::string_view value_repr, std::string_view detail);
FieldError required_value(std::string field, std::string_view detail = {});
FieldError forbidden(std::string field, std::string_view detail);
// `Unsupported value: "x": supported values: "a", "b"` (field.NotSupported).
FieldError not_supported(std::string field, std::string_view value, const std::vector<std::string>& supported);
// Go's %v / %q rendering of a JSON value the way field.Invalid shows it.
std::string value_repr(const json::Value& v);

// Removes fields the schema does not declare, except under x-kubernetes-preserve-unknown-fields.
// At the root (and at x-kubernetes-embedded-resource nodes) apiVersion, kind and metadata stay.
void prune(json::Value& object, const json::Value& schema, json::Allocator& alloc, bool root = true);
// The fields prune() would remove from `object` (a whole custom resource), as paths
// ("spec.runPolicy.cleanPodPolicyy", "spec.items[0].x"), in document order.
std::vector<std::string> unknown_fields(const json::Value& object, const json::Value& schema);
// Applies `default` values of properties that are missing (recursively, after pruning).
void apply_defaults(json::Value& object, const json::Value& schema, json::Allocator& alloc);
// Validates `object` (a whole custom resource) against `schema`. metadata is not walked here.
std::vector<FieldError> validate_schema(const json::Value& object, const json::Value& schema);
// True when any node in the schema has a `default`.
bool schema_has_defaults(const json::Value& schema);

}  // namespace unitrain::localcluster
