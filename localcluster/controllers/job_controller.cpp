#include "localcluster/controllers/job_controller.h"

#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "core/api/time.h"
#include "localcluster/completion_indexes.h"
#include "localcluster/controllers/controller_base.h"
#include "localcluster/controllers/job_policies.h"

namespace unitrain::localcluster::controllers {

namespace {

using json::Value;

constexpr std::string_view kJobNameLabel = "batch.kubernetes.io/job-name";
constexpr std::string_view kControllerUidLabel = "batch.kubernetes.io/controller-uid";
constexpr std::string_view kLegacyJobNameLabel = "job-name";
constexpr std::string_view kLegacyControllerUidLabel = "controller-uid";
constexpr std::string_view kTrackingAnnotation = "batch.kubernetes.io/job-tracking";
constexpr std::string_view kCompletionIndexKey = "batch.kubernetes.io/job-completion-index";
constexpr std::string_view kIndexFailureCountAnnotation = "batch.kubernetes.io/job-index-failure-count";
constexpr std::string_view kIndexIgnoredFailureCountAnnotation = "batch.kubernetes.io/job-index-ignored-failure-count";
constexpr std::string_view kCompletionIndexEnv = "JOB_COMPLETION_INDEX";
// names.MaxGeneratedNameLength: a generateName longer than this is cut before the random suffix.
constexpr size_t kMaxGeneratedNameLength = 63 - 5;

constexpr std::string_view kBackoffMessage = "Job has reached the specified backoff limit";
constexpr std::string_view kDeadlineMessage = "Job was active longer than specified deadline";
constexpr std::string_view kCompleteMessage = "Reached expected number of succeeded pods";
constexpr std::string_view kMaxFailedIndexesMessage = "Job has exceeded the specified maximal number of failed indexes";
constexpr std::string_view kFailedIndexesMessage = "Job has failed indexes";

std::string label_ptr(std::string_view prefix, std::string_view key) {
  return std::string(prefix) + json::escape_pointer_token(key);
}

// An annotation's value as the Job controller reads a count: strconv.Atoi, and -1 (unknown) for
// anything that is not a non-negative int32.
int64_t annotation_count(const Value& pod, std::string_view key) {
  std::string_view v = str_at(pod, label_ptr("/metadata/annotations/", key));
  if (v.empty() || v.size() > 10) return -1;
  int64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n > 2147483647 ? -1 : n;
}

struct PodState {
  std::string name;
  std::string phase;
  bool deleting = false;
  bool ready = false;
  int64_t restarts = 0;
  int64_t index = -1;  // the completion index annotation; -1 when absent or not a number
  int64_t failure_count = 0, ignored_failure_count = 0;  // the per-index annotations
  PodFailureFacts facts;  // of a Failed pod, for the pod failure policy
  bool terminal() const { return phase == "Succeeded" || phase == "Failed"; }
};

// The Job's spec as the controller reads it on every sync.
struct JobSpecView {
  bool indexed = false;
  int64_t completions = 0;  // Indexed only
  std::optional<int64_t> backoff_limit_per_index, max_failed_indexes;
  const Value* pod_failure_policy = nullptr;
  const Value* success_policy = nullptr;

  explicit JobSpecView(const Value& job) {
    indexed = str_at(job, "/spec/completionMode") == "Indexed";
    completions = json::get_int(job, "/spec/completions").value_or(0);
    backoff_limit_per_index = json::get_int(job, "/spec/backoffLimitPerIndex");
    max_failed_indexes = json::get_int(job, "/spec/maxFailedIndexes");
    pod_failure_policy = json::find(job, "/spec/podFailurePolicy");
    if (pod_failure_policy && !pod_failure_policy->IsObject()) pod_failure_policy = nullptr;
    success_policy = json::find(job, "/spec/successPolicy");
    if (success_policy && !success_policy->IsObject()) success_policy = nullptr;
  }
  bool per_index() const { return indexed && backoff_limit_per_index.has_value(); }
  bool valid_index(int64_t i) const { return !indexed || (i >= 0 && i < completions); }
};

struct JobState {
  std::string ns, name, uid;
  json::Document obj;
  std::map<std::string, PodState> pods;  // uid
  std::unordered_set<std::string> counted;
  std::unordered_set<std::string> deleted_by_us;
  // Terminal pods seen since the last status write; counted at the event, so a pod that ends and
  // disappears within one batch of events is still counted.
  int64_t new_succeeded = 0, new_failed = 0;
  CompletionIndexes new_succeeded_indexes, new_failed_indexes;
  // Per index (backoffLimitPerIndex): the failure counts the next pod of the index carries.
  std::map<int64_t, int64_t> index_failures, index_ignored_failures;
  // The first failed pod that matched a FailJob rule of the pod failure policy.
  std::string fail_job_message;
  EventLoop::TimerId deadline_timer = 0, ttl_timer = 0;
};

bool condition_true(const Value& status, std::string_view type) {
  const Value* c = find_condition(status, "/conditions", type);
  return c && str_at(*c, "/status") == "True";
}

}  // namespace

struct JobController::Impl {
  Store& store;
  EventLoop loop;
  std::optional<ResourceInfo> jobs_r, pods_r;
  std::unordered_map<std::string, JobState> jobs;                     // uid
  std::unordered_map<std::string, std::string> job_uid_by_key;        // ns/name -> uid
  std::unordered_map<std::string, std::map<std::string, PodState>> early_pods;  // job uid -> pods seen first
  std::unordered_map<std::string, std::string> pod_owner;             // pod uid -> job uid
  std::set<std::string> dirty;                                        // job uids

