// The job controller: one instance per enabled framework, running the core reconcile pipeline
// (reconcile_pass.h, docs/framework-authors.md) with the framework's hooks. It reads only from the
// informer caches (child_caches.h: shared by every controller of the process), writes through the
// client, and guards every create/delete with expectations.
//
// Which changes to a job's children trigger a reconcile, and which go first (a child that
// finished: the job's status is about to change), follows the reference operators (react() in
// child_caches.h).
//
// Threading: informer threads enqueue keys; `workers` threads take keys from the work queue (a
// key is never reconciled by two workers at once) and call reconcile().
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/base/result.h"
#include "core/controller/child_caches.h"
#include "core/controller/expectations.h"
#include "core/framework/plugin.h"
#include "core/gang/gang.h"
#include "core/kube/client.h"
#include "core/kube/clock.h"
#include "core/kube/informer.h"
#include "core/kube/workqueue.h"
#include "core/log/log.h"
#include "core/log/throttle.h"

namespace unitrain::controller {

// Where the controller reports Kubernetes events. The operator wires core/kube's EventRecorder;
// tests record them.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void event(const json::Value& involved_object, std::string_view type, std::string_view reason,
                     std::string message) = 0;
};

// training_operator_jobs_{created,deleted,successful,failed,restarted}_total, by namespace.
struct JobCounters {
  uint64_t created = 0, deleted = 0, successful = 0, failed = 0, restarted = 0;
};

struct JobControllerOptions {
  std::vector<std::string> namespaces;  // empty: all
  int workers = 1;
  int max_parallel_writes = 8;         // pod/service deletes in flight at once per controller (creates are pipelined)
  // How long a queued job waits before its pass, so that changes arriving together (its pods
  // starting, its children's creates being seen) make one pass and one status write.
  std::chrono::milliseconds settle{100};
  std::shared_ptr<const gang::Backend> gang;  // null: no gang scheduling
  // Overrides descriptor.owns_unset_managed_by: where two modules serve one kind, only the one
  // the operator names (framework::Registry::owns_unset_managed_by) takes jobs without managedBy.
  std::optional<bool> owns_unset_managed_by;
  // Another module can serve this kind: a job without managedBy that this module takes gets
  // the owner annotation (framework/ownership.h) at its first pass, and a job whose annotation
  // names another module is left alone, whatever owns_unset_managed_by says.
  bool pin_owner = false;
};

// Whether a controller of `descriptor` takes `job`: its spec.runPolicy.managedBy names the
// module, or is unset and the controller takes such jobs.
bool manages_job(const framework::FrameworkDescriptor& descriptor, bool owns_unset_managed_by, const json::Value& job);

class WritePool;

struct ReconcileResult {
  std::optional<kube::ApiError> error;          // requeued with backoff
  std::optional<kube::Clock::Duration> requeue_after;  // a deadline or TTL to act on
  // The job's resourceVersion after the pass's own status write, when a pass over exactly that
  // version with the same children would change nothing: the write's echo from the jobs
  // informer then queues no pass (a change of the children queues its own).
  std::optional<std::string> settled_version = std::nullopt;
};

class JobController final : public ChildEventSink {
 public:
  // On the process's shared caches (not started yet; the operator starts them once every
  // controller is attached). options.namespaces must be the caches' scope.
  JobController(kube::Client& client, kube::Clock& clock, EventSink& events,
                std::unique_ptr<framework::FrameworkPlugin> plugin, JobControllerOptions options, SharedCaches& caches);
  // On caches of its own (a controller alone: tests, tools), started by start_caches().
  JobController(kube::Client& client, kube::Clock& clock, EventSink& events,
                std::unique_ptr<framework::FrameworkPlugin> plugin, JobControllerOptions options);
  JobController(const JobController&) = delete;
  JobController& operator=(const JobController&) = delete;
  ~JobController();

  const framework::FrameworkDescriptor& descriptor() const { return plugin_->descriptor(); }

  // Caches of its own only (shared ones are the operator's to start): a leader-election follower
  // keeps warm, synced caches (and reports ready) without reconciling, so a takeover acts on a
  // complete view at once. Keys queue up meanwhile.
  void start_caches();
  void start();  // start_caches(), then workers
  void stop();   // workers end the pass in hand and take no more keys; joins them, stops caches of its own
  // The informers this controller reads have listed once.
  bool wait_for_sync(std::chrono::milliseconds timeout) const;

  void child_event(const ChildEvent& event) override;

