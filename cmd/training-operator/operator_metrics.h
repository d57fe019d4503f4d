// The operator's /metrics families (controller-runtime, workqueue, client, leader election and
// training_operator_* names), filled from the controllers' own counters at scrape time.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cmd/training-operator/counting_client.h"
#include "core/controller/job_controller.h"
#include "core/metrics/metrics.h"

namespace unitrain::operator_cmd {

class OperatorMetrics {
 public:
  // `leading` reads the leader-election state (always true without election);
  // rest_client_requests_total sums the requests of every client.
  OperatorMetrics(std::vector<const CountingClient*> clients, std::string lease_name, std::function<bool()> leading);

  // Controllers join once they start (after leadership is acquired).
  void add_controller(const controller::JobController& c);
  std::string expose() const { return registry_.expose(); }

 private:
  void collect();

  std::vector<const CountingClient*> clients_;
  std::string lease_name_;
  std::function<bool()> leading_;
  metrics::Registry registry_;
  mutable std::mutex mu_;
  std::vector<const controller::JobController*> controllers_;
  metrics::Family *reconcile_total_{}, *reconcile_errors_{}, *reconcile_time_{};
  metrics::Family *wq_depth_{}, *wq_adds_{}, *wq_retries_{}, *wq_queue_duration_{}, *wq_work_duration_{};
  metrics::Family *rest_requests_{}, *leader_status_{};
  metrics::Family *jobs_created_{}, *jobs_deleted_{}, *jobs_successful_{}, *jobs_failed_{}, *jobs_restarted_{};
};

}  // namespace unitrain::operator_cmd
