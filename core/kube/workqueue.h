// A rate-limited work queue of string keys ("namespace/name"), with client-go's guarantees:
//  - a key queued several times before a worker takes it is processed once (dirty set);
//  - a key is never handed to two workers at once: re-added while processing, it is queued
//    again only when the worker calls done() (processing set);
//  - add_after delays a key; add_rate_limited delays it by the rate limiter (per-item
//    exponential backoff combined with an overall token bucket), forget() resets that history;
//  - get() blocks until there is work and returns nullopt once the queue shut down and is empty.
// Delayed keys are promoted by the workers' own get() calls on the injected Clock: no extra thread.
//
// Two lanes: a key added with add_first() (a job whose status is about to change: a child just
// finished) is handed out before keys of the ordinary lane (jobs that only need more creates), so
// a backlog of creates cannot hold back a terminal status for minutes. The first lane never hands
// out more than kFirstInARow keys in a row while ordinary keys wait, so none of them starves.
// A key queued in both lanes is queued once, in the first lane.
//
// With a `settle` time, a queued key is handed out no sooner than that after it was queued: the
// changes that arrive together (a job's four pods starting) make one pass, not four.
//
// A waiting worker is woken only when a key becomes ready before the time it already sleeps
// until: the adds that a settle time holds back behind an earlier key (a job's burst of child
// events) cost the adding thread no wake-up call and the worker no wake-up.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/kube/clock.h"
#include "core/kube/rate_limiters.h"

namespace unitrain::kube {

// Cumulative histogram over seconds; bucket i counts observations <= kBounds[i].
struct Histogram {
  static constexpr std::array<double, 10> kBounds{1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1, 10, 100, 1000};
  std::array<uint64_t, kBounds.size()> buckets{};
  uint64_t count = 0;
  double sum_seconds = 0;
  void observe(double seconds);
};

struct WorkQueueMetrics {
  int64_t depth = 0;            // keys ready to be handed out now
  int64_t delayed = 0;          // keys waiting for add_after / add_rate_limited
  int64_t processing = 0;       // keys held by workers
  uint64_t adds = 0;            // add() calls that queued a key (deduplicated adds are not counted)
  uint64_t retries = 0;         // add_rate_limited() calls
  uint64_t first_adds = 0;      // adds that queued a key in the first lane (or moved it there)
  int64_t waiting_workers = 0;  // get() calls blocked until a key is ready
  uint64_t wakeups = 0;         // times waiting workers were woken early to look again
  Histogram queue_latency;      // time from queued to handed out
  Histogram work_duration;      // time from get() to done()
  double longest_running_seconds = 0;  // the oldest key still being processed
  double unfinished_work_seconds = 0;  // how long every key still being processed has been, summed
};

class WorkQueue {
 public:
  // How many first-lane keys may be handed out in a row while ordinary keys are waiting.
  static constexpr int kFirstInARow = 4;

  // `limiter` defaults to default_controller_rate_limiter(clock).
  explicit WorkQueue(Clock& clock, std::unique_ptr<RateLimiter> limiter = nullptr,
                     Clock::Duration settle = Clock::Duration::zero());
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;
  ~WorkQueue();

  void add(const std::string& key);
  // Like add(), in the first lane; moves a key already queued in the ordinary lane there.
  void add_first(const std::string& key);
  void add_after(const std::string& key, Clock::Duration delay);
  void add_rate_limited(const std::string& key);
  void forget(const std::string& key);
  int num_requeues(const std::string& key);

  // Blocks until a key is ready; nullopt once shut down with nothing left to hand out.
  std::optional<std::string> get();
  // Like get() but gives up at `deadline` (nullopt) on the queue's clock.
  std::optional<std::string> get_until(Clock::SteadyTime deadline);
  void done(const std::string& key);

  // New adds are ignored from now on; delayed keys are dropped; waiting workers wake up and
  // drain what is already queued.
  void shut_down();
  // shut_down(), then waits until every queued key was handed out and every worker called
  // done(), or until `timeout` passes on the queue's clock. True when fully drained.
  bool shut_down_with_drain(Clock::Duration timeout = std::chrono::seconds(60));
  bool shutting_down() const;

  int64_t len() const;
  WorkQueueMetrics metrics() const;

 private:
  enum class Lane { Ordinary, First };
  // A dirty key: the lane it is (or, while processing, will be) queued in, and the ticket of its
  // entry in that lane's deque. Entries whose ticket no longer matches are stale and skipped.
  struct Dirty {
    Lane lane = Lane::Ordinary;
    uint64_t ticket = 0;
  };
  struct Entry {
    std::string key;
    uint64_t ticket = 0;
    Clock::SteadyTime ready;  // not handed out before
  };
  struct Delayed {
    Clock::SteadyTime ready;
    uint64_t seq;
    std::string key;
    bool operator>(const Delayed& o) const { return ready != o.ready ? ready > o.ready : seq > o.seq; }
  };

  void add_locked(const std::string& key, Lane lane);
  // Wakes the waiting workers if one of them sleeps past `ready` (or the queue is draining).
  void wake_waiting_locked(Clock::SteadyTime ready);
  void enqueue_locked(const std::string& key, Dirty& dirty);
  // The next key to hand out (dropping stale entries), or nullopt when none is ready; `wake` is
  // lowered to when the first entry not ready yet will be.
  std::optional<std::string> pop_locked(Clock::SteadyTime now, Clock::SteadyTime& wake);
  bool pop_lane_locked(std::deque<Entry>& lane, std::string& key, Clock::SteadyTime now, Clock::SteadyTime& wake);
  void promote_ready_locked(Clock::SteadyTime now);
  std::optional<std::string> get_impl(std::optional<Clock::SteadyTime> deadline);

  Clock& clock_;
  std::unique_ptr<RateLimiter> limiter_;
  Clock::Duration settle_;
  uint64_t changes_ = 0;  // bumped by every enqueue, so a waiting get() looks again
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Entry> first_, ordinary_;
  int64_t queued_ = 0;   // valid entries in both deques
  int first_in_a_row_ = 0;
  uint64_t ticket_ = 0;
  std::unordered_map<std::string, Dirty> dirty_;
  std::unordered_map<std::string, Clock::SteadyTime> processing_;  // key -> when handed out
  std::unordered_map<std::string, Clock::SteadyTime> queued_at_;
  std::priority_queue<Delayed, std::vector<Delayed>, std::greater<>> delayed_;
  std::unordered_map<std::string, Clock::SteadyTime> delayed_ready_;  // earliest ready time per key
  uint64_t seq_ = 0;
  bool shutting_down_ = false;
  std::multiset<Clock::SteadyTime> waiting_until_;  // the wake-up time of each waiting get()
  int drainers_ = 0;                                // shut_down_with_drain() calls waiting
  uint64_t wakeups_ = 0;
  uint64_t adds_ = 0;
  uint64_t retries_ = 0;
  uint64_t first_adds_ = 0;
  Histogram queue_latency_;
  Histogram work_duration_;
};

}  // namespace unitrain::kube