  explicit Impl(Store& s) : store(s), loop(s, "job-controller") {}

  // ---- watch handlers -------------------------------------------------------------------------

  void on_job(EventType type, const Value& obj) {
    std::string uid(str_at(obj, "/metadata/uid"));
    std::string key = key_of(str_at(obj, "/metadata/namespace"), str_at(obj, "/metadata/name"));
    if (type == EventType::Deleted) {
      auto it = jobs.find(uid);
      if (it != jobs.end()) {
        if (it->second.deadline_timer) loop.cancel(it->second.deadline_timer);
        if (it->second.ttl_timer) loop.cancel(it->second.ttl_timer);
        for (const auto& [puid, p] : it->second.pods) pod_owner.erase(puid);
        jobs.erase(it);
      }
      if (auto k = job_uid_by_key.find(key); k != job_uid_by_key.end() && k->second == uid) job_uid_by_key.erase(k);
      return;
    }
    auto [it, inserted] = jobs.try_emplace(uid);
    JobState& j = it->second;
    if (inserted) {
      j.ns = std::string(str_at(obj, "/metadata/namespace"));
      j.name = std::string(str_at(obj, "/metadata/name"));
      j.uid = uid;
      if (auto e = early_pods.find(uid); e != early_pods.end()) {
        j.pods = std::move(e->second);
        early_pods.erase(e);
      }
      j.obj = json::Document::copy_of(obj);
      // A Job that already counted pods (a restart over a persisted store) has counted these.
      bool has_counts = json::get_int(obj, "/status/succeeded").value_or(0) > 0 ||
                        json::get_int(obj, "/status/failed").value_or(0) > 0;
      for (const auto& [puid, p] : j.pods) account(j, puid, p, false, !(has_counts && p.terminal()));
    }
    job_uid_by_key[key] = uid;
    j.obj = json::Document::copy_of(obj);
    dirty.insert(uid);
  }

  static std::string controller_uid(const Value& pod) {
    const Value* refs = json::find(pod, "/metadata/ownerReferences");
    if (!refs || !refs->IsArray()) return {};
    for (const auto& r : refs->GetArray())
      if (json::get_bool(r, "/controller").value_or(false) && str_at(r, "/kind") == "Job" &&
          str_at(r, "/apiVersion") == "batch/v1")
        return std::string(str_at(r, "/uid"));
    return {};
  }

  static PodState pod_state(const Value& pod) {
    PodState p;
    p.name = std::string(str_at(pod, "/metadata/name"));
    p.phase = std::string(str_at(pod, "/status/phase"));
    p.deleting = json::find(pod, "/metadata/deletionTimestamp") != nullptr;
    const Value* c = find_condition(pod, "/status/conditions", "Ready");
    p.ready = c && str_at(*c, "/status") == "True";
    p.index = annotation_count(pod, kCompletionIndexKey);
    p.failure_count = std::max<int64_t>(annotation_count(pod, kIndexFailureCountAnnotation), 0);
    p.ignored_failure_count = std::max<int64_t>(annotation_count(pod, kIndexIgnoredFailureCountAnnotation), 0);
    if (p.phase == "Failed") p.facts = pod_failure_facts(pod);
    for (const char* ptr : {"/status/containerStatuses", "/status/initContainerStatuses"})
      if (const Value* cs = json::find(pod, ptr); cs && cs->IsArray())
        for (const auto& s : cs->GetArray()) p.restarts += json::get_int(s, "/restartCount").value_or(0);
    return p;
  }

