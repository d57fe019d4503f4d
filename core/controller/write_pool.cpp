#include "core/controller/write_pool.h"

namespace unitrain::controller {

kube::ApiError internal_error(std::string message) {
  kube::ApiError e;
  e.reason = kube::ApiError::Reason::Unknown;
  e.message = std::move(message);
  return e;
}

WritePool::WritePool(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

WritePool::~WritePool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void WritePool::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace unitrain::controller
