// The lifecycle of a controller process, after controller-runtime's Manager: every long-running
// part (HTTP endpoints, webhook server, informer caches, event recorders, leader election,
// controller workers) is a Runnable registered in start order, each marked with whether it needs
// leadership. run() starts the parts every replica runs, then, once this replica leads (at once
// without an election), the leader's; it waits — on a condition variable, woken by a stop request
// or leadership news — and then stops everything it started in reverse order, within a bounded
// drain. Readiness and health checks are aggregated here for /readyz and /healthz.
//
// Why reverse order: a leader's workers stop (and drain their queues) while the caches, the lease
// and the API clients they use still work; the lease is released only after the workers stopped,
// so a successor never overlaps with them; the probe endpoints go last so they can say "stopping".
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/base/result.h"

namespace unitrain::manager {

// A long-running part of the process. Its work runs on its own threads; the manager only brings
// it up and down, each once.
class Runnable {
 public:
  virtual ~Runnable() = default;
  // Brings the part up and returns once it runs. A start that waits for something (certificates,
  // an API server) gives up when `stopping` is requested. An error aborts the manager's start-up.
  virtual Status start(std::stop_token stopping) = 0;
  // Winds the part down and returns once it stopped. Called only after start() succeeded.
  virtual void stop() = 0;
};

namespace detail {
template <class Start, class Stop>
class FunctionRunnable final : public Runnable {
 public:
  FunctionRunnable(Start start, Stop stop) : start_(std::move(start)), stop_(std::move(stop)) {}
  Status start(std::stop_token stopping) override {
    if constexpr (std::is_invocable_v<Start&, std::stop_token>) {
      return call(stopping);
    } else {
      return call();
    }
  }
  void stop() override { stop_(); }

 private:
  template <class... Args>
  Status call(Args... args) {
    if constexpr (std::is_void_v<std::invoke_result_t<Start&, Args...>>) {
      start_(args...);
      return {};
    } else {
      return start_(args...);
    }
  }
  Start start_;
  Stop stop_;
};
}  // namespace detail

// A Runnable over a start/stop pair of functions, for parts that already have start() and stop()
// methods. `start` takes a std::stop_token or nothing, and returns Status or nothing.
template <class Start, class Stop>
std::unique_ptr<Runnable> runnable(Start start, Stop stop) {
  return std::make_unique<detail::FunctionRunnable<Start, Stop>>(std::move(start), std::move(stop));
}

enum class Leadership {
  NotNeeded,  // runs on every replica (caches, webhooks, probes, metrics, the election itself)
  Needed,     // runs only on the leader (controller workers)
};

// A readiness or health check: ok, or an error saying what is not ("caches not synced").
// Checks run on the probe server's thread and must not block.
using Check = std::function<Status()>;

// An aggregated probe: ok, and the body for the endpoint ("ok\n" or one line per failed check).
struct ProbeResult {
  bool ok = false;
  std::string body;
};

// One runnable came up or went down (for logs).
struct Transition {
  enum class Kind { Started, Stopped } kind = Kind::Started;
  std::string_view name;
  Leadership leadership = Leadership::NotNeeded;
  std::chrono::milliseconds took{0};
  std::string_view error;  // a stop() that threw: what it said (the runnable counts as stopped)
};

struct ManagerOptions {
  // With an election the leader runnables wait for leadership_acquired(); without one every
  // replica leads from the start.
  bool leader_election = false;
  // Bound of the whole stop (all runnables). Normal stops take far less; past it run() returns
  // naming the runnable still stopping (see RunOutcome::not_stopped).
  std::chrono::milliseconds graceful_shutdown_timeout{std::chrono::seconds(30)};
  // Told about every start and stop, on the thread doing it; must not call back into the manager.
  std::function<void(const Transition&)> observer;
};

struct RunOutcome {
  enum class Reason {
    Stopped,         // the stop token passed to run() was triggered
    LeadershipLost,  // leadership_lost() while running
    StartFailed,     // a runnable's start() failed (`error` says which and why)
  };
  Reason reason = Reason::Stopped;
  std::string error;
  // From the decision to stop until the last runnable stopped (or the deadline passed).
  std::chrono::milliseconds stop_time{0};
  // Non-empty when that runnable had not stopped at graceful_shutdown_timeout: it still runs and
  // may use what the runnables after it own, so the process must end without running
  // destructors (std::_Exit); the Manager's destructor would wait for it.
  std::string not_stopped;
};

class Manager {
 public:
  explicit Manager(ManagerOptions options = {});
  ~Manager();  // waits for a stop still in progress
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // Registration, before run(): runnables start in the order added (every-replica ones first,
  // then the leader's) and stop in reverse. A borrowed runnable must outlive the manager.
  void add(std::string name, Runnable& runnable, Leadership leadership = Leadership::NotNeeded);
  void add(std::string name, std::unique_ptr<Runnable> runnable, Leadership leadership = Leadership::NotNeeded);
  void add_ready_check(std::string name, Check check);
  void add_health_check(std::string name, Check check);

  // Starts, runs until `stop` is requested or leadership is lost, stops; see the file comment.
  // Called once.
  RunOutcome run(std::stop_token stop);

  // Leadership news, from any thread (the elector's callbacks): recorded, and run() woken.
  void leadership_acquired();
  void leadership_lost();
  bool leading() const;

  // Requested as soon as the manager decides to stop, whatever the reason: waits that should not
  // hold a stopping process (API client retry back-off, a runnable's slow start) end early.
  std::stop_token stopping() const { return stopping_.get_token(); }

  // /readyz: not ready while starting or stopping; otherwise every ready check must pass, and
  // the body says whether this replica leads ("ok") or follows ("ok (standby)").
  ProbeResult readiness() const;
  // /healthz: every health check must pass.
  ProbeResult health() const;

 private:
  struct Entry {
    std::string name;
    Runnable* runnable;
    std::unique_ptr<Runnable> owned;
    Leadership leadership;
  };
  enum class Phase { Idle, Starting, Running, Stopping, Stopped };

  // Starts the entries needing `leadership`, in order; false when start-up ends early (a stop
  // request, or a failure recorded in `outcome`).
  bool start_all(Leadership leadership, RunOutcome& outcome);
  void request_stop();
  void stop_started(RunOutcome& outcome);
  void observe(Transition::Kind kind, const Entry& entry, std::chrono::steady_clock::time_point since,
               std::string_view error = {}) const;
  static ProbeResult evaluate(const std::vector<std::pair<std::string, Check>>& checks, std::string ok_body);

  ManagerOptions options_;
  std::vector<Entry> entries_;
  std::vector<std::pair<std::string, Check>> ready_checks_;
  std::vector<std::pair<std::string, Check>> health_checks_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::stop_source stopping_;
  Phase phase_ = Phase::Idle;
  bool leading_;
  bool lost_ = false;
  std::vector<const Entry*> started_;  // in start order
  std::string stopping_now_;            // the runnable the stopper is stopping
  bool all_stopped_ = false;
  std::chrono::steady_clock::time_point stop_requested_at_{};
  std::thread stopper_;
};

}  // namespace unitrain::manager