  // Counts a pod that ended (or vanished). `totals` false: the Job's status already counts it (a
  // restart over a persisted store); only what the next pods of its index need is remembered.
  static void account(JobState& j, const std::string& puid, const PodState& p, bool gone, bool totals = true) {
    if (j.counted.count(puid)) return;
    const JobSpecView spec(j.obj.root());
    if (p.phase == "Succeeded") {
      j.counted.insert(puid);
      if (!totals) return;
      if (!spec.indexed)
        ++j.new_succeeded;
      else if (spec.valid_index(p.index))
        j.new_succeeded_indexes.add(p.index);
    } else if (p.phase == "Failed" || gone) {
      j.counted.insert(puid);
      // Pods deleted for suspend or scale-down, and pods without a valid index, never count.
      if (j.deleted_by_us.count(puid) || !spec.valid_index(p.index)) return;
      FailureMatch m;
      if (p.phase == "Failed") m = match_pod_failure_policy(spec.pod_failure_policy, p.facts);
      if (spec.per_index()) {
        int64_t& next = m.counts() ? j.index_failures[p.index] : j.index_ignored_failures[p.index];
        next = std::max(next, (m.counts() ? p.failure_count : p.ignored_failure_count) + 1);
      }
      if (!totals) return;
      if (m.action == FailureAction::FailJob && j.fail_job_message.empty()) j.fail_job_message = m.fail_job_message;
      if (m.counts()) ++j.new_failed;
      if (spec.per_index() && (m.action == FailureAction::FailIndex ||
                               (m.counts() && p.failure_count >= *spec.backoff_limit_per_index)))
        j.new_failed_indexes.add(p.index);
    }
  }

  void on_pod(EventType type, const Value& obj) {
    std::string puid(str_at(obj, "/metadata/uid"));
    std::string owner = type == EventType::Deleted ? std::string() : controller_uid(obj);
    if (owner.empty()) {
      auto o = pod_owner.find(puid);
      if (o == pod_owner.end()) return;
      owner = o->second;
    }
    auto it = jobs.find(owner);
    std::map<std::string, PodState>* pods = it != jobs.end() ? &it->second.pods : &early_pods[owner];
    if (type == EventType::Deleted) {
      // A pod removed before it reached a terminal phase counts as failed, as in Kubernetes.
      if (auto p = pods->find(puid); p != pods->end() && it != jobs.end()) account(it->second, puid, p->second, true);
      pods->erase(puid);
      pod_owner.erase(puid);
      if (it != jobs.end()) dirty.insert(owner);
      return;
    }
    pod_owner[puid] = owner;
    PodState& state = (*pods)[puid] = pod_state(obj);
    if (it != jobs.end()) {
      account(it->second, puid, state, false);
      dirty.insert(owner);
    }
  }

  // ---- sync -----------------------------------------------------------------------------------

  // Writes the defaults kube-apiserver applies at create when the store did not. True: the Job
  // could not be brought up to date now (sync again on its next event).
  bool default_spec(JobState& j) {
    const Value& job = j.obj.root();
    bool manual = json::get_bool(job, "/spec/manualSelector").value_or(false);
    bool needs = (!manual && !json::find(job, "/spec/selector")) || !json::find(job, "/spec/backoffLimit") ||
                 (!json::find(job, "/spec/completions") && !json::find(job, "/spec/parallelism")) ||
                 !json::find(job, "/spec/completionMode") || !json::find(job, "/spec/podReplacementPolicy") ||
                 (!manual && str_at(job, label_ptr("/spec/template/metadata/labels/", kControllerUidLabel)).empty());
    if (!needs) return false;
    for (int attempt = 0; attempt < 5; ++attempt) {
      auto got = store.get(*jobs_r, j.ns, j.name);
      if (!got) return true;
      json::Document d = std::move(*got);
      if (str_at(d.root(), "/metadata/uid") != j.uid) return true;
      auto& r = d.root();
      if (!json::find(r, "/spec/completions") && !json::find(r, "/spec/parallelism")) {
        (void)json::set_int(d, "/spec/completions", 1);
        (void)json::set_int(d, "/spec/parallelism", 1);
      } else if (!json::find(r, "/spec/parallelism")) {
        (void)json::set_int(d, "/spec/parallelism", 1);
      }
      if (!json::find(r, "/spec/backoffLimit"))
        (void)json::set_int(d, "/spec/backoffLimit", json::find(r, "/spec/backoffLimitPerIndex") ? 2147483647 : 6);
      if (!json::find(r, "/spec/completionMode")) (void)json::set_string(d, "/spec/completionMode", "NonIndexed");
      if (!json::find(r, "/spec/suspend")) (void)json::set_bool(d, "/spec/suspend", false);
      if (!json::find(r, "/spec/podReplacementPolicy"))
        (void)json::set_string(d, "/spec/podReplacementPolicy",
                               json::find(r, "/spec/podFailurePolicy") ? "Failed" : "TerminatingOrFailed");
      if (!json::get_bool(r, "/spec/manualSelector").value_or(false)) {
        if (!json::find(r, "/spec/selector"))
          (void)json::set_string(d, label_ptr("/spec/selector/matchLabels/", kControllerUidLabel), j.uid);
        (void)json::set_string(d, label_ptr("/spec/template/metadata/labels/", kControllerUidLabel), j.uid);
        (void)json::set_string(d, label_ptr("/spec/template/metadata/labels/", kJobNameLabel), j.name);
        (void)json::set_string(d, label_ptr("/spec/template/metadata/labels/", kLegacyControllerUidLabel), j.uid);
        (void)json::set_string(d, label_ptr("/spec/template/metadata/labels/", kLegacyJobNameLabel), j.name);
      }
      auto put = store.update(*jobs_r, j.ns, j.name, std::move(d));
      if (put) {
        j.obj = std::move(*put);
        return false;
      }
      if (put.error().code != 409) return true;
    }
    return true;
  }

