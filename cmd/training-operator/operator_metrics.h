// The operator's /metrics: the families a Kubeflow cluster already scrapes, under their upstream
// names, types and labels (docs/operator.md lists them and where each comes from):
// controller-runtime's (reconciles, workers, work queues, webhooks, leader election) and its
// process collector, client-go's REST client metrics, training-operator's job counters, and
// with the MPIJob v2beta1 module mpi-operator's; plus Unitrain's own (events dropped, the webhook
// certificate's expiry). Counters kept elsewhere are copied in at scrape time.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/controller/job_controller.h"
#include "core/kube/event_recorder.h"
#include "core/kube/rest_client.h"
#include "core/metrics/metrics.h"

namespace unitrain::operator_cmd {

struct OperatorMetricsOptions {
  // The Lease's name with --leader-elect (leader_election_master_status); nullopt without
  // election, where controller-runtime does not export it.
  std::optional<std::string> lease_name;
  std::function<bool()> leading;  // true without election
  std::string api_host;           // "host:port": the host label of the REST client metrics
};

class OperatorMetrics {
 public:
  explicit OperatorMetrics(OperatorMetricsOptions options);

  // Registration, before serving.
  void add_controller(const controller::JobController& c, const kube::EventRecorder& recorder);
  // mpi-operator's families, counted from the controller of MPIJob v2beta1 (one call at most).
  void add_mpi_operator(const controller::JobController& c);
  // The admission and conversion paths the webhook server answers on (their 200 and 500 series
  // start at 0, as controller-runtime's do).
  void add_webhook_paths(const std::vector<std::string>& paths);
  void set_webhook_certificate(std::function<std::optional<std::chrono::system_clock::time_point>()> not_after);

  // From the clients and the webhook server, on their threads.
  void observe_attempt(const kube::AttemptReport& attempt);
  void webhook_request_started(std::string_view path);
  void webhook_request_finished(std::string_view path, int status, std::chrono::steady_clock::duration took);

  std::string expose() const { return registry_.expose(); }

 private:
  void collect();
  bool webhook_path_known(std::string_view path) const;

  OperatorMetricsOptions options_;
  metrics::Registry registry_;
  mutable std::mutex mu_;
  struct Controller {
    const controller::JobController* controller;
    const kube::EventRecorder* recorder;
  };
  std::vector<Controller> controllers_;
  const controller::JobController* mpi_operator_ = nullptr;
  std::vector<std::string> webhook_paths_;
  std::function<std::optional<std::chrono::system_clock::time_point>()> certificate_not_after_;

  metrics::Family *reconcile_total_{}, *reconcile_errors_{}, *reconcile_time_{}, *active_workers_{}, *max_reconciles_{};
  metrics::Family *wq_depth_{}, *wq_adds_{}, *wq_retries_{}, *wq_queue_duration_{}, *wq_work_duration_{};
  metrics::Family *wq_unfinished_{}, *wq_longest_{};
  metrics::Family *rest_requests_{}, *rest_duration_{}, *leader_status_{};
  metrics::Family *webhook_total_{}, *webhook_in_flight_{}, *webhook_latency_{}, *certificate_expiry_{};
  metrics::Family *jobs_created_{}, *jobs_deleted_{}, *jobs_successful_{}, *jobs_failed_{}, *jobs_restarted_{};
  metrics::Family *events_dropped_{}, *events_written_{}, *job_confirmations_{};
  metrics::Family *mpi_created_{}, *mpi_successful_{}, *mpi_failed_{}, *mpi_job_info_{}, *mpi_is_leader_{};
};

}  // namespace unitrain::operator_cmd
