// What kube-apiserver's LimitRanger and ResourceQuota admission plugins do to a pod being
// created, as pure functions over the namespace's objects. The store calls them for every pod
// create, so pods made by the in-process controllers are admitted as well (a ReplicaSet's pod
// over quota is refused, as kube-apiserver refuses the ReplicaSet controller).
//
// LimitRanger: for each LimitRange item of type Container, containers without a limit get
// `default`, without a request `defaultRequest` (else the default limit), and the pod is annotated
// `kubernetes.io/limit-ranger` with what was set. Then `min`, `max` and `maxLimitRequestRatio` of
// the Container items (each container and init container) and Pod items (the pod's totals) are
// checked, and of PersistentVolumeClaim items (min/max of the storage request) on claim creates.
//
// ResourceQuota: `pods`/`count/pods`, `cpu`/`requests.cpu`, `memory`/`requests.memory`,
// `limits.cpu`, `limits.memory` in spec.hard, against the namespace's non-terminal pods.
// Requests count as kube-apiserver counts them: the sum over containers, or the largest init
// container when that is larger.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json/json.h"

namespace unitrain::localcluster {

void apply_limit_ranges(json::Document& pod, const std::vector<const json::Value*>& limit_ranges);

// What LimitRanger refuses in a (defaulted) pod or a claim, worded as kube-apiserver words it
// ("minimum cpu usage per Container is 100m, but request is 50m"; several in "[a, b]"), or nullopt.
std::optional<std::string> limit_range_refusal(const json::Value& pod, const std::vector<const json::Value*>& limit_ranges);
std::optional<std::string> limit_range_claim_refusal(const json::Value& claim,
                                                     const std::vector<const json::Value*>& limit_ranges);

// The reason a quota refuses the pod ("exceeded quota: q, requested: pods=1, used: pods=2,
// limited: pods=2" or "failed quota: q: must specify limits.cpu for: main"), or nullopt.
std::optional<std::string> quota_refusal(const json::Value& pod, const std::vector<const json::Value*>& quotas,
                                         const std::vector<const json::Value*>& namespace_pods);

// What the namespace's pods use of each resource a quota lists (its status.used).
json::Document quota_usage(const json::Value& quota, const std::vector<const json::Value*>& namespace_pods);

}  // namespace unitrain::localcluster
