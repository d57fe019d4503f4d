// One JobSet reconcile pass as a plan, in v0.12.0's order: sort the Jobs, recompute
// replicatedJobsStatus, finished (delete active Jobs, TTL), delete previous attempts, failure
// policy, success policy, headless Service, volumeClaimPolicies' claims, missing Jobs (InOrder,
// dependsOn, BlockingRecreate), suspend/resume.
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/api/meta.h"
#include "core/framework/json_members.h"
#include "frameworks/jobset/jobset.h"

namespace unitrain::frameworks::jobset {

namespace {

using framework::json_members::ensure_array;
using framework::json_members::ensure_object;
using framework::json_members::member;
using framework::json_members::put;
using json::Value;

const kube::GroupVersionResource kJobs{"batch", "v1", "jobs"};
const kube::GroupVersionResource kServices{"", "v1", "services"};
const kube::GroupVersionResource kClaims{"", "v1", "persistentvolumeclaims"};

std::string label(const Value& obj, std::string_view key) {
  return std::string(json::get_string(obj, "/metadata/labels/" + json::escape_pointer_token(key)).value_or(""));
}

int64_t to_int(std::string_view s, int64_t fallback) {
  try {
    return s.empty() ? fallback : std::stoll(std::string(s));
  } catch (...) {
    return fallback;
  }
}

// A Job condition of `type` that is True, or null.
const Value* true_condition(const Value& job, std::string_view type) {
  const Value* conditions = json::find(job, "/status/conditions");
  if (conditions == nullptr || !conditions->IsArray()) return nullptr;
  for (const auto& c : conditions->GetArray())
    if (json::string_at(c, "/type") == type && json::string_at(c, "/status") == "True") return &c;
  return nullptr;
}

bool terminating(const Value& obj) { return json::find(obj, "/metadata/deletionTimestamp") != nullptr; }

struct ChildJobs {
  std::vector<const Value*> active, succeeded, failed, previous;
};

struct RJobStatus {
  std::string name;
  int32_t ready = 0, succeeded = 0, failed = 0, active = 0, suspended = 0;
};

framework::DesiredObject desired(const kube::GroupVersionResource& resource, json::Document object) {
  framework::DesiredObject out;
  out.resource = resource;
  out.object = std::move(object);
  return out;
}

// A JobSet's status being built: its conditions with upstream's rules, and the events of the
// conditions that changed, sent once the status is written.
class StatusBuilder {
 public:
  StatusBuilder(const Value& js, std::string now) : now_(std::move(now)) {
    const Value* have = json::find(js, "/status");
    status_ = have != nullptr && have->IsObject() ? json::Document::copy_of(*have) : json::Document::object();
    if (json::find(status_.root(), "/restarts") == nullptr)
      put(status_.root(), "restarts", Value(0), status_.alloc());
  }

  json::Document& doc() { return status_; }
  int64_t restarts() const { return json::get_int(status_.root(), "/restarts").value_or(0); }

  bool condition_true(std::string_view type) const {
    const Value* conditions = json::find(status_.root(), "/conditions");
    if (conditions == nullptr || !conditions->IsArray()) return false;
    for (const auto& c : conditions->GetArray())
      if (json::string_at(c, "/type") == type) return json::string_at(c, "/status") == "True";
    return false;
  }

