// A simulated kubelet for the local cluster: registers N nodes and moves the pods bound to them
// through their phases as pod annotations ask, so operator tests see pods start, run, restart
// and finish without containers.
//
// Pod annotations (all optional):
//   sim.unitrain.io/duration        how long each container run lasts (Go duration, default "1s";
//                                   with restartPolicy Always and no duration the containers run
//                                   until the pod is deleted, as a server's do)
//   sim.unitrain.io/exit-code       exit code of a run (default 0)
//   sim.unitrain.io/fail-times      the first N runs of this namespace/name exit with
//   sim.unitrain.io/fail-exit-code  (default 1); the count survives re-creation of the pod under the
//                                   same name (in memory, for the kubelet's lifetime); pods
//                                   made from a generateName (a Job's) share the count of
//                                   namespace/generateName, so a Job's replacement pods see
//                                   the failures of the ones before
//   sim.unitrain.io/ready-after     delay between container start and Ready=True
//   sim.unitrain.io/start-delay     how long the containers stay ContainerCreating (image pull)
//   sim.unitrain.io/log             lines every container prints when it starts (`kubectl logs`)
// All containers of a pod run with the same behaviour; init containers succeed at once.
//
// Status as a kubelet writes it: phase Pending with the containers waiting (ContainerCreating)
// until they start, then Running; terminated containers with reason Completed or Error. A
// container that exits under restartPolicy Always or OnFailure restarts in place after a back-off
// of restart_backoff doubling per restart up to restart_backoff_max (Kubernetes: 10 s to 5 min);
// meanwhile it waits with reason CrashLoopBackOff. Events: Pulling, Pulled, Created, Started,
// Killing and BackOff, from "kubelet" on the pod's node.
//
// Graceful deletion: a bound pod with deletionTimestamp is stopped after
// min(deletionGracePeriodSeconds, max_termination_grace) — the cap keeps tests fast — its
// containers end with exit code 143 (SIGTERM), then it is removed with grace period 0.
// Node failure: when a node's Ready condition stops being True (e.g. a test patches node
// status), after node_lost_grace its non-terminal pods become phase Failed with reason NodeLost
// (a terminal phase, so controllers replace them; Kubernetes' eviction also ends them).
// Manual mode changes no pod phases; it still completes graceful deletions so deletes finish.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "localcluster/container_log.h"
#include "localcluster/store.h"

namespace unitrain::localcluster::controllers {

struct KubeletOptions {
  int nodes = 3;
  std::string node_prefix = "node-";  // node-0, node-1, ...
  std::string cpu = "32";
  std::string memory = "128Gi";
  std::string gpu = "8";  // nvidia.com/gpu; "0" leaves the resource out
  std::string pods = "110";
  bool manual = false;
  std::chrono::milliseconds node_lost_grace{5000};
  std::chrono::milliseconds max_termination_grace{1000};
  // Kubernetes' container restart back-off; tests set it to zero (restarts at once).
  std::chrono::milliseconds restart_backoff{10000};
  std::chrono::milliseconds restart_backoff_max{300000};
  ContainerLogSink log;
};

class Kubelet {
 public:
  // Registers the nodes (existing ones are kept) and starts the kubelet thread.
  Kubelet(Store& store, KubeletOptions options);
  ~Kubelet();
  Kubelet(const Kubelet&) = delete;
  Kubelet& operator=(const Kubelet&) = delete;

  std::string node_name(int index) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace unitrain::localcluster::controllers
