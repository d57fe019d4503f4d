#include "localcluster/controllers/volume_controller.h"

#include <map>
#include <set>

#include <fmt/format.h>

#include "core/api/labels.h"
#include "core/api/quantity.h"
#include "localcluster/controllers/controller_base.h"
#include "localcluster/controllers/event_recorder.h"

namespace unitrain::localcluster::controllers {

namespace {

using json::Value;

constexpr std::string_view kDefaultClass = "standard";
constexpr std::string_view kProvisioner = "sim.unitrain.io/hostpath";
constexpr std::string_view kDefaultAnnotation = "storageclass.kubernetes.io/is-default-class";

std::string ann(std::string_view key) { return "/metadata/annotations/" + json::escape_pointer_token(key); }

api::Quantity quantity_at(const Value& v, std::string_view pointer) {
  const Value* q = json::find(v, pointer);
  if (q == nullptr) return {};
  auto parsed = api::Quantity::from_json(*q);
  return parsed ? *parsed : api::Quantity{};
}

std::set<std::string> strings_at(const Value& v, std::string_view pointer) {
  std::set<std::string> out;
  if (const Value* a = json::find(v, pointer); a && a->IsArray())
    for (const auto& e : a->GetArray())
      if (e.IsString()) out.insert(std::string(json::view(e)));
  return out;
}

std::string_view volume_mode(const Value& obj) {
  auto mode = str_at(obj, "/spec/volumeMode");
  return mode.empty() ? std::string_view("Filesystem") : mode;
}

// Whether an unbound PersistentVolume can serve the claim, as the PV controller matches them:
// the same class, every requested access mode, the volume mode, the claim's selector on the
// volume's labels, and at least the requested size.
bool volume_fits(const Value& pv, const Value& claim, std::string_view cls) {
  if (json::find(pv, "/metadata/deletionTimestamp") || json::find(pv, "/spec/claimRef")) return false;
  if (str_at(pv, "/status/phase") != "Available") return false;
  if (str_at(pv, "/spec/storageClassName") != cls) return false;
  if (volume_mode(pv) != volume_mode(claim)) return false;
  auto offered = strings_at(pv, "/spec/accessModes");
  for (const auto& m : strings_at(claim, "/spec/accessModes"))
    if (!offered.count(m)) return false;
  if (const Value* sel = json::find(claim, "/spec/selector"); sel && sel->IsObject()) {
    auto selector = api::LabelSelector::from_json(*sel);
    if (!selector || !selector->matches(json::find(pv, "/metadata/labels") ? *json::find(pv, "/metadata/labels") : null_value()))
      return false;
  }
  return quantity_at(pv, "/spec/capacity/storage") >= quantity_at(claim, "/spec/resources/requests/storage");
}

}  // namespace

struct VolumeController::Impl {
  Store& store;
  EventLoop loop;
  std::optional<ResourceInfo> pvcs_r, pvs_r, classes_r;
  std::map<std::string, json::Document> classes;  // by name
  std::map<std::string, json::Document> claims;   // ns/name, unbound ones waiting for a sync
  std::map<std::string, json::Document> waiting;  // ns/name, unbound ones no volume fits yet
  std::set<std::string> reported;                 // claim uids told no volume fits
  std::map<std::string, json::Document> volumes;  // by name
  std::map<std::string, std::string> provisioned; // claim uid -> volume name

  explicit Impl(Store& s) : store(s), loop(s, "volume-controller") {}

  void install_default_class() {
    auto sc = json::Document::object();
    (void)json::set_string(sc, "/apiVersion", "storage.k8s.io/v1");
    (void)json::set_string(sc, "/kind", "StorageClass");
    (void)json::set_string(sc, "/metadata/name", kDefaultClass);
    (void)json::set_string(sc, ann(kDefaultAnnotation), "true");
    (void)json::set_string(sc, "/provisioner", kProvisioner);
    (void)json::set_string(sc, "/reclaimPolicy", "Delete");
    (void)json::set_string(sc, "/volumeBindingMode", "Immediate");
    (void)json::set_bool(sc, "/allowVolumeExpansion", true);
    (void)store.create(*classes_r, "", std::move(sc));
  }

