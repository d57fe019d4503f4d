// Leader election on a coordination.k8s.io/v1 Lease, with client-go's leaderelection semantics:
//  - a candidate takes the lease when it does not exist, has no holder (released), or its record
//    has not changed for lease_duration as observed on the candidate's own monotonic clock (so
//    wall-clock skew between machines does not matter, only their rates);
//  - the leader renews every retry_period; if it cannot renew within renew_deadline it stops
//    leading, before any other candidate may consider the lease expired (renew_deadline <
//    lease_duration), so two leaders never overlap when clocks run at the same rate;
//  - every write is optimistic (resourceVersion): a 409 is a lost race, tried again next period;
//  - a takeover increments leaseTransitions; acquireTime/renewTime are MicroTime;
//  - stop() while leading releases the lease (empty holder, 1 s duration) when
//    release_on_cancel is set, so a successor takes over at its next retry.
// After losing the lease the elector does not campaign again (like client-go's RunOrDie): the
// caller stops its controllers and exits, and a restarted process becomes a candidate anew.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/base/passkey.h"
#include "core/base/result.h"
#include "core/kube/client.h"
#include "core/kube/clock.h"

namespace unitrain::kube {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per process, e.g. "<hostname>_<uuid>"
  Clock::Duration lease_duration = std::chrono::seconds(15);
  Clock::Duration renew_deadline = std::chrono::seconds(10);
  Clock::Duration retry_period = std::chrono::seconds(2);
  // A candidate waits retry_period * (1 + random[0, jitter)) between attempts (client-go: 1.2).
  double jitter = 1.2;
  bool release_on_cancel = true;
  uint64_t seed = 0;  // jitter randomness; 0: from std::random_device

  // Called on the elector's thread; they must return promptly (start/stop work elsewhere).
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string& identity)> on_new_leader;
};

class LeaderElector {
 public:
  // Checks the configuration: names set, renew_deadline < lease_duration, retry_period *
  // (1 + jitter) <= renew_deadline... as client-go does (errors name the field).
  static Result<std::unique_ptr<LeaderElector>> create(Client& client, Clock& clock, LeaderElectionConfig config);
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;
  ~LeaderElector();  // stop()

  void start();
  // Ends the campaign; a leader releases the lease (if configured) and gets on_stopped_leading.
  void stop();

  bool is_leader() const { return leading_.load(); }
  // The holder last observed in the lease ("" when none).
  std::string observed_leader() const;
  // Acquire/renew attempts made so far (lets tests step the fake clock in lock-step).
  uint64_t attempts() const { return attempts_.load(); }
  // True once the thread has finished (stopped or lost the lease).
  bool finished() const { return finished_.load(); }

  // Only create() can make the key; public so std::make_unique can call it.
  LeaderElector(PassKey<LeaderElector>, Client& client, Clock& clock, LeaderElectionConfig config);

 private:
  void run();
  bool try_acquire_or_renew();
  void release();
  // Waits until `deadline` or stop(); false when stopping.
  bool wait_until(Clock::SteadyTime deadline);

  Client& client_;
  Clock& clock_;
  LeaderElectionConfig cfg_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool started_ = false;
  std::thread thread_;
  std::atomic<bool> leading_{false};
  std::atomic<bool> finished_{false};
  std::atomic<uint64_t> attempts_{0};

  // Last observed lease record and when (on our monotonic clock) it last changed.
  std::string observed_holder_;
  std::string observed_record_;  // canonical spec, to detect any change
  Clock::SteadyTime observed_time_{};
  std::string reported_leader_;
  bool have_observation_ = false;
};

}  // namespace unitrain::kube