  // `counts` false: the pod's end never counts as a failure (suspend, scale down).
  void delete_pod(JobState& j, const std::string& puid, PodState& p, bool counts = false) {
    DeleteRequest req;
    req.precondition_uid = puid;
    req.propagation_policy = "Background";
    if (!counts) j.deleted_by_us.insert(puid);
    if (store.remove(*pods_r, j.ns, p.name, req)) p.deleting = true;
  }

  // The generateName of index `index`'s pods: `<job>-<index>-`, the job name cut so that the whole
  // stays within the generated-name limit.
  static std::string indexed_generate_name(const std::string& job, int64_t index) {
    std::string suffix = "-" + std::to_string(index) + "-";
    std::string prefix = job + suffix;
    if (prefix.size() > kMaxGeneratedNameLength) prefix = prefix.substr(0, kMaxGeneratedNameLength - suffix.size()) + suffix;
    return prefix;
  }

  // JOB_COMPLETION_INDEX from the pod's completion-index label, appended to every container and
  // init container that does not set it already.
  static void add_completion_index_env(json::Document& pod) {
    auto& a = pod.alloc();
    for (const char* list : {"/spec/initContainers", "/spec/containers"}) {
      Value* cs = json::find(pod.root(), list);
      if (!cs || !cs->IsArray()) continue;
      for (auto& c : cs->GetArray()) {
        if (!c.IsObject()) continue;
        if (!c.HasMember("env") || !c["env"].IsArray()) {
          c.RemoveMember("env");
          c.AddMember("env", Value(rapidjson::kArrayType), a);
        }
        Value& env = c["env"];
        bool present = false;
        for (const auto& e : env.GetArray())
          if (str_at(e, "/name") == kCompletionIndexEnv) present = true;
        if (present) continue;
        auto var = json::Document::object();
        (void)json::set_string(var, "/name", kCompletionIndexEnv);
        (void)json::set_string(var, "/valueFrom/fieldRef/fieldPath",
                               fmt::format("metadata.labels['{}']", kCompletionIndexKey));
        env.PushBack(json::clone(var.root(), a), a);
      }
    }
  }

