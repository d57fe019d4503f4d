// A rate-limited work queue of string keys ("namespace/name"), with client-go's guarantees:
//  - a key queued several times before a worker takes it is processed once (dirty set);
//  - a key is never handed to two workers at once: re-added while processing, it is queued
//    again only when the worker calls done() (processing set);
//  - add_after delays a key; add_rate_limited delays it by the rate limiter (per-item
//    exponential backoff combined with an overall token bucket), forget() resets that history;
//  - get() blocks until there is work and returns nullopt once the queue shut down and is empty.
// Delayed keys are promoted by the workers' own get() calls on the injected Clock: no extra thread.
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
#include <string>
#include <unordered_map>
#include <unordered_set>
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
  Histogram queue_latency;      // time from queued to handed out
  Histogram work_duration;      // time from get() to done()
  double longest_running_seconds = 0;  // the oldest key still being processed
  double unfinished_work_seconds = 0;  // how long every key still being processed has been, summed
};

class WorkQueue {
 public:
  // `limiter` defaults to default_controller_rate_limiter(clock).
  explicit WorkQueue(Clock& clock, std::unique_ptr<RateLimiter> limiter = nullptr);
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;
  ~WorkQueue();

  void add(const std::string& key);
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
  struct Delayed {
    Clock::SteadyTime ready;
    uint64_t seq;
    std::string key;
    bool operator>(const Delayed& o) const { return ready != o.ready ? ready > o.ready : seq > o.seq; }
  };

  void add_locked(const std::string& key);
  void promote_ready_locked(Clock::SteadyTime now);
  std::optional<std::string> get_impl(std::optional<Clock::SteadyTime> deadline);

  Clock& clock_;
  std::unique_ptr<RateLimiter> limiter_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::unordered_set<std::string> dirty_;
  std::unordered_map<std::string, Clock::SteadyTime> processing_;  // key -> when handed out
  std::unordered_map<std::string, Clock::SteadyTime> queued_at_;
  std::priority_queue<Delayed, std::vector<Delayed>, std::greater<>> delayed_;
  std::unordered_map<std::string, Clock::SteadyTime> delayed_ready_;  // earliest ready time per key
  uint64_t seq_ = 0;
  bool shutting_down_ = false;
  uint64_t adds_ = 0;
  uint64_t retries_ = 0;
  Histogram queue_latency_;
  Histogram work_duration_;
};

}  // namespace unitrain::kube
