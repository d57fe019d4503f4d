#include "localcluster/controllers/quota_controller.h"

#include <map>
#include <set>

#include "localcluster/controllers/controller_base.h"
#include "localcluster/pod_admission.h"

namespace unitrain::localcluster::controllers {

struct QuotaController::Impl {
  Store& store;
  EventLoop loop;
  std::optional<ResourceInfo> pods_r, quotas_r;
  std::map<std::string, std::map<std::string, json::Document>> pods;    // ns -> name -> pod
  std::map<std::string, std::map<std::string, json::Document>> quotas;  // ns -> name -> quota
  std::set<std::string> dirty;                                          // namespaces

  explicit Impl(Store& s) : store(s), loop(s, "quota-controller") {}

  void on(std::map<std::string, std::map<std::string, json::Document>>& cache, EventType type, const json::Value& obj) {
    std::string ns(str_at(obj, "/metadata/namespace")), name(str_at(obj, "/metadata/name"));
    if (type == EventType::Deleted)
      cache[ns].erase(name);
    else
      cache[ns][name] = json::Document::copy_of(obj);
    dirty.insert(ns);
  }

  void after_batch() {
    std::set<std::string> batch;
    batch.swap(dirty);
    for (const auto& ns : batch) {
      auto q = quotas.find(ns);
      if (q == quotas.end()) continue;
      std::vector<const json::Value*> in_ns;
      for (const auto& [name, p] : pods[ns]) in_ns.push_back(&p.root());
      for (const auto& [name, quota] : q->second) {
        const json::Value* hard = json::find(quota.root(), "/spec/hard");
        if (hard == nullptr) continue;
        auto st = json::Document::object();
        (void)json::set(st, "/status/hard", json::clone(*hard, st.alloc()));
        auto used = quota_usage(quota.root(), in_ns);
        (void)json::set(st, "/status/used", json::clone(used.root(), st.alloc()));
        const json::Value* now = json::find(quota.root(), "/status");
        if (now && json::equal(*now, *json::find(st.root(), "/status"))) continue;
        (void)store.patch(*quotas_r, ns, name, PatchKind::Merge, st.dump(), "status");
      }
    }
  }
};

QuotaController::QuotaController(Store& store) : impl_(std::make_unique<Impl>(store)) {
  Impl& c = *impl_;
  c.pods_r = resource(store, "", "v1", "pods");
  c.quotas_r = resource(store, "", "v1", "resourcequotas");
  if (!c.pods_r || !c.quotas_r) return;
  c.loop.watch(*c.quotas_r, "", [&c](EventType t, const json::Value& o) { c.on(c.quotas, t, o); });
  c.loop.watch(*c.pods_r, "", [&c](EventType t, const json::Value& o) { c.on(c.pods, t, o); });
  c.loop.set_after_batch([&c] { c.after_batch(); });
  c.loop.start();
}

QuotaController::~QuotaController() { impl_->loop.stop(); }

}  // namespace unitrain::localcluster::controllers
