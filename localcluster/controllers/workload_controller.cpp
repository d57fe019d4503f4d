// Kept whole: the Deployment, ReplicaSet, StatefulSet and DaemonSet controllers share the pod
// template hashing, ownership and status-condition helpers defined here.
#include "localcluster/controllers/workload_controller.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "core/api/time.h"
#include "localcluster/controllers/controller_base.h"

namespace unitrain::localcluster::controllers {

namespace {

using json::Value;

enum Kind { kDeployment = 0, kReplicaSet, kStatefulSet, kDaemonSet, kKinds };
constexpr const char* kResource[kKinds] = {"deployments", "replicasets", "statefulsets", "daemonsets"};
constexpr const char* kKindName[kKinds] = {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"};

constexpr std::string_view kHashLabel = "pod-template-hash";
constexpr std::string_view kRevisionHashLabel = "controller-revision-hash";
constexpr std::string_view kRevisionAnnotation = "deployment.kubernetes.io/revision";

std::string ptr(std::string_view prefix, std::string_view key) { return std::string(prefix) + json::escape_pointer_token(key); }

bool is_terminal(const Value& pod) {
  auto phase = str_at(pod, "/status/phase");
  return phase == "Succeeded" || phase == "Failed";
}
bool is_deleting(const Value& obj) { return json::find(obj, "/metadata/deletionTimestamp") != nullptr; }
bool is_active(const Value& pod) { return !is_terminal(pod) && !is_deleting(pod); }
bool is_ready(const Value& pod) {
  const Value* c = find_condition(pod, "/status/conditions", "Ready");
  return c && str_at(*c, "/status") == "True";
}

std::string controller_uid(const Value& obj) {
  const Value* refs = json::find(obj, "/metadata/ownerReferences");
  if (!refs || !refs->IsArray()) return {};
  for (const auto& r : refs->GetArray())
    if (json::get_bool(r, "/controller").value_or(false)) return std::string(str_at(r, "/uid"));
  return {};
}

int64_t replicas_of(const Value& obj) { return json::get_int(obj, "/spec/replicas").value_or(1); }

// Sets status counters, leaving zeros out where Kubernetes' types say omitempty.
void set_count(json::Document& st, std::string_view pointer, int64_t n, bool omit_zero = true) {
  if (n == 0 && omit_zero)
    json::remove(st, pointer);
  else
    (void)json::set_int(st, pointer, n);
}

// A condition as apps/v1 writes them: unchanged when status, reason and message are (unless
// `touch`, which moves lastUpdateTime: a Progressing condition that saw progress);
// lastTransitionTime moves only when the status flips.
void set_condition(json::Document& st, std::string_view type, std::string_view status, std::string_view reason,
                   std::string_view message, const std::string& now, bool touch = false) {
  Value* conds = json::find(st.root(), "/conditions");
  if (!conds || !conds->IsArray()) {
    (void)json::set(st, "/conditions", Value(rapidjson::kArrayType));
    conds = json::find(st.root(), "/conditions");
  }
  auto& a = st.alloc();
  for (auto& c : conds->GetArray()) {
    if (str_at(c, "/type") != type) continue;
    if (!touch && str_at(c, "/status") == status && str_at(c, "/reason") == reason && str_at(c, "/message") == message)
      return;
    bool flipped = str_at(c, "/status") != status;
    auto replace = [&](const char* name, std::string_view v) {
      c.RemoveMember(name);
      c.AddMember(Value(name, a), json::str(v, a), a);
    };
    replace("status", status);
    replace("reason", reason);
    replace("message", message);
    replace("lastUpdateTime", now);
    if (flipped) replace("lastTransitionTime", now);
    return;
  }
  Value c(rapidjson::kObjectType);
  c.AddMember("type", json::str(type, a), a);
  c.AddMember("status", json::str(status, a), a);
  c.AddMember("lastUpdateTime", json::str(now, a), a);
  c.AddMember("lastTransitionTime", json::str(now, a), a);
  c.AddMember("reason", json::str(reason, a), a);
  c.AddMember("message", json::str(message, a), a);
  conds->PushBack(c, a);
}

void remove_condition(json::Document& st, std::string_view type) {
  Value* conds = json::find(st.root(), "/conditions");
  if (!conds || !conds->IsArray()) return;
  for (auto it = conds->Begin(); it != conds->End();) it = str_at(*it, "/type") == type ? conds->Erase(it) : it + 1;
}

json::Document status_of(const Value& obj) {
  const Value* st = json::find(obj, "/status");
  return st && st->IsObject() ? json::Document::copy_of(*st) : json::Document::object();
}

// Whether a member of a pod template is the zero value of a non-pointer Go field, which a typed
// client writes or leaves out depending on the wire: JSON omits them (omitempty), a protobuf body
// (kubectl create) carries them (`stdin: false`, `generation: 0`, the zero creationTimestamp), and
// a typed JSON client (`kubectl rollout undo`) writes `creationTimestamp: null` and
// `resources: {}`. Pointer fields (automountServiceAccountToken, ...) are not listed: their zero
// is a value.
bool typed_zero(std::string_view key, const Value& v) {
  static constexpr std::string_view kZeroable[] = {
      "generation", "hostNetwork", "hostPID", "hostIPC", "stdin", "stdinOnce", "tty", "readOnly", "hostPort",
      "initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"};
  if (v.IsNull()) return true;
  if (key == "resources") return v.IsObject() && v.ObjectEmpty();
  if (key == "creationTimestamp") return v.IsString() && json::view(v) == "1970-01-01T00:00:00Z";
  if (std::find(std::begin(kZeroable), std::end(kZeroable), key) == std::end(kZeroable)) return false;
  return (v.IsBool() && !v.GetBool()) || (v.IsInt64() && v.GetInt64() == 0);
}

// A pod template as Go's typed objects see it (typed_zero members dropped), so a template restored
// from a ReplicaSet by `kubectl rollout undo` finds that ReplicaSet again.
void drop_typed_empties(Value& v) {
  if (v.IsArray()) {
    for (auto& e : v.GetArray()) drop_typed_empties(e);
    return;
  }
  if (!v.IsObject()) return;
  for (auto m = v.MemberBegin(); m != v.MemberEnd();) {
    drop_typed_empties(m->value);
    m = typed_zero(json::view(m->name), m->value) ? v.EraseMember(m) : m + 1;
  }
}

json::Document normalized_template(const Value& tmpl, bool drop_hash_label) {
  auto d = json::Document::copy_of(tmpl);
  drop_typed_empties(d.root());
  if (drop_hash_label) json::remove(d, ptr("/metadata/labels/", kHashLabel));
  if (const Value* l = json::find(d.root(), "/metadata/labels"); l && l->IsObject() && l->ObjectEmpty())
    json::remove(d, "/metadata/labels");
  if (const Value* m = json::find(d.root(), "/metadata"); m && m->IsObject() && m->ObjectEmpty()) json::remove(d, "/metadata");
  return d;
}

// What a StatefulSet or DaemonSet ControllerRevision records (and `kubectl rollout undo` applies
// as a strategic merge patch): the pod template, replacing the current one whole.
json::Document revision_data(const Value& tmpl) {
  auto d = json::Document::object();
  auto t = normalized_template(tmpl, false);
  (void)json::set(d, "/spec/template", json::clone(t.root(), d.alloc()));
  (void)json::set_string(d, "/spec/template/$patch", "replace");
  return d;
}

std::optional<api::TimePoint> time_at(const Value& v, std::string_view pointer) {
  auto text = str_at(v, pointer);
  if (text.empty()) return std::nullopt;
  auto t = api::parse_time(text);
  if (!t) return std::nullopt;
  return *t;
}

// A pod is available once it has been Ready for minReadySeconds. `next` gets the earliest time a
// Ready pod becomes available, so the controller looks again then.
bool is_available(const Value& pod, int64_t min_ready_seconds, api::TimePoint now,
                  std::optional<api::TimePoint>& next) {
  if (!is_ready(pod)) return false;
  if (min_ready_seconds <= 0) return true;
  const Value* c = find_condition(pod, "/status/conditions", "Ready");
  auto since = c ? time_at(*c, "/lastTransitionTime") : std::nullopt;
  if (!since) return false;
  auto at = *since + std::chrono::seconds(min_ready_seconds);
  if (at <= now) return true;
  if (!next || at < *next) next = at;
  return false;
}

int64_t min_ready_seconds_of(const Value& obj) { return json::get_int(obj, "/spec/minReadySeconds").value_or(0); }

}  // namespace

std::string pod_template_hash(const Value& pod_template) {
  uint32_t h = 2166136261u;
  for (unsigned char c : json::canonical(pod_template)) {
    h ^= c;
    h *= 16777619u;
  }
  // Kubernetes renders the hash in decimal and maps each character onto consonants and digits
  // that cannot spell words (rand.SafeEncodeString).
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::string out;
  for (char c : std::to_string(h)) out += kAlphabet[static_cast<unsigned char>(c) % kAlphabet.size()];
  return out;
}

int64_t resolve_int_or_percent(const Value* value, int64_t total, bool round_up, int64_t fallback) {
  if (value == nullptr) return fallback;
  if (value->IsInt64()) return std::max<int64_t>(value->GetInt64(), 0);
  if (!value->IsString()) return fallback;
  std::string_view s = json::view(*value);
  if (s.empty() || s.back() != '%') return fallback;
  int64_t pct = 0;
  for (char c : s.substr(0, s.size() - 1)) {
    if (c < '0' || c > '9') return fallback;
    pct = pct * 10 + (c - '0');
  }
  double v = static_cast<double>(pct) * static_cast<double>(total) / 100.0;
  return static_cast<int64_t>(round_up ? std::ceil(v) : std::floor(v));
}

struct WorkloadController::Impl {
  Store& store;
  EventLoop loop;
  std::optional<ResourceInfo> res[kKinds];
  std::optional<ResourceInfo> pods_r, nodes_r, pvcs_r;
  std::unordered_map<std::string, json::Document> objs[kKinds];  // by uid
  std::unordered_map<std::string, json::Document> pods;          // by uid
  std::unordered_map<std::string, std::string> owner_of;         // pod or ReplicaSet uid -> controller uid
  std::unordered_map<std::string, std::set<std::string>> children;  // controller uid -> pod/ReplicaSet uids
  std::map<std::string, json::Document> nodes;                   // by name
  std::optional<ResourceInfo> revisions_r;
  std::unordered_map<std::string, json::Document> revisions;     // ControllerRevisions by uid
  std::set<std::pair<int, std::string>> dirty;
  // A look again at an object once a pod becomes available or a progress deadline passes.
  std::map<std::pair<int, std::string>, std::pair<EventLoop::TimerId, api::TimePoint>> wakeups;