  // A new type is appended only when True; a status change replaces it with a new transition
  // time; a reason or message change replaces it keeping the time. An event (of `event_type`)
  // goes with every change.
  void set(std::string_view type, std::string_view status, std::string_view reason, std::string_view message,
           std::string_view event_type, std::vector<framework::StatusProposal::Event>& events) {
    auto& a = status_.alloc();
    const bool had_conditions = json::find(status_.root(), "/conditions") != nullptr;
    Value& conditions = ensure_array(status_.root(), "conditions", a);
    Value* existing = nullptr;
    for (auto& c : conditions.GetArray())
      if (json::string_at(c, "/type") == type) existing = &c;
    std::string transition = now_;
    if (existing != nullptr) {
      if (json::string_at(*existing, "/status") == status) {
        if (json::string_at(*existing, "/reason") == reason && json::string_at(*existing, "/message") == message) return;
        transition = json::string_at(*existing, "/lastTransitionTime");
      }
    } else if (status != "True") {
      if (!had_conditions) status_.root().RemoveMember("conditions");
      return;
    }
    Value c(rapidjson::kObjectType);
    c.AddMember("type", json::str(type, a), a);
    c.AddMember("status", json::str(status, a), a);
    c.AddMember("lastTransitionTime", json::str(transition, a), a);
    c.AddMember("reason", json::str(reason, a), a);
    c.AddMember("message", json::str(message, a), a);
    if (existing != nullptr) *existing = c;
    else conditions.PushBack(c, a);
    events.push_back({std::string(event_type), std::string(reason), std::string(message)});
  }

 private:
  json::Document status_;
  std::string now_;
};

class Planner {
 public:
  Planner(const Value& js, const framework::Observed& observed, api::TimePoint now)
      : js_(js), observed_(observed), now_(now), status_(js, api::format_time(now)) {}

  framework::WorkloadPlan run() {
    if (auto managed = json::get_string(js_, "/spec/managedBy"); managed && *managed != kControllerName) return {};
    sort_jobs();
    compute_replicated_jobs_status();
    if (status_.condition_true("Completed") || status_.condition_true("Failed")) {
      for (const Value* job : jobs_.active) delete_job(*job);
      ttl();
      return finish();
    }
    for (const Value* job : jobs_.previous) delete_job(*job);
    const bool suspended = json::get_bool(js_, "/spec/suspend").value_or(false);
    if (!suspended && all_ready_or_succeeded())
      status_.set("RestartingJobSet", "False", "JobsReady", "all jobs are ready", "Normal", plan_.events);
    if (!jobs_.failed.empty()) {
      failure_policy();
      return finish();
    }
    if (!jobs_.succeeded.empty() && success_policy()) return finish();
    headless_service_if_needed();
    volume_claims();
    create_missing_jobs(suspended);
    if (suspended) suspend_jobs();
    else resume_jobs();
    return finish();
  }

 private:
  const Value& rjobs() const {
    static const Value empty(rapidjson::kArrayType);
    const Value* r = json::find(js_, "/spec/replicatedJobs");
    return r != nullptr && r->IsArray() ? *r : empty;
  }
  const RJobStatus& rjob_status(std::string_view name) const {
    static const RJobStatus none;
    for (const auto& s : rjob_statuses_)
      if (s.name == name) return s;
    return none;
  }
  static bool started(const Value& rjob, const RJobStatus& s) {
    return replicas_of(rjob) == s.failed + s.ready + s.succeeded;
  }
  bool in_order() const { return json::string_at(js_, "/spec/startupPolicy/startupPolicyOrder") == "InOrder"; }

  void sort_jobs() {
    auto it = observed_.owned.find("jobs.batch");
    if (it == observed_.owned.end()) return;
    const int64_t restarts = status_.restarts();
    for (const Value* job : it->second) {
      if (to_int(label(*job, keys::kRestartAttempt), 0) < restarts) jobs_.previous.push_back(job);
      else if (true_condition(*job, "Complete") != nullptr) jobs_.succeeded.push_back(job);
      else if (true_condition(*job, "Failed") != nullptr) jobs_.failed.push_back(job);
      else jobs_.active.push_back(job);
      names_.push_back(std::string(api::name_of(*job)));
    }
  }

  // An active Job is ready when its succeeded and ready pods reach min(parallelism, completions).
  static bool job_ready(const Value& job) {
    const int64_t parallelism = json::get_int(job, "/spec/parallelism").value_or(1);
    const int64_t completions = json::get_int(job, "/spec/completions").value_or(parallelism);
    const int64_t have = json::get_int(job, "/status/succeeded").value_or(0) + json::get_int(job, "/status/ready").value_or(0);
    return have >= std::min(parallelism, completions);
  }

