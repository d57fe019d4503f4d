// Rate limiters for the work queue, with client-go's semantics: a per-item exponential backoff
// (a key that keeps failing waits longer and longer) combined with an overall token bucket (a
// burst of failures cannot flood the API server), taking the larger delay of the two.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/kube/clock.h"

namespace unitrain::kube {

class RateLimiter {
 public:
  using Duration = std::chrono::nanoseconds;
  virtual ~RateLimiter() = default;
  // How long `key` should wait before its next attempt; each call counts as one failure.
  virtual Duration when(const std::string& key) = 0;
  // The key succeeded: its failure history is cleared.
  virtual void forget(const std::string& key) = 0;
  virtual int num_requeues(const std::string& key) = 0;
};

// base * 2^(failures), capped at max_delay: 5 ms, 10 ms, 20 ms, ... 1000 s.
class ItemExponentialRateLimiter final : public RateLimiter {
 public:
  explicit ItemExponentialRateLimiter(Duration base = std::chrono::milliseconds(5),
                                      Duration max_delay = std::chrono::seconds(1000))
      : base_(base), max_(max_delay) {}

  Duration when(const std::string& key) override {
    std::lock_guard g(mu_);
    int exp = failures_[key]++;
    // Computed in double so a long failure streak saturates at max instead of overflowing.
    double delay = static_cast<double>(base_.count()) * std::pow(2.0, exp);
    if (delay >= static_cast<double>(max_.count())) return max_;
    return Duration(static_cast<Duration::rep>(delay));
  }
  void forget(const std::string& key) override {
    std::lock_guard g(mu_);
    failures_.erase(key);
  }
  int num_requeues(const std::string& key) override {
    std::lock_guard g(mu_);
    auto it = failures_.find(key);
    return it == failures_.end() ? 0 : it->second;
  }

 private:
  std::mutex mu_;
  Duration base_, max_;
  std::unordered_map<std::string, int> failures_;
};

// Token bucket shared by all keys: `burst` immediate retries, then one per 1/qps. Like Go's
// rate.Limiter.Reserve, a request beyond the bucket reserves a future token and gets its delay.
class BucketRateLimiter final : public RateLimiter {
 public:
  BucketRateLimiter(Clock& clock, double qps = 10, int burst = 100)
      : clock_(clock), qps_(qps), burst_(burst), tokens_(burst), last_(clock.steady_now()) {}

  Duration when(const std::string&) override {
    std::lock_guard g(mu_);
    auto now = clock_.steady_now();
    if (now > last_) {
      double elapsed = std::chrono::duration<double>(now - last_).count();
      tokens_ = std::min<double>(burst_, tokens_ + elapsed * qps_);
      last_ = now;
    }
    tokens_ -= 1;
    if (tokens_ >= 0) return Duration::zero();
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(-tokens_ / qps_));
  }
  void forget(const std::string&) override {}
  int num_requeues(const std::string&) override { return 0; }

 private:
  std::mutex mu_;
  Clock& clock_;
  double qps_;
  int burst_;
  double tokens_;
  Clock::SteadyTime last_;
};

// The largest delay of its members; requeue counts come from the member that reports most.
class MaxOfRateLimiter final : public RateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters) : limiters_(std::move(limiters)) {}

  Duration when(const std::string& key) override {
    Duration d = Duration::zero();
    for (auto& l : limiters_) d = std::max(d, l->when(key));
    return d;
  }
  void forget(const std::string& key) override {
    for (auto& l : limiters_) l->forget(key);
  }
  int num_requeues(const std::string& key) override {
    int n = 0;
    for (auto& l : limiters_) n = std::max(n, l->num_requeues(key));
    return n;
  }

 private:
  std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

// client-go's DefaultControllerRateLimiter: exponential 5 ms → 1000 s per item, 10 qps burst 100 overall.
inline std::unique_ptr<RateLimiter> default_controller_rate_limiter(Clock& clock) {
  std::vector<std::unique_ptr<RateLimiter>> v;
  v.push_back(std::make_unique<ItemExponentialRateLimiter>());
  v.push_back(std::make_unique<BucketRateLimiter>(clock));
  return std::make_unique<MaxOfRateLimiter>(std::move(v));
}

}  // namespace unitrain::kube