  std::string default_class() const {
    for (const auto& [name, d] : classes)
      if (str_at(d.root(), ann(kDefaultAnnotation)) == "true") return name;
    return {};
  }

  void on_class(EventType type, const Value& obj) {
    std::string name(str_at(obj, "/metadata/name"));
    if (type == EventType::Deleted)
      classes.erase(name);
    else
      classes[name] = json::Document::copy_of(obj);
  }

  void on_claim(EventType type, const Value& obj) {
    std::string key = key_of(str_at(obj, "/metadata/namespace"), str_at(obj, "/metadata/name"));
    waiting.erase(key);
    if (type == EventType::Deleted) {
      claims.erase(key);
      reported.erase(std::string(str_at(obj, "/metadata/uid")));
      release(obj);
      return;
    }
    if (str_at(obj, "/status/phase") == "Bound" || json::find(obj, "/metadata/deletionTimestamp")) {
      claims.erase(key);
      return;
    }
    claims[key] = json::Document::copy_of(obj);
  }

  // A new volume is Available once seen (it stays Pending otherwise); a volume that became
  // available gives the waiting claims another look.
  void on_volume(EventType type, const Value& obj) {
    std::string name(str_at(obj, "/metadata/name"));
    if (type == EventType::Deleted) {
      volumes.erase(name);
      return;
    }
    volumes[name] = json::Document::copy_of(obj);
    if (json::find(obj, "/spec/claimRef") || json::find(obj, "/metadata/deletionTimestamp")) return;
    if (str_at(obj, "/status/phase") != "Available") {
      if (auto r = store.patch(*pvs_r, "", name, PatchKind::Merge, R"({"status":{"phase":"Available"}})", "status"))
        volumes[name] = std::move(*r);
    }
    for (auto& [key, d] : waiting) claims[key] = std::move(d);
    waiting.clear();
  }

  // The smallest Available volume that fits the claim ("" when none does).
  std::string best_volume(const Value& claim, std::string_view cls) const {
    std::string best;
    api::Quantity best_size;
    for (const auto& [name, d] : volumes) {
      // A volume pre-bound to this claim (claimRef by namespace and name) is its volume.
      const Value& v = d.root();
      if (str_at(v, "/spec/claimRef/name") == str_at(claim, "/metadata/name") &&
          str_at(v, "/spec/claimRef/namespace") == str_at(claim, "/metadata/namespace") &&
          (str_at(v, "/spec/claimRef/uid").empty() || str_at(v, "/spec/claimRef/uid") == str_at(claim, "/metadata/uid")) &&
          !json::find(v, "/metadata/deletionTimestamp"))
        return name;
    }
    for (const auto& [name, d] : volumes) {
      if (!volume_fits(d.root(), claim, cls)) continue;
      auto size = quantity_at(d.root(), "/spec/capacity/storage");
      if (best.empty() || size < best_size) {
        best = name;
        best_size = size;
      }
    }
    return best;
  }

  void release(const Value& claim) {
    std::string uid(str_at(claim, "/metadata/uid"));
    std::string volume(str_at(claim, "/spec/volumeName"));
    if (auto it = provisioned.find(uid); it != provisioned.end()) {
      volume = it->second;
      provisioned.erase(it);
    }
    if (volume.empty()) return;
    auto pv = store.get(*pvs_r, "", volume);
    if (!pv || str_at(pv->root(), "/spec/claimRef/uid") != uid) return;
    if (str_at(pv->root(), "/spec/persistentVolumeReclaimPolicy") == "Delete") {
      DeleteRequest req;
      (void)store.remove(*pvs_r, "", volume, req);
    } else {
      (void)store.patch(*pvs_r, "", volume, PatchKind::Merge, R"({"status":{"phase":"Released"}})", "status");
    }
  }