  // `index` -1: a NonIndexed Job's pod.
  bool create_pod(JobState& j, int64_t index = -1) {
    const Value& job = j.obj.root();
    auto pod = json::Document::object();
    (void)json::set_string(pod, "/apiVersion", "v1");
    (void)json::set_string(pod, "/kind", "Pod");
    (void)json::set_string(pod, "/metadata/generateName", index < 0 ? j.name + "-" : indexed_generate_name(j.name, index));
    (void)json::set_string(pod, "/metadata/namespace", j.ns);
    if (const Value* l = json::find(job, "/spec/template/metadata/labels"); l && l->IsObject())
      (void)json::set(pod, "/metadata/labels", json::clone(*l, pod.alloc()));
    if (const Value* a = json::find(job, "/spec/template/metadata/annotations"); a && a->IsObject())
      (void)json::set(pod, "/metadata/annotations", json::clone(*a, pod.alloc()));
    (void)json::set_string(pod, label_ptr("/metadata/labels/", kControllerUidLabel), j.uid);
    (void)json::set_string(pod, label_ptr("/metadata/labels/", kJobNameLabel), j.name);
    (void)json::set_string(pod, label_ptr("/metadata/labels/", kLegacyControllerUidLabel), j.uid);
    (void)json::set_string(pod, label_ptr("/metadata/labels/", kLegacyJobNameLabel), j.name);
    (void)json::set_string(pod, label_ptr("/metadata/annotations/", kTrackingAnnotation), "");
    Value refs(rapidjson::kArrayType);
    Value ref(rapidjson::kObjectType);
    auto& a = pod.alloc();
    ref.AddMember("apiVersion", "batch/v1", a);
    ref.AddMember("kind", "Job", a);
    ref.AddMember("name", json::str(j.name, a), a);
    ref.AddMember("uid", json::str(j.uid, a), a);
    ref.AddMember("controller", true, a);
    ref.AddMember("blockOwnerDeletion", true, a);
    refs.PushBack(ref, a);
    (void)json::set(pod, "/metadata/ownerReferences", std::move(refs));
    if (const Value* spec = json::find(job, "/spec/template/spec"))
      (void)json::set(pod, "/spec", json::clone(*spec, pod.alloc()));
    if (index >= 0) {
      std::string ix = std::to_string(index);
      (void)json::set_string(pod, label_ptr("/metadata/annotations/", kCompletionIndexKey), ix);
      (void)json::set_string(pod, label_ptr("/metadata/labels/", kCompletionIndexKey), ix);
      (void)json::set_string(pod, "/spec/hostname", j.name + "-" + ix);
      add_completion_index_env(pod);
      if (JobSpecView(job).per_index()) {
        auto failures = j.index_failures.find(index);
        (void)json::set_string(pod, label_ptr("/metadata/annotations/", kIndexFailureCountAnnotation),
                               std::to_string(failures == j.index_failures.end() ? 0 : failures->second));
        if (auto ignored = j.index_ignored_failures.find(index); ignored != j.index_ignored_failures.end() && ignored->second > 0)
          (void)json::set_string(pod, label_ptr("/metadata/annotations/", kIndexIgnoredFailureCountAnnotation),
                                 std::to_string(ignored->second));
      }
    }
    auto created = store.create(*pods_r, j.ns, std::move(pod));
    if (!created) return false;
    std::string puid(str_at(created->root(), "/metadata/uid"));
    pod_owner[puid] = j.uid;
    j.pods[puid] = pod_state(created->root());
    return true;
  }

  static Value make_condition(json::Document& d, std::string_view type, std::string_view status,
                              std::string_view reason, std::string_view message, const std::string& now) {
    auto& a = d.alloc();
    Value c(rapidjson::kObjectType);
    c.AddMember("type", json::str(type, a), a);
    c.AddMember("status", json::str(status, a), a);
    c.AddMember("lastProbeTime", json::str(now, a), a);
    c.AddMember("lastTransitionTime", json::str(now, a), a);
    c.AddMember("reason", json::str(reason, a), a);
    c.AddMember("message", json::str(message, a), a);
    return c;
  }

  // Sets a condition in `st` (a status document): a new entry, or an update of status/reason/
  // message that moves lastTransitionTime only when the status flips.
  static void set_condition(json::Document& st, std::string_view type, std::string_view status,
                            std::string_view reason, std::string_view message, const std::string& now) {
    Value* conds = json::find(st.root(), "/conditions");
    if (!conds || !conds->IsArray()) {
      (void)json::set(st, "/conditions", Value(rapidjson::kArrayType));
      conds = json::find(st.root(), "/conditions");
    }
    auto& a = st.alloc();
    for (auto& c : conds->GetArray()) {
      if (str_at(c, "/type") != type) continue;
      if (str_at(c, "/status") == status && str_at(c, "/reason") == reason) return;
      bool flipped = str_at(c, "/status") != status;
      c.RemoveMember("status");
      c.AddMember("status", json::str(status, a), a);
      c.RemoveMember("reason");
      c.AddMember("reason", json::str(reason, a), a);
      c.RemoveMember("message");
      c.AddMember("message", json::str(message, a), a);
      c.RemoveMember("lastProbeTime");
      c.AddMember("lastProbeTime", json::str(now, a), a);
      if (flipped) {
        c.RemoveMember("lastTransitionTime");
        c.AddMember("lastTransitionTime", json::str(now, a), a);
      }
      return;
    }
    conds->PushBack(make_condition(st, type, status, reason, message, now), a);
  }

