// Client-side request rate limit: a token bucket of `burst` tokens refilled at `qps` per second,
// like client-go's flowcontrol.NewTokenBucketRateLimiter. Reservations may drive the bucket
// negative, so concurrent callers queue fairly in reservation order instead of racing.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>

namespace unitrain::kube {

class QpsLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  using NowFn = std::function<Clock::time_point()>;

  // qps <= 0 means unlimited. burst < 1 is treated as 1.
  QpsLimiter(double qps, int burst, NowFn now = {});

  // Takes `n` tokens and returns how long the caller must wait before using the last of them (zero
  // if all were available). A caller that sends several requests at once waits once for all.
  std::chrono::nanoseconds reserve(size_t n = 1);
  // Takes a token only if one is available now.
  bool try_take();
  // reserve() and sleep for the returned time, at most `max_wait`; false (and the reservation
  // given back) when the wait would exceed it.
  bool acquire(std::chrono::nanoseconds max_wait = std::chrono::nanoseconds::max());

  double tokens() const;  // current level, for tests and metrics

  // How long until the bucket holds `n` tokens (zero if it does now, and when unlimited); takes
  // nothing. For a caller that paces itself around the budget its requests then take from, such as
  // a writer that waits to send several at once. `n` above the burst counts as the burst.
  std::chrono::nanoseconds time_until(double n) const;
  double qps() const { return qps_; }
  int burst() const { return static_cast<int>(burst_); }

 private:
  void refill_locked(Clock::time_point now) const;

  double qps_;
  double burst_;
  NowFn now_;
  mutable std::mutex mu_;
  mutable double tokens_;
  mutable Clock::time_point last_;
};

}  // namespace unitrain::kube
