#include "cmd/training-operator/operator_metrics.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <stdexcept>

#include "core/metrics/process.h"

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
double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

OperatorMetrics::OperatorMetrics(OperatorMetricsOptions options) : options_(std::move(options)) {
  auto& r = registry_;
  // controller-runtime
  reconcile_total_ = must(r.counter("controller_runtime_reconcile_total",
                                    "Total number of reconciliations per controller", {"controller", "result"}));
  reconcile_errors_ = must(r.counter("controller_runtime_reconcile_errors_total",
                                     "Total number of reconciliation errors per controller", {"controller"}));
  reconcile_time_ = must(r.histogram("controller_runtime_reconcile_time_seconds",
                                     "Length of time per reconciliation per controller", {"controller"}, kube_bounds()));
  max_reconciles_ = must(r.gauge("controller_runtime_max_concurrent_reconciles",
                                 "Maximum number of concurrent reconciles per controller", {"controller"}));
  active_workers_ = must(r.gauge("controller_runtime_active_workers", "Number of currently used workers per controller",
                                 {"controller"}));
  wq_depth_ = must(r.gauge("workqueue_depth", "Current depth of workqueue", {"name"}));
  wq_adds_ = must(r.counter("workqueue_adds_total", "Total number of adds handled by workqueue", {"name"}));
  wq_retries_ = must(r.counter("workqueue_retries_total", "Total number of retries handled by workqueue", {"name"}));
  wq_queue_duration_ = must(r.histogram("workqueue_queue_duration_seconds",
                                        "How long in seconds an item stays in workqueue before being requested",
                                        {"name"}, kube_bounds()));
  wq_work_duration_ = must(r.histogram("workqueue_work_duration_seconds",
                                       "How long in seconds processing an item from workqueue takes.", {"name"},
                                       kube_bounds()));
  wq_unfinished_ = must(r.gauge("workqueue_unfinished_work_seconds",
                                "How many seconds of work has been done that is in progress and hasn't been observed "
                                "by work_duration. Large values indicate stuck threads. One can deduce the number of "
                                "stuck threads by observing the rate at which this increases.",
                                {"name"}));
  wq_longest_ = must(r.gauge("workqueue_longest_running_processor_seconds",
                             "How many seconds has the longest running processor for workqueue been running.", {"name"}));
  webhook_total_ = must(r.counter("controller_runtime_webhook_requests_total",
                                  "Total number of admission requests by HTTP status code.", {"webhook", "code"}));
  webhook_in_flight_ = must(r.gauge("controller_runtime_webhook_requests_in_flight",
                                    "Current number of admission requests being served.", {"webhook"}));
  webhook_latency_ = must(r.histogram("controller_runtime_webhook_latency_seconds",
                                      "Histogram of the latency of processing admission requests", {"webhook"},
                                      {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}));
  if (options_.lease_name)
    leader_status_ = must(r.gauge("leader_election_master_status",
                                  "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
                                  "backup, 1 indicates master. 'name' is the string used to identify the lease. "
                                  "Please make sure to group by name.",
                                  {"name"}));
  // client-go (controller-runtime's adapter and Kubernetes' component-base)
  rest_requests_ = must(r.counter("rest_client_requests_total",
                                  "Number of HTTP requests, partitioned by status code, method, and host.",
                                  {"code", "method", "host"}));
  rest_duration_ = must(r.histogram("rest_client_request_duration_seconds",
                                    "Request latency in seconds. Broken down by verb, and host.", {"verb", "host"},
                                    {0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0}));
  // training-operator
  const std::vector<std::string> job_labels{"job_namespace", "framework"};
  jobs_created_ = must(r.counter("training_operator_jobs_created_total", "Counts number of jobs created", job_labels));
  jobs_deleted_ = must(r.counter("training_operator_jobs_deleted_total", "Counts number of jobs deleted", job_labels));
  jobs_successful_ = must(r.counter("training_operator_jobs_successful_total",
                                    "Counts number of jobs successful", job_labels));
  jobs_failed_ = must(r.counter("training_operator_jobs_failed_total", "Counts number of jobs failed", job_labels));
  jobs_restarted_ = must(r.counter("training_operator_jobs_restarted_total",
                                   "Counts number of jobs restarted", job_labels));
  // Unitrain
  events_dropped_ = must(r.counter("unitrain_events_dropped_total",
                                   "Events not written to the API server, by controller and why: queue_full (the "
                                   "recorder's queue was full), spam_filter (client-go's per-object spam filter), "
                                   "write_failed",
                                   {"controller", "reason"}));
  events_written_ = must(r.counter("unitrain_events_written_total",
                                   "Event writes to the API server, by controller and operation: create (a new Event), "
                                   "patch (count and lastTimestamp of an existing one)",
                                   {"controller", "operation"}));
  job_confirmations_ = must(r.counter("unitrain_job_confirmations_total",
                                      "Reads of a job from the API server before creating children of it again (some "
                                      "vanished without a delete of the controller, or pods its status counted are "
                                      "missing), by controller and result: live, or stale (the cached job is gone, "
                                      "being deleted or replaced on the server: nothing was created)",
                                      {"controller", "result"}));
  certificate_expiry_ = must(r.gauge("unitrain_webhook_certificate_expiration_timestamp_seconds",
                                     "When the certificate the webhook server serves expires, in seconds since the Unix "
                                     "epoch"));
  if (auto s = metrics::register_process_metrics(r); !s) throw std::logic_error(s.error().message);
  registry_.add_collector([this] { collect(); });
}

