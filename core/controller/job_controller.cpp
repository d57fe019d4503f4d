#include "core/controller/job_controller.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "core/api/field_errors.h"
#include "core/api/kubeflow.h"
#include "core/api/meta.h"
#include "core/api/time.h"
#include "core/controller/pod_builder.h"

namespace unitrain::controller {

namespace {

using framework::CoreEvent;
using kube::ApiError;
using kube::GroupVersionResource;

const GroupVersionResource kPods{"", "v1", "pods"};
const GroupVersionResource kServices{"", "v1", "services"};
const GroupVersionResource kPriorityClasses{"scheduling.k8s.io", "v1", "priorityclasses"};

// The persisted count of pods the core deleted for re-creation: container restarts reset with
// a new pod, so without it an ExitCode or OnFailure job's backoffLimit could never be reached.
constexpr std::string_view kRestartsAnnotation = "training.unitrain.io/pod-restarts";

ApiError internal_error(std::string message) {
  ApiError e;
  e.reason = ApiError::Reason::Unknown;
  e.message = std::move(message);
  return e;
}

std::string_view phase_of(const json::Value& pod) { return json::get_string(pod, "/status/phase").value_or(""); }

bool terminating(const json::Value& obj) { return json::find(obj, "/metadata/deletionTimestamp") != nullptr; }

int64_t restarts_of(const json::Value& job) {
  auto v = json::get_string(job, "/metadata/annotations/" + json::escape_pointer_token(kRestartsAnnotation));
  if (!v) return 0;
  try {
    return std::stoll(std::string(*v));
  } catch (...) {  // a hand-edited annotation: start counting again rather than fail the job
    return 0;
  }
}

// Sum of container (and init container) restarts of running pods whose replica type restarts
// in place, as training-operator's pastBackoffLimit counts them.
int64_t in_place_restarts(const json::Value& pod) {
  int64_t sum = 0;
  for (auto p : {"/status/containerStatuses", "/status/initContainerStatuses"}) {
    const json::Value* statuses = json::find(pod, p);
    if (!statuses || !statuses->IsArray()) continue;
    for (const auto& s : statuses->GetArray()) sum += json::get_int(s, "/restartCount").value_or(0);
  }
  return sum;
}

}  // namespace

class WritePool {
 public:
  explicit WritePool(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  }
  ~WritePool() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  WritePool(const WritePool&) = delete;
  WritePool& operator=(const WritePool&) = delete;

