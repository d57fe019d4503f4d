// Carries out a job's pod and service deletes in parallel. One pool is shared by all workers of a
// controller, so JobControllerOptions::max_parallel_writes bounds the deletes in flight per
// controller. (Creates do not come here: a pass sends a run of them as one pipelined exchange,
// Client::create_all, on its own thread; a delete has no such path.)
//
// The thread that hands over a batch runs items of it too (caller-runs) and the pool wakes no
// more of its threads than the batch has items left for: a write is a short HTTP round trip, and
// on a small machine waking a sleeping thread costs about as much as the write's own CPU, so a
// batch of four deletes wakes three threads, not the whole pool, and the caller is woken only if
// it finished its own share before the others did theirs.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <thread>
#include <vector>

#include "core/kube/client.h"

namespace unitrain::controller {

// An error that did not come from the API server (a hook that failed, an exception on a write
// thread), as a value the pipeline can return like any other.
kube::ApiError internal_error(std::string message);

class WritePool {
 public:
  // At most `max_in_flight` items run at once over all callers, the callers' own share included;
  // the pool keeps max_in_flight - 1 threads (a caller is the other one).
  explicit WritePool(int max_in_flight);
  ~WritePool();
  WritePool(const WritePool&) = delete;
  WritePool& operator=(const WritePool&) = delete;

  // Runs `fn` over `items`, on this thread and the pool's, and returns once all ran; returns the
  // error of the first item (in the order of `items`) that failed. Items start in their order.
  // Tasks never wait on the pool themselves, so a caller blocking here cannot deadlock it.
  template <class T, class Fn>
  std::optional<kube::ApiError> run_all(std::vector<T>& items, Fn& fn) {
    return run_indexed(items.size(), [&](size_t i) { return fn(items[i]); });
  }

  // Pool threads asleep with nothing to do, and how many times the pool woke one of them (for
  // tests: a batch wakes no more threads than it has items besides the caller's).
  size_t idle_threads() const;
  size_t wakeups() const;

 private:
  using Item = std::function<std::optional<kube::ApiError>(size_t)>;
  struct Batch {
    const Item* run = nullptr;
    size_t count = 0;
    size_t next = 0;  // the first item nobody took yet
    size_t done = 0;
    std::vector<std::optional<kube::ApiError>> errors;
    bool caller_waiting = false;
    std::condition_variable caller_cv;
  };

  // Each thread sleeps on its own semaphore: waking k of them is k direct wake-ups (a shared
  // condition variable signalled k times in a row can block the signaller in glibc until the
  // first ones have woken).
  struct Sleeper {
    std::binary_semaphore wake{0};
  };
  using Wakes = std::vector<Sleeper*>;

  std::optional<kube::ApiError> run_indexed(size_t count, const Item& run);
  void thread_main(Sleeper& self);
  // Takes the next item of `b` (a slot must be free); drops `b` from the open batches once all
  // its items are taken.
  size_t claim_locked(Batch& b);
  // Releases the lock, wakes `wakes`, runs item `index` of `b`, then records it under the lock.
  void run_item(std::unique_lock<std::mutex>& lock, Wakes& wakes, Batch& b, size_t index);
  // Picks sleeping threads for items nobody took, as many as there are such items and free
  // slots, minus `reserved` (items the caller of this call will take itself), into `wakes` (to be
  // woken once the lock is released); with no thread asleep, wakes a caller whose batch waits
  // for a slot.
  void wake_for_work_locked(size_t reserved, Wakes& wakes);

  const size_t max_in_flight_;
  mutable std::mutex mu_;
  std::deque<Batch*> open_;  // batches with items nobody took yet, oldest first
  size_t in_flight_ = 0;
  std::vector<Sleeper*> idle_;  // threads asleep and not picked, the last to sleep last
  size_t picked_ = 0;           // threads picked to wake that have not taken the lock since
  size_t wakeups_ = 0;
  bool stopping_ = false;
  std::vector<std::unique_ptr<Sleeper>> sleepers_;
  std::vector<std::thread> threads_;
};

// Runs `fn` over `items`, in parallel on `pool` when there is one and more than one item;
// returns the first error.
template <class T, class Fn>
std::optional<kube::ApiError> run_bounded(WritePool* pool, std::vector<T>& items, Fn fn) {
  if (items.size() > 1 && pool) return pool->run_all(items, fn);
  std::optional<kube::ApiError> first;
  for (auto& item : items)
    if (auto e = fn(item); e && !first) first = std::move(e);
  return first;
}

}  // namespace unitrain::controller