void OperatorMetrics::add_controller(const controller::JobController& c, const kube::EventRecorder& recorder) {
  std::lock_guard lock(mu_);
  controllers_.push_back({&c, &recorder});
}

void OperatorMetrics::add_mpi_operator(const controller::JobController& c) {
  auto& r = registry_;
  mpi_created_ = must(r.counter("mpi_operator_jobs_created_total", "Counts number of MPI jobs created"));
  mpi_successful_ = must(r.counter("mpi_operator_jobs_successful_total", "Counts number of MPI jobs successful"));
  mpi_failed_ = must(r.counter("mpi_operator_jobs_failed_total", "Counts number of MPI jobs failed"));
  mpi_job_info_ = must(r.gauge("mpi_operator_job_info", "Information about MPIJob", {"launcher", "namespace"}));
  mpi_is_leader_ = must(r.gauge("mpi_operator_is_leader", "Is this client the leader of this mpi-operator client set?"));
  std::lock_guard lock(mu_);
  mpi_operator_ = &c;
}

void OperatorMetrics::add_webhook_paths(const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    webhook_total_->set({p, "200"}, 0);
    webhook_total_->set({p, "500"}, 0);
    webhook_in_flight_->set({p}, 0);
  }
  std::lock_guard lock(mu_);
  webhook_paths_.insert(webhook_paths_.end(), paths.begin(), paths.end());
}

void OperatorMetrics::set_webhook_certificate(
    std::function<std::optional<std::chrono::system_clock::time_point>()> not_after) {
  std::lock_guard lock(mu_);
  certificate_not_after_ = std::move(not_after);
}

bool OperatorMetrics::webhook_path_known(std::string_view path) const {
  std::lock_guard lock(mu_);
  return std::find(webhook_paths_.begin(), webhook_paths_.end(), path) != webhook_paths_.end();
}

void OperatorMetrics::observe_attempt(const kube::AttemptReport& a) {
  // client-go counts every attempt under the code it got, "<error>" when no response came.
  std::array<char, 16> digits{};
  std::string_view code = "<error>";
  if (a.status != 0) {
    const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), a.status).ptr;
    code = {digits.data(), static_cast<size_t>(end - digits.data())};
  }
  const std::array<std::string_view, 3> request_labels{code, a.method, options_.api_host};
  rest_requests_->inc(request_labels);
  const std::array<std::string_view, 2> duration_labels{a.method, options_.api_host};
  rest_duration_->observe(duration_labels, seconds(a.took));
}

void OperatorMetrics::webhook_request_started(std::string_view path) {
  if (webhook_path_known(path)) webhook_in_flight_->inc({std::string(path)});
}

