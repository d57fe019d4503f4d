// The apps/v1 controllers of the local cluster, on one event loop: they share the pod cache and
// the way a pod is made from a template.
//
//   ReplicaSet   keeps spec.replicas active pods (generateName "<rs>-"), deleting the surplus
//                not-ready and newest first; status replicas/readyReplicas/availableReplicas, a
//                pod counting as available once Ready for spec.minReadySeconds.
//   Deployment   one ReplicaSet per pod template ("<deployment>-<pod-template-hash>"), found
//                again by template (a `kubectl rollout undo` reuses the old ReplicaSet, whose
//                deployment.kubernetes.io/revision moves past the others and whose old number
//                joins revision-history); the Deployment's annotations (kubernetes.io/change-cause)
//                and minReadySeconds copied to it. RollingUpdate by maxSurge/maxUnavailable
//                (25%/25% by default) or Recreate; status and the Available/Progressing
//                conditions with kube-controller-manager's reasons (NewReplicaSetCreated,
//                FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable,
//                DeploymentPaused/Resumed, ProgressDeadlineExceeded after progressDeadlineSeconds
//                without progress).
//   StatefulSet  pods "<sts>-<ordinal>" with hostname/subdomain, PersistentVolumeClaims
//                "<template>-<sts>-<ordinal>" from volumeClaimTemplates, OrderedReady (one at a
//                time, each waiting for the lower ordinals to be Ready) or Parallel; scale-down from
//                the highest ordinal; RollingUpdate from the highest ordinal down to the
//                partition; current/update revisions are ControllerRevisions "<sts>-<hash>".
//   DaemonSet    one pod per node that matches spec.template.spec.nodeSelector, bound to it
//                directly; failed pods and pods of an older template replaced one at a time once
//                the others are available; a ControllerRevision "<ds>-<hash>" per template.
// ControllerRevisions hold the template as the strategic merge patch `kubectl rollout undo`
// applies; a template seen before reuses its revision with the next number; spec.
// revisionHistoryLimit bounds the unused ones. StatefulSet and DaemonSet availability waits
// minReadySeconds too.
#pragma once

#include <memory>
#include <string>

#include "core/json/json.h"
#include "localcluster/store.h"

namespace unitrain::localcluster::controllers {

// Kubernetes' pod-template-hash: FNV-1a (32 bit) of the template, as a short DNS-safe string.
std::string pod_template_hash(const json::Value& pod_template);

// A rolling-update bound (an int, or "N%" of `total`), rounded up or down as Kubernetes does for
// maxSurge (up) and maxUnavailable (down). `fallback` when the value is missing or malformed.
int64_t resolve_int_or_percent(const json::Value* value, int64_t total, bool round_up, int64_t fallback);

class WorkloadController {
 public:
  explicit WorkloadController(Store& store);
  ~WorkloadController();
  WorkloadController(const WorkloadController&) = delete;
  WorkloadController& operator=(const WorkloadController&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace unitrain::localcluster::controllers
