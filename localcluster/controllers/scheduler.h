// The local cluster's scheduler: binds pending pods to the simulated nodes by resource requests
// (cpu, memory, nvidia.com/gpu, pod count against allocatable minus what bound, non-terminal
// pods request) and gates PodGroup members all-or-nothing.
//
// Served schedulerNames: "default-scheduler" (and empty) always; "volcano" while the Volcano
// PodGroup CRD (podgroups.scheduling.volcano.sh) is served; the scheduler-plugins name while
// podgroups.scheduling.x-k8s.io is served. Gang membership follows the serving scheduler:
// a "volcano" pod joins the PodGroup named by its annotation scheduling.k8s.io/group-name, a
// scheduler-plugins pod the one named by its label scheduling.x-k8s.io/pod-group.
//
// A group's pending pods bind only when, together with its already bound pods, at least
// minMember fit at once; otherwise none bind and all get PodScheduled=False/Unschedulable.
// Volcano groups additionally wait in phase Pending until their minResources fit the cluster's
// free capacity (then Inqueue), and report Running once minMember pods run or have succeeded.
// scheduler-plugins groups report Pending (fewer than minMember pods exist) → Scheduling →
// Scheduled (minMember bound) → Running (minMember running or succeeded) → Finished
// (minMember succeeded) / Failed (a pod failed and minMember can no longer run).
//
// Binding is a merge patch of spec.nodeName plus a PodScheduled=True status condition (the
// in-process form of pods/binding). Scheduling passes run after each batch of watch events and
// cost what changed, not the cluster (scheduler_accounting.h): node usage and gang counts are
// kept from events; a pass tries new pending pods and the pending members of their gang groups;
// a pod left unbound waits (its PodScheduled=False message that of its last try) until a bound
// pod ends or leaves, a node changes what it offers, or its group changes: as kube-scheduler's
// unschedulable queue, nothing else could make it fit.
#pragma once

#include <memory>
#include <string>

#include "localcluster/store.h"

namespace unitrain::localcluster::controllers {

struct SchedulerOptions {
  std::string scheduler_plugins_name = "scheduler-plugins-scheduler";
};

class Scheduler {
 public:
  Scheduler(Store& store, SchedulerOptions options = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace unitrain::localcluster::controllers
