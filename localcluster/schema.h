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
// On update (`old`: the stored object), errors of a value unchanged from its correlated old value
// are dropped (ratcheting, see RatchetState), so an object stored before a stricter schema can
// still be updated elsewhere.
std::vector<FieldError> validate_schema(const json::Value& object, const json::Value& schema,
                                        const json::Value* old = nullptr);

// kube-apiserver's validation ratcheting (CRDValidationRatcheting, on since 1.30): on update, a
// schema node's errors (and its CEL rules that do not use oldSelf) do not count when the node's
// value equals its correlated old value. Values correlate through object properties and
// additionalProperties keys present in both versions and through x-kubernetes-list-type=map
// items with equal map keys; items of atomic and set lists, and properties missing from the old
// object, do not correlate and take the answer of their nearest correlated ancestor.
struct RatchetState {
  const json::Value* old = nullptr;  // the correlated old value, or null
  bool unchanged = false;            // this node's errors are ratcheted away
};
RatchetState ratchet_root(const json::Value& object, const json::Value* old);
// The state of property `key` (holding `value`) of a node in state `parent`; `at_root` when the
// parent is the whole object.
RatchetState ratchet_property(const json::Value& value, std::string_view key, RatchetState parent, bool at_root);
// The state of a list item of a list in state `list`, whose schema is `list_schema`.
RatchetState ratchet_item(const json::Value& item, RatchetState list, const json::Value& list_schema);
// The item of `old_list` with the same x-kubernetes-list-map-keys values as `item`, when
// `list_schema` is a map list; null otherwise.
const json::Value* correlated_map_list_item(const json::Value& item, const json::Value* old_list,
                                            const json::Value& list_schema);
// True when any node in the schema has a `default`.
bool schema_has_defaults(const json::Value& schema);

}  // namespace unitrain::localcluster
