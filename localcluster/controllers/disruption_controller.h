// PodDisruptionBudget status as kube-controller-manager's disruption controller keeps it, which
// the eviction subresource (disruption.h) reads: the pods the budget selects, expectedPods and
// desiredHealthy (minAvailable as a number: that many of the selected pods; a percentage, or
// maxUnavailable: of the replicas their controllers want, Deployments through their ReplicaSets
// and StatefulSets), currentHealthy (Ready pods not being deleted and not in disruptedPods),
// disruptionsAllowed, the DisruptionAllowed condition and observedGeneration. Entries of
// disruptedPods (written by evictions) leave when their pod goes or after two minutes. A pod
// whose controller has no replica count (or is gone) makes the sync fail as upstream does:
// disruptionsAllowed 0 and DisruptionAllowed False with reason SyncFailed.
#pragma once

#include <memory>

#include "localcluster/store.h"

namespace unitrain::localcluster::controllers {

class DisruptionController {
 public:
  explicit DisruptionController(Store& store);
  ~DisruptionController();
  DisruptionController(const DisruptionController&) = delete;
  DisruptionController& operator=(const DisruptionController&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace unitrain::localcluster::controllers
