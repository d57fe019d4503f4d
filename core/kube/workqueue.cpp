#include "core/kube/workqueue.h"

#include <algorithm>

namespace unitrain::kube {

void Histogram::observe(double seconds) {
  ++count;
  sum_seconds += seconds;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    if (seconds <= kBounds[i]) ++buckets[i];
  }
}

namespace {
double seconds_between(Clock::SteadyTime from, Clock::SteadyTime to) {
  return std::chrono::duration<double>(to - from).count();
}
// RealClock hands deadlines to the condition variable; a far-future cap keeps the conversion
// away from overflow, and the caller's loop simply waits again.
constexpr auto kMaxWait = std::chrono::hours(1);
}  // namespace

WorkQueue::WorkQueue(Clock& clock, std::unique_ptr<RateLimiter> limiter)
    : clock_(clock), limiter_(limiter ? std::move(limiter) : default_controller_rate_limiter(clock)) {}

WorkQueue::~WorkQueue() { shut_down(); }

void WorkQueue::add(const std::string& key) {
  std::lock_guard g(mu_);
  add_locked(key);
}

void WorkQueue::add_locked(const std::string& key) {
  if (shutting_down_) return;
  if (!dirty_.insert(key).second) return;
  ++adds_;
  queued_at_.try_emplace(key, clock_.steady_now());
  // A key in the hands of a worker stays only dirty; done() queues it again.
  if (processing_.count(key)) return;
  queue_.push_back(key);
  cv_.notify_all();
}

void WorkQueue::add_after(const std::string& key, Clock::Duration delay) {
  std::lock_guard g(mu_);
  if (shutting_down_) return;
  if (delay <= Clock::Duration::zero()) {
    add_locked(key);
    return;
  }
  auto ready = clock_.steady_now() + delay;
  auto [it, inserted] = delayed_ready_.try_emplace(key, ready);
  // Like client-go: a key already waiting keeps the earlier of the two times.
  if (!inserted) {
    if (it->second <= ready) return;
    it->second = ready;
  }
  delayed_.push(Delayed{ready, seq_++, key});
  cv_.notify_all();  // a sleeping worker may have to wake earlier now
}

void WorkQueue::add_rate_limited(const std::string& key) {
  auto delay = limiter_->when(key);
  {
    std::lock_guard g(mu_);
    if (shutting_down_) return;
    ++retries_;
  }
  add_after(key, std::chrono::duration_cast<Clock::Duration>(delay));
}

void WorkQueue::forget(const std::string& key) { limiter_->forget(key); }

int WorkQueue::num_requeues(const std::string& key) { return limiter_->num_requeues(key); }

void WorkQueue::promote_ready_locked(Clock::SteadyTime now) {
  while (!delayed_.empty() && delayed_.top().ready <= now) {
    Delayed d = delayed_.top();
    delayed_.pop();
    auto it = delayed_ready_.find(d.key);
    // Entries superseded by an earlier add_after stay in the heap; skip them.
    if (it == delayed_ready_.end() || it->second != d.ready) continue;
    delayed_ready_.erase(it);
    add_locked(d.key);
  }
}

std::optional<std::string> WorkQueue::get() { return get_impl(std::nullopt); }

std::optional<std::string> WorkQueue::get_until(Clock::SteadyTime deadline) { return get_impl(deadline); }

std::optional<std::string> WorkQueue::get_impl(std::optional<Clock::SteadyTime> deadline) {
  std::unique_lock lock(mu_);
  for (;;) {
    auto now = clock_.steady_now();
    if (!shutting_down_) promote_ready_locked(now);
    if (!queue_.empty()) {
      std::string key = std::move(queue_.front());
      queue_.pop_front();
      dirty_.erase(key);
      processing_[key] = now;
      if (auto it = queued_at_.find(key); it != queued_at_.end()) {
        queue_latency_.observe(seconds_between(it->second, now));
        queued_at_.erase(it);
      }
      return key;
    }
    if (shutting_down_) return std::nullopt;
    if (deadline && now >= *deadline) return std::nullopt;

    auto wake = now + kMaxWait;
    if (!delayed_.empty()) wake = std::min(wake, delayed_.top().ready);
    if (deadline) wake = std::min(wake, *deadline);
    uint64_t seq = seq_;
    clock_.wait_until(lock, cv_, wake, [&] { return !queue_.empty() || shutting_down_ || seq_ != seq; });
  }
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard g(mu_);
  auto it = processing_.find(key);
  if (it == processing_.end()) return;
  work_duration_.observe(seconds_between(it->second, clock_.steady_now()));
  processing_.erase(it);
  if (dirty_.count(key)) queue_.push_back(key);
  cv_.notify_all();
}

void WorkQueue::shut_down() {
  std::lock_guard g(mu_);
  shutting_down_ = true;
  // Delayed keys are dropped: nobody will be around to process them.
  delayed_ = {};
  delayed_ready_.clear();
  cv_.notify_all();
}

bool WorkQueue::shut_down_with_drain(Clock::Duration timeout) {
  shut_down();
  std::unique_lock lock(mu_);
  return clock_.wait_until(lock, cv_, clock_.steady_now() + timeout,
                           [&] { return queue_.empty() && processing_.empty(); });
}

bool WorkQueue::shutting_down() const {
  std::lock_guard g(mu_);
  return shutting_down_;
}

int64_t WorkQueue::len() const {
  std::lock_guard g(mu_);
  return static_cast<int64_t>(queue_.size());
}

WorkQueueMetrics WorkQueue::metrics() const {
  std::lock_guard g(mu_);
  WorkQueueMetrics m;
  auto now = clock_.steady_now();
  m.depth = static_cast<int64_t>(queue_.size());
  m.delayed = static_cast<int64_t>(delayed_ready_.size());
  m.processing = static_cast<int64_t>(processing_.size());
  m.adds = adds_;
  m.retries = retries_;
  m.queue_latency = queue_latency_;
  m.work_duration = work_duration_;
  for (const auto& [k, started] : processing_) {
    const double running = seconds_between(started, now);
    m.longest_running_seconds = std::max(m.longest_running_seconds, running);
    m.unfinished_work_seconds += running;
  }
  return m;
}

}  // namespace unitrain::kube
