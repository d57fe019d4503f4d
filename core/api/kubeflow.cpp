#include "core/api/kubeflow.h"

#include <fmt/format.h>

#include "core/api/decode.h"

namespace unitrain::api {
namespace {

template <class T>
Result<T, FieldErrorList> finish(Decoder& d, T value) {
  if (!d.ok()) return fail(std::move(d.errors()));
  return value;
}

// Decoders that append to `d` so one pass reports every error of a whole object.
ReplicaSpec decode_replica_spec(Decoder& d, const json::Value& v, const FieldPath& p) {
  ReplicaSpec r;
  if (!d.expect_object(v, p)) return r;
  r.replicas = d.int32(v, "replicas", p);
  if (const json::Value* t = d.object(v, "template", p)) r.pod_template = json::Document::copy_of(*t);
  r.restart_policy = d.string(v, "restartPolicy", p).value_or("");
  return r;
}

SchedulingPolicy decode_scheduling_policy(Decoder& d, const json::Value& v, const FieldPath& p) {
  SchedulingPolicy s;
  if (!d.expect_object(v, p)) return s;
  s.min_available = d.int32(v, "minAvailable", p);
  s.queue = d.string(v, "queue", p).value_or("");
  if (const json::Value* m = d.object(v, "minResources", p)) {
    auto& out = s.min_resources.emplace();
    for (const auto& e : m->GetObject()) {
      std::string name(e.name.GetString(), e.name.GetStringLength());
      if (e.value.IsString()) {
        out[name] = std::string(e.value.GetString(), e.value.GetStringLength());
      } else if (e.value.IsInt64()) {
        out[name] = std::to_string(e.value.GetInt64());
      } else if (e.value.IsUint64()) {
        out[name] = std::to_string(e.value.GetUint64());
      } else if (e.value.IsNumber()) {
        out[name] = fmt::format("{}", e.value.GetDouble());
      } else {
        d.add(FieldError::invalid(p.child("minResources").key(name), FieldValue::of_json(e.value),
                                  "must be a quantity (string or number)"));
      }
    }
  }
  s.priority_class = d.string(v, "priorityClass", p).value_or("");
  s.schedule_timeout_seconds = d.int32(v, "scheduleTimeoutSeconds", p);
  return s;
}

RunPolicy decode_run_policy(Decoder& d, const json::Value& v, const FieldPath& p) {
  RunPolicy r;
  if (!d.expect_object(v, p)) return r;
  r.clean_pod_policy = d.string(v, "cleanPodPolicy", p);
  r.ttl_seconds_after_finished = d.int32(v, "ttlSecondsAfterFinished", p);
  r.active_deadline_seconds = d.int64(v, "activeDeadlineSeconds", p);
  r.backoff_limit = d.int32(v, "backoffLimit", p);
  if (const json::Value* s = Decoder::member(v, "schedulingPolicy")) {
    r.scheduling_policy = decode_scheduling_policy(d, *s, p.child("schedulingPolicy"));
  }
  r.suspend = d.boolean(v, "suspend", p);
  r.managed_by = d.string(v, "managedBy", p);
  return r;
}

JobCondition decode_condition(Decoder& d, const json::Value& v, const FieldPath& p) {
  JobCondition c;
  if (!d.expect_object(v, p)) return c;
  c.type = d.string(v, "type", p).value_or("");
  c.status = d.string(v, "status", p).value_or("");
  c.reason = d.string(v, "reason", p).value_or("");
  c.message = d.string(v, "message", p).value_or("");
  c.last_update_time = d.time(v, "lastUpdateTime", p);
  c.last_transition_time = d.time(v, "lastTransitionTime", p);
  return c;
}

ReplicaStatus decode_replica_status(Decoder& d, const json::Value& v, const FieldPath& p) {
  ReplicaStatus r;
  if (!d.expect_object(v, p)) return r;
  r.active = d.int32(v, "active", p).value_or(0);
  r.succeeded = d.int32(v, "succeeded", p).value_or(0);
  r.failed = d.int32(v, "failed", p).value_or(0);
  if (const json::Value* s = d.object(v, "labelSelector", p)) {
    r.label_selector = json::Document::copy_of(*s);
  }
  r.selector = d.string(v, "selector", p).value_or("");
  return r;
}

JobStatus decode_job_status(Decoder& d, const json::Value& v, const FieldPath& p) {
  JobStatus s;
  if (v.IsNull() || !d.expect_object(v, p)) return s;
  if (const json::Value* conds = d.array(v, "conditions", p)) {
    std::size_t i = 0;
    const FieldPath in = p.child("conditions");
    for (const auto& c : conds->GetArray()) s.conditions.push_back(decode_condition(d, c, in.index(i++)));
  }
  if (const json::Value* rs = d.object(v, "replicaStatuses", p)) {
    for (const auto& e : rs->GetObject()) {
      std::string key(e.name.GetString(), e.name.GetStringLength());
      // A null entry is a nil *ReplicaStatus upstream; the controller treats it as all zeros.
      s.replica_statuses[key] =
          e.value.IsNull() ? ReplicaStatus{} : decode_replica_status(d, e.value, p.child("replicaStatuses").key(key));
    }
  }
  s.start_time = d.time(v, "startTime", p);
  s.completion_time = d.time(v, "completionTime", p);
  s.last_reconcile_time = d.time(v, "lastReconcileTime", p);
  return s;
}

// What Go writes for a zero-value core/v1 PodTemplateSpec.
json::Value empty_pod_template(json::Allocator& a) {
  json::Value t(rapidjson::kObjectType);
  json::Value meta(rapidjson::kObjectType);
  meta.AddMember("creationTimestamp", json::Value(), a);
  json::Value spec(rapidjson::kObjectType);
  spec.AddMember("containers", json::Value(), a);
  t.AddMember("metadata", meta, a);
  t.AddMember("spec", spec, a);
  return t;
}

void put_opt_time(json::Value& obj, std::string_view key, const std::optional<TimePoint>& t, json::Allocator& a) {
  if (t) put_time(obj, key, t, a);
}

}  // namespace

// ---- ReplicaSpec --------------------------------------------------------------------------------

Result<ReplicaSpec, FieldErrorList> ReplicaSpec::from_json(const json::Value& v, const FieldPath& path) {
  Decoder d;
  auto r = decode_replica_spec(d, v, path);
  return finish(d, std::move(r));
}

json::Value ReplicaSpec::to_json(json::Allocator& a) const {
  json::Value o(rapidjson::kObjectType);
  if (replicas) put_int(o, "replicas", *replicas, a);
  o.AddMember("template", pod_template.root().IsNull() ? empty_pod_template(a) : json::clone(pod_template.root(), a), a);
  if (!restart_policy.empty()) put_string(o, "restartPolicy", restart_policy, a);
  return o;
}

Result<ReplicaSpecs, FieldErrorList> replica_specs_from_json(const json::Value& v, const FieldPath& path) {
  Decoder d;
  ReplicaSpecs specs;
  if (d.expect_object(v, path)) {
    for (const auto& e : v.GetObject()) {
      std::string key(e.name.GetString(), e.name.GetStringLength());
      // A null entry is a nil *ReplicaSpec upstream; validators report it, so keep the key.
      specs[key] = e.value.IsNull() ? ReplicaSpec{} : decode_replica_spec(d, e.value, path.key(key));
    }
  }
  return finish(d, std::move(specs));
}

json::Value replica_specs_to_json(const ReplicaSpecs& specs, json::Allocator& a) {
  json::Value o(rapidjson::kObjectType);
  for (const auto& [k, s] : specs) o.AddMember(json::str(k, a), s.to_json(a), a);
  return o;
}

// ---- SchedulingPolicy / RunPolicy --------------------------------------------------------------

Result<SchedulingPolicy, FieldErrorList> SchedulingPolicy::from_json(const json::Value& v, const FieldPath& path) {
  Decoder d;
  auto s = decode_scheduling_policy(d, v, path);
  return finish(d, std::move(s));
}

json::Value SchedulingPolicy::to_json(json::Allocator& a) const {
  json::Value o(rapidjson::kObjectType);
  if (min_available) put_int(o, "minAvailable", *min_available, a);
  if (!queue.empty()) put_string(o, "queue", queue, a);
  if (min_resources) {
    json::Value m(rapidjson::kObjectType);
    for (const auto& [k, q] : *min_resources) put_string(m, k, q, a);
    o.AddMember("minResources", m, a);
  }
  if (!priority_class.empty()) put_string(o, "priorityClass", priority_class, a);
  if (schedule_timeout_seconds) put_int(o, "scheduleTimeoutSeconds", *schedule_timeout_seconds, a);
  return o;
}

Result<RunPolicy, FieldErrorList> RunPolicy::from_json(const json::Value& v, const FieldPath& path) {
  Decoder d;
  auto r = decode_run_policy(d, v, path);
  return finish(d, std::move(r));
}

json::Value RunPolicy::to_json(json::Allocator& a) const {
  json::Value o(rapidjson::kObjectType);
  if (clean_pod_policy) put_string(o, "cleanPodPolicy", *clean_pod_policy, a);
  if (ttl_seconds_after_finished) put_int(o, "ttlSecondsAfterFinished", *ttl_seconds_after_finished, a);
  if (active_deadline_seconds) put_int(o, "activeDeadlineSeconds", *active_deadline_seconds, a);
  if (backoff_limit) put_int(o, "backoffLimit", *backoff_limit, a);
  if (scheduling_policy) o.AddMember("schedulingPolicy", scheduling_policy->to_json(a), a);
  if (suspend) put_bool(o, "suspend", *suspend, a);
  if (managed_by) put_string(o, "managedBy", *managed_by, a);
  return o;
}

// ---- JobCondition / ReplicaStatus ------------------------------------------------------------------

Result<JobCondition, FieldErrorList> JobCondition::from_json(const json::Value& v, const FieldPath& path) {
  Decoder d;
  auto c = decode_condition(d, v, path);
  return finish(d, std::move(c));
}

json::Value JobCondition::to_json(json::Allocator& a) const {
  json::Value o(rapidjson::kObjectType);
  put_string(o, "type", type, a);
  put_string(o, "status", status, a);
  if (!reason.empty()) put_string(o, "reason", reason, a);
  if (!message.empty()) put_string(o, "message", message, a);
  put_time(o, "lastUpdateTime", last_update_time, a);
  put_time(o, "lastTransitionTime", last_transition_time, a);
  return o;
}

Result<ReplicaStatus, FieldErrorList> ReplicaStatus::from_json(const json::Value& v, const FieldPath& path) {
  Decoder d;
  auto r = decode_replica_status(d, v, path);
  return finish(d, std::move(r));
}

json::Value ReplicaStatus::to_json(json::Allocator& a) const {
  json::Value o(rapidjson::kObjectType);
  if (active != 0) put_int(o, "active", active, a);
  if (succeeded != 0) put_int(o, "succeeded", succeeded, a);
  if (failed != 0) put_int(o, "failed", failed, a);
  if (!label_selector.root().IsNull()) o.AddMember("labelSelector", json::clone(label_selector.root(), a), a);
  if (!selector.empty()) put_string(o, "selector", selector, a);
  return o;
}

// ---- JobStatus ---------------------------------------------------------------------------------

Result<JobStatus, FieldErrorList> JobStatus::from_json(const json::Value& v, const FieldPath& path) {
  Decoder d;
  auto s = decode_job_status(d, v, path);
  return finish(d, std::move(s));
}

json::Value JobStatus::to_json(json::Allocator& a) const {
  json::Value o(rapidjson::kObjectType);
  if (!conditions.empty()) {
    json::Value arr(rapidjson::kArrayType);
    for (const auto& c : conditions) arr.PushBack(c.to_json(a), a);
    o.AddMember("conditions", arr, a);
  }
  if (!replica_statuses.empty()) {
    json::Value m(rapidjson::kObjectType);
    for (const auto& [k, r] : replica_statuses) m.AddMember(json::str(k, a), r.to_json(a), a);
    o.AddMember("replicaStatuses", m, a);
  }
  put_opt_time(o, "startTime", start_time, a);
  put_opt_time(o, "completionTime", completion_time, a);
  put_opt_time(o, "lastReconcileTime", last_reconcile_time, a);
  return o;
}

json::Document JobStatus::to_document() const {
  json::Document doc = json::Document::object();
  doc.root() = to_json(doc.alloc());
  return doc;
}

const JobCondition* JobStatus::condition(std::string_view type) const {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool JobStatus::has_condition(std::string_view type) const {
  for (const auto& c : conditions) {
    if (c.type == type && c.status == condition_status::kTrue) return true;
  }
  return false;
}

bool JobStatus::set_condition(std::string_view type, std::string_view reason, std::string_view message, TimePoint now) {
  return update_condition(type, condition_status::kTrue, reason, message, now, ConditionRules::TrainingOperator);
}

bool JobStatus::update_condition(std::string_view type, std::string_view status, std::string_view reason,
                                 std::string_view message, TimePoint now, ConditionRules rules) {
  if (rules == ConditionRules::TrainingOperator && is_failed()) return false;
  const TimePoint t = truncate_to_seconds(now);
  JobCondition next{std::string(type), std::string(status), std::string(reason), std::string(message), t, t};
  if (const JobCondition* current = condition(type)) {
    if (current->status == status && current->reason == reason) return false;
    if (current->status == status) next.last_transition_time = current->last_transition_time;
  }
  const bool terminal = type == condition_type::kFailed || type == condition_type::kSucceeded;
  std::vector<JobCondition> kept;
  kept.reserve(conditions.size() + 1);
  for (auto& c : conditions) {
    if (type == condition_type::kRestarting && c.type == condition_type::kRunning) continue;
    if (type == condition_type::kRunning && c.type == condition_type::kRestarting) continue;
    if (c.type == type) continue;
    if (terminal && (c.type == condition_type::kRunning ||
                     (rules == ConditionRules::MPIOperator && c.type == condition_type::kFailed))) {
      c.status = condition_status::kFalse;
    }
    kept.push_back(std::move(c));
  }
  kept.push_back(std::move(next));
  conditions = std::move(kept);
  return true;
}

// ---- Whole-object conveniences ------------------------------------------------------------------

Result<JobStatus, FieldErrorList> job_status_of(const json::Value& job) {
  const json::Value* s = Decoder::member(job, "status");
  if (!s) return JobStatus{};
  return JobStatus::from_json(*s, FieldPath("status"));
}

Status set_job_status(json::Document& job, const JobStatus& status) {
  if (!job.root().IsObject()) return fail("set_job_status: the job is not a JSON object");
  json::Value v = status.to_json(job.alloc());
  auto it = job.root().FindMember("status");
  if (it != job.root().MemberEnd()) {
    it->value = std::move(v);
  } else {
    job.root().AddMember("status", v, job.alloc());
  }
  return {};
}

Result<RunPolicy, FieldErrorList> run_policy_of(const json::Value& job) {
  const FieldPath p = FieldPath("spec").child("runPolicy");
  const json::Value* spec = Decoder::member(job, "spec");
  if (!spec) return RunPolicy{};
  if (!spec->IsObject()) return fail(FieldErrorList{FieldError::invalid(FieldPath("spec"), FieldValue::of_json(*spec), "must be an object")});
  const json::Value* rp = Decoder::member(*spec, "runPolicy");
  if (!rp) return RunPolicy{};
  return RunPolicy::from_json(*rp, p);
}

}  // namespace unitrain::api
