#include "core/log/throttle.h"

#include <fmt/format.h>

namespace unitrain::log {

Throttle::Throttle(Duration interval, size_t max_keys) : interval_(interval), max_keys_(max_keys == 0 ? 1 : max_keys) {}

std::string Throttle::Report::suffix() const {
  if (repeats == 0) return {};
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since).count();
  return fmt::format(" (repeated {} time{} in the last {}s)", repeats, repeats == 1 ? "" : "s", seconds);
}

std::optional<Throttle::Report> Throttle::occur(const std::string& key, Time now) {
  std::lock_guard lock(mu_);
  auto it = states_.find(key);
  if (it == states_.end()) {
    order_.push_front(key);
    states_.emplace(key, std::pair{State{now, 0, 1}, order_.begin()});
    if (states_.size() > max_keys_) {
      states_.erase(order_.back());
      order_.pop_back();
    }
    return Report{};
  }
  auto& [state, position] = it->second;
  order_.splice(order_.begin(), order_, position);
  ++state.total;
  if (now - state.last_report < interval_) {
    ++state.suppressed;
    return std::nullopt;
  }
  Report r{state.suppressed, now - state.last_report};
  state.suppressed = 0;
  state.last_report = now;
  return r;
}

std::optional<uint64_t> Throttle::clear(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = states_.find(key);
  if (it == states_.end()) return std::nullopt;
  const uint64_t total = it->second.first.total;
  order_.erase(it->second.second);
  states_.erase(it);
  return total;
}

bool Throttle::active(const std::string& key) const {
  std::lock_guard lock(mu_);
  return states_.count(key) > 0;
}

}  // namespace unitrain::log
