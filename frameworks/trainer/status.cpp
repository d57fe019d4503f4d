#include "frameworks/trainer/status.h"

#include <algorithm>

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

json::Value condition(std::string_view type, std::string_view status, std::string_view reason, std::string_view message,
                      json::Allocator& a) {
  json::Value c(rapidjson::kObjectType);
  c.AddMember("type", json::str(type, a), a);
  c.AddMember("status", json::str(status, a), a);
  c.AddMember("reason", json::str(reason, a), a);
  c.AddMember("message", json::str(message, a), a);
  return c;
}

}  // namespace

bool finished(const json::Value& trainjob) {
  const json::Value* conditions = json::find(trainjob, "/status/conditions");
  return is_true(conditions, "Complete") || is_true(conditions, "Failed");
}

void set_condition(json::Value& conditions, const json::Value& cond, api::TimePoint now, json::Allocator& a) {
  if (!conditions.IsArray()) conditions.SetArray();
  const std::string type = string_at(cond, "/type");
  const std::string given_time = string_at(cond, "/lastTransitionTime");
  const std::string time = given_time.empty() ? api::format_time(now) : given_time;
  for (auto& existing : conditions.GetArray()) {
    if (string_at(existing, "/type") != type) continue;
    if (string_at(existing, "/status") != string_at(cond, "/status")) {
      jm::put(existing, "status", json::clone(cond["status"], a), a);
      jm::put(existing, "lastTransitionTime", time, a);
    }
    jm::put(existing, "reason", string_at(cond, "/reason"), a);
    jm::put(existing, "message", string_at(cond, "/message"), a);
    if (const json::Value* g = jm::member(&cond, "observedGeneration")) jm::put(existing, "observedGeneration", json::clone(*g, a), a);
    return;
  }
  json::Value added(cond, a);
  jm::put(added, "lastTransitionTime", time, a);
  conditions.PushBack(std::move(added), a);
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
    set_condition(conditions, condition("Suspended", "True", "Suspended", "TrainJob is suspended", a), now, a);
  } else if (is_true(&conditions, "Suspended")) {
    set_condition(conditions, condition("Suspended", "False", "Resumed", "TrainJob is resumed", a), now, a);
  }

  // The JobSet's terminal conditions and its replicated Jobs' counters.
  if (jobset != nullptr) {
    const json::Value* js_conditions = json::find(*jobset, "/status/conditions");
    for (auto [from, to] : {std::pair{"Completed", "Complete"}, std::pair{"Failed", "Failed"}}) {
      const json::Value* c = condition_of(js_conditions, from);
      if (c == nullptr || string_at(*c, "/status") != "True") continue;
      json::Value renamed(*c, a);
      jm::put(renamed, "type", to, a);
      set_condition(conditions, renamed, now, a);
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
        set_condition(conditions,
                      condition("Failed", "True", "DeadlineExceeded", "TrainJob exceeded its active deadline", a), now, a);
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
