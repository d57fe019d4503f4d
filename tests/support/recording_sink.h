#pragma once
// The events a job controller records, kept for tests to read.

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/controller/job_controller.h"

namespace unitrain::testing {

// Events a controller recorded, as "Type Reason message" lines.
class RecordingSink final : public controller::EventSink {
 public:
  void event(const json::Value&, std::string_view type, std::string_view reason, std::string message) override {
    std::lock_guard lock(mu_);
    events_.push_back(fmt::format("{} {} {}", type, reason, message));
  }
  std::vector<std::string> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }
  bool has(std::string_view needle) const {
    std::lock_guard lock(mu_);
    for (const auto& e : events_)
      if (e.find(needle) != std::string::npos) return true;
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> events_;
};

}  // namespace unitrain::testing