  // Creates and deletes pods toward min(parallelism, completions left). An Indexed Job creates the
  // lowest indexes that are neither succeeded, failed, nor running (nor terminating under
  // podReplacementPolicy Failed), and first deletes pods with a repeated or out-of-range index.
  void manage_pods(JobState& j, const JobSpecView& spec, int64_t parallelism, std::optional<int64_t> completions,
                   int64_t succeeded, const CompletionIndexes& succeeded_indexes,
                   const CompletionIndexes& failed_indexes, bool replace_only_failed) {
    std::vector<std::string> active;
    int64_t terminating = 0;
    CompletionIndexes busy = succeeded_indexes;
    busy.add(failed_indexes);
    for (const auto& [puid, p] : j.pods) {
      if (p.terminal()) continue;
      if (p.deleting) {
        ++terminating;
        if (replace_only_failed && p.index >= 0) busy.add(p.index);
        continue;
      }
      active.push_back(puid);
    }
    if (spec.indexed) {
      // Repeated and invalid indexes go first; the pod kept for an index is the first seen.
      std::set<int64_t> seen;
      std::vector<std::string> kept;
      for (const auto& puid : active) {
        PodState& p = j.pods[puid];
        if (!spec.valid_index(p.index) || !seen.insert(p.index).second)
          delete_pod(j, puid, p);
        else
          kept.push_back(puid);
      }
      if (kept.size() != active.size()) return;  // deletions only, this round (as upstream)
      for (const auto& puid : active) busy.add(j.pods[puid].index);
    }
    int64_t want = completions ? std::min(parallelism, std::max<int64_t>(*completions - succeeded, 0))
                               : (succeeded > 0 ? 0 : parallelism);
    int64_t have = static_cast<int64_t>(active.size()) + (replace_only_failed ? terminating : 0);
    if (static_cast<int64_t>(active.size()) > want) {
      for (int64_t i = 0; i < static_cast<int64_t>(active.size()) - want; ++i) {
        const auto& puid = active[active.size() - 1 - static_cast<size_t>(i)];
        delete_pod(j, puid, j.pods[puid]);
      }
      return;
    }
    int64_t missing = want - have;
    if (!spec.indexed) {
      for (int64_t i = 0; i < missing; ++i)
        if (!create_pod(j)) break;
      return;
    }
    for (int64_t index = 0; index < spec.completions && missing > 0; ++index) {
      if (busy.has(index)) continue;
      if (!create_pod(j, index)) break;
      --missing;
    }
  }

