// PodDisruptionBudgets as kube-apiserver's eviction subresource and kube-controller-manager's
// disruption controller read them: which pods a budget covers, its DisruptionAllowed condition,
// and the eviction itself (pods/eviction, what `kubectl drain` posts).
#pragma once

#include <string>
#include <string_view>

#include "core/json/json.h"
#include "localcluster/api_errors.h"
#include "localcluster/store.h"

namespace unitrain::localcluster {

// Whether the budget covers the pod: same namespace, and spec.selector (policy/v1: an empty
// selector covers every pod of the namespace, a missing one none) matches its labels.
bool budget_covers(const json::Value& pdb, const json::Value& pod);

// Sets status.conditions[DisruptionAllowed] from status.disruptionsAllowed: True/SufficientPods
// or False/InsufficientPods (metav1.Condition; lastTransitionTime moves when the status flips).
// `status` is the budget's status object.
void set_disruption_allowed_condition(json::Document& status, int64_t observed_generation, const std::string& now);

// POST pods/<name>/eviction with a policy/v1 (or v1beta1) Eviction body, as kube-apiserver
// answers it: a pod that is not Running (or already being deleted), or that no budget covers, is
// deleted at once; with a budget, one disruption is taken from status.disruptionsAllowed (the pod
// goes into status.disruptedPods, written with the budget's resourceVersion, redone on conflict)
// and the pod is deleted; when none is left, 429 "Cannot evict pod as it would violate the pod's
// disruption budget." with a DisruptionBudget cause naming what the budget needs. A not-Ready pod
// is evicted without taking a disruption when the budget is healthy (or its
// unhealthyPodEvictionPolicy is AlwaysAllow). Returns the Status the API answers with 201.
StoreResult<json::Document> evict_pod(Store& store, const ResourceInfo& pods, std::string_view ns,
                                      std::string_view name, const json::Value& eviction, bool dry_run);

}  // namespace unitrain::localcluster
