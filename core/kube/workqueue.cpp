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

WorkQueue::WorkQueue(Clock& clock, std::unique_ptr<RateLimiter> limiter, Clock::Duration settle)
    : clock_(clock), limiter_(limiter ? std::move(limiter) : default_controller_rate_limiter(clock)), settle_(settle) {}

WorkQueue::~WorkQueue() { shut_down(); }

void WorkQueue::add(const std::string& key) {
  std::lock_guard g(mu_);
  add_locked(key, Lane::Ordinary);
}

void WorkQueue::add_first(const std::string& key) {
  std::lock_guard g(mu_);
  add_locked(key, Lane::First);
}

void WorkQueue::add_locked(const std::string& key, Lane lane) {
  if (shutting_down_) return;
  auto [it, inserted] = dirty_.try_emplace(key, Dirty{lane, 0});
  if (!inserted) {
    // Already queued (or waiting for done()): only a move to the first lane changes anything.
    if (lane == Lane::Ordinary || it->second.lane == Lane::First) return;
    it->second.lane = Lane::First;
    ++first_adds_;
    if (processing_.count(key)) return;  // done() queues it, in the first lane now
    --queued_;                           // its ordinary entry goes stale
    enqueue_locked(key, it->second);
    return;
  }
  ++adds_;
  if (lane == Lane::First) ++first_adds_;
  queued_at_.try_emplace(key, clock_.steady_now());
  // A key in the hands of a worker stays only dirty; done() queues it again.
  if (processing_.count(key)) return;
  enqueue_locked(key, it->second);
}

void WorkQueue::enqueue_locked(const std::string& key, Dirty& dirty) {
  dirty.ticket = ++ticket_;
  auto queued = queued_at_.find(key);
  const auto since = queued != queued_at_.end() ? queued->second : clock_.steady_now();
  (dirty.lane == Lane::First ? first_ : ordinary_).push_back(Entry{key, dirty.ticket, since + settle_});
  ++queued_;
  ++changes_;
  wake_waiting_locked(since + settle_);
}

void WorkQueue::wake_waiting_locked(Clock::SteadyTime ready) {
  if (waiting_until_.empty()) return;
  // Every waiting worker looks at the lanes again when it wakes: if all of them wake by `ready`
  // anyway, none needs waking now.
  if (!shutting_down_ && ready >= *waiting_until_.rbegin()) return;
  ++wakeups_;
  cv_.notify_all();
}

bool WorkQueue::pop_lane_locked(std::deque<Entry>& lane, std::string& key, Clock::SteadyTime now,
                                Clock::SteadyTime& wake) {
  while (!lane.empty()) {
    Entry& e = lane.front();
    auto it = dirty_.find(e.key);
    if (it == dirty_.end() || it->second.ticket != e.ticket) {  // stale: moved or handed out
      lane.pop_front();
      continue;
    }
    if (e.ready > now) {
      wake = std::min(wake, e.ready);
      return false;
    }
    dirty_.erase(it);
    --queued_;
    key = std::move(e.key);
    lane.pop_front();
    return true;
  }
  return false;
}

std::optional<std::string> WorkQueue::pop_locked(Clock::SteadyTime now, Clock::SteadyTime& wake) {
  std::string key;
  // The first lane goes first, but after kFirstInARow of them a waiting ordinary key gets its
  // turn. (The pops drop stale entries at the fronts.)
  if (first_in_a_row_ < kFirstInARow && pop_lane_locked(first_, key, now, wake)) {
    ++first_in_a_row_;
    return key;
  }
  if (pop_lane_locked(ordinary_, key, now, wake)) {
    first_in_a_row_ = 0;
    return key;
  }
  if (pop_lane_locked(first_, key, now, wake)) {
    first_in_a_row_ = 1;
    return key;
  }
  return std::nullopt;
}

void WorkQueue::add_after(const std::string& key, Clock::Duration delay) {
  std::lock_guard g(mu_);
  if (shutting_down_) return;
  if (delay <= Clock::Duration::zero()) {
    add_locked(key, Lane::Ordinary);
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
  wake_waiting_locked(ready);  // a sleeping worker may have to wake earlier now
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
    add_locked(d.key, Lane::Ordinary);
  }
}

std::optional<std::string> WorkQueue::get() { return get_impl(std::nullopt); }

std::optional<std::string> WorkQueue::get_until(Clock::SteadyTime deadline) { return get_impl(deadline); }

std::optional<std::string> WorkQueue::get_impl(std::optional<Clock::SteadyTime> deadline) {
  std::unique_lock lock(mu_);
  for (;;) {
    auto now = clock_.steady_now();
    if (!shutting_down_) promote_ready_locked(now);
    auto wake = now + kMaxWait;
    // Once shutting down, keys still settling are handed out at once (the drain).
    if (auto popped = pop_locked(shutting_down_ ? Clock::SteadyTime::max() : now, wake)) {
      std::string key = std::move(*popped);
      processing_[key] = now;
      if (auto it = queued_at_.find(key); it != queued_at_.end()) {
        queue_latency_.observe(seconds_between(it->second, now));
        queued_at_.erase(it);
      }
      return key;
    }
    if (shutting_down_) return std::nullopt;
    if (deadline && now >= *deadline) return std::nullopt;

    if (!delayed_.empty()) wake = std::min(wake, delayed_.top().ready);
    if (deadline) wake = std::min(wake, *deadline);
    const uint64_t seq = seq_, changes = changes_;
    const auto waiting = waiting_until_.insert(wake);
    clock_.wait_until(lock, cv_, wake, [&] { return shutting_down_ || seq_ != seq || changes_ != changes; });
    waiting_until_.erase(waiting);
  }
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard g(mu_);
  auto it = processing_.find(key);
  if (it == processing_.end()) return;
  work_duration_.observe(seconds_between(it->second, clock_.steady_now()));
  processing_.erase(it);
  if (auto d = dirty_.find(key); d != dirty_.end()) enqueue_locked(key, d->second);
  if (drainers_ > 0) cv_.notify_all();
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
  ++drainers_;
  const bool drained = clock_.wait_until(lock, cv_, clock_.steady_now() + timeout,
                                         [&] { return queued_ == 0 && processing_.empty(); });
  --drainers_;
  return drained;
}

bool WorkQueue::shutting_down() const {
  std::lock_guard g(mu_);
  return shutting_down_;
}

int64_t WorkQueue::len() const {
  std::lock_guard g(mu_);
  return queued_;
}

WorkQueueMetrics WorkQueue::metrics() const {
  std::lock_guard g(mu_);
  WorkQueueMetrics m;
  auto now = clock_.steady_now();
  m.depth = queued_;
  m.delayed = static_cast<int64_t>(delayed_ready_.size());
  m.processing = static_cast<int64_t>(processing_.size());
  m.adds = adds_;
  m.retries = retries_;
  m.first_adds = first_adds_;
  m.waiting_workers = static_cast<int64_t>(waiting_until_.size());
  m.wakeups = wakeups_;
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
