#include "frameworks/trainer/status.h"

#include <algorithm>

#include "core/api/meta.h"
#include "core/framework/json_members.h"

namespace unitrain::frameworks::trainer {
namespace {

namespace jm = framework::json_members;
using json::string_at;

const json::Value* condition_of(const json::Value* conditions, std::string_view type) {
  if (conditions == nullptr || !conditions->IsArray()) return nullptr;
  for (const auto& c : conditions->GetArray()) {
    if (string_at(c, "/type") == type) return &c;
  }
  return nullptr;
}

bool is_true(const json::Value* conditions, std::string_view type) {
  const json::Value* c = condition_of(conditions, type);
  return c != nullptr && string_at(*c, "/status") == "True";
}

}  // namespace

bool finished(const json::Value& trainjob) {
  const json::Value* conditions = json::find(trainjob, "/status/conditions");
  return is_true(conditions, "Complete") || is_true(conditions, "Failed");
}

StatusDecision next_status(const json::Value& trainjob, const json::Value* jobset, api::TimePoint now) {
  StatusDecision out;
  if (const json::Value* s = jm::member(&trainjob, "status"); s && s->IsObject()) out.status = json::Document::copy_of(*s);
  auto& a = out.status.alloc();
  json::Value& conditions = jm::ensure_array(out.status.root(), "conditions", a);
  const bool was_finished = finished(trainjob);

  // Suspended.
  const bool suspend = json::get_bool(trainjob, "/spec/suspend").value_or(false);
  if (suspend) {
    api::set_status_condition(conditions, {"Suspended", "True", 0, std::nullopt, "Suspended", "TrainJob is suspended"},
                              now, a);
  } else if (is_true(&conditions, "Suspended")) {
    api::set_status_condition(conditions, {"Suspended", "False", 0, std::nullopt, "Resumed", "TrainJob is resumed"},
                              now, a);
  }

  // The JobSet's terminal conditions and its replicated Jobs' counters.
  if (jobset != nullptr) {
    const json::Value* js_conditions = json::find(*jobset, "/status/conditions");
    for (auto [from, to] : {std::pair{"Completed", "Complete"}, std::pair{"Failed", "Failed"}}) {
      const json::Value* c = condition_of(js_conditions, from);
      if (c == nullptr || string_at(*c, "/status") != "True") continue;
      // Its time, reason and message carried over (a malformed time: the transition is now).
      auto decoded = api::Condition::from_json(*c, api::FieldPath("status.conditions"));
      api::Condition renamed = decoded ? std::move(*decoded)
                                       : api::Condition{"", "True", 0, std::nullopt, string_at(*c, "/reason"),
                                                        string_at(*c, "/message")};
      renamed.type = to;
      api::set_status_condition(conditions, std::move(renamed), now, a);
    }
    json::Value jobs(rapidjson::kArrayType);
    if (const json::Value* rjs = json::find(*jobset, "/status/replicatedJobsStatus"); rjs && rjs->IsArray()) {
      for (const auto& r : rjs->GetArray()) {
        json::Value e(rapidjson::kObjectType);
        e.AddMember("name", json::str(string_at(r, "/name"), a), a);
        for (const char* k : {"ready", "succeeded", "failed", "active", "suspended"}) {
          e.AddMember(json::str(k, a), json::Value(static_cast<int>(json::get_int(r, std::string("/") + k).value_or(0))), a);
        }
        jobs.PushBack(std::move(e), a);
      }
    }
    if (!jobs.Empty() || jm::member(&out.status.root(), "jobsStatus") != nullptr) {
      jm::put(out.status.root(), "jobsStatus", std::move(jobs), a);
    }
  }

  // activeDeadlineSeconds: from creation, or from the last resume.
  const int64_t deadline = json::get_int(trainjob, "/spec/activeDeadlineSeconds").value_or(0);
  const bool now_finished = is_true(&conditions, "Complete") || is_true(&conditions, "Failed");
  if (deadline > 0 && !was_finished && !now_finished && !suspend) {
    std::string start = string_at(trainjob, "/metadata/creationTimestamp");
    if (const json::Value* s = condition_of(&conditions, "Suspended"); s && string_at(*s, "/status") == "False") {
      start = string_at(*s, "/lastTransitionTime");
    }
    if (auto t = api::parse_time(start)) {
      const api::TimePoint due = *t + std::chrono::seconds(deadline);
      if (now > due) {
        api::set_status_condition(conditions,
                                  {"Failed", "True", 0, std::nullopt, "DeadlineExceeded",
                                   "TrainJob exceeded its active deadline"},
                                  now, a);
        out.delete_jobset = true;
      } else {
        auto left = std::chrono::ceil<std::chrono::seconds>(due - now);
        out.requeue_after = std::max(left, std::chrono::seconds(1));
      }
    }
  }
  if (conditions.Empty()) json::remove(out.status, "/conditions");
  return out;
}

}  // namespace unitrain::frameworks::trainer