  void sync(const std::string& uid) {
    auto jit = jobs.find(uid);
    if (jit == jobs.end()) return;
    JobState& j = jit->second;
    if (json::find(j.obj.root(), "/metadata/deletionTimestamp")) return;
    // A Job another controller manages (spec.managedBy, e.g. MultiKueue) is left to it.
    if (auto by = str_at(j.obj.root(), "/spec/managedBy"); !by.empty() && by != "kubernetes.io/job-controller") return;
    if (default_spec(j)) return;
    const Value& job = j.obj.root();  // after default_spec, which may replace j.obj

    json::Document st = json::find(job, "/status") && json::find(job, "/status")->IsObject()
                            ? json::Document::copy_of(*json::find(job, "/status"))
                            : json::Document::object();
    const json::Document before = st;
    std::string now = now_rfc3339();
    auto now_tp = std::chrono::system_clock::now();

    auto parallelism = json::get_int(job, "/spec/parallelism").value_or(1);
    auto completions = json::get_int(job, "/spec/completions");
    auto backoff_limit = json::get_int(job, "/spec/backoffLimit").value_or(6);
    auto deadline = json::get_int(job, "/spec/activeDeadlineSeconds");
    bool suspend = json::get_bool(job, "/spec/suspend").value_or(false);
    bool replace_only_failed = str_at(job, "/spec/podReplacementPolicy") == "Failed";
    bool on_failure = str_at(job, "/spec/template/spec/restartPolicy") == "OnFailure";

    const JobSpecView spec(job);
    CompletionIndexes succeeded_indexes, failed_indexes;
    int64_t succeeded = json::get_int(st.root(), "/succeeded").value_or(0) + j.new_succeeded;
    if (spec.indexed) {
      succeeded_indexes = CompletionIndexes::parse_lenient(str_at(st.root(), "/completedIndexes"), spec.completions);
      succeeded_indexes.add(j.new_succeeded_indexes);
      succeeded = succeeded_indexes.total();
    }
    if (spec.per_index()) {
      failed_indexes = CompletionIndexes::parse_lenient(str_at(st.root(), "/failedIndexes"), spec.completions);
      failed_indexes.add(j.new_failed_indexes);
    }
    int64_t failed = json::get_int(st.root(), "/failed").value_or(0) + j.new_failed;
    // Pods gone from the store no longer need their uid remembered.
    for (auto* uids : {&j.counted, &j.deleted_by_us})
      for (auto it = uids->begin(); it != uids->end();) it = j.pods.count(*it) ? std::next(it) : uids->erase(it);

    bool finished = condition_true(st.root(), "Complete") || condition_true(st.root(), "Failed");
    auto active_pods = [&] {
      std::vector<std::string> out;
      for (const auto& [puid, p] : j.pods)
        if (!p.terminal() && !p.deleting) out.push_back(puid);
      return out;
    };
    auto delete_active = [&](bool counts) {
      for (const auto& puid : active_pods()) delete_pod(j, puid, j.pods[puid], counts);
    };

    if (!finished && !suspend) {
      if (!json::find(st.root(), "/startTime")) (void)json::set_string(st, "/startTime", now);
      if (condition_true(st.root(), "Suspended")) {
        set_condition(st, "Suspended", "False", "JobResumed", "Job resumed", now);
        // The deadline counts from the resume, as kube-controller-manager's Job controller does.
        (void)json::set_string(st, "/startTime", now);
      }
    }
    if (!finished && suspend) {
      delete_active(false);
      if (!condition_true(st.root(), "Suspended")) set_condition(st, "Suspended", "True", "JobSuspended", "Job suspended", now);
      // status.startTime stays while suspended (so the template stays immutable, as on a real
      // cluster); whoever rewrites the template first clears it through the status subresource.
      if (j.deadline_timer) loop.cancel(j.deadline_timer);
      j.deadline_timer = 0;
    }

    // The Job's end, in kube-controller-manager's order: a FailJob rule, the backoff limit, the
    // deadline, the per-index limits, the success policy, then the completions.
    if (!finished && !condition_true(st.root(), "FailureTarget") && !condition_true(st.root(), "SuccessCriteriaMet")) {
      bool backoff = failed > backoff_limit;
      if (!backoff && on_failure) {
        int64_t restarts = 0;
        for (const auto& [puid, p] : j.pods)
          if (!p.terminal() && !p.deleting) restarts += p.restarts;
        backoff = backoff_limit == 0 ? restarts > 0 : restarts >= backoff_limit;
      }
      bool past_deadline = false;
      if (deadline && !suspend) {
        auto start = api::parse_time(str_at(st.root(), "/startTime"));
        if (start) {
          auto due = *start + std::chrono::seconds(*deadline);
          if (now_tp >= due) {
            past_deadline = true;
          } else {
            if (j.deadline_timer) loop.cancel(j.deadline_timer);
            std::string juid = j.uid;
            j.deadline_timer = loop.after(due - now_tp, [this, juid] {
              if (auto it = jobs.find(juid); it != jobs.end()) it->second.deadline_timer = 0;
              dirty.insert(juid);
            });
          }
        }
      }
      std::optional<std::string> success_message;
      if (spec.indexed) success_message = match_success_policy(spec.success_policy, spec.completions, succeeded_indexes);
      if (!j.fail_job_message.empty()) {
        set_condition(st, "FailureTarget", "True", "PodFailurePolicy", j.fail_job_message, now);
      } else if (backoff) {
        set_condition(st, "FailureTarget", "True", "BackoffLimitExceeded", kBackoffMessage, now);
      } else if (past_deadline) {
        set_condition(st, "FailureTarget", "True", "DeadlineExceeded", kDeadlineMessage, now);
      } else if (spec.per_index() && spec.max_failed_indexes && failed_indexes.total() > *spec.max_failed_indexes) {
        set_condition(st, "FailureTarget", "True", "MaxFailedIndexesExceeded", kMaxFailedIndexesMessage, now);
      } else if (spec.per_index() && failed_indexes.total() > 0 &&
                 failed_indexes.total() + succeeded_indexes.total() >= spec.completions) {
        set_condition(st, "FailureTarget", "True", "FailedIndexes", kFailedIndexesMessage, now);
      } else if (success_message) {
        set_condition(st, "SuccessCriteriaMet", "True", "SuccessPolicy", *success_message, now);
      } else if (!suspend) {
        bool done = completions ? succeeded >= *completions : (succeeded > 0 && active_pods().empty());
        if (done) set_condition(st, "SuccessCriteriaMet", "True", "CompletionsReached", kCompleteMessage, now);
      }
    }

    bool failing = condition_true(st.root(), "FailureTarget");
    bool succeeding = condition_true(st.root(), "SuccessCriteriaMet");
    if (!finished && (failing || succeeding)) {
      // As in Kubernetes, pods still running when the Job reaches its end count as failed.
      delete_active(true);
      bool pods_left = false;
      for (const auto& [puid, p] : j.pods)
        if (!p.terminal()) pods_left = true;
      if (!pods_left) {
        const Value* target = find_condition(st.root(), "/conditions", failing ? "FailureTarget" : "SuccessCriteriaMet");
        std::string reason(str_at(*target, "/reason")), message(str_at(*target, "/message"));
        set_condition(st, failing ? "Failed" : "Complete", "True", reason, message, now);
        if (!failing) (void)json::set_string(st, "/completionTime", now);
        finished = true;
        if (j.deadline_timer) loop.cancel(j.deadline_timer);
        j.deadline_timer = 0;
      }
    } else if (!finished && !suspend) {
      manage_pods(j, spec, parallelism, completions, succeeded, succeeded_indexes, failed_indexes, replace_only_failed);
    } else if (finished) {
      delete_active(true);
    }

    int64_t active = 0, ready = 0, terminating = 0;
    for (const auto& [puid, p] : j.pods) {
      if (p.terminal()) continue;
      if (p.deleting) {
        ++terminating;
        continue;
      }
      ++active;
      if (p.ready) ++ready;
    }
    auto set_count = [&](std::string_view ptr, int64_t n, bool omit_zero) {
      if (n == 0 && omit_zero)
        json::remove(st, ptr);
      else
        (void)json::set_int(st, ptr, n);
    };
    set_count("/active", active, true);
    set_count("/succeeded", succeeded, true);
    set_count("/failed", failed, true);
    set_count("/ready", ready, false);
    set_count("/terminating", terminating, false);
    if (spec.indexed) {
      if (succeeded_indexes.empty())
        json::remove(st, "/completedIndexes");
      else
        (void)json::set_string(st, "/completedIndexes", succeeded_indexes.str());
    }
    if (spec.per_index()) (void)json::set_string(st, "/failedIndexes", failed_indexes.str());
    if (!json::find(st.root(), "/uncountedTerminatedPods"))
      (void)json::set(st, "/uncountedTerminatedPods", Value(rapidjson::kObjectType));

    if (!json::equal(before.root(), st.root())) {
      auto body = json::Document::object();
      auto patch = json::create_merge_patch(before.root(), st.root());
      (void)json::set(body, "/status", json::clone(patch.root(), body.alloc()));
      // The result becomes our view at once: a pod event handled before the Job's own watch
      // event must not recount from the older status.
      if (auto r = store.patch(*jobs_r, j.ns, j.name, PatchKind::Merge, body.dump(), "status")) {
        j.obj = std::move(*r);
        j.new_succeeded = j.new_failed = 0;
        j.new_succeeded_indexes = CompletionIndexes();
        j.new_failed_indexes = CompletionIndexes();
      }
    }
    if (finished) schedule_ttl(j, st.root());
  }