  void compute_replicated_jobs_status() {
    std::map<std::string, RJobStatus> by_name;
    for (const auto& rjob : rjobs().GetArray()) {
      const std::string name = json::string_at(rjob, "/name");
      by_name[name].name = name;
    }
    auto of = [&](const Value* job) -> RJobStatus* {
      auto it = by_name.find(label(*job, keys::kReplicatedJobName));
      return it == by_name.end() ? nullptr : &it->second;
    };
    for (const Value* job : jobs_.active) {
      RJobStatus* s = of(job);
      if (s == nullptr) continue;
      if (job_ready(*job)) ++s->ready;
      if (json::get_int(*job, "/status/active").value_or(0) > 0) ++s->active;
      if (json::get_bool(*job, "/spec/suspend").value_or(false)) ++s->suspended;
    }
    for (const Value* job : jobs_.succeeded)
      if (RJobStatus* s = of(job)) ++s->succeeded;
    for (const Value* job : jobs_.failed)
      if (RJobStatus* s = of(job)) ++s->failed;
    // Stored in descending name order, as upstream's in-place sort during its comparison leaves it.
    for (auto it = by_name.rbegin(); it != by_name.rend(); ++it) rjob_statuses_.push_back(it->second);
    auto& a = status_.doc().alloc();
    Value list(rapidjson::kArrayType);
    for (const auto& s : rjob_statuses_) {
      Value v(rapidjson::kObjectType);
      v.AddMember("name", json::str(s.name, a), a);
      v.AddMember("ready", s.ready, a);
      v.AddMember("succeeded", s.succeeded, a);
      v.AddMember("failed", s.failed, a);
      v.AddMember("active", s.active, a);
      v.AddMember("suspended", s.suspended, a);
      list.PushBack(v, a);
    }
    put(status_.doc().root(), "replicatedJobsStatus", std::move(list), a);
  }

  bool all_ready_or_succeeded() const {
    for (const auto& rjob : rjobs().GetArray()) {
      const auto& s = rjob_status(json::string_at(rjob, "/name"));
      if (s.ready + s.succeeded < replicas_of(rjob)) return false;
    }
    return true;
  }

  void delete_job(const Value& job) {
    if (terminating(job)) return;
    plan_.deletions.push_back({kJobs, std::string(api::name_of(job)), "Foreground"});
  }

  void set_terminal(std::string_view type, std::string_view reason, std::string_view message, std::string_view event_type) {
    status_.set(type, "True", reason, message, event_type, plan_.events);
    put(status_.doc().root(), "terminalState", type == "Completed" ? "Completed" : "Failed", status_.doc().alloc());
  }

  void fail(std::string_view reason, const std::string& message) {
    set_terminal("Failed", reason, message, "Warning");
    status_.set("RestartingJobSet", "False", "JobSetFailed", "jobset failed", "Normal", plan_.events);
  }

  // The earliest-failed of `jobs` (by its Failed condition's lastTransitionTime).
  static const Value* first_failed(const std::vector<const Value*>& jobs) {
    const Value* first = nullptr;
    std::string first_time;
    for (const Value* job : jobs) {
      const Value* c = true_condition(*job, "Failed");
      const std::string t = c != nullptr ? json::string_at(*c, "/lastTransitionTime") : "";
      if (first == nullptr || t < first_time) {
        first = job;
        first_time = t;
      }
    }
    return first;
  }

  static bool rule_applies(const Value& rule, const Value& job) {
    const Value* c = true_condition(job, "Failed");
    const std::string reason = c != nullptr ? json::string_at(*c, "/reason") : "";
    const std::string message = c != nullptr ? json::string_at(*c, "/message") : "";
    auto reasons = json::strings_at(rule, "/onJobFailureReasons");
    if (!reasons.empty() && std::find(reasons.begin(), reasons.end(), reason) == reasons.end()) return false;
    auto patterns = json::strings_at(rule, "/onJobFailureMessagePatterns");
    if (!patterns.empty() && std::none_of(patterns.begin(), patterns.end(), [&](const std::string& p) {
          try {
            return std::regex_search(message, std::regex(p, std::regex::ECMAScript));
          } catch (const std::regex_error&) {
            return false;
          }
        }))
      return false;
    auto targets = json::strings_at(rule, "/targetReplicatedJobs");
    return targets.empty() || std::find(targets.begin(), targets.end(), label(job, keys::kReplicatedJobName)) != targets.end();
  }