  explicit Impl(Store& s) : store(s), loop(s, "workload-controller") {}

  // ---- cache ----------------------------------------------------------------------------------

  void mark_owner(const std::string& uid) {
    for (int k = 0; k < kKinds; ++k)
      if (objs[k].count(uid)) dirty.insert({k, uid});
  }

  void link(const std::string& child, const std::string& owner) {
    auto old = owner_of.find(child);
    if (old != owner_of.end() && old->second != owner) {
      children[old->second].erase(child);
      mark_owner(old->second);
    }
    if (owner.empty()) {
      owner_of.erase(child);
      return;
    }
    owner_of[child] = owner;
    children[owner].insert(child);
  }

  void unlink(const std::string& child) {
    auto it = owner_of.find(child);
    if (it == owner_of.end()) return;
    mark_owner(it->second);
    if (auto c = children.find(it->second); c != children.end()) {
      c->second.erase(child);
      if (c->second.empty()) children.erase(c);
    }
    owner_of.erase(it);
  }

  void on_workload(int kind, EventType type, const Value& obj) {
    std::string uid(str_at(obj, "/metadata/uid"));
    if (type == EventType::Deleted) {
      // After a re-list a deleted object is known by namespace/name only.
      if (uid.empty()) {
        for (auto it = objs[kind].begin(); it != objs[kind].end(); ++it)
          if (str_at(it->second.root(), "/metadata/name") == str_at(obj, "/metadata/name") &&
              str_at(it->second.root(), "/metadata/namespace") == str_at(obj, "/metadata/namespace")) {
            uid = it->first;
            break;
          }
      }
      objs[kind].erase(uid);
      dirty.erase(std::make_pair(kind, uid));
      if (kind == kReplicaSet) unlink(uid);
      return;
    }
    objs[kind][uid] = json::Document::copy_of(obj);
    dirty.insert({kind, uid});
    if (kind == kReplicaSet) {
      link(uid, controller_uid(obj));
      if (auto o = owner_of.find(uid); o != owner_of.end()) mark_owner(o->second);
    }
  }

  void on_pod(EventType type, const Value& obj) {
    std::string uid(str_at(obj, "/metadata/uid"));
    if (type == EventType::Deleted) {
      unlink(uid);
      pods.erase(uid);
      return;
    }
    pods[uid] = json::Document::copy_of(obj);
    link(uid, controller_uid(obj));
    if (auto o = owner_of.find(uid); o != owner_of.end()) mark_owner(o->second);
  }

  void on_node(EventType type, const Value& obj) {
    std::string name(str_at(obj, "/metadata/name"));
    if (type == EventType::Deleted)
      nodes.erase(name);
    else
      nodes[name] = json::Document::copy_of(obj);
    for (const auto& [uid, d] : objs[kDaemonSet]) dirty.insert({kDaemonSet, uid});
  }

  void on_revision(EventType type, const Value& obj) {
    std::string uid(str_at(obj, "/metadata/uid"));
    if (type == EventType::Deleted) {
      if (uid.empty())
        for (const auto& [u, d] : revisions)
          if (str_at(d.root(), "/metadata/name") == str_at(obj, "/metadata/name") &&
              str_at(d.root(), "/metadata/namespace") == str_at(obj, "/metadata/namespace"))
            uid = u;
      if (auto it = revisions.find(uid); it != revisions.end()) {
        mark_owner(controller_uid(it->second.root()));
        revisions.erase(it);
      }
      return;
    }
    revisions[uid] = json::Document::copy_of(obj);
    mark_owner(controller_uid(obj));
  }

  // Sync (kind, uid) again at `at` (the earliest of the times asked for).
  void wake_at(int kind, const std::string& uid, api::TimePoint at) {
    auto key = std::make_pair(kind, uid);
    if (auto it = wakeups.find(key); it != wakeups.end()) {
      if (it->second.second <= at) return;
      loop.cancel(it->second.first);
    }
    auto delay = at - api::Clock::now();
    if (delay < std::chrono::milliseconds(0)) delay = {};
    // Timestamps have whole seconds: a little past `at`, so the comparison that waits for it holds.
    auto id = loop.after(std::chrono::duration_cast<Clock::duration>(delay) + std::chrono::milliseconds(50),
                         [this, key] {
                           wakeups.erase(key);
                           if (objs[key.first].count(key.second)) dirty.insert(key);
                         });
    wakeups[key] = {id, at};
  }

