// Says a recurring problem once per interval instead of every time it recurs: the first
// occurrence of a key is reported at once, later ones are only counted, and the first occurrence
// once `interval` has passed since the last report is reported with the count of those in
// between. A persistent fault thus gives one line per interval with a repeat count, whatever its
// rate. Time comes in as an argument, so callers use their own (injectable) clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace unitrain::log {

class Throttle {
 public:
  using Time = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  // At most `max_keys` keys are remembered (least recently seen forgotten first).
  explicit Throttle(Duration interval, size_t max_keys = 1024);

  struct Report {
    uint64_t repeats = 0;  // occurrences suppressed since the previous report
    Duration since{};      // time since the previous report (0 for the first)
    // " (repeated 12 times in the last 30s)", or "" when nothing was suppressed.
    std::string suffix() const;
  };
  // Returns the report to write now, or nullopt when this occurrence is only counted.
  std::optional<Report> occur(const std::string& key, Time now);
  // The problem of `key` is over; returns how many occurrences it had, or nullopt when it was
  // not active. Its next occurrence is reported at once again.
  std::optional<uint64_t> clear(const std::string& key);
  bool active(const std::string& key) const;

 private:
  struct State {
    Time last_report;
    uint64_t suppressed = 0;
    uint64_t total = 0;
  };
  using Order = std::list<std::string>;

  Duration interval_;
  size_t max_keys_;
  mutable std::mutex mu_;
  Order order_;  // most recently seen first
  std::unordered_map<std::string, std::pair<State, Order::iterator>> states_;
};

}  // namespace unitrain::log