  void failure_policy() {
    const Value* policy = json::find(js_, "/spec/failurePolicy");
    if (policy == nullptr || !policy->IsObject()) {
      const Value* first = first_failed(jobs_.failed);
      fail("FailedJobs", fmt::format("jobset failed due to one or more job failures (first failed job: {})", api::name_of(*first)));
      return;
    }
    std::string action = "RestartJobSet";
    std::string rule_name;
    const Value* failed_job = first_failed(jobs_.failed);
    if (const Value* rules = member(policy, "rules"); rules != nullptr && rules->IsArray()) {
      for (const auto& rule : rules->GetArray()) {
        std::vector<const Value*> matching;
        for (const Value* job : jobs_.failed)
          if (rule_applies(rule, *job)) matching.push_back(job);
        if (matching.empty()) continue;
        action = json::string_at(rule, "/action");
        rule_name = json::string_at(rule, "/name");
        failed_job = first_failed(matching);
        break;
      }
    }
    const std::string job_name(api::name_of(*failed_job));
    if (action == "FailJobSet") {
      fail("FailJobSetFailurePolicyAction",
           fmt::format("applying FailJobSet failure policy action (first failed job: {})", job_name));
      return;
    }
    const bool counts = action != "RestartJobSetAndIgnoreMaxRestarts";
    auto& doc = status_.doc();
    const int64_t towards_max = json::get_int(doc.root(), "/restartsCountTowardsMax").value_or(0);
    if (counts && towards_max >= json::get_int(*policy, "/maxRestarts").value_or(0)) {
      fail("ReachedMaxRestarts",
           fmt::format("jobset failed due to reaching max number of restarts (first failed job: {})", job_name));
      return;
    }
    put(doc.root(), "restarts", Value(status_.restarts() + 1), doc.alloc());
    if (counts) put(doc.root(), "restartsCountTowardsMax", Value(towards_max + 1), doc.alloc());
    const std::string message = fmt::format("applying {} failure policy action (first failed job: {})", action, job_name);
    status_.set("RestartingJobSet", "True", rule_name.empty() ? "DefaultFailurePolicy" : "FailurePolicy_" + rule_name,
                message, "Warning", plan_.events);
    plan_.events.push_back({"Warning", action + "FailurePolicyAction", message});
  }

  bool success_policy() {
    const std::string op(json::get_string(js_, "/spec/successPolicy/operator").value_or("All"));
    auto targets = json::strings_at(js_, "/spec/successPolicy/targetReplicatedJobs");
    auto targeted = [&](std::string_view rjob) {
      return targets.empty() || std::find(targets.begin(), targets.end(), rjob) != targets.end();
    };
    int64_t expected = 1;
    if (op != "Any") {
      expected = 0;
      for (const auto& rjob : rjobs().GetArray())
        if (targeted(json::string_at(rjob, "/name"))) expected += replicas_of(rjob);
    }
    int64_t succeeded = 0;
    for (const Value* job : jobs_.succeeded)
      if (targeted(label(*job, keys::kReplicatedJobName))) ++succeeded;
    if (succeeded < expected) return false;
    set_terminal("Completed", "AllJobsCompleted", "jobset completed successfully", "Normal");
    status_.set("RestartingJobSet", "False", "JobSetCompleted", "jobset completed successfully", "Normal", plan_.events);
    return true;
  }

  void headless_service_if_needed() {
    if (!json::get_bool(js_, "/spec/network/enableDNSHostnames").value_or(false)) return;
    json::Document svc = headless_service(js_);
    const std::string name(api::name_of(svc.root()));
    for (const Value* s : observed_.services)
      if (api::name_of(*s) == name) return;
    framework::DesiredObject want = desired(kServices, std::move(svc));
    want.use_existing = true;  // upstream creates it only when no Service of that name exists
    plan_.creations.push_back(std::move(want));
  }

