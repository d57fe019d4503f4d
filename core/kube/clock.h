// An injectable clock. Everything in core/kube that waits or timestamps (work queue delays, rate
// limiters, informer backoff, leader election, event aggregation) takes a Clock&, so unit tests
// drive time with FakeClock::advance() instead of sleeping.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

namespace unitrain::kube {

class Clock {
 public:
  using SysTime = std::chrono::system_clock::time_point;
  using SteadyTime = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  virtual ~Clock() = default;
  // Wall-clock time: what goes into timestamps written to the API server.
  virtual SysTime now() const = 0;
  // Monotonic time: what deadlines, delays and durations are measured with.
  virtual SteadyTime steady_now() const = 0;

  // Waits on `cv` (whose mutex `lock` holds) until `pred()` holds, or steady time reaches
  // `deadline`. Returns pred(). The condition variable may still be notified by its owner for
  // other reasons (shutdown, new work); pred is re-checked each time.
  virtual bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, SteadyTime deadline,
                          const std::function<bool()>& pred) = 0;

  bool wait_for(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Duration d,
                const std::function<bool()>& pred) {
    return wait_until(lock, cv, steady_now() + d, pred);
  }

  // Blocks the calling thread until `deadline`. Prefer wait_until with a stop predicate in
  // anything that must stop promptly.
  void sleep_until(SteadyTime deadline) {
    std::mutex m;
    std::condition_variable cv;
    std::unique_lock lock(m);
    wait_until(lock, cv, deadline, [] { return false; });
  }
  void sleep_for(Duration d) { sleep_until(steady_now() + d); }
};

class RealClock final : public Clock {
 public:
  SysTime now() const override { return std::chrono::system_clock::now(); }
  SteadyTime steady_now() const override { return std::chrono::steady_clock::now(); }
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, SteadyTime deadline,
                  const std::function<bool()>& pred) override {
    return cv.wait_until(lock, deadline, pred);
  }
};

// Time stands still until advance()/set() moves it; waiters whose deadline passes are woken.
class FakeClock final : public Clock {
 public:
  // Starts at a fixed, readable wall time (2024-01-02T03:04:05Z) so timestamps in tests are stable.
  FakeClock();

  SysTime now() const override;
  SteadyTime steady_now() const override;
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, SteadyTime deadline,
                  const std::function<bool()>& pred) override;

  // Moves both clocks forward and wakes every waiter so it re-checks its deadline.
  void advance(Duration d);
  // Number of threads currently blocked in wait_until.
  int waiters() const;
  // Blocks (in real time, up to `real_timeout`) until at least `n` threads are waiting: lets a
  // test advance time only once the component under test has parked on the clock.
  bool await_waiters(int n, std::chrono::milliseconds real_timeout = std::chrono::seconds(5)) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable waiters_changed_;
  SysTime wall_;
  SteadyTime steady_;
  std::vector<std::condition_variable*> waiting_;
};

}  // namespace unitrain::kube