void OperatorMetrics::webhook_request_finished(std::string_view path, int status, std::chrono::steady_clock::duration took) {
  if (!webhook_path_known(path)) return;
  const std::string p(path);
  webhook_in_flight_->inc({p}, -1);
  webhook_total_->inc({p, std::to_string(status)});
  webhook_latency_->observe({p}, seconds(took));
}

void OperatorMetrics::collect() {
  const bool leading = options_.leading ? options_.leading() : true;
  if (leader_status_) leader_status_->set({*options_.lease_name}, leading ? 1 : 0);
  std::lock_guard lock(mu_);
  if (certificate_not_after_) {
    if (auto end = certificate_not_after_())
      certificate_expiry_->set({}, std::chrono::duration<double>(end->time_since_epoch()).count());
  }
  for (const auto& [c, recorder] : controllers_) {
    const auto& d = c->descriptor();
    const std::string& name = d.controller_name;
    auto stats = c->reconcile_stats();
    uint64_t success = stats.total - std::min(stats.total, stats.errors + stats.requeue_after);
    reconcile_total_->set({name, "success"}, static_cast<double>(success));
    reconcile_total_->set({name, "error"}, static_cast<double>(stats.errors));
    reconcile_total_->set({name, "requeue_after"}, static_cast<double>(stats.requeue_after));
    reconcile_errors_->set({name}, static_cast<double>(stats.errors));
    reconcile_time_->load({name}, from_kube(stats.duration));
    job_confirmations_->set({name, "live"}, static_cast<double>(stats.job_confirmations - stats.stale_jobs));
    job_confirmations_->set({name, "stale"}, static_cast<double>(stats.stale_jobs));
    max_reconciles_->set({name}, c->max_concurrent_reconciles());
    active_workers_->set({name}, c->active_workers());
    auto q = c->queue_metrics();
    wq_depth_->set({name}, static_cast<double>(q.depth));
    wq_adds_->set({name}, static_cast<double>(q.adds));
    wq_retries_->set({name}, static_cast<double>(q.retries));
    wq_queue_duration_->load({name}, from_kube(q.queue_latency));
    wq_work_duration_->load({name}, from_kube(q.work_duration));
    wq_unfinished_->set({name}, q.unfinished_work_seconds);
    wq_longest_->set({name}, q.longest_running_seconds);
    for (const auto& [ns, jc] : c->counters()) {
      metrics::LabelValues l{ns, d.metrics_framework};
      jobs_created_->set(l, static_cast<double>(jc.created));
      jobs_deleted_->set(l, static_cast<double>(jc.deleted));
      jobs_successful_->set(l, static_cast<double>(jc.successful));
      jobs_failed_->set(l, static_cast<double>(jc.failed));
      jobs_restarted_->set(l, static_cast<double>(jc.restarted));
    }
    const auto events = recorder->stats();
    events_dropped_->set({name, "queue_full"}, static_cast<double>(events.dropped));
    events_dropped_->set({name, "spam_filter"}, static_cast<double>(events.spam_filtered));
    events_dropped_->set({name, "write_failed"}, static_cast<double>(events.failed));
    events_written_->set({name, "create"}, static_cast<double>(events.created));
    events_written_->set({name, "patch"}, static_cast<double>(events.patched));
  }
  if (mpi_operator_ != nullptr) {
    controller::JobCounters total;
    for (const auto& [_, jc] : mpi_operator_->counters()) {
      total.created += jc.created;
      total.successful += jc.successful;
      total.failed += jc.failed;
    }
    mpi_created_->set({}, static_cast<double>(total.created));
    mpi_successful_->set({}, static_cast<double>(total.successful));
    mpi_failed_->set({}, static_cast<double>(total.failed));
    mpi_is_leader_->set({}, leading ? 1 : 0);
    // mpi-operator sets it once the launcher Job exists, which its status then shows.
    mpi_job_info_->clear();
    for (const auto& job : mpi_operator_->managed_jobs()) {
      if (json::find(job->root(), "/status/replicaStatuses/Launcher") == nullptr) continue;
      mpi_job_info_->set({std::string(json::get_string(job->root(), "/metadata/name").value_or("")) + "-launcher",
                          std::string(json::get_string(job->root(), "/metadata/namespace").value_or(""))},
                         1);
    }
  }
}

}  // namespace unitrain::operator_cmd