  void after_batch() {
    auto pending = std::move(claims);
    claims.clear();
    for (auto& [key, d] : pending) bind(d.root());
  }

  void bind(const Value& claim) {
    std::string ns(str_at(claim, "/metadata/namespace")), name(str_at(claim, "/metadata/name"));
    std::string uid(str_at(claim, "/metadata/uid"));
    std::string cls(str_at(claim, "/spec/storageClassName"));
    bool class_given = json::find(claim, "/spec/storageClassName") != nullptr;
    if (!class_given) cls = default_class();
    std::string volume(str_at(claim, "/spec/volumeName"));
    std::string size(str_at(claim, "/spec/resources/requests/storage"));
    if (size.empty()) size = "1Gi";
    bool chosen = false;  // an existing volume picked by the controller (static binding)
    if (volume.empty()) {
      volume = best_volume(claim, cls);
      chosen = !volume.empty();
    }
    if (volume.empty() && (cls.empty() || json::find(claim, "/spec/selector"))) {
      // No class to provision from (or a selector, which provisioners refuse): the claim waits
      // for a volume that fits.
      waiting[key_of(ns, name)] = json::Document::copy_of(claim);
      if (reported.insert(uid).second)
        record_event(store, claim, "", "Normal", "FailedBinding",
                     cls.empty() ? "no persistent volumes available for this claim and no storage class is set"
                                 : "no persistent volumes available for this claim",
                     {"persistentvolume-controller", ""});
      return;
    }
    bool provisioning = volume.empty();
    std::optional<json::Document> bound_modes;  // a static volume's access modes, which the claim reports
    if (volume.empty()) {
      auto sc = classes.find(cls);
      if (sc == classes.end()) {
        // No class, or one that does not exist: the claim waits, as it would for a provisioner.
        if (!cls.empty())
          record_event(store, claim, "", "Warning", "ProvisioningFailed",
                       fmt::format("storageclass.storage.k8s.io \"{}\" not found", cls), {"persistentvolume-controller", ""});
        return;
      }
      volume = "pvc-" + uid;
      auto pv = json::Document::object();
      auto& a = pv.alloc();
      (void)json::set_string(pv, "/apiVersion", "v1");
      (void)json::set_string(pv, "/kind", "PersistentVolume");
      (void)json::set_string(pv, "/metadata/name", volume);
      (void)json::set_string(pv, ann("pv.kubernetes.io/provisioned-by"), str_at(sc->second.root(), "/provisioner"));
      (void)json::set_string(pv, "/spec/capacity/storage", size);
      if (const Value* modes = json::find(claim, "/spec/accessModes"))
        (void)json::set(pv, "/spec/accessModes", json::clone(*modes, a));
      std::string reclaim(str_at(sc->second.root(), "/reclaimPolicy"));
      (void)json::set_string(pv, "/spec/persistentVolumeReclaimPolicy", reclaim.empty() ? "Delete" : reclaim);
      (void)json::set_string(pv, "/spec/storageClassName", cls);
      (void)json::set_string(pv, "/spec/volumeMode", "Filesystem");
      (void)json::set_string(pv, "/spec/hostPath/path", "/var/lib/unitrain-sim/" + volume);
      (void)json::set_string(pv, "/spec/hostPath/type", "DirectoryOrCreate");
      (void)json::set_string(pv, "/spec/claimRef/apiVersion", "v1");
      (void)json::set_string(pv, "/spec/claimRef/kind", "PersistentVolumeClaim");
      (void)json::set_string(pv, "/spec/claimRef/namespace", ns);
      (void)json::set_string(pv, "/spec/claimRef/name", name);
      (void)json::set_string(pv, "/spec/claimRef/uid", uid);
      auto created = store.create(*pvs_r, "", std::move(pv));
      if (!created && created.error().code != 409) return;
      provisioned[uid] = volume;
      record_event(store, claim, "", "Normal", "ProvisioningSucceeded",
                   fmt::format("Successfully provisioned volume {}", volume), {std::string_view(kProvisioner), ""});
    } else {
      auto pv = store.get(*pvs_r, "", volume);
      if (!pv) {  // waits for the volume to appear
        waiting[key_of(ns, name)] = json::Document::copy_of(claim);
        return;
      }
      if (auto bound = str_at(pv->root(), "/spec/claimRef/uid"); !bound.empty() && bound != uid) return;
      if (auto s = str_at(pv->root(), "/spec/capacity/storage"); !s.empty()) size = std::string(s);
      if (const Value* modes = json::find(pv->root(), "/spec/accessModes")) bound_modes = json::Document::copy_of(*modes);
      auto ref = json::Document::object();
      if (chosen) (void)json::set_string(ref, ann("pv.kubernetes.io/bound-by-controller"), "yes");
      (void)json::set_string(ref, "/spec/claimRef/apiVersion", "v1");
      (void)json::set_string(ref, "/spec/claimRef/kind", "PersistentVolumeClaim");
      (void)json::set_string(ref, "/spec/claimRef/namespace", ns);
      (void)json::set_string(ref, "/spec/claimRef/name", name);
      (void)json::set_string(ref, "/spec/claimRef/uid", uid);
      // Seen at once, so another claim in the same batch does not pick it too.
      if (auto r = store.patch(*pvs_r, "", volume, PatchKind::Merge, ref.dump())) volumes[volume] = std::move(*r);
    }
    (void)store.patch(*pvs_r, "", volume, PatchKind::Merge, R"({"status":{"phase":"Bound"}})", "status");

    auto spec = json::Document::object();
    (void)json::set_string(spec, "/spec/volumeName", volume);
    if (!class_given && !cls.empty()) (void)json::set_string(spec, "/spec/storageClassName", cls);
    (void)json::set_string(spec, ann("pv.kubernetes.io/bind-completed"), "yes");
    if (provisioning || chosen) (void)json::set_string(spec, ann("pv.kubernetes.io/bound-by-controller"), "yes");
    if (provisioning) (void)json::set_string(spec, ann("volume.kubernetes.io/storage-provisioner"), kProvisioner);
    if (!store.patch(*pvcs_r, ns, name, PatchKind::Merge, spec.dump())) return;
    auto st = json::Document::object();
    (void)json::set_string(st, "/status/phase", "Bound");
    (void)json::set_string(st, "/status/capacity/storage", size);
    if (bound_modes)
      (void)json::set(st, "/status/accessModes", json::clone(bound_modes->root(), st.alloc()));
    else if (const Value* modes = json::find(claim, "/spec/accessModes"))
      (void)json::set(st, "/status/accessModes", json::clone(*modes, st.alloc()));
    (void)store.patch(*pvcs_r, ns, name, PatchKind::Merge, st.dump(), "status");
  }
};

VolumeController::VolumeController(Store& store) : impl_(std::make_unique<Impl>(store)) {
  Impl& c = *impl_;
  c.pvcs_r = resource(store, "", "v1", "persistentvolumeclaims");
  c.pvs_r = resource(store, "", "v1", "persistentvolumes");
  c.classes_r = resource(store, "storage.k8s.io", "v1", "storageclasses");
  if (!c.pvcs_r || !c.pvs_r || !c.classes_r) return;
  c.install_default_class();
  c.loop.watch(*c.classes_r, "", [&c](EventType t, const Value& o) { c.on_class(t, o); });
  c.loop.watch(*c.pvs_r, "", [&c](EventType t, const Value& o) { c.on_volume(t, o); });
  c.loop.watch(*c.pvcs_r, "", [&c](EventType t, const Value& o) { c.on_claim(t, o); });
  c.loop.set_after_batch([&c] { c.after_batch(); });
  c.loop.start();
}

VolumeController::~VolumeController() { impl_->loop.stop(); }

}  // namespace unitrain::localcluster::controllers
