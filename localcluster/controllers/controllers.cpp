#include "localcluster/controllers/controllers.h"

namespace unitrain::localcluster::controllers {

Controllers::Controllers(Store& store, ControllersOptions options) {
  if (options.garbage_collector) gc_ = std::make_unique<GarbageCollector>(store);
  if (options.job_controller) jobs_ = std::make_unique<JobController>(store);
  if (options.workload_controller) workloads_ = std::make_unique<WorkloadController>(store);
  if (options.volume_controller) volumes_ = std::make_unique<VolumeController>(store);
  if (options.quota_controller) quotas_ = std::make_unique<QuotaController>(store);
  if (options.disruption_controller) disruptions_ = std::make_unique<DisruptionController>(store);
  if (options.scheduler) scheduler_ = std::make_unique<Scheduler>(store, std::move(options.scheduler_options));
  if (options.kubelet) kubelet_ = std::make_unique<Kubelet>(store, std::move(options.kubelet_options));
}

Controllers::~Controllers() {
  kubelet_.reset();
  scheduler_.reset();
  workloads_.reset();
  volumes_.reset();
  quotas_.reset();
  disruptions_.reset();
  jobs_.reset();
  gc_.reset();
}

}  // namespace unitrain::localcluster::controllers
