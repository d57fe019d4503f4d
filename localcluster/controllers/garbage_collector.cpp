#include "localcluster/controllers/garbage_collector.h"

#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "localcluster/controllers/controller_base.h"

namespace unitrain::localcluster::controllers {

namespace {

using json::Value;

constexpr std::string_view kOrphan = "orphan";
constexpr std::string_view kForeground = "foregroundDeletion";
constexpr auto kRetry = std::chrono::milliseconds(200);

struct OwnerRef {
  std::string uid, api_version, kind, name;
  bool block = false;
};

struct Object {
  size_t resource = 0;  // index into Impl::resources
  std::string ns, name;
  std::vector<OwnerRef> owners;
  bool deleting = false, orphan = false, foreground = false;
};

bool has_finalizer(const Value& obj, std::string_view f) {
  const Value* fs = json::find(obj, "/metadata/finalizers");
  if (!fs || !fs->IsArray()) return false;
  for (const auto& v : fs->GetArray())
    if (v.IsString() && std::string_view(v.GetString(), v.GetStringLength()) == f) return true;
  return false;
}

}  // namespace

struct GarbageCollector::Impl {
  Store& store;
  EventLoop loop;
  std::vector<ResourceInfo> resources;
  std::set<std::string> watched;  // "resource.group"
  std::unordered_map<std::string, Object> objects;  // uid
  std::unordered_map<std::string, std::unordered_set<std::string>> dependents;  // owner uid -> uids
  std::set<std::string> queue;

  explicit Impl(Store& s) : store(s), loop(s, "garbage-collector") {}

  void scan_resources() {
    for (const auto& r : store.resources()) {
      std::string gr = r.resource + "." + r.group;
      if (r.resource.find('/') != std::string::npos || watched.count(gr)) continue;
      if (r.resource == "events" || gr == "bindings.") continue;
      bool can_watch = r.verbs.empty() || std::find(r.verbs.begin(), r.verbs.end(), "watch") != r.verbs.end();
      if (!can_watch) continue;
      watched.insert(gr);
      size_t idx = resources.size();
      resources.push_back(r);
      loop.watch(r, "", [this, idx](EventType t, const Value& o) { on_object(idx, t, o); });
    }
  }

  void on_object(size_t idx, EventType type, const Value& obj) {
    std::string uid(str_at(obj, "/metadata/uid"));
    if (uid.empty()) return;
    if (resources[idx].resource == "customresourcedefinitions") loop.post([this] { scan_resources(); });
    if (type == EventType::Deleted) {
      auto it = objects.find(uid);
      if (it != objects.end()) {
        for (const auto& o : it->second.owners) {
          auto d = dependents.find(o.uid);
          if (d != dependents.end()) {
            d->second.erase(uid);
            if (d->second.empty()) dependents.erase(d);
          }
          // A foreground owner may be waiting for exactly this dependent.
          if (auto ow = objects.find(o.uid); ow != objects.end() && ow->second.foreground) queue.insert(o.uid);
        }
        objects.erase(it);
      }
      if (auto d = dependents.find(uid); d != dependents.end())
        for (const auto& dep : d->second) queue.insert(dep);
      return;
    }
    Object& o = objects[uid];
    std::vector<OwnerRef> owners;
    if (const Value* refs = json::find(obj, "/metadata/ownerReferences"); refs && refs->IsArray()) {
      for (const auto& r : refs->GetArray()) {
        OwnerRef ref{std::string(str_at(r, "/uid")), std::string(str_at(r, "/apiVersion")),
                     std::string(str_at(r, "/kind")), std::string(str_at(r, "/name")),
                     json::get_bool(r, "/blockOwnerDeletion").value_or(false)};
        owners.push_back(std::move(ref));
      }
    }
    bool owners_changed = owners.size() != o.owners.size();
    for (size_t i = 0; !owners_changed && i < owners.size(); ++i)
      owners_changed = owners[i].uid != o.owners[i].uid || owners[i].block != o.owners[i].block;
    if (owners_changed) {
      for (const auto& old : o.owners) {
        auto d = dependents.find(old.uid);
        if (d != dependents.end()) {
          d->second.erase(uid);
          if (d->second.empty()) dependents.erase(d);
        }
        if (auto ow = objects.find(old.uid); ow != objects.end() && ow->second.foreground) queue.insert(old.uid);
      }
      for (const auto& n : owners) dependents[n.uid].insert(uid);
      o.owners = std::move(owners);
      if (!o.owners.empty()) queue.insert(uid);
    }
    if (type == EventType::Added && !o.owners.empty()) queue.insert(uid);
    o.resource = idx;
    o.ns = std::string(str_at(obj, "/metadata/namespace"));
    o.name = std::string(str_at(obj, "/metadata/name"));
    o.deleting = json::find(obj, "/metadata/deletionTimestamp") != nullptr;
    o.orphan = has_finalizer(obj, kOrphan);
    o.foreground = has_finalizer(obj, kForeground);
    if (o.deleting && (o.orphan || o.foreground)) queue.insert(uid);
  }