  std::vector<const Value*> owned_pods(const std::string& owner) {
    std::vector<const Value*> out;
    auto c = children.find(owner);
    if (c == children.end()) return out;
    for (const auto& uid : c->second)
      if (auto p = pods.find(uid); p != pods.end()) out.push_back(&p->second.root());
    return out;
  }

  // ---- writes ---------------------------------------------------------------------------------

  // A pod from the owner's template; `name` empty: generateName "<owner>-".
  bool create_pod(int kind, const Value& owner, const Value& tmpl, const std::string& name,
                  const std::vector<std::pair<std::string, std::string>>& labels,
                  const std::function<void(json::Document&)>& edit = {}) {
    auto pod = json::Document::object();
    std::string ns(str_at(owner, "/metadata/namespace"));
    std::string owner_name(str_at(owner, "/metadata/name"));
    (void)json::set_string(pod, "/apiVersion", "v1");
    (void)json::set_string(pod, "/kind", "Pod");
    if (name.empty())
      (void)json::set_string(pod, "/metadata/generateName", owner_name + "-");
    else
      (void)json::set_string(pod, "/metadata/name", name);
    (void)json::set_string(pod, "/metadata/namespace", ns);
    for (const char* m : {"labels", "annotations"})
      if (const Value* v = json::find(tmpl, std::string("/metadata/") + m); v && v->IsObject())
        (void)json::set(pod, std::string("/metadata/") + m, json::clone(*v, pod.alloc()));
    for (const auto& [k, v] : labels) (void)json::set_string(pod, ptr("/metadata/labels/", k), v);
    auto& a = pod.alloc();
    Value refs(rapidjson::kArrayType), ref(rapidjson::kObjectType);
    ref.AddMember("apiVersion", "apps/v1", a);
    ref.AddMember("kind", Value(kKindName[kind], a), a);
    ref.AddMember("name", json::str(owner_name, a), a);
    ref.AddMember("uid", json::str(str_at(owner, "/metadata/uid"), a), a);
    ref.AddMember("controller", true, a);
    ref.AddMember("blockOwnerDeletion", true, a);
    refs.PushBack(ref, a);
    (void)json::set(pod, "/metadata/ownerReferences", std::move(refs));
    if (const Value* spec = json::find(tmpl, "/spec")) (void)json::set(pod, "/spec", json::clone(*spec, a));
    if (edit) edit(pod);
    auto created = store.create(*pods_r, ns, std::move(pod));
    if (!created) return false;
    // Seen at once, so the next sync does not create it again before its watch event.
    on_pod(EventType::Added, created->root());
    return true;
  }

  void delete_pod(const Value& pod) {
    DeleteRequest req;
    req.precondition_uid = std::string(str_at(pod, "/metadata/uid"));
    auto out = store.remove(*pods_r, str_at(pod, "/metadata/namespace"), str_at(pod, "/metadata/name"), req);
    if (out && out->root().IsObject() && str_at(out->root(), "/kind") == "Pod") on_pod(EventType::Modified, out->root());
  }

  // Writes the status when it changed, and keeps the result as our view.
  void write_status(int kind, const std::string& uid, const json::Document& before, const json::Document& after) {
    if (json::equal(before.root(), after.root())) return;
    auto it = objs[kind].find(uid);
    if (it == objs[kind].end()) return;
    auto body = json::Document::object();
    auto patch = json::create_merge_patch(before.root(), after.root());
    (void)json::set(body, "/status", json::clone(patch.root(), body.alloc()));
    const Value& o = it->second.root();
    if (auto r = store.patch(*res[kind], str_at(o, "/metadata/namespace"), str_at(o, "/metadata/name"),
                             PatchKind::Merge, body.dump(), "status"))
      it->second = std::move(*r);
  }

  bool scale_replica_set(const std::string& uid, int64_t replicas) {
    auto it = objs[kReplicaSet].find(uid);
    if (it == objs[kReplicaSet].end()) return false;
    const Value& rs = it->second.root();
    if (replicas_of(rs) == replicas) return false;
    auto r = store.patch(*res[kReplicaSet], str_at(rs, "/metadata/namespace"), str_at(rs, "/metadata/name"),
                         PatchKind::Merge, fmt::format(R"({{"spec":{{"replicas":{}}}}})", replicas));
    if (!r) return false;
    on_workload(kReplicaSet, EventType::Modified, r->root());
    return true;
  }

  // ---- ReplicaSet -----------------------------------------------------------------------------

  void sync_replica_set(const std::string& uid) {
    const Value& rs = objs[kReplicaSet][uid].root();
    if (is_deleting(rs)) return;
    int64_t want = replicas_of(rs);
    std::vector<const Value*> active;
    for (const Value* p : owned_pods(uid))
      if (is_active(*p)) active.push_back(p);
    const Value* tmpl = json::find(rs, "/spec/template");
    if (static_cast<int64_t>(active.size()) < want && tmpl) {
      for (int64_t i = static_cast<int64_t>(active.size()); i < want; ++i)
        if (!create_pod(kReplicaSet, rs, *tmpl, "", {})) break;
    } else if (static_cast<int64_t>(active.size()) > want) {
      // Not-ready pods go first, then the newest, as the ReplicaSet controller ranks them.
      std::sort(active.begin(), active.end(), [](const Value* a, const Value* b) {
        if (is_ready(*a) != is_ready(*b)) return !is_ready(*a);
        return str_at(*a, "/metadata/creationTimestamp") > str_at(*b, "/metadata/creationTimestamp");
      });
      std::vector<json::Document> victims;
      for (size_t i = 0; i < active.size() - static_cast<size_t>(want); ++i)
        victims.push_back(json::Document::copy_of(*active[i]));
      for (const auto& v : victims) delete_pod(v.root());
    }
    const Value& now_rs = objs[kReplicaSet][uid].root();
    int64_t count = 0, ready = 0, available = 0;
    auto now_tp = api::Clock::now();
    std::optional<api::TimePoint> next;
    for (const Value* p : owned_pods(uid)) {
      if (!is_active(*p)) continue;
      ++count;
      if (is_ready(*p)) ++ready;
      if (is_available(*p, min_ready_seconds_of(now_rs), now_tp, next)) ++available;
    }
    auto before = status_of(now_rs);
    auto st = before;
    set_count(st, "/replicas", count, false);
    set_count(st, "/fullyLabeledReplicas", count);
    set_count(st, "/readyReplicas", ready);
    set_count(st, "/availableReplicas", available);
    (void)json::set_int(st, "/observedGeneration", json::get_int(now_rs, "/metadata/generation").value_or(1));
    write_status(kReplicaSet, uid, before, st);
    if (next) wake_at(kReplicaSet, uid, *next);
  }

  // ---- Deployment -----------------------------------------------------------------------------

  // Annotations a ReplicaSet takes from its Deployment: all but the ones the Deployment controller
  // owns itself (and kubectl's last-applied configuration), as kube-controller-manager copies them,
  // so `kubectl rollout history` shows each revision's kubernetes.io/change-cause.
  static bool copied_to_replica_set(std::string_view key) {
    return key != "kubectl.kubernetes.io/last-applied-configuration" && key != kRevisionAnnotation &&
           key != "deployment.kubernetes.io/revision-history" && key != "deployment.kubernetes.io/desired-replicas" &&
           key != "deployment.kubernetes.io/max-replicas" && key != "deprecated.deployment.rollback.to";
  }

