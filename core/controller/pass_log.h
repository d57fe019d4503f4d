// What one reconcile pass decided, for its debug line (JobController::reconcile writes it): the
// objects it created and deleted, the conditions it set and why, the expectation or write it
// waits for. Collected only when debug logging is on; thread-safe, since a pass deletes children
// on the write pool.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace unitrain::controller {

class PassLog {
 public:
  explicit PassLog(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }

  // One decision: "created pod" + "job-worker-0". Decisions with the same action are listed together.
  void note(std::string_view action, std::string subject) {
    if (!enabled_) return;
    std::lock_guard lock(mu_);
    for (auto& [a, subjects] : notes_) {
      if (a == action) {
        subjects.push_back(std::move(subject));
        return;
      }
    }
    notes_.push_back({std::string(action), {std::move(subject)}});
  }
  // "created" + "pods" + "job-worker-0" as "created pods: job-worker-0"; nothing is joined or
  // copied when the line is not kept (debug logging off, the usual case).
  void note(std::string_view verb, std::string_view resource, std::string_view subject) {
    if (enabled_) note(fmt::format("{} {}", verb, resource), std::string(subject));
  }
  template <class... A>
  void notef(std::string_view action, fmt::format_string<A...> f, A&&... a) {
    if (enabled_) note(action, fmt::format(f, std::forward<A>(a)...));
  }

  // "created pod: a, b; set condition: Running=True (...)", or "" when nothing was decided.
  std::string summary() const {
    std::lock_guard lock(mu_);
    std::string out;
    for (const auto& [action, subjects] : notes_) {
      if (!out.empty()) out += "; ";
      out += fmt::format("{}: {}", action, fmt::join(subjects, ", "));
    }
    return out;
  }

 private:
  bool enabled_;
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, std::vector<std::string>>> notes_;
};

}  // namespace unitrain::controller