  // One pass for "namespace/name" on the calling thread.
  ReconcileResult reconcile(const std::string& key);

  std::map<std::string, JobCounters> counters() const;  // by namespace
  // The cached jobs this controller manages (spec.runPolicy.managedBy names it, or is unset and
  // it takes such jobs).
  std::vector<kube::ObjectPtr> managed_jobs() const;
  bool manages(const json::Value& job) const;
  // Workers inside a reconcile now, and how many there are.
  int active_workers() const { return active_workers_.load(); }
  int max_concurrent_reconciles() const { return std::max(1, options_.workers); }
  kube::WorkQueueMetrics queue_metrics() const { return queue_.metrics(); }
  struct ReconcileStats {
    uint64_t total = 0, errors = 0, requeue_after = 0;
    kube::Histogram duration;
    // Reads of a job from the server before creating its children again (confirm_job_live),
    // and how many of them found the cached job gone, being deleted or replaced.
    uint64_t job_confirmations = 0, stale_jobs = 0;
    // Updates of a job that were the echo of a settled pass's status write (no pass queued).
    uint64_t settled_echoes = 0;
  };
  ReconcileStats reconcile_stats() const;

 private:
  // Both public constructors: on `caches`, or on caches of its own when it is null.
  JobController(kube::Client& client, kube::Clock& clock, EventSink& events,
                std::unique_ptr<framework::FrameworkPlugin> plugin, JobControllerOptions options, SharedCaches* caches);
  void init(SharedCaches& caches);
  // A pod or replica Service the job created or deleted was seen: lowers its expectation. True
  // when the change was one of ours (an expectation was outstanding).
  bool observe_child(const ChildEvent& event);
  // A child of the job was deleted, not by this controller: the job's next pass confirms it on
  // the server before creating children (Expectations::children_vanished).
  void note_vanished(const ChildEvent& event);
  // The job the event names is cached under that name and uid.
  bool job_cached(const ChildEvent& event) const;
  void worker_loop();
  void count(const std::string& ns, uint64_t JobCounters::*counter);
  // A pass read `key` from the server before creating children again; `stale`: why it created none.
  void job_confirmed(const std::string& key, const std::optional<std::string>& stale);
  // The jobs informer updated `key` to `resource_version`: true when that needs no queue_.add
  // now: a pass over the job is running (the update is weighed when it ends: pass_ended), or the
  // update is the echo of the status write of the job's last pass, which was settled
  // (ReconcileResult::settled_version).
  bool job_update_held(const std::string& key, std::string_view resource_version);
  void pass_started(const std::string& key);
  // Queues the job again if an update that came during the pass was not its own settled write.
  void pass_ended(const std::string& key, const ReconcileResult& result);
  // The reconcile error of `key`, once per cause and interval (the API faults behind most are
  // logged by the client's FaultLog with their cause already).
  void log_reconcile_error(const std::string& key, const kube::ApiError& error);

  kube::Client& client_;
  kube::Clock& clock_;
  EventSink& events_;
  std::unique_ptr<framework::FrameworkPlugin> plugin_;
  framework::PipelineBehaviour behaviour_;
  JobControllerOptions options_;
  Expectations expectations_;
  kube::WorkQueue queue_;

  std::unique_ptr<SharedCaches> own_caches_;  // null on the process's shared caches
  std::unique_ptr<ChildCaches> children_;
  // Fixed threads that carry out a job's pod/service deletes in parallel; shared by all workers,
  // so max_parallel_writes bounds deletes in flight per controller. Creates need no threads: a
  // pass sends them as pipelined exchanges (Client::create_all) itself.
  std::unique_ptr<WritePool> write_pool_;
  std::vector<std::thread> workers_;
  std::atomic<int> active_workers_{0};
  log::Logger log_;  // controller, framework
  log::Throttle error_log_{std::chrono::seconds(30)};
  std::atomic<bool> caches_started_{false};
  std::atomic<bool> workers_started_{false};
  // Per job with a pass running, or whose last pass was settled and its echo not seen yet.
  struct JobEcho {
    bool passing = false;               // a pass over the job is running
    std::vector<std::string> updates;   // versions the jobs informer delivered meanwhile
    std::string settled;                // the settled pass's write, until its echo
  };
  std::mutex echoes_mu_;
  std::map<std::string, JobEcho, std::less<>> echoes_;
  mutable std::mutex stats_mu_;
  std::map<std::string, JobCounters> counters_;
  ReconcileStats stats_;
};

}  // namespace unitrain::controller