  // Every pass asks for each claim of volumeClaimPolicies, as upstream creates them on every
  // reconcile: one that exists (whoever's) is left as it is.
  void volume_claims() {
    for (auto& claim : jobset::volume_claims(js_)) {
      framework::DesiredObject want = desired(kClaims, std::move(claim.object));
      want.use_existing = true;
      want.owned_by_job = claim.owned_by_jobset;
      plan_.creations.push_back(std::move(want));
    }
  }

  // dependsOn: every dependency reached its status (Complete: all succeeded; Ready: all ready,
  // failed or succeeded).
  bool dependencies_met(const Value& rjob) const {
    const Value* depends = member(&rjob, "dependsOn");
    if (depends == nullptr || !depends->IsArray()) return true;
    for (const auto& d : depends->GetArray()) {
      const std::string name = json::string_at(d, "/name");
      int32_t replicas = 0;
      for (const auto& other : rjobs().GetArray())
        if (json::string_at(other, "/name") == name) replicas = replicas_of(other);
      const auto& s = rjob_status(name);
      const bool reached = json::string_at(d, "/status") == "Complete" ? s.succeeded == replicas
                                                                        : s.ready + s.failed + s.succeeded == replicas;
      if (!reached) return false;
    }
    return true;
  }

  void set_in_order_in_progress() {
    status_.set("StartupPolicyInProgress", "True", "InOrderStartupPolicyInProgress", "in order startup policy is in progress",
                "Normal", plan_.events);
    status_.set("StartupPolicyCompleted", "False", "InOrderStartupPolicyInProgress", "in order startup policy is in progress",
                "Normal", plan_.events);
  }

  // BlockingRecreate: after a restart, no Job of the new attempt until every Job of the
  // previous ones is gone (Recreate replaces each Job as soon as its own predecessor is gone).
  bool blocked_by_previous_attempt() const {
    return !jobs_.previous.empty() && json::string_at(js_, "/spec/failurePolicy/restartStrategy") == "BlockingRecreate";
  }

  void create_missing_jobs(bool suspended) {
    const Value& list = rjobs();
    const bool blocked = blocked_by_previous_attempt();
    for (rapidjson::SizeType i = 0; i < list.Size(); ++i) {
      const Value& rjob = list[i];
      if (!dependencies_met(rjob)) continue;
      if (in_order() && started(rjob, rjob_status(json::string_at(rjob, "/name")))) continue;
      for (int32_t index = 0; !blocked && index < replicas_of(rjob); ++index) {
        json::Document job = child_job(js_, i, index);
        const std::string name(api::name_of(job.root()));
        if (std::find(names_.begin(), names_.end(), name) != names_.end()) continue;
        plan_.creations.push_back(desired(kJobs, std::move(job)));
      }
      if (in_order()) {
        set_in_order_in_progress();
        return;
      }
    }
    if (!suspended && in_order()) {
      status_.set("StartupPolicyCompleted", "True", "InOrderStartupPolicyCompleted", "in order startup policy has completed",
                  "Normal", plan_.events);
      status_.set("StartupPolicyInProgress", "False", "InOrderStartupPolicyCompleted", "in order startup policy has completed",
                  "Normal", plan_.events);
    }
  }

  void suspend_jobs() {
    for (const Value* job : jobs_.active) {
      if (json::get_bool(*job, "/spec/suspend").value_or(false)) continue;
      json::Document updated = json::Document::copy_of(*job);
      put(ensure_object(updated.root(), "spec", updated.alloc()), "suspend", Value(true), updated.alloc());
      plan_.updates.push_back(desired(kJobs, std::move(updated)));
    }
    status_.set("Suspended", "True", "SuspendedJobs", "jobset is suspended", "Normal", plan_.events);
    status_.set("RestartingJobSet", "False", "JobSetSuspended", "jobset is suspended", "Normal", plan_.events);
  }

