// The `x-kubernetes-validations` rules of a structural schema (CEL, cel.h), evaluated as
// kube-apiserver's apiextensions-apiserver evaluates them: per schema node that has a non-null
// value, `self` bound to that value and, for transition rules (those naming `oldSelf`),
// `oldSelf` bound to the correlated old value on update. Old values correlate through object
// properties, additionalProperties keys, `x-kubernetes-list-type: map` lists (by their map keys)
// and `set` lists (by value); items of atomic lists have no old value, so their transition
// rules do not run. A rule with `optionalOldSelf: true` runs on create too, with oldSelf an
// optional. On update, a rule that does not use oldSelf and yields false on a value unchanged
// from its correlated old value does not count (ratcheting, schema.h RatchetState), so objects
// stored before a rule was added stay updatable; evaluation errors always count.
#pragma once

#include <string>
#include <vector>

#include "core/json/json.h"
#include "localcluster/schema.h"

namespace unitrain::localcluster {

// Errors of the rules that fail for `object` (old: the stored object on update, else null).
// A failed rule reports `message`, the string `messageExpression` yields, or "failed rule:
// <rule>"; at its `fieldPath` when given; as Invalid (the value shown for scalars only),
// Forbidden, Required or Duplicate per `reason`. A rule that cannot be evaluated reports
// "<error> evaluating rule: <rule or message>".
std::vector<FieldError> validate_rules(const json::Value& object, const json::Value* old, const json::Value& schema);

// Parse errors of every rule and messageExpression in `schema` (a CRD version's
// openAPIV3Schema), at CRD field paths under `path` (e.g.
// "spec.versions[0].schema.openAPIV3Schema"), as kube-apiserver refuses such CRDs.
std::vector<FieldError> check_rules(const json::Value& schema, const std::string& path);

}  // namespace unitrain::localcluster
