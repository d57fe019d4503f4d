#include "core/kube/qps_limiter.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace unitrain::kube {

QpsLimiter::QpsLimiter(double qps, int burst, NowFn now)
    : qps_(qps),
      burst_(std::max(1, burst)),
      now_(now ? std::move(now) : NowFn([] { return Clock::now(); })),
      tokens_(burst_),
      last_(now_()) {}

void QpsLimiter::refill_locked(Clock::time_point now) const {
  if (now <= last_) return;
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
  last_ = now;
}

std::chrono::nanoseconds QpsLimiter::reserve(size_t n) {
  if (qps_ <= 0) return std::chrono::nanoseconds::zero();
  std::lock_guard lock(mu_);
  refill_locked(now_());
  tokens_ -= static_cast<double>(n);
  if (tokens_ >= 0) return std::chrono::nanoseconds::zero();
  return std::chrono::nanoseconds(static_cast<int64_t>(-tokens_ / qps_ * 1e9));
}

bool QpsLimiter::try_take() {
  if (qps_ <= 0) return true;
  std::lock_guard lock(mu_);
  refill_locked(now_());
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

bool QpsLimiter::acquire(std::chrono::nanoseconds max_wait) {
  auto wait = reserve();
  if (wait > max_wait) {
    std::lock_guard lock(mu_);
    tokens_ += 1;
    return false;
  }
  if (wait > std::chrono::nanoseconds::zero()) std::this_thread::sleep_for(wait);
  return true;
}

std::chrono::nanoseconds QpsLimiter::time_until(double n) const {
  if (qps_ <= 0) return std::chrono::nanoseconds::zero();
  std::lock_guard lock(mu_);
  refill_locked(now_());
  const double missing = std::min(n, burst_) - tokens_;
  // A rounding error's worth of a token is not worth a wait (reserve() would not wait for it).
  if (missing <= 1e-9) return std::chrono::nanoseconds::zero();
  return std::chrono::nanoseconds(std::max<int64_t>(1, std::llround(missing / qps_ * 1e9)));
}

double QpsLimiter::tokens() const {
  std::lock_guard lock(mu_);
  refill_locked(now_());
  return tokens_;
}

}  // namespace unitrain::kube