  void schedule_ttl(JobState& j, const Value& st) {
    auto ttl = json::get_int(j.obj.root(), "/spec/ttlSecondsAfterFinished");
    if (!ttl || j.ttl_timer) return;
    std::string_view finished_at = str_at(st, "/completionTime");
    if (finished_at.empty())
      if (const Value* f = find_condition(st, "/conditions", "Failed")) finished_at = str_at(*f, "/lastTransitionTime");
    auto t = api::parse_time(finished_at);
    auto due = (t ? *t : std::chrono::system_clock::now()) + std::chrono::seconds(*ttl);
    auto delay = due - std::chrono::system_clock::now();
    std::string juid = j.uid;
    j.ttl_timer = loop.after(std::max<Clock::duration>(std::chrono::duration_cast<Clock::duration>(delay), Clock::duration::zero()),
                             [this, juid] {
                               auto it = jobs.find(juid);
                               if (it == jobs.end()) return;
                               it->second.ttl_timer = 0;
                               DeleteRequest req;
                               req.propagation_policy = "Background";
                               req.precondition_uid = juid;
                               (void)store.remove(*jobs_r, it->second.ns, it->second.name, req);
                             });
  }

  void after_batch() {
    while (!dirty.empty()) {
      std::set<std::string> batch;
      batch.swap(dirty);
      for (const auto& uid : batch) sync(uid);
    }
  }
};

JobController::JobController(Store& store) : impl_(std::make_unique<Impl>(store)) {
  Impl& c = *impl_;
  c.jobs_r = resource(store, "batch", "v1", "jobs");
  c.pods_r = resource(store, "", "v1", "pods");
  if (!c.jobs_r || !c.pods_r) return;
  c.loop.watch(*c.jobs_r, "", [&c](EventType t, const Value& o) { c.on_job(t, o); });
  c.loop.watch(*c.pods_r, std::string(kControllerUidLabel), [&c](EventType t, const Value& o) { c.on_pod(t, o); });
  c.loop.set_after_batch([&c] { c.after_batch(); });
  c.loop.start();
}

JobController::~JobController() { impl_->loop.stop(); }

}  // namespace unitrain::localcluster::controllers