  const ResourceInfo* resource_for(const OwnerRef& ref) {
    for (const auto& r : resources)
      if (r.kind == ref.kind && r.api_version() == ref.api_version) return &r;
    auto slash = ref.api_version.find('/');
    std::string group = slash == std::string::npos ? "" : ref.api_version.substr(0, slash);
    // Another served version of the same group and kind names the same object.
    for (const auto& r : resources)
      if (r.kind == ref.kind && r.group == group) return &r;
    return nullptr;
  }

  enum class Presence { Present, Absent, Unknown };

  Presence owner_presence(const Object& dep, const OwnerRef& ref) {
    if (objects.count(ref.uid)) return Presence::Present;
    const ResourceInfo* r = resource_for(ref);
    if (!r) return Presence::Unknown;
    if (r->namespaced && dep.ns.empty()) return Presence::Absent;
    auto got = store.get(*r, r->namespaced ? dep.ns : "", ref.name);
    if (got) return str_at(got->root(), "/metadata/uid") == ref.uid ? Presence::Present : Presence::Absent;
    return got.error().code == 404 ? Presence::Absent : Presence::Unknown;
  }

  // Read-modify-write with retries on conflict; `edit` returns false when nothing is to change.
  bool modify(const ResourceInfo& r, const std::string& ns, const std::string& name,
              const std::function<bool(json::Document&)>& edit) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      auto got = store.get(r, ns, name);
      if (!got) return got.error().code == 404;
      json::Document doc = std::move(*got);
      if (!edit(doc)) return true;
      auto put = store.update(r, ns, name, std::move(doc));
      if (put) return true;
      if (put.error().code == 404) return true;
      if (put.error().code != 409) return false;
    }
    return false;
  }

  static bool remove_finalizer(json::Document& doc, std::string_view f) {
    Value* fs = json::find(doc.root(), "/metadata/finalizers");
    if (!fs || !fs->IsArray()) return false;
    bool found = false;
    for (auto it = fs->Begin(); it != fs->End();) {
      if (it->IsString() && std::string_view(it->GetString(), it->GetStringLength()) == f) {
        it = fs->Erase(it);
        found = true;
      } else {
        ++it;
      }
    }
    return found;
  }

  bool remove(const Object& o, const std::string& uid, std::string_view policy) {
    DeleteRequest req;
    req.propagation_policy = std::string(policy);
    req.precondition_uid = uid;
    auto r = store.remove(resources[o.resource], o.ns, o.name, req);
    return r || r.error().code == 404 || r.error().code == 409;
  }

  // False: try again later.
  bool process(const std::string& uid) {
    auto it = objects.find(uid);
    if (it == objects.end()) return true;
    Object& o = it->second;
    const ResourceInfo& r = resources[o.resource];
    if (o.deleting && o.orphan) {
      auto deps = dependents.count(uid) ? dependents[uid] : std::unordered_set<std::string>{};
      for (const auto& d : deps) {
        auto dit = objects.find(d);
        if (dit == objects.end()) continue;
        const Object& dep = dit->second;
        bool ok = modify(resources[dep.resource], dep.ns, dep.name, [&](json::Document& doc) {
          Value* refs = json::find(doc.root(), "/metadata/ownerReferences");
          if (!refs || !refs->IsArray()) return false;
          bool changed = false;
          for (auto ref = refs->Begin(); ref != refs->End();) {
            if (str_at(*ref, "/uid") == uid) {
              ref = refs->Erase(ref);
              changed = true;
            } else {
              ++ref;
            }
          }
          if (changed && refs->Empty()) json::remove(doc, "/metadata/ownerReferences");
          return changed;
        });
        if (!ok) return false;
      }
      return modify(r, o.ns, o.name, [](json::Document& doc) { return remove_finalizer(doc, kOrphan); });
    }
    if (o.deleting && o.foreground) {
      bool blocked = false;
      if (auto d = dependents.find(uid); d != dependents.end()) {
        auto deps = d->second;
        for (const auto& dep_uid : deps) {
          auto dit = objects.find(dep_uid);
          if (dit == objects.end()) continue;
          const Object& dep = dit->second;
          bool blocks = false;
          for (const auto& ref : dep.owners)
            if (ref.uid == uid && ref.block) blocks = true;
          blocked = blocked || blocks;
          if (!dep.deleting && !remove(dep, dep_uid, blocks ? "Foreground" : "Background")) return false;
        }
      }
      if (blocked) return true;  // the dependents' DELETED events bring us back here
      return modify(r, o.ns, o.name, [](json::Document& doc) { return remove_finalizer(doc, kForeground); });
    }
    if (o.owners.empty() || o.deleting) return true;
    std::vector<std::string> dangling;
    bool solid = false, waiting = false, unknown = false;
    for (const auto& ref : o.owners) {
      switch (owner_presence(o, ref)) {
        case Presence::Absent:
          dangling.push_back(ref.uid);
          break;
        case Presence::Unknown:
          unknown = true;
          break;
        case Presence::Present: {
          auto ow = objects.find(ref.uid);
          if (ow != objects.end() && ow->second.deleting && ow->second.foreground)
            waiting = true;
          else
            solid = true;
          break;
        }
      }
    }
    if (unknown) return true;
    if (dangling.empty()) return true;
    if (solid || waiting) {
      return modify(r, o.ns, o.name, [&](json::Document& doc) {
        Value* refs = json::find(doc.root(), "/metadata/ownerReferences");
        if (!refs || !refs->IsArray()) return false;
        bool changed = false;
        for (auto ref = refs->Begin(); ref != refs->End();) {
          if (std::find(dangling.begin(), dangling.end(), str_at(*ref, "/uid")) != dangling.end()) {
            ref = refs->Erase(ref);
            changed = true;
          } else {
            ++ref;
          }
        }
        return changed;
      });
    }
    return remove(o, uid, "Background");
  }

  void after_batch() {
    while (!queue.empty()) {
      std::set<std::string> batch;
      batch.swap(queue);
      for (const auto& uid : batch) {
        if (!process(uid)) {
          loop.after(kRetry, [this, uid] { queue.insert(uid); });
        }
      }
    }
  }
};

GarbageCollector::GarbageCollector(Store& store) : impl_(std::make_unique<Impl>(store)) {
  Impl& gc = *impl_;
  gc.scan_resources();
  gc.loop.set_after_batch([&gc] { gc.after_batch(); });
  gc.loop.start();
}

GarbageCollector::~GarbageCollector() { impl_->loop.stop(); }

}  // namespace unitrain::localcluster::controllers
