#include "core/kube/clock.h"

#include <algorithm>

namespace unitrain::kube {

FakeClock::FakeClock()
    : wall_(std::chrono::sys_days{std::chrono::year{2024} / 1 / 2} + std::chrono::hours(3) +
            std::chrono::minutes(4) + std::chrono::seconds(5)),
      steady_(std::chrono::hours(1)) {}

Clock::SysTime FakeClock::now() const {
  std::lock_guard g(mu_);
  return wall_;
}

Clock::SteadyTime FakeClock::steady_now() const {
  std::lock_guard g(mu_);
  return steady_;
}

bool FakeClock::wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, SteadyTime deadline,
                           const std::function<bool()>& pred) {
  {
    std::lock_guard g(mu_);
    waiting_.push_back(&cv);
  }
  waiters_changed_.notify_all();
  bool result = false;
  for (;;) {
    if (pred()) {
      result = true;
      break;
    }
    if (steady_now() >= deadline) break;
    // advance() notifies without holding the waiter's mutex (it cannot know it), so a wakeup can
    // slip between the deadline check and the wait; the short real-time bound recovers from that.
    cv.wait_for(lock, std::chrono::milliseconds(10));
  }
  {
    std::lock_guard g(mu_);
    auto it = std::find(waiting_.begin(), waiting_.end(), &cv);
    if (it != waiting_.end()) waiting_.erase(it);
  }
  waiters_changed_.notify_all();
  return result;
}

void FakeClock::advance(Duration d) {
  std::lock_guard g(mu_);
  steady_ += d;
  wall_ += std::chrono::duration_cast<SysTime::duration>(d);
  // Notified under mu_ so no waiter can unregister (and destroy its condition variable) meanwhile.
  for (auto* cv : waiting_) cv->notify_all();
}

int FakeClock::waiters() const {
  std::lock_guard g(mu_);
  return static_cast<int>(waiting_.size());
}

bool FakeClock::await_waiters(int n, std::chrono::milliseconds real_timeout) const {
  std::unique_lock lock(mu_);
  return waiters_changed_.wait_for(lock, real_timeout, [&] { return static_cast<int>(waiting_.size()) >= n; });
}

}  // namespace unitrain::kube
