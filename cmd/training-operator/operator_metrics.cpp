#include "cmd/training-operator/operator_metrics.h"

#include <map>
#include <stdexcept>

namespace unitrain::operator_cmd {

namespace {
std::vector<double> kube_bounds() {
  return {kube::Histogram::kBounds.begin(), kube::Histogram::kBounds.end()};
}
metrics::HistogramData from_kube(const kube::Histogram& h) {
  return {{h.buckets.begin(), h.buckets.end()}, h.count, h.sum_seconds};
}
// Registration of fixed, valid names cannot fail; a failure is a programming error found by the
// e2e metrics test, so it ends the process at startup rather than being carried around.
metrics::Family* must(Result<metrics::Family*> r) {
  if (!r) throw std::logic_error(r.error().message);
  return *r;
}
}  // namespace

OperatorMetrics::OperatorMetrics(std::vector<const CountingClient*> clients, std::string lease_name,
                                 std::function<bool()> leading)
    : clients_(std::move(clients)), lease_name_(std::move(lease_name)), leading_(std::move(leading)) {
  auto& r = registry_;
  reconcile_total_ = must(r.counter("controller_runtime_reconcile_total",
                                    "Total number of reconciliations per controller", {"controller", "result"}));
  reconcile_errors_ = must(r.counter("controller_runtime_reconcile_errors_total",
                                     "Total number of reconciliation errors per controller", {"controller"}));
  reconcile_time_ = must(r.histogram("controller_runtime_reconcile_time_seconds",
                                     "Length of time per reconciliation per controller", {"controller"}, kube_bounds()));
  wq_depth_ = must(r.gauge("workqueue_depth", "Current depth of workqueue", {"name"}));
  wq_adds_ = must(r.counter("workqueue_adds_total", "Total number of adds handled by workqueue", {"name"}));
  wq_retries_ = must(r.counter("workqueue_retries_total", "Total number of retries handled by workqueue", {"name"}));
  wq_queue_duration_ = must(r.histogram("workqueue_queue_duration_seconds",
                                        "How long in seconds an item stays in workqueue before being requested",
                                        {"name"}, kube_bounds()));
  wq_work_duration_ = must(r.histogram("workqueue_work_duration_seconds",
                                       "How long in seconds processing an item from workqueue takes", {"name"},
                                       kube_bounds()));
  rest_requests_ = must(r.counter("rest_client_requests_total",
                                  "Number of HTTP requests, partitioned by status code and method", {"code", "method"}));
  leader_status_ = must(r.gauge("leader_election_master_status",
                                "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
                                "backup, 1 indicates master",
                                {"name"}));
  const std::vector<std::string> job_labels{"job_namespace", "framework"};
  jobs_created_ = must(r.counter("training_operator_jobs_created_total", "Counts number of jobs created", job_labels));
  jobs_deleted_ = must(r.counter("training_operator_jobs_deleted_total", "Counts number of jobs deleted", job_labels));
  jobs_successful_ = must(r.counter("training_operator_jobs_successful_total",
                                    "Counts number of jobs successful", job_labels));
  jobs_failed_ = must(r.counter("training_operator_jobs_failed_total", "Counts number of jobs failed", job_labels));
  jobs_restarted_ = must(r.counter("training_operator_jobs_restarted_total",
                                   "Counts number of jobs restarted", job_labels));
  registry_.add_collector([this] { collect(); });
}

void OperatorMetrics::add_controller(const controller::JobController& c) {
  std::lock_guard lock(mu_);
  controllers_.push_back(&c);
}

void OperatorMetrics::collect() {
  std::map<std::pair<std::string, std::string>, uint64_t> requests;
  for (const auto* client : clients_)
    for (const auto& [key, n] : client->counts()) requests[key] += n;
  for (const auto& [key, n] : requests) rest_requests_->set({key.first, key.second}, static_cast<double>(n));
  leader_status_->set({lease_name_}, leading_() ? 1 : 0);
  std::lock_guard lock(mu_);
  for (const auto* c : controllers_) {
    const auto& d = c->descriptor();
    const std::string& name = d.controller_name;
    auto stats = c->reconcile_stats();
    uint64_t success = stats.total - std::min(stats.total, stats.errors + stats.requeue_after);
    reconcile_total_->set({name, "success"}, static_cast<double>(success));
    reconcile_total_->set({name, "error"}, static_cast<double>(stats.errors));
    reconcile_total_->set({name, "requeue_after"}, static_cast<double>(stats.requeue_after));
    reconcile_errors_->set({name}, static_cast<double>(stats.errors));
    reconcile_time_->load({name}, from_kube(stats.duration));
    auto q = c->queue_metrics();
    wq_depth_->set({name}, static_cast<double>(q.depth));
    wq_adds_->set({name}, static_cast<double>(q.adds));
    wq_retries_->set({name}, static_cast<double>(q.retries));
    wq_queue_duration_->load({name}, from_kube(q.queue_latency));
    wq_work_duration_->load({name}, from_kube(q.work_duration));
    for (const auto& [ns, jc] : c->counters()) {
      metrics::LabelValues l{ns, d.metrics_framework};
      jobs_created_->set(l, static_cast<double>(jc.created));
      jobs_deleted_->set(l, static_cast<double>(jc.deleted));
      jobs_successful_->set(l, static_cast<double>(jc.successful));
      jobs_failed_->set(l, static_cast<double>(jc.failed));
      jobs_restarted_->set(l, static_cast<double>(jc.restarted));
    }
  }
}

}  // namespace unitrain::operator_cmd