  // The new ReplicaSet's annotations and minReadySeconds brought in line with the Deployment: its
  // revision becomes `revision` when lower (the old number joins revision-history: a rollback).
  void sync_new_replica_set(const Value& d, const std::string& rs_uid, int64_t revision) {
    const Value& rs = objs[kReplicaSet][rs_uid].root();
    auto patch = json::Document::object();
    if (const Value* an = json::find(d, "/metadata/annotations"); an && an->IsObject())
      for (auto m = an->MemberBegin(); m != an->MemberEnd(); ++m) {
        std::string key(json::view(m->name));
        if (copied_to_replica_set(key) && str_at(rs, ptr("/metadata/annotations/", key)) != json::view(m->value))
          (void)json::set(patch, ptr("/metadata/annotations/", key), json::clone(m->value, patch.alloc()));
      }
    std::string old_revision(str_at(rs, ptr("/metadata/annotations/", kRevisionAnnotation)));
    if (std::atoll(old_revision.c_str()) < revision) {
      (void)json::set_string(patch, ptr("/metadata/annotations/", kRevisionAnnotation), std::to_string(revision));
      if (!old_revision.empty()) {
        std::string history(str_at(rs, "/metadata/annotations/deployment.kubernetes.io~1revision-history"));
        (void)json::set_string(patch, "/metadata/annotations/deployment.kubernetes.io~1revision-history",
                               history.empty() ? old_revision : history + "," + old_revision);
      }
    }
    if (min_ready_seconds_of(rs) != min_ready_seconds_of(d)) (void)json::set_int(patch, "/spec/minReadySeconds", min_ready_seconds_of(d));
    if (patch.root().ObjectEmpty()) return;
    if (auto r = store.patch(*res[kReplicaSet], str_at(rs, "/metadata/namespace"), str_at(rs, "/metadata/name"),
                             PatchKind::Merge, patch.dump()))
      on_workload(kReplicaSet, EventType::Modified, r->root());
  }

  void sync_deployment(const std::string& uid) {
    const json::Document dep = objs[kDeployment][uid];
    const Value& d = dep.root();
    if (is_deleting(d)) return;
    std::string ns(str_at(d, "/metadata/namespace")), name(str_at(d, "/metadata/name"));
    const Value* tmpl = json::find(d, "/spec/template");
    if (!tmpl) return;
    int64_t want = replicas_of(d);
    auto wanted_template = normalized_template(*tmpl, true);
    std::string hash = pod_template_hash(wanted_template.root());
    bool recreate = str_at(d, "/spec/strategy/type") == "Recreate";
    int64_t surge = resolve_int_or_percent(json::find(d, "/spec/strategy/rollingUpdate/maxSurge"), want, true, 0);
    int64_t unavailable =
        resolve_int_or_percent(json::find(d, "/spec/strategy/rollingUpdate/maxUnavailable"), want, false, 0);
    if (!json::find(d, "/spec/strategy/rollingUpdate/maxSurge")) surge = (want * 25 + 99) / 100;
    if (!json::find(d, "/spec/strategy/rollingUpdate/maxUnavailable")) unavailable = want * 25 / 100;
    if (surge == 0 && unavailable == 0) unavailable = 1;
    // Kubernetes' MaxUnavailable: what availability may drop to; Recreate (and zero replicas) allow none.
    int64_t availability_slack = recreate || want == 0 ? 0 : std::min(unavailable, want);
    if (recreate) {
      surge = 0;
      unavailable = want;
    }

    // The new ReplicaSet is the one whose template is the Deployment's (the hash label aside).
    std::string new_uid;
    std::vector<std::string> old;  // oldest first
    int64_t max_old_revision = 0;
    if (auto c = children.find(uid); c != children.end()) {
      for (const auto& child : c->second) {
        auto it = objs[kReplicaSet].find(child);
        if (it == objs[kReplicaSet].end()) continue;
        const Value& rs = it->second.root();
        const Value* rs_tmpl = json::find(rs, "/spec/template");
        bool same = str_at(rs, ptr("/metadata/labels/", kHashLabel)) == hash ||
                    (rs_tmpl && json::equal(normalized_template(*rs_tmpl, true).root(), wanted_template.root()));
        if (new_uid.empty() && !is_deleting(rs) && same)
          new_uid = child;
        else
          old.push_back(child);
      }
    }
    for (const auto& u : old)
      max_old_revision = std::max<int64_t>(
          max_old_revision, std::atoll(std::string(str_at(objs[kReplicaSet][u].root(), ptr("/metadata/annotations/", kRevisionAnnotation))).c_str()));
    std::sort(old.begin(), old.end(), [this](const std::string& a, const std::string& b) {
      return str_at(objs[kReplicaSet][a].root(), "/metadata/creationTimestamp") <
             str_at(objs[kReplicaSet][b].root(), "/metadata/creationTimestamp");
    });
    auto spec_replicas = [this](const std::string& u) { return replicas_of(objs[kReplicaSet][u].root()); };
    auto available = [this](const std::string& u) {
      return json::get_int(objs[kReplicaSet][u].root(), "/status/availableReplicas").value_or(0);
    };
    int64_t old_total = 0;
    for (const auto& u : old) old_total += spec_replicas(u);
    bool paused = json::get_bool(d, "/spec/paused").value_or(false);
    std::string now = now_rfc3339();
    auto st = status_of(d);
    const auto before = st;
    // Seconds without progress before ProgressDeadlineExceeded; 0 for none (unset, or math.MaxInt32).
    int64_t deadline = json::get_int(d, "/spec/progressDeadlineSeconds").value_or(0);
    if (deadline == 2147483647) deadline = 0;

    bool created = false;
    if (new_uid.empty() && !paused) {
      int64_t initial = recreate ? (old_total == 0 ? want : 0) : std::min(want, std::max<int64_t>(want + surge - old_total, 0));
      new_uid = create_replica_set(d, *tmpl, hash, max_old_revision + 1, initial, want + surge);
      if (new_uid.empty()) return;
      created = true;
    }
    std::string new_name = new_uid.empty() ? std::string() : std::string(str_at(objs[kReplicaSet][new_uid].root(), "/metadata/name"));
    if (!new_uid.empty() && !paused) {
      if (!created) sync_new_replica_set(d, new_uid, max_old_revision + 1);
      std::string revision(str_at(objs[kReplicaSet][new_uid].root(), ptr("/metadata/annotations/", kRevisionAnnotation)));
      if (!revision.empty() && str_at(d, ptr("/metadata/annotations/", kRevisionAnnotation)) != revision) {
        auto patch = json::Document::object();
        (void)json::set_string(patch, ptr("/metadata/annotations/", kRevisionAnnotation), revision);
        if (auto r = store.patch(*res[kDeployment], ns, name, PatchKind::Merge, patch.dump()))
          objs[kDeployment][uid] = std::move(*r);
      }
      if (deadline > 0 && created)
        set_condition(st, "Progressing", "True", "NewReplicaSetCreated", fmt::format("Created new replica set \"{}\"", new_name), now);
      else if (deadline > 0 && !find_condition(st.root(), "/conditions", "Progressing"))
        set_condition(st, "Progressing", "True", "FoundNewReplicaSet", fmt::format("Found new replica set \"{}\"", new_name), now);
      if (recreate) {
        bool old_pods = false;
        for (const auto& u : old) {
          scale_replica_set(u, 0);
          for (const Value* p : owned_pods(u)) old_pods |= !is_terminal(*p);
        }
        if (!old_pods) scale_replica_set(new_uid, want);
      } else {
        int64_t new_replicas = spec_replicas(new_uid);
        if (new_replicas > want) {
          scale_replica_set(new_uid, want);
        } else if (new_replicas < want) {
          int64_t up = std::min(want + surge - (old_total + new_replicas), want - new_replicas);
          if (up > 0) scale_replica_set(new_uid, new_replicas + up);
        }
        // Old ReplicaSets shrink as far as availability allows: unhealthy replicas first.
        int64_t min_available = want - unavailable;
        int64_t all = old_total + spec_replicas(new_uid);
        int64_t new_unavailable = spec_replicas(new_uid) - available(new_uid);
        int64_t budget = all - min_available - new_unavailable;
        for (const auto& u : old) {
          if (budget <= 0) break;
          int64_t unhealthy = spec_replicas(u) - available(u);
          int64_t take = std::min(budget, std::max<int64_t>(unhealthy, 0));
          if (take > 0 && scale_replica_set(u, spec_replicas(u) - take)) budget -= take;
        }
        int64_t available_all = available(new_uid);
        for (const auto& u : old) available_all += available(u);
        int64_t down = available_all - min_available;
        for (const auto& u : old) {
          if (down <= 0) break;
          int64_t take = std::min(down, spec_replicas(u));
          if (take > 0 && scale_replica_set(u, spec_replicas(u) - take)) down -= take;
        }
      }
      cleanup_history(d, old);
    }

    int64_t replicas = 0, updated = 0, ready = 0, avail = 0, total_spec = 0;
    std::vector<std::string> all_rs = old;
    if (!new_uid.empty()) all_rs.push_back(new_uid);
    for (const auto& u : all_rs) {
      auto it = objs[kReplicaSet].find(u);
      if (it == objs[kReplicaSet].end()) continue;
      const Value& rs = it->second.root();
      int64_t r = json::get_int(rs, "/status/replicas").value_or(0);
      replicas += r;
      if (u == new_uid) updated = r;
      ready += json::get_int(rs, "/status/readyReplicas").value_or(0);
      avail += json::get_int(rs, "/status/availableReplicas").value_or(0);
      total_spec += replicas_of(rs);
    }
    const Value& now_d = objs[kDeployment][uid].root();
    int64_t generation = json::get_int(now_d, "/metadata/generation").value_or(1);
    (void)json::set_int(st, "/observedGeneration", generation);
    set_count(st, "/replicas", replicas);
    set_count(st, "/updatedReplicas", updated);
    set_count(st, "/readyReplicas", ready);
    set_count(st, "/availableReplicas", avail);
    set_count(st, "/unavailableReplicas", std::max<int64_t>(total_spec - avail, 0));
    if (avail >= want - availability_slack)
      set_condition(st, "Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.", now);
    else
      set_condition(st, "Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.",
                    now);
    update_progress(uid, d, st, before, paused, deadline, new_name, want, now);
    write_status(kDeployment, uid, before, st);
  }

