// The status one reconcile pass is building, next to the status the server has, and what to
// announce once the draft is written: events and counters of condition transitions go out only
// when the status carrying them reaches the server, so a pass that loses a write conflict and
// runs again does not announce them twice.
#pragma once

#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "core/api/kubeflow.h"
#include "core/api/time.h"
#include "core/framework/plugin.h"

namespace unitrain::controller {

class StatusDraft {
 public:
  explicit StatusDraft(api::JobStatus persisted) : draft_(persisted), persisted_(std::move(persisted)) {}

  api::JobStatus& status() { return draft_; }
  const api::JobStatus& status() const { return draft_; }
  bool changed() const { return draft_ != persisted_; }
  const api::JobStatus& persisted() const { return persisted_; }

  // Sets condition `type` (training-operator's condition rules) with the core's wording.
  void set_condition(std::string_view type, const framework::CoreWording& wording, api::TimePoint now,
                     std::string_view condition_status = "True") {
    draft_.update_condition(type, condition_status, wording.reason, wording.message, now);
  }
  void announce_when_written(std::function<void()> announce) { announcements_.push_back(std::move(announce)); }

  // The draft reached the server: it is what the server has now; announce what it carried.
  void written() {
    persisted_ = draft_;
    auto announcements = std::move(announcements_);
    announcements_.clear();
    for (auto& announce : announcements) announce();
  }

 private:
  api::JobStatus draft_;
  api::JobStatus persisted_;
  std::vector<std::function<void()>> announcements_;
};

}  // namespace unitrain::controller
