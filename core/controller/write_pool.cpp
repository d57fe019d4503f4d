#include "core/controller/write_pool.h"

#include <algorithm>

namespace unitrain::controller {

kube::ApiError internal_error(std::string message) {
  kube::ApiError e;
  e.reason = kube::ApiError::Reason::Unknown;
  e.message = std::move(message);
  return e;
}

WritePool::WritePool(int max_in_flight) : max_in_flight_(static_cast<size_t>(std::max(max_in_flight, 1))) {
  for (size_t i = 1; i < max_in_flight_; ++i) {
    sleepers_.push_back(std::make_unique<Sleeper>());
    threads_.emplace_back([this, self = sleepers_.back().get()] { thread_main(*self); });
  }
}

WritePool::~WritePool() {
  Wakes wakes;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    wakes.swap(idle_);
  }
  for (Sleeper* s : wakes) s->wake.release();
  for (auto& t : threads_) t.join();
}

size_t WritePool::idle_threads() const {
  std::lock_guard lock(mu_);
  return idle_.size();
}

size_t WritePool::wakeups() const {
  std::lock_guard lock(mu_);
  return wakeups_;
}

std::optional<kube::ApiError> WritePool::run_indexed(size_t count, const Item& run) {
  if (count == 0) return std::nullopt;
  Batch b;
  b.run = &run;
  b.count = count;
  b.errors.resize(count);
  Wakes wakes;
  std::unique_lock lock(mu_);
  open_.push_back(&b);
  wake_for_work_locked(in_flight_ < max_in_flight_ ? 1 : 0, wakes);
  for (;;) {
    if (b.next < b.count && in_flight_ < max_in_flight_) {
      const size_t index = claim_locked(b);
      run_item(lock, wakes, b, index);
      // Done with its own share, the caller hands the slot it frees to whoever waits for one.
      if (b.next == b.count && !open_.empty()) wake_for_work_locked(0, wakes);
      continue;
    }
    if (b.done == b.count) break;
    if (!wakes.empty()) {  // picked while no slot was free for this caller
      lock.unlock();
      for (Sleeper* s : wakes) s->wake.release();
      wakes.clear();
      lock.lock();
      continue;
    }
    b.caller_waiting = true;
    b.caller_cv.wait(lock);
    b.caller_waiting = false;
  }
  lock.unlock();
  for (Sleeper* s : wakes) s->wake.release();
  for (auto& e : b.errors)
    if (e) return std::move(e);
  return std::nullopt;
}

size_t WritePool::claim_locked(Batch& b) {
  const size_t index = b.next++;
  ++in_flight_;
  if (b.next == b.count) open_.erase(std::find(open_.begin(), open_.end(), &b));
  return index;
}

void WritePool::run_item(std::unique_lock<std::mutex>& lock, Wakes& wakes, Batch& b, size_t index) {
  lock.unlock();
  for (Sleeper* s : wakes) s->wake.release();
  wakes.clear();
  std::optional<kube::ApiError> e;
  try {
    e = (*b.run)(index);
  } catch (const std::exception& ex) {  // thread boundary: report, never lose the count
    e = internal_error(ex.what());
  }
  lock.lock();
  b.errors[index] = std::move(e);
  --in_flight_;
  // The caller may return (and `b` go away) as soon as it sees the count: notify under the lock.
  if (++b.done == b.count && b.caller_waiting) b.caller_cv.notify_one();
}

void WritePool::wake_for_work_locked(size_t reserved, Wakes& wakes) {
  size_t unclaimed = 0;
  for (const Batch* b : open_) unclaimed += b->count - b->next;
  const size_t busy = in_flight_ + picked_ + reserved;
  size_t want = std::min(unclaimed > reserved ? unclaimed - reserved : 0, max_in_flight_ > busy ? max_in_flight_ - busy : 0);
  for (; want > 0 && !idle_.empty(); --want) {
    wakes.push_back(idle_.back());
    idle_.pop_back();
    ++picked_;
    ++wakeups_;
  }
  // No thread asleep: a caller waiting for a slot for its own items takes it.
  for (Batch* b : open_) {
    if (want == 0) break;
    if (!b->caller_waiting) continue;
    b->caller_cv.notify_one();
    --want;
  }
}

void WritePool::thread_main(Sleeper& self) {
  Wakes wakes;
  std::unique_lock lock(mu_);
  for (;;) {
    if (!open_.empty() && in_flight_ < max_in_flight_) {
      Batch& b = *open_.front();
      const size_t index = claim_locked(b);
      run_item(lock, wakes, b, index);
      continue;
    }
    if (stopping_) return;
    idle_.push_back(&self);
    lock.unlock();
    self.wake.acquire();
    lock.lock();
    if (picked_ > 0 && !stopping_) --picked_;
  }
}

}  // namespace unitrain::controller