  // The replicated Job's current pod-template labels, annotations and nodeSelector merged into
  // the Job's (the JobSet's values win), tolerations and schedulingGates united, suspend lifted;
  // startTime is cleared first, as the Job's template may change only while it is unset.
  void resume_job(const Value& job, const Value& rjob) {
    json::Document updated = json::Document::copy_of(job);
    auto& a = updated.alloc();
    Value& spec = ensure_object(updated.root(), "spec", a);
    Value& pod = ensure_object(ensure_object(spec, "template", a), "metadata", a);
    const Value* want_meta = json::find(rjob, "/template/spec/template/metadata");
    for (std::string_view field : {"labels", "annotations"})
      if (const Value* want = member(want_meta, field); want != nullptr && want->IsObject())
        for (const auto& m : want->GetObject()) put(ensure_object(pod, field, a), json::view(m.name), json::clone(m.value, a), a);
    Value& pod_spec = ensure_object(spec["template"], "spec", a);
    const Value* want_spec = json::find(rjob, "/template/spec/template/spec");
    if (const Value* want = member(want_spec, "nodeSelector"); want != nullptr && want->IsObject())
      for (const auto& m : want->GetObject())
        put(ensure_object(pod_spec, "nodeSelector", a), json::view(m.name), json::clone(m.value, a), a);
    for (std::string_view field : {"tolerations", "schedulingGates"}) {
      const Value* want = member(want_spec, field);
      if (want == nullptr || !want->IsArray()) continue;
      Value& have = ensure_array(pod_spec, field, a);
      for (const auto& item : want->GetArray()) {
        bool present = false;
        for (const auto& h : have.GetArray()) present = present || json::equal(h, item);
        if (!present) have.PushBack(json::clone(item, a), a);
      }
    }
    put(spec, "suspend", Value(false), a);
    framework::DesiredObject want = desired(kJobs, std::move(updated));
    want.status_cleared_first = {"/status/startTime"};
    plan_.updates.push_back(std::move(want));
  }

  void resume_jobs() {
    for (const auto& rjob : rjobs().GetArray()) {
      const std::string name = json::string_at(rjob, "/name");
      if (in_order() && started(rjob, rjob_status(name))) continue;
      if (!dependencies_met(rjob)) continue;
      for (const Value* job : jobs_.active)
        if (label(*job, keys::kReplicatedJobName) == name && json::get_bool(*job, "/spec/suspend").value_or(false))
          resume_job(*job, rjob);
      if (in_order()) {
        set_in_order_in_progress();
        return;
      }
    }
    status_.set("Suspended", "False", "ResumeJobs", "jobset is resumed", "Normal", plan_.events);
  }

  void ttl() {
    const auto ttl = json::get_int(js_, "/spec/ttlSecondsAfterFinished");
    if (!ttl) return;
    const Value* conditions = json::find(status_.doc().root(), "/conditions");
    std::optional<api::TimePoint> finished;
    for (const auto& c : conditions->GetArray()) {
      const std::string type = json::string_at(c, "/type");
      if ((type == "Completed" || type == "Failed") && json::string_at(c, "/status") == "True")
        if (auto t = api::parse_time(json::string_at(c, "/lastTransitionTime")); t) finished = *t;
    }
    if (!finished) return;
    const api::TimePoint expiry = *finished + std::chrono::seconds(*ttl);
    if (now_ >= expiry) {
      plan_.delete_job = true;
      return;
    }
    plan_.requeue_after_ms = std::chrono::duration_cast<std::chrono::milliseconds>(expiry - now_).count();
  }

  framework::WorkloadPlan finish() {
    plan_.status = std::move(status_.doc());
    return std::move(plan_);
  }

  const Value& js_;
  const framework::Observed& observed_;
  api::TimePoint now_;
  StatusBuilder status_;
  ChildJobs jobs_;
  std::vector<std::string> names_;  // every Job of the JobSet, whatever its bucket
  std::vector<RJobStatus> rjob_statuses_;
  framework::WorkloadPlan plan_;
};

}  // namespace

framework::WorkloadPlan plan(const Value& js, const framework::Observed& observed, api::TimePoint now) {
  return Planner(js, observed, now).run();
}

}  // namespace unitrain::frameworks::jobset