  // The Progressing condition as the Deployment controller keeps it: paused and resumed, complete
  // (NewReplicaSetAvailable), progress seen (ReplicaSetUpdated, lastUpdateTime moves), or no
  // progress for progressDeadlineSeconds (ProgressDeadlineExceeded, which `kubectl rollout status`
  // reports as a failure). Without a deadline there is no Progressing condition.
  void update_progress(const std::string& uid, const Value& d, json::Document& st, const json::Document& before,
                       bool paused, int64_t deadline, const std::string& new_name, int64_t want,
                       const std::string& now) {
    if (deadline <= 0) {
      remove_condition(st, "Progressing");
      return;
    }
    const Value* cond = find_condition(before.root(), "/conditions", "Progressing");
    std::string_view reason = cond ? str_at(*cond, "/reason") : std::string_view();
    if (paused) {
      if (reason != "DeploymentPaused" && reason != "ProgressDeadlineExceeded")
        set_condition(st, "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", now);
      return;
    }
    if (reason == "DeploymentPaused") {
      set_condition(st, "Progressing", "Unknown", "DeploymentResumed", "Deployment is resumed", now);
      return;
    }
    auto count = [](const json::Document& s, const char* field) { return json::get_int(s.root(), field).value_or(0); };
    auto subject = new_name.empty() ? fmt::format("Deployment \"{}\"", str_at(d, "/metadata/name"))
                                    : fmt::format("ReplicaSet \"{}\"", new_name);
    bool complete = count(st, "/updatedReplicas") == want && count(st, "/replicas") == want &&
                    count(st, "/availableReplicas") == want &&
                    count(st, "/observedGeneration") >= json::get_int(d, "/metadata/generation").value_or(1);
    // A rollout that completed stays complete until a new one starts.
    if (count(st, "/replicas") == count(st, "/updatedReplicas") && reason == "NewReplicaSetAvailable") return;
    bool progressed = count(st, "/updatedReplicas") > count(before, "/updatedReplicas") ||
                      count(st, "/replicas") - count(st, "/updatedReplicas") <
                          count(before, "/replicas") - count(before, "/updatedReplicas") ||
                      count(st, "/readyReplicas") > count(before, "/readyReplicas") ||
                      count(st, "/availableReplicas") > count(before, "/availableReplicas");
    if (complete) {
      set_condition(st, "Progressing", "True", "NewReplicaSetAvailable", subject + " has successfully progressed.", now);
      return;
    }
    if (progressed) {
      set_condition(st, "Progressing", "True", "ReplicaSetUpdated", subject + " is progressing.", now, true);
      return;
    }
    const Value* current = find_condition(st.root(), "/conditions", "Progressing");
    if (!current || str_at(*current, "/reason") == "ProgressDeadlineExceeded") return;
    auto since = time_at(*current, "/lastUpdateTime");
    if (!since) return;
    auto at = *since + std::chrono::seconds(deadline);
    if (at < api::Clock::now())
      set_condition(st, "Progressing", "False", "ProgressDeadlineExceeded", subject + " has timed out progressing.", now);
    else
      wake_at(kDeployment, uid, at + std::chrono::seconds(1));
  }

