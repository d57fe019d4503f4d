// Deletion in the memory store: preconditions, propagation policy (as orphan/foregroundDeletion
// finalizers for the garbage collector), graceful deletion of pods, finalizers holding an object
// with deletionTimestamp set, and the cascades kube-apiserver's controllers would run at once:
// a namespace's content, and a CRD's objects and watches.
#include <algorithm>

#include "localcluster/memory_store_impl.h"
#include "localcluster/object_meta.h"

namespace unitrain::localcluster {
namespace {

using json::Document;
using json::Value;

}  // namespace

StoreResult<std::string> MemoryStore::remove_collection(const ResourceInfo& r, std::string_view ns,
                                                        const ListRequest& selector, const DeleteRequest& req) {
  PendingNotifications p;
  StoreResult<std::string> out = [&]() -> StoreResult<std::string> {
    std::lock_guard l(state_->mu);
    const Served* s = lookup(r);
    if (s == nullptr) return fail(errors::resource_not_found());
    ListRequest all = selector;
    all.limit = 0;
    all.continue_token.clear();
    std::vector<std::pair<std::string, std::string>> targets;  // namespace, name
    auto listed = list_locked(r, ns, all, &targets);
    if (!listed) return fail(std::move(listed).error());
    std::string items;
    for (const auto& [obj_ns, obj_name] : targets) {
      auto res = remove_locked(*s, obj_ns, obj_name, req, p);
      if (!res) {
        if (res.error().code == 404) continue;  // removed meanwhile (e.g. with its namespace)
        return fail(std::move(res).error());
      }
      if (!items.empty()) items += ',';
      items += res->dump();
    }
    return "{\"kind\":\"" + s->info.list_kind + "\",\"apiVersion\":\"" + s->info.api_version() +
           "\",\"metadata\":{\"resourceVersion\":\"" + std::to_string(state_->rv) + "\"},\"items\":[" + items + "]}";
  }();
  p.fire();
  return out;
}

StoreResult<Document> MemoryStore::delete_now(const Served& s, Table& t, const std::string& key, Document obj,
                                              PendingNotifications& p) {
  auto stored = commit(s, t, key, std::move(obj), "DELETED", p);
  if (!stored) return fail(std::move(stored).error());
  return present(s, **stored);
}

StoreResult<Document> MemoryStore::remove_locked(const Served& s, std::string_view ns, std::string_view name,
                                                 const DeleteRequest& req, PendingNotifications& p) {
  Table& t = state_->tables.at(s.storage_key);
  std::string key = object_key(s.info, ns, name);
  auto it = t.objects.find(key);
  if (it == t.objects.end()) return fail(errors::not_found(s.info, name));
  DocPtr existing = it->second.doc;
  const Value& old = existing->root();
  if (req.precondition_uid) {
    std::string uid = json::string_at(old, "/metadata/uid");
    if (uid != *req.precondition_uid) {
      return fail(errors::conflict(s.info, name, "Precondition failed: UID in precondition: " + *req.precondition_uid +
                                                     ", UID in object meta: " + uid));
    }
  }
  if (req.precondition_resource_version) {
    std::string rv = json::string_at(old, "/metadata/resourceVersion");
    if (rv != *req.precondition_resource_version) {
      return fail(errors::conflict(s.info, name,
                                   "Precondition failed: ResourceVersion in precondition: " +
                                       *req.precondition_resource_version + ", ResourceVersion in object meta: " + rv));
    }
  }
  bool is_ns = s.info.group.empty() && s.info.resource == "namespaces";
  if (is_ns && (name == "default" || name == "kube-system" || name == "kube-public")) {
    return fail(errors::forbidden(s.info, name, "this namespace may not be deleted"));
  }
  std::optional<std::string> policy = req.propagation_policy;
  if (policy && *policy != "Orphan" && *policy != "Foreground" && *policy != "Background") {
    return fail(errors::invalid(s.info, name,
                                {{"FieldValueNotSupported", "propagationPolicy",
                                  "Unsupported value: \"" + *policy +
                                      "\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""}}));
  }
  // batch/v1 Jobs orphan their pods unless told otherwise, for compatibility (kube-apiserver).
  if (!policy && s.info.group == "batch" && s.info.resource == "jobs") policy = "Orphan";

  int64_t grace = 0;
  if (s.info.group.empty() && s.info.resource == "pods") {
    grace = req.grace_period_seconds.value_or(json::get_int(old, "/spec/terminationGracePeriodSeconds").value_or(30));
    if (grace < 0) grace = 1;
    std::string phase = json::string_at(old, "/status/phase");
    if (json::string_at(old, "/spec/nodeName").empty() || phase == "Succeeded" || phase == "Failed") grace = 0;
  }
  if (req.dry_run) return present(s, *existing);

  if (is_ns) {
    // Content goes first, like the namespace controller, but without waiting for finalizers.
    std::string prefix = std::string(name) + "/";
    for (auto& [skey, table] : state_->tables) {
      const Served* owner = served_for_storage(skey);
      if (owner == nullptr || !owner->info.namespaced) continue;
      std::vector<std::string> keys;
      for (auto o = table.objects.lower_bound(prefix); o != table.objects.end() && o->first.starts_with(prefix); ++o) {
        keys.push_back(o->first);
      }
      for (const std::string& k : keys) {
        Document d = *table.objects.at(k).doc;
        auto res = commit(*owner, table, k, std::move(d), "DELETED", p);
        if (!res) return fail(std::move(res).error());
      }
    }
  }
  if (is_crd(s.info)) {
    std::string crd_name(name);
    auto cit = state_->crds.find(crd_name);
    if (cit != state_->crds.end()) {
      std::string skey = cit->second->storage_key();
      const Served* owner = served_for_storage(skey);
      auto tit = state_->tables.find(skey);
      if (tit != state_->tables.end() && owner != nullptr) {
        Served owner_copy = *owner;
        std::vector<std::string> keys;
        for (const auto& [k, o] : tit->second.objects) keys.push_back(k);
        for (const std::string& k : keys) {
          Document d = *tit->second.objects.at(k).doc;
          auto res = commit(owner_copy, tit->second, k, std::move(d), "DELETED", p);
          if (!res) return fail(std::move(res).error());
        }
        for (auto& st : tit->second.watch.watchers) {
          std::lock_guard l(st->mu);
          st->closed = true;
          p.states.push_back(st);
        }
        state_->tables.erase(tit);
      }
      for (auto sit = state_->served.begin(); sit != state_->served.end();) {
        if (sit->second.crd != nullptr && sit->second.crd->name == crd_name) sit = state_->served.erase(sit);
        else ++sit;
      }
      state_->crds.erase(cit);
    }
    it = t.objects.find(key);
    if (it == t.objects.end()) return fail(errors::not_found(s.info, name));
    return delete_now(s, t, key, *existing, p);
  }

  std::vector<std::string> fins = finalizers_of(old);
  auto drop = [&](const char* f) { std::erase(fins, std::string(f)); };
  auto add = [&](const char* f) {
    if (std::find(fins.begin(), fins.end(), f) == fins.end()) fins.emplace_back(f);
  };
  if (policy == "Orphan") {
    drop("foregroundDeletion");
    add("orphan");
  } else if (policy == "Foreground") {
    drop("orphan");
    add("foregroundDeletion");
  } else if (policy == "Background") {
    drop("orphan");
    drop("foregroundDeletion");
  }

  Document next = *existing;
  bool deleting = json::find(old, "/metadata/deletionTimestamp") != nullptr;
  if (deleting) {
    int64_t current = json::get_int(old, "/metadata/deletionGracePeriodSeconds").value_or(0);
    if (grace < current) {
      meta_set(next, "deletionGracePeriodSeconds", Value(grace));
      meta_set_string(next, "deletionTimestamp", now_rfc3339(std::chrono::seconds(grace)));
    } else {
      grace = current;
    }
    set_finalizers(next, fins);
    if (fins.empty() && grace == 0) return delete_now(s, t, key, std::move(next), p);
    if (json::equal(next.root(), old)) return present(s, *existing);
    auto stored = commit(s, t, key, std::move(next), "MODIFIED", p);
    if (!stored) return fail(std::move(stored).error());
    return present(s, **stored);
  }
  if (fins.empty() && grace == 0) return delete_now(s, t, key, std::move(next), p);
  set_finalizers(next, fins);
  meta_set_string(next, "deletionTimestamp", now_rfc3339(std::chrono::seconds(grace)));
  meta_set(next, "deletionGracePeriodSeconds", Value(grace));
  meta_set(next, "generation", Value(json::get_int(old, "/metadata/generation").value_or(0) + 1));
  auto stored = commit(s, t, key, std::move(next), "MODIFIED", p);
  if (!stored) return fail(std::move(stored).error());
  return present(s, **stored);
}

}  // namespace unitrain::localcluster
