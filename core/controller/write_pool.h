// Fixed threads that carry out a job's pod and service creates and deletes in parallel. One pool
// is shared by all workers of a controller, so JobControllerOptions::max_parallel_writes bounds
// the writes in flight per controller.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/kube/client.h"

namespace unitrain::controller {

// An error that did not come from the API server (a hook that failed, an exception on a write
// thread), as a value the pipeline can return like any other.
kube::ApiError internal_error(std::string message);

class WritePool {
 public:
  explicit WritePool(int threads);
  ~WritePool();
  WritePool(const WritePool&) = delete;
  WritePool& operator=(const WritePool&) = delete;

  // Runs `fn` over `items` on the pool and waits for all; returns the first error. Tasks never
  // wait on the pool themselves, so a caller blocking here cannot deadlock it.
  template <class T, class Fn>
  std::optional<kube::ApiError> run_all(std::vector<T>& items, Fn& fn) {
    std::mutex done_mu;
    std::condition_variable done_cv;
    size_t left = items.size();
    std::optional<kube::ApiError> first;
    {
      std::lock_guard lock(mu_);
      for (auto& item : items) {
        tasks_.emplace_back([&, item_ptr = &item] {
          std::optional<kube::ApiError> e;
          try {
            e = fn(*item_ptr);
          } catch (const std::exception& ex) {  // thread boundary: report, never lose the count
            e = internal_error(ex.what());
          }
          std::lock_guard done_lock(done_mu);
          if (e && !first) first = std::move(e);
          if (--left == 0) done_cv.notify_all();
        });
      }
    }
    cv_.notify_all();
    std::unique_lock lock(done_mu);
    done_cv.wait(lock, [&] { return left == 0; });
    return first;
  }

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
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