  // Runs `fn` over `items` on the pool and waits for all; returns the first error. Tasks never
  // wait on the pool themselves, so a caller blocking here cannot deadlock it.
  template <class T, class Fn>
  std::optional<ApiError> run_all(std::vector<T>& items, Fn& fn) {
    std::mutex done_mu;
    std::condition_variable done_cv;
    size_t left = items.size();
    std::optional<ApiError> first;
    {
      std::lock_guard lock(mu_);
      for (auto& item : items) {
        tasks_.emplace_back([&, item_ptr = &item] {
          std::optional<ApiError> e;
          try {
            e = fn(*item_ptr);
          } catch (const std::exception& ex) {  // thread boundary: report, never lose the count
            e = internal_error(ex.what());
          }
          std::lock_guard done_lock(done_mu);
          if (e && !first) first = std::move(e);
          if (--left == 0) done_cv.notify_all();
        });
      }
    }
    cv_.notify_all();
    std::unique_lock lock(done_mu);
    done_cv.wait(lock, [&] { return left == 0; });
    return first;
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// ---------------------------------------------------------------------------------------------
// One reconcile pass over one job: the pipeline of docs/framework-authors.md, in order.
struct JobController::Pass {
  JobController& c;
  const framework::FrameworkDescriptor& d;
  framework::FrameworkPlugin& plugin;
  kube::ObjectPtr cached;        // as the informer has it
  json::Document job;            // defaulted copy
  std::string ns, name, uid, key;
  api::JobStatus status;
  api::JobStatus old_status;
  framework::Observed observed;
  api::TimePoint now;
  ReconcileResult result;
  std::set<std::string> deleted_services;
  std::optional<json::Document> latest;  // the job as our own last write returned it
  // Events and counters of condition transitions: announced once the status carrying them is
  // written, so a pass that loses a write conflict does not announce them twice.
  std::vector<std::function<void()>> on_status_written;

  const json::Value& raw() const { return cached->root(); }

  framework::CoreWording words(CoreEvent e, std::string_view rt = {}) const { return plugin.wording(e, job.root(), rt); }

  void event(std::string_view type, const std::string& reason, std::string message) {
    c.events_.event(raw(), type, reason, std::move(message));
  }
  void event_when_written(std::string type, std::string reason, std::string message) {
    on_status_written.push_back([this, type = std::move(type), reason = std::move(reason), message = std::move(message)]() mutable {
      event(type, reason, std::move(message));
    });
  }
  void count_when_written(uint64_t JobCounters::*field) {
    on_status_written.push_back([this, field] { c.count(ns, field); });
  }

  void condition(std::string_view type, const framework::CoreWording& w, std::string_view status_value = "True") {
    status.update_condition(type, status_value, w.reason, w.message, now);
  }

  // --- writes ---------------------------------------------------------------------------------

  // Runs `fn` over `items`, in parallel on the controller's write pool when there is more than
  // one; returns the first error.
  template <class T, class Fn>
  std::optional<ApiError> bounded_parallel(std::vector<T>& items, Fn fn) {
    if (items.size() > 1 && c.write_pool_) return c.write_pool_->run_all(items, fn);
    std::optional<ApiError> first;
    for (auto& item : items)
      if (auto e = fn(item); e && !first) first = std::move(e);
    return first;
  }

  std::optional<ApiError> write_status(bool force = false) {
    if (!force && status == old_status) return std::nullopt;
    json::Document obj = latest ? *latest : *cached;
    auto& a = obj.alloc();
    obj.root().RemoveMember("status");
    obj.root().AddMember("status", status.to_json(a), a);
    auto r = c.client_.update_status(d.resource(), ns, obj.root());
    if (!r) return r.error();
    c.expectations_.expect_version(Expectations::job_key(ns, name), api::resource_version_of(r->root()));
    old_status = status;
    for (auto& announce : on_status_written) announce();
    on_status_written.clear();
    return std::nullopt;
  }

  std::optional<ApiError> delete_object(const GroupVersionResource& gvr, std::string_view object_name,
                                        std::string_view expectation_key) {
    if (!expectation_key.empty()) c.expectations_.expect_deletions(expectation_key, 1);
    kube::DeleteOptions opts;
    opts.propagation_policy = "Background";
    auto r = c.client_.remove(gvr, ns, object_name, opts);
    if (!r) {
      // Gone already (NotFound) or not deleted: either way no watch event will lower it.
      if (!expectation_key.empty()) c.expectations_.deletion_observed(expectation_key);
      if (!r.error().is(ApiError::Reason::NotFound)) return r.error();
    }
    if (gvr == kServices) deleted_services.insert(std::string(object_name));
    return std::nullopt;
  }

  std::string rt_of(const json::Value& pod) const {
    return std::string(json::get_string(pod, "/metadata/labels/" + json::escape_pointer_token(d.replica_type_label)).value_or(""));
  }

  // Deletes job pods (and, training-operator style, their same-named services). `only_active`
  // keeps pods that already finished (cleanPodPolicy Running).
  std::optional<ApiError> delete_pods(bool only_active) {
    std::vector<const json::Value*> victims;
    for (const auto* pod : observed.pods) {
      if (terminating(*pod)) continue;
      const auto phase = phase_of(*pod);
      if (only_active && phase != "Running" && phase != "Pending") continue;
      victims.push_back(pod);
    }
    return bounded_parallel(victims, [&](const json::Value* pod) -> std::optional<ApiError> {
      const std::string pod_name(api::name_of(*pod));
      if (auto e = delete_object(kPods, pod_name, Expectations::pods_key(ns, name, rt_of(*pod)))) {
        event("Warning", "FailedDeletePod", fmt::format("Error deleting: {}", e->message));
        return e;
      }
      event("Normal", "SuccessfulDeletePod", fmt::format("Deleted pod: {}", pod_name));
      if (d.delete_services_with_pods) {
        const bool has_service = !deleted_services.count(pod_name) && std::any_of(observed.services.begin(), observed.services.end(),
                                             [&](const json::Value* s) { return api::name_of(*s) == pod_name; });
        if (has_service) {
          if (auto e = delete_object(kServices, pod_name, Expectations::services_key(ns, name, rt_of(*pod)))) {
            event("Warning", "FailedDeleteService", fmt::format("Error deleting: {}", e->message));
            return e;
          }
          event("Normal", "SuccessfulDeleteService", fmt::format("Deleted service: {}", pod_name));
        }
      }
      return std::nullopt;
    });
  }

  std::optional<ApiError> delete_pod_group() {
    if (!c.options_.gang) return std::nullopt;
    if (!c.pod_groups_ || !c.pod_groups_->cache().get(ns + "/" + name)) return std::nullopt;
    if (auto e = delete_object(c.options_.gang->resource(), name, "")) {
      event("Warning", "FailedDeletePodGroup", fmt::format("Error deleting: {}", e->message));
      return e;
    }
    event("Normal", "SuccessfulDeletePodGroup", fmt::format("Deleted PodGroup: {}", name));
    return std::nullopt;
  }

  // --- pipeline steps -------------------------------------------------------------------------

  // Finished jobs: cleanPodPolicy, then TTL.
  std::optional<ApiError> finish() {
    std::optional<api::RunPolicy> rp = run_policy();
    const std::string policy = rp && rp->clean_pod_policy ? *rp->clean_pod_policy : "None";
    if (policy == "All" || policy == "Running") {
      if (auto e = delete_pods(policy == "Running")) return e;
    }
    if (auto e = delete_pod_group()) return e;
    if (status.is_succeeded()) {
      for (auto& [rt, rs] : status.replica_statuses) {
        rs.succeeded += rs.active;
        rs.active = 0;
      }
    }
    if (auto e = write_status()) return e;
    if (d.ttl_deletes_job && rp && rp->ttl_seconds_after_finished && status.completion_time) {
      const auto expiry = *status.completion_time + std::chrono::seconds(*rp->ttl_seconds_after_finished);
      if (now >= expiry) {
        auto r = c.client_.remove(d.resource(), ns, name, {});
        if (!r) {
          // NotFound: a pass that ran before the cache saw our own delete; counted once already.
          if (r.error().is(ApiError::Reason::NotFound)) return std::nullopt;
          event("Warning", "FailedDeleteJob", fmt::format("Error deleting: {}", r.error().message));
          return r.error();
        }
        event("Normal", "SuccessfulDeleteJob", fmt::format("Deleted job: {}", name));
        c.count(ns, &JobCounters::deleted);
      } else {
        result.requeue_after = std::chrono::duration_cast<kube::Clock::Duration>(expiry - now);
      }
    }
    return std::nullopt;
  }

  std::optional<api::RunPolicy> run_policy() const {
    const json::Value* rp = json::find(job.root(), "/spec/runPolicy");
    if (!rp) return std::nullopt;
    auto decoded = api::RunPolicy::from_json(*rp, api::FieldPath("spec").child("runPolicy"));
    if (!decoded) return std::nullopt;
    return std::move(*decoded);
  }

  // Everything the framework wants besides slot pods: get-or-create, update when the compared
  // fields drift, prune what is no longer wanted.
  std::optional<ApiError> apply_desired(const std::vector<framework::DesiredObject>& desired) {
    std::map<std::string, std::set<std::string>> wanted;  // resource.group -> names
    for (const auto& want : desired) {
      const std::string gr = want.resource.group_resource();
      const std::string obj_name(api::name_of(want.object.root()));
      wanted[gr].insert(obj_name);
      const kube::Informer* inf = c.informer_for(want.resource);
      kube::ObjectPtr existing = inf ? inf->cache().get(ns + "/" + obj_name) : nullptr;
      if (!existing) {
        json::Document obj = want.object;
        (void)json::set_string(obj, "/metadata/namespace", ns);
        auto ref = api::make_owner_reference(raw());
        if (auto s = api::set_owner_reference(obj, ref); !s) return internal_error(s.error().message);
        // A replica's Service is guarded like its pod: until the informer has seen it, the next
        // pass must not create it again (training-operator's CreateNewService raises the
        // services expectation before the POST). Without the replica-type label no informer
        // event could lower it, so such objects are not expected.
        std::string exp;
        if (want.resource == kServices) {
          auto rt = json::get_string(obj.root(), "/metadata/labels/" + json::escape_pointer_token(d.replica_type_label));
          if (rt && !rt->empty()) exp = Expectations::services_key(ns, name, *rt);
        }
        if (!exp.empty()) c.expectations_.expect_creations(exp, 1);
        auto r = c.client_.create(want.resource, ns, obj.root());
        if (!r && !exp.empty()) c.expectations_.creation_observed(exp);  // no ADD will come for it
        if (!r && !r.error().is(ApiError::Reason::AlreadyExists)) {
          if (want.resource == kServices)
            event("Warning", "FailedCreateService", fmt::format("Error creating: {}", r.error().message));
          return r.error();
        }
        if (want.resource == kServices) event("Normal", "SuccessfulCreateService", fmt::format("Created service: {}", obj_name));
        continue;
      }
      if (!api::is_controlled_by(existing->root(), uid)) {
        if (want.use_existing) continue;
        std::string msg = fmt::format("Resource \"{}\" of Kind \"{}\" already exists and is not managed by {}", obj_name,
                                      api::kind_of(want.object.root()), d.kind);
        event("Warning", "ErrResourceExists", msg);
        return internal_error(msg);
      }
      if (want.update != framework::DesiredObject::Update::WhenDiffers) continue;
      auto differs = [&](const json::Value& have_root) {
        for (const auto& p : want.compared) {
          const json::Value* have = json::find(have_root, p);
          const json::Value* need = json::find(want.object.root(), p);
          if (!have != !need || (have && !json::equal(*have, *need))) return true;
        }
        return false;
      };
      if (!differs(existing->root())) continue;
      // The cache may hold a projection; read the live object so nothing else is overwritten.
      auto live = c.client_.get(want.resource, ns, obj_name);
      if (!live) return live.error();
      // The cache lags behind our own last update: the live object already has what we want,
      // and a PUT would rewrite it unchanged.
      if (!differs(live->root())) continue;
      json::Document updated = std::move(*live);
      for (const auto& p : want.compared) {
        const json::Value* need = json::find(want.object.root(), p);
        if (need) {
          if (auto s = json::set(updated, p, json::clone(*need, updated.alloc())); !s) return internal_error(s.error().message);
        } else {
          json::remove(updated, p);
        }
      }
      auto r = c.client_.update(want.resource, ns, updated.root());
      if (!r) return r.error();
    }
    auto pruned = plugin.pruned_resources();
    // Per-replica services (training-operator style) follow their replicas: scale-down and
    // suspension remove them.
    if (d.delete_services_with_pods && std::find(pruned.begin(), pruned.end(), kServices) == pruned.end())
      pruned.push_back(kServices);
    for (const auto& gvr : pruned) {
      const std::string gr = gvr.group_resource();
      const std::vector<const json::Value*>* have = nullptr;
      if (gvr == kServices) have = &observed.services;
      else if (auto it = observed.owned.find(gr); it != observed.owned.end()) have = &it->second;
      if (!have) continue;
      for (const auto* obj : *have) {
        const std::string obj_name(api::name_of(*obj));
        if (wanted[gr].count(obj_name) || terminating(*obj)) continue;
        if (gvr == kServices && deleted_services.count(obj_name)) continue;
        const std::string exp_key = gvr == kServices ? Expectations::services_key(ns, name, rt_of(*obj)) : "";
        if (auto e = delete_object(gvr, obj_name, exp_key)) return e;
        if (gvr == kServices) event("Normal", "SuccessfulDeleteService", fmt::format("Deleted service: {}", obj_name));
      }
    }
    return std::nullopt;
  }

  // The value of the PriorityClass the replica template names; 0 when it names none, the class
  // does not exist, or PriorityClasses are not watched.
  int32_t priority_of(const json::Value& replica_spec) const {
    auto class_name = json::get_string(replica_spec, "/template/spec/priorityClassName");
    if (!class_name || class_name->empty() || !c.priority_classes_) return 0;
    kube::ObjectPtr pc = c.priority_classes_->cache().get(std::string(*class_name));
    return pc ? static_cast<int32_t>(json::get_int(pc->root(), "/value").value_or(0)) : 0;
  }

  std::optional<ApiError> sync_pod_group(bool& admitted) {
    admitted = true;
    const gang::Backend* backend = c.options_.gang.get();
    if (!backend) return std::nullopt;
    gang::PodGroupRequest req;
    req.ns = ns;
    req.name = name;
    if (const json::Value* ann = json::find(raw(), "/metadata/annotations")) req.annotations = json::Document::copy_of(*ann);
    {
      auto ref = api::make_owner_reference(raw());
      auto doc = json::Document::object();
      doc.root() = ref.to_json(doc.alloc());
      req.owner_reference = std::move(doc);
    }
    auto rp = run_policy();
    const auto& sp = rp ? rp->scheduling_policy : std::nullopt;
    std::vector<gang::ReplicaResources> replicas;
    int32_t total = 0;
    for (const auto& rt : d.replica_types) {
      const json::Value* spec = replica_spec(d, job.root(), rt);
      if (!spec) continue;
      const int32_t n = replicas_of(d, job.root(), rt);
      total += n;
      replicas.push_back({rt, n, priority_of(*spec), json::find(*spec, "/template/spec")});
    }
    const auto caps = plugin.capabilities();
    req.min_member = sp && sp->min_available ? *sp->min_available
                     : caps.gang                ? caps.gang->min_member(job.root())
                                                : total;
    if (sp) {
      req.queue = sp->queue;
      req.priority_class = sp->priority_class;
      req.schedule_timeout_seconds = sp->schedule_timeout_seconds;
    }
    if (sp && sp->min_resources) {
      gang::ResourceList list;
      for (const auto& [k, v] : *sp->min_resources) {
        auto q = api::Quantity::parse(v);
        if (!q) return internal_error(fmt::format("spec.runPolicy.schedulingPolicy.minResources.{}: {}", k, q.error().message));
        list.insert_or_assign(k, *q);
      }
      req.min_resources = std::move(list);
    } else {
      auto computed = gang::min_resources(replicas, req.min_member);
      if (!computed) return internal_error(computed.error().message);
      req.min_resources = std::move(*computed);
    }
    kube::ObjectPtr existing = c.pod_groups_ ? c.pod_groups_->cache().get(ns + "/" + name) : nullptr;
    json::Document desired = backend->desired(req, existing ? &existing->root() : nullptr);
    if (!existing) {
      auto r = c.client_.create(backend->resource(), ns, desired.root());
      if (!r && !r.error().is(ApiError::Reason::AlreadyExists)) return r.error();
    } else if (backend->spec_differs(existing->root(), desired.root())) {
      json::Document updated = *existing;
      auto& a = updated.alloc();
      updated.root().RemoveMember("spec");
      updated.root().AddMember("spec", json::clone(desired.root()["spec"], a), a);
      auto r = c.client_.update(backend->resource(), ns, updated.root());
      if (!r) return r.error();
    }
    admitted = !d.gang_holds_pod_creation || backend->admits_pod_creation(existing ? &existing->root() : nullptr);
    return std::nullopt;
  }

  // Slot pods: create the missing ones, restart or fail on failed pods, scale down surplus.
  std::optional<ApiError> reconcile_pods(bool& restarted) {
    restarted = false;
    const auto slots = plugin.pod_slots(job.root());
    // Slot pods are recognised by name: the index label is not the slot index everywhere (MPI
    // v2 shifts it by one when the launcher also works).
    std::map<std::string, const json::Value*> by_name;
    std::vector<const json::Value*> surplus;
    std::set<std::string> wanted;
    auto slot_name = [&](const framework::PodSlot& s) {
      return s.name.empty() ? replica_name(name, s.replica_type, s.index) : s.name;
    };
    for (const auto& s : slots) wanted.insert(slot_name(s));
    for (const auto* pod : observed.pods) {
      std::string pod_name(api::name_of(*pod));
      if (!wanted.count(pod_name)) {
        if (!terminating(*pod)) surplus.push_back(pod);
        continue;
      }
      by_name[std::move(pod_name)] = pod;
    }

    std::vector<framework::PodSlot> missing;
    int64_t new_restarts = 0;
    for (const auto& s : slots) {
      const std::string rt = lower(s.replica_type);
      auto it = by_name.find(slot_name(s));
      if (it == by_name.end()) {
        missing.push_back(s);
        continue;
      }
      const json::Value& pod = *it->second;
      if (terminating(pod) || phase_of(pod) != "Failed") continue;
      const json::Value* spec = replica_spec(d, job.root(), s.replica_type);
      const std::string policy(spec ? json::get_string(*spec, "/restartPolicy").value_or("") : "");
      auto code = container_exit_code(pod, d.default_container);
      if (code) event("Normal", "ExitedWithCode", fmt::format("Pod: {}.{} exited with code {}", ns, api::name_of(pod), *code));
      const bool retry = policy == "Always" || policy == "OnFailure" || (policy == "ExitCode" && (!code || *code >= 128));
      if (retry) {
        if (auto e = delete_object(kPods, std::string(api::name_of(pod)), Expectations::pods_key(ns, name, rt))) return e;
        auto w = words(CoreEvent::ReplicaRestarting, s.replica_type);
        event("Warning", w.reason, w.message);
        if (!status.has_condition(api::condition_type::kRestarting)) count_when_written(&JobCounters::restarted);
        condition(api::condition_type::kRestarting, w);
        ++new_restarts;
        restarted = true;
      } else if (policy == "ExitCode") {
        auto w = words(CoreEvent::ReplicaFailed, s.replica_type);
        event("Warning", w.reason, w.message);
        if (!status.is_failed()) {
          count_when_written(&JobCounters::failed);
          if (!status.completion_time) status.completion_time = now;
        }
        condition(api::condition_type::kFailed, w);
      }
    }
    if (new_restarts > 0) {
      const std::string patch = fmt::format(R"({{"metadata":{{"annotations":{{"{}":"{}"}}}}}})", kRestartsAnnotation,
                                            restarts_of(raw()) + new_restarts);
      auto r = c.client_.patch(d.resource(), ns, name, kube::PatchType::Merge, patch);
      if (!r) return r.error();
      c.expectations_.expect_version(Expectations::job_key(ns, name), api::resource_version_of(r->root()));
      latest = std::move(*r);  // the status write below must not conflict with our own patch
    }

    for (const auto* pod : surplus) {
      if (auto e = delete_object(kPods, std::string(api::name_of(*pod)), Expectations::pods_key(ns, name, rt_of(*pod)))) return e;
      event("Normal", "SuccessfulDeletePod", fmt::format("Deleted pod: {}", api::name_of(*pod)));
    }

    // A restart that reached the backoff limit fails the job now instead of creating one more pod.
    if (restarted) {
      bool failed_now = false;
      if (auto e = check_limits(failed_now)) return e;
      if (failed_now) return std::nullopt;
    }

    return bounded_parallel(missing, [&](const framework::PodSlot& s) -> std::optional<ApiError> {
      auto built = build_pod(d, job.root(), s.replica_type, s.index);
      if (!built) return internal_error(built.error().message);
      if (!s.name.empty()) (void)json::set_string(built->pod, "/metadata/name", s.name);
      if (built->template_restart_policy_overridden)
        event("Warning", "SetPodTemplateRestartPolicy",
              "Restart policy in pod template will be overwritten by restart policy in replica spec");
      if (auto st = plugin.decorate_pod(job.root(), s, built->pod); !st) return internal_error(st.error().message);
      if (const gang::Backend* backend = c.options_.gang.get()) {
        auto dec = backend->decorate_pod(built->pod, name, lower(s.replica_type), {});
        if (dec.template_scheduler_differs)
          event("Warning", "SetPodTemplateSchedulerName", "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten");
      }
      const std::string exp = Expectations::pods_key(ns, name, lower(s.replica_type));
      c.expectations_.expect_creations(exp, 1);
      auto r = c.client_.create(kPods, ns, built->pod.root());
      if (!r) {
        c.expectations_.creation_observed(exp);
        if (r.error().is(ApiError::Reason::AlreadyExists)) return std::nullopt;
        event("Warning", "FailedCreatePod", fmt::format("Error creating: {}", r.error().message));
        return r.error();
      }
      event("Normal", "SuccessfulCreatePod", fmt::format("Created pod: {}", api::name_of(built->pod.root())));
      return std::nullopt;
    });
  }

  // Backoff limit and active deadline; true when the job was failed here.
  std::optional<ApiError> check_limits(bool& failed_now) {
    failed_now = false;
    auto rp = run_policy();
    if (!rp || !d.enforces_run_limits) return std::nullopt;
    std::optional<CoreEvent> why;
    if (rp->backoff_limit) {
      int64_t restarts = restarts_of(latest ? latest->root() : raw());
      for (const auto* pod : observed.pods) {
        if (phase_of(*pod) != "Running") continue;
        std::string rt = rt_of(*pod);
        std::string policy;
        for (const auto& t : d.replica_types)
          if (lower(t) == rt)
            if (const json::Value* s = replica_spec(d, job.root(), t))
              policy = json::get_string(*s, "/restartPolicy").value_or("");
        if (policy == "OnFailure" || policy == "Always" || policy == "ExitCode") restarts += in_place_restarts(*pod);
      }
      const int64_t limit = *rp->backoff_limit;
      if ((limit == 0 && restarts > 0) || (limit > 0 && restarts >= limit)) why = CoreEvent::BackoffLimitExceeded;
    }
    if (!why && rp->active_deadline_seconds && status.start_time) {
      const auto deadline = *status.start_time + std::chrono::seconds(*rp->active_deadline_seconds);
      if (now >= deadline) why = CoreEvent::DeadlineExceeded;
      else result.requeue_after = std::chrono::duration_cast<kube::Clock::Duration>(deadline - now);
    }
    if (!why) return std::nullopt;
    failed_now = true;
    if (!status.completion_time) status.completion_time = now;
    if (auto e = delete_pods(false)) return e;
    if (auto e = delete_pod_group()) return e;
    auto w = words(*why);
    event_when_written("Normal", w.reason, w.message);
    condition(api::condition_type::kFailed, w);
    count_when_written(&JobCounters::failed);
    return write_status(true);
  }

  void apply_proposal(const framework::StatusProposal& p) {
    for (const auto& [rt, counts] : p.replica_statuses) {
      auto& rs = status.replica_statuses[rt];
      rs.active = counts.active;
      rs.succeeded = counts.succeeded;
      rs.failed = counts.failed;
      if (counts.selector) rs.selector = *counts.selector;
    }
    const bool was_succeeded = status.is_succeeded(), was_failed = status.is_failed();
    const bool was_restarting = status.has_condition(api::condition_type::kRestarting);
    for (const auto& cond : p.conditions) status.update_condition(cond.type, cond.status, cond.reason, cond.message, now);
    if (p.set_completion_time && !status.completion_time) {
      if (p.completion_time) {
        if (auto t = api::parse_time(*p.completion_time)) status.completion_time = *t;
      }
      if (!status.completion_time) status.completion_time = now;
    }
    if (!was_succeeded && status.is_succeeded()) count_when_written(&JobCounters::successful);
    if (!was_failed && status.is_failed()) count_when_written(&JobCounters::failed);
    if (!was_restarting && status.has_condition(api::condition_type::kRestarting)) count_when_written(&JobCounters::restarted);
  }

  ReconcileResult run() {
    auto fail_with = [&](ApiError e) {
      result.error = std::move(e);
      return result;
    };

    // managedBy: another controller's job gets no writes at all.
    if (auto managed = json::get_string(raw(), "/spec/runPolicy/managedBy")) {
      if (std::find(d.managed_by.begin(), d.managed_by.end(), *managed) == d.managed_by.end()) return result;
    } else if (!c.options_.owns_unset_managed_by.value_or(d.owns_unset_managed_by)) {
      return result;
    }
    if (terminating(raw())) return result;
    // Our own last write to the job is not in the cache yet: this pass would decide on a state
    // we already replaced (the pods cache may be ahead, showing the pod our restart deleted while
    // the job still shows the old restart count). The informer's update of our write requeues.
    if (!c.expectations_.version_seen(Expectations::job_key(ns, name), api::resource_version_of(raw()))) return result;

    plugin.set_defaults(job);
    if (const json::Value* st = json::find(raw(), "/status")) {
      auto decoded = api::JobStatus::from_json(*st);
      if (!decoded) return fail_with(internal_error(fmt::format("{} {}: {}", d.kind, key, api::aggregate(decoded.error()))));
      status = std::move(*decoded);
    }
    old_status = status;

    if (!status.has_condition(api::condition_type::kCreated) && status.conditions.empty()) {
      auto w = words(CoreEvent::Created);
      condition(api::condition_type::kCreated, w);
      event_when_written("Normal", w.reason, w.message);
      count_when_written(&JobCounters::created);
    }

    auto validation = plugin.validate(nullptr, job.root());
    if (!validation.ok()) {
      auto w = words(CoreEvent::ValidationFailed);
      w.message = api::invalid_message(d.group, d.kind, name, validation.errors);
      if (!status.is_failed()) {
        condition(api::condition_type::kFailed, w);
        event_when_written("Warning", w.reason, w.message);
        count_when_written(&JobCounters::failed);
      }
      if (auto e = write_status()) return fail_with(*e);
      return result;
    }

    // Expectations: act only once the cache has seen our own writes.
    for (const auto& rt : d.replica_types) {
      const std::string l = lower(rt);
      if (!c.expectations_.satisfied(Expectations::pods_key(ns, name, l)) ||
          !c.expectations_.satisfied(Expectations::services_key(ns, name, l)))
        return result;
    }

    observed = c.observe(ns, uid);

    if (status.is_finished()) {
      if (auto e = finish()) return fail_with(*e);
      return result;
    }

    auto rp = run_policy();
    const bool suspended = rp && rp->suspend.value_or(false);
    if (suspended) {
      if (auto e = delete_pods(false)) return fail_with(*e);
      if (auto e = delete_pod_group()) return fail_with(*e);
      auto desired = plugin.desired_objects(job.root(), observed);
      if (!desired) return fail_with(internal_error(desired.error().message));
      if (auto e = apply_desired(*desired)) return fail_with(*e);
      for (auto& [rt, rs] : status.replica_statuses) rs.active = 0;
      if (status.is_running()) condition(api::condition_type::kRunning, words(CoreEvent::SuspendedNotRunning), "False");
      if (!status.is_suspended()) {
        auto w = words(CoreEvent::Suspended);
        condition(api::condition_type::kSuspended, w);
        event("Normal", w.reason, w.message);
      }
      if (auto e = write_status()) return fail_with(*e);
      return result;
    }
    if (status.is_suspended()) {
      auto w = words(CoreEvent::Resumed);
      condition(api::condition_type::kSuspended, w, "False");
      event("Normal", w.reason, w.message);
      status.start_time = now;
    }
    if (!status.start_time) status.start_time = now;

    bool failed_now = false;
    if (auto e = check_limits(failed_now)) return fail_with(*e);
    if (failed_now) return result;

    bool admitted = true;
    if (auto e = sync_pod_group(admitted)) return fail_with(*e);
    if (!admitted) {
      status.last_reconcile_time = now;
      if (auto e = write_status()) return fail_with(*e);
      return result;
    }

    auto desired = plugin.desired_objects(job.root(), observed);
    if (!desired) return fail_with(internal_error(desired.error().message));
    if (auto e = apply_desired(*desired)) return fail_with(*e);

    bool restarted = false;
    if (auto e = reconcile_pods(restarted)) return fail_with(*e);

    if (!status.is_failed()) {
      // The hook sees the conditions this pass raised so far, as upstream's UpdateJobStatus gets
      // the status ReconcilePods just changed (TFJob keeps a fresh Restarting instead of failing).
      if (auto st = api::set_job_status(job, status); !st) return fail_with(internal_error(st.error().message));
      apply_proposal(plugin.compute_status(job.root(), observed));
    }
    if (auto e = write_status()) return fail_with(*e);
    return result;
  }
};

// ---------------------------------------------------------------------------------------------

JobController::JobController(kube::Client& client, kube::Clock& clock, EventSink& events,
                             std::unique_ptr<framework::FrameworkPlugin> plugin, JobControllerOptions options)
    : client_(client),
      clock_(clock),
      events_(events),
      plugin_(std::move(plugin)),
      options_(std::move(options)),
      expectations_(clock),
      queue_(clock) {
  const auto& d = plugin_->descriptor();
  auto make = [&](GroupVersionResource gvr, std::string selector, kube::Projection projection) {
    kube::InformerOptions o;
    o.resource = std::move(gvr);
    o.namespaces = options_.namespaces;
    o.label_selector = std::move(selector);
    o.projection = std::move(projection);
    o.indexers.emplace(kube::kControllerUidIndex, kube::index_by_controller_uid);
    return std::make_unique<kube::Informer>(client_, clock_, std::move(o));
  };
  jobs_ = make(d.resource(), "", nullptr);
  pods_ = make(kPods, fmt::format("{}={}", kOperatorNameLabel, d.controller_name), kube::project_pod);
  services_ = make(kServices, "", kube::project_service);
  for (const auto& gvr : d.owned_resources) {
    if (gvr == kPods || gvr == kServices) continue;
    owned_.emplace(gvr.group_resource(), make(gvr, "", nullptr));
  }
  if (options_.gang) pod_groups_ = make(options_.gang->resource(), "", nullptr);
  if (options_.gang && options_.namespaces.empty()) priority_classes_ = make(kPriorityClasses, "", nullptr);
  if (options_.max_parallel_writes > 1) write_pool_ = std::make_unique<WritePool>(options_.max_parallel_writes);

  kube::EventHandlers job_handlers;
  job_handlers.on_add = [this](const json::Value& obj) { queue_.add(kube::object_key(obj)); };
  job_handlers.on_update = [this](const json::Value& old_obj, const json::Value& obj) {
    if (api::resource_version_of(old_obj) != api::resource_version_of(obj)) queue_.add(kube::object_key(obj));
  };
  job_handlers.on_delete = [this](const json::Value& obj, bool) {
    const std::string key = kube::object_key(obj);
    expectations_.forget_prefix(key + "/");
    queue_.add(key);
  };
  jobs_->add_handlers(std::move(job_handlers));

  auto child_handlers = [this](bool track_expectations) {
    kube::EventHandlers h;
    h.on_add = [this, track_expectations](const json::Value& obj) {
      if (track_expectations) observe_child(obj, true);
      enqueue_owner(obj);
    };
    h.on_update = [this](const json::Value& old_obj, const json::Value& obj) {
      if (api::resource_version_of(old_obj) != api::resource_version_of(obj)) enqueue_owner(obj);
    };
    h.on_delete = [this, track_expectations](const json::Value& obj, bool) {
      if (track_expectations) observe_child(obj, false);
      enqueue_owner(obj);
    };
    return h;
  };
  pods_->add_handlers(child_handlers(true));
  services_->add_handlers(child_handlers(true));
  for (auto& [_, inf] : owned_) inf->add_handlers(child_handlers(false));
  if (pod_groups_) pod_groups_->add_handlers(child_handlers(false));
}

JobController::~JobController() { stop(); }

const kube::Informer* JobController::informer_for(const GroupVersionResource& gvr) const {
  if (gvr == kPods) return pods_.get();
  if (gvr == kServices) return services_.get();
  auto it = owned_.find(gvr.group_resource());
  return it == owned_.end() ? nullptr : it->second.get();
}

void JobController::observe_child(const json::Value& obj, bool created) {
  auto owner = api::controller_of(obj);
  if (!owner || owner->kind != descriptor().kind) return;
  const auto& d = descriptor();
  auto rt = json::get_string(obj, "/metadata/labels/" + json::escape_pointer_token(d.replica_type_label));
  if (!rt) return;
  const bool is_pod = api::kind_of(obj) == "Pod" || json::find(obj, "/status/phase") != nullptr ||
                      json::find(obj, "/spec/nodeName") != nullptr;
  const std::string ns(api::namespace_of(obj));
  const std::string key = is_pod ? Expectations::pods_key(ns, owner->name, *rt) : Expectations::services_key(ns, owner->name, *rt);
  if (created) expectations_.creation_observed(key);
  else expectations_.deletion_observed(key);
}

void JobController::enqueue_owner(const json::Value& obj) {
  auto owner = api::controller_of(obj);
  if (!owner) return;
  const auto& d = descriptor();
  const std::string ns(api::namespace_of(obj));
  if (owner->kind == d.kind && owner->api_version == d.api_version()) {
    queue_.add(ns + "/" + owner->name);
    return;
  }
  // A grandchild (the pods of an MPI launcher batch Job): hop through the owned object.
  for (const auto& [gr, inf] : owned_) {
    kube::ObjectPtr parent = inf->cache().get(ns + "/" + owner->name);
    if (!parent || api::uid_of(parent->root()) != owner->uid) continue;
    auto grand = api::controller_of(parent->root());
    if (grand && grand->kind == d.kind && grand->api_version == d.api_version()) queue_.add(ns + "/" + grand->name);
    return;
  }
}

framework::Observed JobController::observe(const std::string& ns, const std::string& uid) const {
  framework::Observed o;
  auto collect = [&](const kube::Informer& inf, std::vector<const json::Value*>& out, std::vector<std::shared_ptr<const void>>& keep) {
    for (auto& obj : inf.cache().by_index(kube::kControllerUidIndex, uid)) {
      if (api::namespace_of(obj->root()) != ns) continue;
      out.push_back(&obj->root());
      keep.push_back(std::move(obj));
    }
  };
  collect(*pods_, o.pods, o.keep_alive);
  collect(*services_, o.services, o.keep_alive);
  for (const auto& [gr, inf] : owned_) {
    auto& list = o.owned[gr];
    collect(*inf, list, o.keep_alive);
    // Pods of owned objects (the MPI launcher Job's pods) are the framework's to see as well.
    for (const auto* owned_obj : std::vector<const json::Value*>(list)) {
      const std::string owned_uid(api::uid_of(*owned_obj));
      auto& grandchildren = o.owned["pods/" + gr];
      for (auto& pod : pods_->cache().by_index(kube::kControllerUidIndex, owned_uid)) {
        grandchildren.push_back(&pod->root());
        o.keep_alive.push_back(std::move(pod));
      }
    }
  }
  return o;
}

void JobController::count(const std::string& ns, uint64_t JobCounters::*field) {
  std::lock_guard lock(stats_mu_);
  ++(counters_[ns].*field);
}

std::map<std::string, JobCounters> JobController::counters() const {
  std::lock_guard lock(stats_mu_);
  return counters_;
}

JobController::ReconcileStats JobController::reconcile_stats() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

ReconcileResult JobController::reconcile(const std::string& key) {
  const auto started = clock_.steady_now();
  ReconcileResult result;
  kube::ObjectPtr cached = jobs_->cache().get(key);
  if (!cached) {
    expectations_.forget_prefix(key + "/");
  } else {
    Pass pass{*this, descriptor(), *plugin_, cached, *cached, {}, {}, {}, key, {}, {}, {}, clock_.now(), {}, {}, {}, {}};
    pass.ns = std::string(api::namespace_of(cached->root()));
    pass.name = std::string(api::name_of(cached->root()));
    pass.uid = std::string(api::uid_of(cached->root()));
    result = pass.run();
  }
  std::lock_guard lock(stats_mu_);
  ++stats_.total;
  if (result.error) ++stats_.errors;
  if (result.requeue_after) ++stats_.requeue_after;
  stats_.duration.observe(std::chrono::duration<double>(clock_.steady_now() - started).count());
  return result;
}

void JobController::worker_loop() {
  // A pass before the child caches are synced would see a running job's pods as missing and
  // create them again (an operator restart over running jobs).
  while (!wait_for_sync(std::chrono::seconds(1)))
    if (!workers_started_) return;
  while (auto key = queue_.get()) {
    ReconcileResult r;
    try {
      r = reconcile(*key);
    } catch (const std::exception& e) {  // thread boundary: a bug in one job must not stop the worker
      r.error = internal_error(fmt::format("reconcile {}: {}", *key, e.what()));
    }
    if (r.error) {
      queue_.add_rate_limited(*key);
    } else {
      queue_.forget(*key);
      if (r.requeue_after) queue_.add_after(*key, *r.requeue_after);
    }
    queue_.done(*key);
  }
}

void JobController::start_caches() {
  if (caches_started_.exchange(true)) return;
  pods_->start();
  services_->start();
  for (auto& [_, inf] : owned_) inf->start();
  if (pod_groups_) pod_groups_->start();
  if (priority_classes_) priority_classes_->start();
  jobs_->start();
}

void JobController::start() {
  start_caches();
  if (workers_started_.exchange(true)) return;
  for (int i = 0; i < std::max(1, options_.workers); ++i) workers_.emplace_back([this] { worker_loop(); });
}

bool JobController::wait_for_sync(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  };
  if (!jobs_->wait_for_sync(left()) || !pods_->wait_for_sync(left()) || !services_->wait_for_sync(left())) return false;
  for (const auto& [_, inf] : owned_)
    if (!inf->wait_for_sync(left())) return false;
  if (priority_classes_ && !priority_classes_->wait_for_sync(left())) return false;
  return !pod_groups_ || pod_groups_->wait_for_sync(left());
}

void JobController::stop() {
  // Without workers nobody would take the queued keys: a follower just drops them, and so does a
  // leader whose caches never synced (its workers leave without taking a key).
  if (workers_started_.exchange(false) && wait_for_sync(std::chrono::milliseconds(0))) {
    queue_.shut_down_with_drain(std::chrono::seconds(30));
  } else {
    queue_.shut_down();
  }
  for (auto& t : workers_) t.join();
  workers_.clear();
  if (!caches_started_.exchange(false)) return;
  jobs_->stop();
  pods_->stop();
  services_->stop();
  for (auto& [_, inf] : owned_) inf->stop();
  if (pod_groups_) pod_groups_->stop();
  if (priority_classes_) priority_classes_->stop();
}

}  // namespace unitrain::controller