  std::string create_replica_set(const Value& d, const Value& tmpl, const std::string& hash, int64_t revision,
                                 int64_t replicas, int64_t max_replicas) {
    auto rs = json::Document::object();
    auto& a = rs.alloc();
    std::string ns(str_at(d, "/metadata/namespace")), name(str_at(d, "/metadata/name"));
    (void)json::set_string(rs, "/apiVersion", "apps/v1");
    (void)json::set_string(rs, "/kind", "ReplicaSet");
    (void)json::set_string(rs, "/metadata/name", name + "-" + hash);
    (void)json::set_string(rs, "/metadata/namespace", ns);
    if (const Value* l = json::find(tmpl, "/metadata/labels"); l && l->IsObject())
      (void)json::set(rs, "/metadata/labels", json::clone(*l, a));
    (void)json::set_string(rs, ptr("/metadata/labels/", kHashLabel), hash);
    if (const Value* an = json::find(d, "/metadata/annotations"); an && an->IsObject())
      for (auto m = an->MemberBegin(); m != an->MemberEnd(); ++m)
        if (copied_to_replica_set(json::view(m->name)))
          (void)json::set(rs, ptr("/metadata/annotations/", json::view(m->name)), json::clone(m->value, a));
    (void)json::set_string(rs, ptr("/metadata/annotations/", kRevisionAnnotation), std::to_string(revision));
    (void)json::set_string(rs, "/metadata/annotations/deployment.kubernetes.io~1desired-replicas",
                           std::to_string(replicas_of(d)));
    (void)json::set_string(rs, "/metadata/annotations/deployment.kubernetes.io~1max-replicas",
                           std::to_string(max_replicas));
    Value refs(rapidjson::kArrayType), ref(rapidjson::kObjectType);
    ref.AddMember("apiVersion", "apps/v1", a);
    ref.AddMember("kind", "Deployment", a);
    ref.AddMember("name", json::str(name, a), a);
    ref.AddMember("uid", json::str(str_at(d, "/metadata/uid"), a), a);
    ref.AddMember("controller", true, a);
    ref.AddMember("blockOwnerDeletion", true, a);
    refs.PushBack(ref, a);
    (void)json::set(rs, "/metadata/ownerReferences", std::move(refs));
    (void)json::set_int(rs, "/spec/replicas", replicas);
    if (int64_t mrs = min_ready_seconds_of(d); mrs > 0) (void)json::set_int(rs, "/spec/minReadySeconds", mrs);
    if (const Value* sel = json::find(d, "/spec/selector")) (void)json::set(rs, "/spec/selector", json::clone(*sel, a));
    (void)json::set_string(rs, ptr("/spec/selector/matchLabels/", kHashLabel), hash);
    (void)json::set(rs, "/spec/template", json::clone(tmpl, a));
    (void)json::set_string(rs, ptr("/spec/template/metadata/labels/", kHashLabel), hash);
    auto created = store.create(*res[kReplicaSet], ns, std::move(rs));
    if (!created) return {};
    on_workload(kReplicaSet, EventType::Added, created->root());
    return std::string(str_at(created->root(), "/metadata/uid"));
  }

  // Old ReplicaSets scaled to zero beyond spec.revisionHistoryLimit (10) are deleted, oldest first.
  void cleanup_history(const Value& d, const std::vector<std::string>& old) {
    int64_t limit = json::get_int(d, "/spec/revisionHistoryLimit").value_or(10);
    std::vector<std::string> idle;
    for (const auto& u : old) {
      auto it = objs[kReplicaSet].find(u);
      if (it == objs[kReplicaSet].end()) continue;
      const Value& rs = it->second.root();
      if (replicas_of(rs) == 0 && json::get_int(rs, "/status/replicas").value_or(0) == 0 && !is_deleting(rs))
        idle.push_back(u);
    }
    for (size_t i = 0; static_cast<int64_t>(idle.size() - i) > limit; ++i) {
      const Value& rs = objs[kReplicaSet][idle[i]].root();
      DeleteRequest req;
      req.precondition_uid = idle[i];
      (void)store.remove(*res[kReplicaSet], str_at(rs, "/metadata/namespace"), str_at(rs, "/metadata/name"), req);
    }
  }

  // ---- ControllerRevisions (StatefulSet, DaemonSet) ------------------------------------------

  // The owner's revisions, oldest revision number first.
  std::vector<const Value*> owned_revisions(const std::string& owner) {
    std::vector<const Value*> out;
    for (const auto& [u, d] : revisions)
      if (controller_uid(d.root()) == owner && !is_deleting(d.root())) out.push_back(&d.root());
    std::sort(out.begin(), out.end(), [](const Value* a, const Value* b) {
      return json::get_int(*a, "/revision").value_or(0) < json::get_int(*b, "/revision").value_or(0);
    });
    return out;
  }

  // The revision of the current template, "<owner>-<hash>", as the StatefulSet and DaemonSet
  // controllers keep them: an existing revision with the same data becomes the newest (its number
  // moves past the others, as after `kubectl rollout undo`), otherwise one is created with the
  // next number. Revisions beyond spec.revisionHistoryLimit that no pod uses (`in_use` names) are
  // deleted, oldest first. Empty when the store refused the write.
  std::string sync_history(int kind, const std::string& uid, const Value& owner, const Value& tmpl,
                           std::set<std::string> in_use) {
    std::string ns(str_at(owner, "/metadata/namespace")), owner_name(str_at(owner, "/metadata/name"));
    std::string hash = pod_template_hash(normalized_template(tmpl, false).root());
    std::string name = owner_name + "-" + hash;
    auto data = revision_data(tmpl);
    auto owned = owned_revisions(uid);
    int64_t max_revision = owned.empty() ? 0 : json::get_int(*owned.back(), "/revision").value_or(0);
    const Value* equal = nullptr;
    for (const Value* r : owned) {
      const Value* d = json::find(*r, "/data");
      if (d && json::equal(*d, data.root())) equal = r;
    }
    if (equal) {
      name = std::string(str_at(*equal, "/metadata/name"));
      if (equal != owned.back()) {
        auto r = store.patch(*revisions_r, ns, name, PatchKind::Merge,
                             fmt::format(R"({{"revision":{}}})", max_revision + 1));
        if (!r) return {};
        on_revision(EventType::Modified, r->root());
      }
    } else {
      auto rev = json::Document::object();
      auto& a = rev.alloc();
      (void)json::set_string(rev, "/apiVersion", "apps/v1");
      (void)json::set_string(rev, "/kind", "ControllerRevision");
      (void)json::set_string(rev, "/metadata/name", name);
      (void)json::set_string(rev, "/metadata/namespace", ns);
      if (const Value* l = json::find(tmpl, "/metadata/labels"); l && l->IsObject())
        (void)json::set(rev, "/metadata/labels", json::clone(*l, a));
      (void)json::set_string(rev, ptr("/metadata/labels/", kind == kStatefulSet ? "controller.kubernetes.io/hash"
                                                                                 : kRevisionHashLabel),
                             hash);
      if (const Value* an = json::find(owner, "/metadata/annotations"); an && an->IsObject())
        (void)json::set(rev, "/metadata/annotations", json::clone(*an, a));
      Value refs(rapidjson::kArrayType), ref(rapidjson::kObjectType);
      ref.AddMember("apiVersion", "apps/v1", a);
      ref.AddMember("kind", Value(kKindName[kind], a), a);
      ref.AddMember("name", json::str(owner_name, a), a);
      ref.AddMember("uid", json::str(uid, a), a);
      ref.AddMember("controller", true, a);
      ref.AddMember("blockOwnerDeletion", true, a);
      refs.PushBack(ref, a);
      (void)json::set(rev, "/metadata/ownerReferences", std::move(refs));
      (void)json::set(rev, "/data", json::clone(data.root(), a));
      (void)json::set_int(rev, "/revision", max_revision + 1);
      auto created = store.create(*revisions_r, ns, std::move(rev));
      if (!created) return {};
      on_revision(EventType::Added, created->root());
    }
    in_use.insert(name);
    int64_t limit = json::get_int(owner, "/spec/revisionHistoryLimit").value_or(10);
    std::vector<std::string> idle;
    for (const Value* r : owned_revisions(uid))
      if (!in_use.count(std::string(str_at(*r, "/metadata/name")))) idle.push_back(std::string(str_at(*r, "/metadata/name")));
    for (size_t i = 0; static_cast<int64_t>(idle.size() - i) > limit; ++i) {
      DeleteRequest req;
      (void)store.remove(*revisions_r, ns, idle[i], req);
    }
    return name;
  }

