// All in-process controllers of the local cluster as one RAII object, for the server and the
// `localcluster` binary to start next to a Store (and tests that want the whole set).
#pragma once

#include <memory>

#include "localcluster/controllers/disruption_controller.h"
#include "localcluster/controllers/garbage_collector.h"
#include "localcluster/controllers/job_controller.h"
#include "localcluster/controllers/kubelet.h"
#include "localcluster/controllers/quota_controller.h"
#include "localcluster/controllers/scheduler.h"
#include "localcluster/controllers/volume_controller.h"
#include "localcluster/controllers/workload_controller.h"
#include "localcluster/store.h"

namespace unitrain::localcluster::controllers {

struct ControllersOptions {
  bool garbage_collector = true;
  bool job_controller = true;
  bool workload_controller = true;  // Deployments, ReplicaSets, StatefulSets, DaemonSets
  bool volume_controller = true;    // default StorageClass, PersistentVolumeClaims bound at once
  bool quota_controller = true;     // ResourceQuota status
  bool disruption_controller = true;  // PodDisruptionBudget status
  bool scheduler = true;
  bool kubelet = true;
  KubeletOptions kubelet_options;
  SchedulerOptions scheduler_options;
};

class Controllers {
 public:
  Controllers(Store& store, ControllersOptions options);
  ~Controllers();  // stops the kubelet first, so no pod moves while the others stop
  Controllers(const Controllers&) = delete;
  Controllers& operator=(const Controllers&) = delete;

 private:
  std::unique_ptr<GarbageCollector> gc_;
  std::unique_ptr<JobController> jobs_;
  std::unique_ptr<WorkloadController> workloads_;
  std::unique_ptr<VolumeController> volumes_;
  std::unique_ptr<QuotaController> quotas_;
  std::unique_ptr<DisruptionController> disruptions_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Kubelet> kubelet_;
};

}  // namespace unitrain::localcluster::controllers