  // ---- StatefulSet ----------------------------------------------------------------------------

  void sync_stateful_set(const std::string& uid) {
    const json::Document set_doc = objs[kStatefulSet][uid];
    const Value& s = set_doc.root();
    if (is_deleting(s)) return;
    const Value* tmpl = json::find(s, "/spec/template");
    if (!tmpl) return;
    std::string ns(str_at(s, "/metadata/namespace")), name(str_at(s, "/metadata/name"));
    int64_t want = replicas_of(s);
    bool parallel = str_at(s, "/spec/podManagementPolicy") == "Parallel";
    bool on_delete = str_at(s, "/spec/updateStrategy/type") == "OnDelete";
    int64_t partition = json::get_int(s, "/spec/updateStrategy/rollingUpdate/partition").value_or(0);
    std::string current_revision(str_at(s, "/status/currentRevision"));
    std::set<std::string> in_use;
    if (!current_revision.empty()) in_use.insert(current_revision);
    for (const Value* p : owned_pods(uid)) in_use.insert(std::string(str_at(*p, ptr("/metadata/labels/", kRevisionHashLabel))));
    std::string update_revision = sync_history(kStatefulSet, uid, s, *tmpl, in_use);
    if (update_revision.empty()) return;
    if (current_revision.empty()) current_revision = update_revision;

    std::map<int64_t, const Value*> by_ordinal;
    std::vector<const Value*> extra;
    for (const Value* p : owned_pods(uid)) {
      std::string_view pname = str_at(*p, "/metadata/name");
      auto dash = pname.rfind('-');
      int64_t ordinal = -1;
      if (dash != std::string_view::npos && pname.substr(0, dash) == name)
        ordinal = std::atoll(std::string(pname.substr(dash + 1)).c_str());
      if (ordinal < 0 || ordinal >= want)
        extra.push_back(p);
      else
        by_ordinal[ordinal] = p;
    }
    bool all_ready = true;
    for (int64_t i = 0; i < want; ++i) {
      auto it = by_ordinal.find(i);
      if (it == by_ordinal.end()) {
        if (!parallel && !all_ready) break;
        create_ordinal(s, *tmpl, i, i < partition ? current_revision : update_revision);
        all_ready = false;
        if (!parallel) break;
        continue;
      }
      const Value& p = *it->second;
      if (is_terminal(p) && !is_deleting(p)) {
        // A failed or completed member is replaced under the same name.
        delete_pod(json::Document::copy_of(p).root());
        all_ready = false;
        if (!parallel) break;
        continue;
      }
      if (!is_ready(p) || is_deleting(p)) {
        all_ready = false;
        if (!parallel) break;
      }
    }
    // Scale-down: the highest ordinal first; OrderedReady waits for the rest to be Ready.
    std::sort(extra.begin(), extra.end(), [](const Value* a, const Value* b) {
      return str_at(*a, "/metadata/name").size() != str_at(*b, "/metadata/name").size()
                 ? str_at(*a, "/metadata/name").size() > str_at(*b, "/metadata/name").size()
                 : str_at(*a, "/metadata/name") > str_at(*b, "/metadata/name");
    });
    for (const Value* p : extra) {
      if (is_deleting(*p)) {
        if (!parallel) break;
        continue;
      }
      if (!parallel && !all_ready) break;
      delete_pod(json::Document::copy_of(*p).root());
      if (!parallel) break;
    }
    // Rolling update from the highest ordinal down to the partition, one pod at a time.
    if (!on_delete && all_ready && extra.empty()) {
      for (int64_t i = want - 1; i >= partition; --i) {
        auto it = by_ordinal.find(i);
        if (it == by_ordinal.end()) break;
        if (str_at(*it->second, ptr("/metadata/labels/", kRevisionHashLabel)) != update_revision) {
          delete_pod(json::Document::copy_of(*it->second).root());
          break;
        }
      }
    }

    int64_t replicas = 0, ready = 0, available = 0, current = 0, updated = 0;
    auto now_tp = api::Clock::now();
    std::optional<api::TimePoint> next;
    for (const Value* p : owned_pods(uid)) {
      if (is_terminal(*p)) continue;
      ++replicas;
      if (is_ready(*p) && !is_deleting(*p)) ++ready;
      if (!is_deleting(*p) && is_available(*p, min_ready_seconds_of(s), now_tp, next)) ++available;
      auto rev = str_at(*p, ptr("/metadata/labels/", kRevisionHashLabel));
      if (rev == current_revision) ++current;
      if (rev == update_revision) ++updated;
    }
    if (updated == want && ready == want && replicas == want) {
      current_revision = update_revision;
      current = updated;
    }
    const Value& now_s = objs[kStatefulSet][uid].root();
    auto before = status_of(now_s);
    auto st = before;
    (void)json::set_int(st, "/observedGeneration", json::get_int(now_s, "/metadata/generation").value_or(1));
    set_count(st, "/replicas", replicas, false);
    set_count(st, "/readyReplicas", ready);
    set_count(st, "/availableReplicas", available, false);
    set_count(st, "/currentReplicas", current);
    set_count(st, "/updatedReplicas", updated);
    (void)json::set_string(st, "/currentRevision", current_revision);
    (void)json::set_string(st, "/updateRevision", update_revision);
    set_count(st, "/collisionCount", 0, false);
    write_status(kStatefulSet, uid, before, st);
    if (next) wake_at(kStatefulSet, uid, *next);
  }

  void create_ordinal(const Value& s, const Value& tmpl, int64_t ordinal, const std::string& revision) {
    std::string ns(str_at(s, "/metadata/namespace")), name(str_at(s, "/metadata/name"));
    std::string pod_name = fmt::format("{}-{}", name, ordinal);
    std::vector<std::string> claims;
    if (const Value* vcts = json::find(s, "/spec/volumeClaimTemplates"); vcts && vcts->IsArray() && pvcs_r) {
      for (const auto& t : vcts->GetArray()) {
        std::string tname(str_at(t, "/metadata/name"));
        std::string claim = fmt::format("{}-{}", tname, pod_name);
        auto pvc = json::Document::copy_of(t);
        (void)json::set_string(pvc, "/apiVersion", "v1");
        (void)json::set_string(pvc, "/kind", "PersistentVolumeClaim");
        (void)json::set_string(pvc, "/metadata/name", claim);
        (void)json::set_string(pvc, "/metadata/namespace", ns);
        if (const Value* l = json::find(tmpl, "/metadata/labels"); l && l->IsObject() && !json::find(pvc.root(), "/metadata/labels"))
          (void)json::set(pvc, "/metadata/labels", json::clone(*l, pvc.alloc()));
        json::remove(pvc, "/status");
        auto created = store.create(*pvcs_r, ns, std::move(pvc));
        if (!created && created.error().code != 409) return;
        claims.push_back(tname);
      }
    }
    std::string index = std::to_string(ordinal);
    std::string service(str_at(s, "/spec/serviceName"));
    create_pod(kStatefulSet, s, tmpl, pod_name,
               {{"statefulset.kubernetes.io/pod-name", pod_name},
                {"apps.kubernetes.io/pod-index", index},
                {std::string(kRevisionHashLabel), revision}},
               [&](json::Document& pod) {
                 (void)json::set_string(pod, "/spec/hostname", pod_name);
                 if (!service.empty()) (void)json::set_string(pod, "/spec/subdomain", service);
                 if (claims.empty()) return;
                 auto& a = pod.alloc();
                 if (!json::find(pod.root(), "/spec/volumes")) (void)json::set(pod, "/spec/volumes", Value(rapidjson::kArrayType));
                 Value* vols = json::find(pod.root(), "/spec/volumes");
                 for (const auto& t : claims) {
                   Value v(rapidjson::kObjectType);
                   v.AddMember("name", json::str(t, a), a);
                   Value src(rapidjson::kObjectType);
                   src.AddMember("claimName", json::str(fmt::format("{}-{}", t, pod_name), a), a);
                   v.AddMember("persistentVolumeClaim", src, a);
                   vols->PushBack(v, a);
                 }
               });
  }

  // ---- DaemonSet ------------------------------------------------------------------------------

  static bool node_matches(const Value& node, const Value& tmpl) {
    const Value* sel = json::find(tmpl, "/spec/nodeSelector");
    if (!sel || !sel->IsObject()) return true;
    for (auto m = sel->MemberBegin(); m != sel->MemberEnd(); ++m)
      if (!m->value.IsString() || str_at(node, ptr("/metadata/labels/", json::view(m->name))) != json::view(m->value))
        return false;
    return true;
  }

  void sync_daemon_set(const std::string& uid) {
    const json::Document ds_doc = objs[kDaemonSet][uid];
    const Value& ds = ds_doc.root();
    if (is_deleting(ds)) return;
    const Value* tmpl = json::find(ds, "/spec/template");
    if (!tmpl) return;
    std::string ds_name(str_at(ds, "/metadata/name"));
    std::set<std::string> in_use;
    for (const Value* p : owned_pods(uid))
      in_use.insert(ds_name + "-" + std::string(str_at(*p, ptr("/metadata/labels/", kRevisionHashLabel))));
    std::string revision = sync_history(kDaemonSet, uid, ds, *tmpl, in_use);
    if (revision.empty()) return;
    // DaemonSet pods carry the hash alone; the revision is "<daemonset>-<hash>".
    std::string hash = revision.substr(ds_name.size() + 1);
    std::string generation = std::to_string(json::get_int(ds, "/metadata/generation").value_or(1));
    int64_t min_ready = min_ready_seconds_of(ds);
    auto now_tp = api::Clock::now();
    std::optional<api::TimePoint> next;
    std::map<std::string, std::vector<const Value*>> by_node;
    for (const Value* p : owned_pods(uid)) by_node[std::string(str_at(*p, "/spec/nodeName"))].push_back(p);
    int64_t desired = 0, scheduled = 0, ready = 0, available = 0, updated = 0, misscheduled = 0;
    std::vector<json::Document> outdated;
    bool rolling = true;  // one outdated pod replaced at a time, once every other pod is available
    for (const auto& [node, doc] : nodes) {
      bool eligible = node_matches(doc.root(), *tmpl);
      auto it = by_node.find(node);
      std::vector<const Value*> here = it == by_node.end() ? std::vector<const Value*>{} : it->second;
      if (!eligible) {
        for (const Value* p : here)
          if (!is_deleting(*p)) {
            ++misscheduled;
            delete_pod(json::Document::copy_of(*p).root());
          }
        continue;
      }
      ++desired;
      const Value* live = nullptr;
      for (const Value* p : here) {
        if (is_terminal(*p) && !is_deleting(*p)) delete_pod(json::Document::copy_of(*p).root());
        else if (!is_deleting(*p)) live = p;
      }
      if (!live) {
        bool terminating = std::any_of(here.begin(), here.end(), [](const Value* p) { return is_deleting(*p); });
        const std::string target = node;
        if (!terminating)
          create_pod(kDaemonSet, ds, *tmpl, "", {{std::string(kRevisionHashLabel), hash}, {"pod-template-generation", generation}},
                     [&target](json::Document& pod) { (void)json::set_string(pod, "/spec/nodeName", target); });
        rolling = false;
        continue;
      }
      ++scheduled;
      if (is_ready(*live)) ++ready;
      if (is_available(*live, min_ready, now_tp, next)) ++available;
      else rolling = false;
      if (str_at(*live, ptr("/metadata/labels/", kRevisionHashLabel)) == hash) ++updated;
      else outdated.push_back(json::Document::copy_of(*live));
    }
    if (rolling && !outdated.empty() && str_at(ds, "/spec/updateStrategy/type") != "OnDelete")
      delete_pod(outdated.front().root());
    const Value& now_ds = objs[kDaemonSet][uid].root();
    auto before = status_of(now_ds);
    auto st = before;
    (void)json::set_int(st, "/observedGeneration", json::get_int(now_ds, "/metadata/generation").value_or(1));
    set_count(st, "/desiredNumberScheduled", desired, false);
    set_count(st, "/currentNumberScheduled", scheduled, false);
    set_count(st, "/numberMisscheduled", misscheduled, false);
    set_count(st, "/numberReady", ready, false);
    set_count(st, "/numberAvailable", available);
    set_count(st, "/numberUnavailable", desired - available);
    set_count(st, "/updatedNumberScheduled", updated);
    write_status(kDaemonSet, uid, before, st);
    if (next) wake_at(kDaemonSet, uid, *next);
  }

  void after_batch() {
    for (int round = 0; round < 4 && !dirty.empty(); ++round) {
      std::set<std::pair<int, std::string>> batch;
      batch.swap(dirty);
      // ReplicaSets before Deployments: a Deployment reads the status its ReplicaSets just wrote.
      for (int kind : {kReplicaSet, kDeployment, kStatefulSet, kDaemonSet})
        for (const auto& [k, uid] : batch) {
          if (k != kind || !objs[k].count(uid)) continue;
          switch (k) {
            case kReplicaSet: sync_replica_set(uid); break;
            case kDeployment: sync_deployment(uid); break;
            case kStatefulSet: sync_stateful_set(uid); break;
            case kDaemonSet: sync_daemon_set(uid); break;
            default: break;
          }
        }
    }
  }
};

WorkloadController::WorkloadController(Store& store) : impl_(std::make_unique<Impl>(store)) {
  Impl& c = *impl_;
  for (int k = 0; k < kKinds; ++k) c.res[k] = resource(store, "apps", "v1", kResource[k]);
  c.pods_r = resource(store, "", "v1", "pods");
  c.nodes_r = resource(store, "", "v1", "nodes");
  c.pvcs_r = resource(store, "", "v1", "persistentvolumeclaims");
  c.revisions_r = resource(store, "apps", "v1", "controllerrevisions");
  for (int k = 0; k < kKinds; ++k)
    if (!c.res[k]) return;
  if (!c.pods_r || !c.nodes_r || !c.revisions_r) return;
  c.loop.watch(*c.revisions_r, "", [&c](EventType t, const Value& o) { c.on_revision(t, o); });
  for (int k = 0; k < kKinds; ++k)
    c.loop.watch(*c.res[k], "", [&c, k](EventType t, const Value& o) { c.on_workload(k, t, o); });
  c.loop.watch(*c.pods_r, "", [&c](EventType t, const Value& o) { c.on_pod(t, o); });
  c.loop.watch(*c.nodes_r, "", [&c](EventType t, const Value& o) { c.on_node(t, o); });
  c.loop.set_after_batch([&c] { c.after_batch(); });
  c.loop.start();
}

WorkloadController::~WorkloadController() { impl_->loop.stop(); }

}  // namespace unitrain::localcluster::controllers
