// Watches on the memory store: opening one (initial ADDED events and bookmark, or a replay of the
// window from a resourceVersion, or 410 Expired when that left the window), and the Watcher
// handed to the consumer. The fan-out of changes to open watches is watch_cache.cpp.
#include <algorithm>

#include "localcluster/memory_store_impl.h"
#include "localcluster/object_meta.h"

namespace unitrain::localcluster {
namespace {

// The consumer's handle on a WatchState; unregisters it when stopped.
class StoreWatcher final : public Watcher {
 public:
  StoreWatcher(std::shared_ptr<WatchState> st, std::weak_ptr<StoreState> state, std::string storage_key)
      : st_(std::move(st)), state_(std::move(state)), storage_key_(std::move(storage_key)) {}
  ~StoreWatcher() override { stop(); }

  std::vector<WatchEvent> drain(bool& closed) override {
    std::lock_guard l(st_->mu);
    std::vector<WatchEvent> out;
    out.swap(st_->queue);
    closed = st_->closed;
    return out;
  }

  void set_notify(std::function<void()> notify) override {
    {
      std::lock_guard nl(st_->notify_mu);
      st_->notify = std::move(notify);
    }
    bool pending;
    {
      std::lock_guard l(st_->mu);
      pending = !st_->queue.empty() || st_->closed;
    }
    // Events queued before the consumer registered (initial ADDED, a 410) must not be missed.
    if (pending) st_->call_notify();
  }

  void stop() override {
    if (auto state = state_.lock()) {
      std::lock_guard l(state->mu);
      auto t = state->tables.find(storage_key_);
      if (t != state->tables.end()) std::erase(t->second.watch.watchers, st_);
    }
    {
      std::lock_guard l(st_->mu);
      st_->closed = true;
    }
    std::lock_guard nl(st_->notify_mu);
    st_->notify = nullptr;
  }

  void request_bookmark() override {
    if (!st_->bookmarks) return;
    auto state = state_.lock();
    if (!state) return;
    {
      std::lock_guard cl(state->mu);
      std::lock_guard l(st_->mu);
      if (st_->closed) return;
      st_->queue.push_back({"BOOKMARK", std::make_shared<const std::string>(bookmark_text(st_->info, state->rv, false))});
    }
    st_->call_notify();
  }

 private:
  std::shared_ptr<WatchState> st_;
  std::weak_ptr<StoreState> state_;  // expired for a watch closed at creation
  std::string storage_key_;
};

}  // namespace

StoreResult<std::unique_ptr<Watcher>> MemoryStore::watch(const ResourceInfo& r, std::string_view ns,
                                                         const WatchRequest& req) {
  PendingNotifications p;
  StoreResult<std::unique_ptr<Watcher>> out = [&]() -> StoreResult<std::unique_ptr<Watcher>> {
    std::lock_guard l(state_->mu);
    const Served* s = lookup(r);
    if (s == nullptr) return fail(errors::resource_not_found());
    auto st = std::make_shared<WatchState>();
    st->ns = s->info.namespaced ? std::string(ns) : std::string();
    auto sel = parse_selectors(s->info, req.label_selector, req.field_selector, st->labels, st->fields);
    if (!sel) return fail(std::move(sel).error());
    st->info = s->info;
    if (s->crd != nullptr && s->info.version != s->crd->storage_version) st->rewrite_api_version = s->info.api_version();
    st->bookmarks = req.allow_bookmarks;
    st->limit = std::max<size_t>(state_->options.watcher_queue_limit, 1);
    Table& t = state_->tables.at(s->storage_key);
    // Watchers are made only on success paths: destroying one unregisters it, which takes the
    // store mutex held here.
    if (req.resource_version.empty() || req.resource_version == "0") {
      auto [begin, end] = range(s->info, t, st->ns);
      for (auto it = begin; it != end; ++it) {
        if (!st->matches(*it->second.doc)) continue;
        TextPtr text = st->rewrite_api_version ? text_of(*s, it->second) : it->second.text;
        st->queue.push_back({"ADDED", std::move(text)});
      }
      if (req.send_initial_events && req.allow_bookmarks) {
        st->queue.push_back({"BOOKMARK", std::make_shared<const std::string>(bookmark_text(s->info, state_->rv, true))});
      }
      st->min_rv = state_->rv;
    } else {
      auto rv = parse_resource_version(req.resource_version);
      if (!rv) return fail(errors::bad_request("invalid resource version: " + req.resource_version));
      if (*rv < t.watch.evicted_rv) {
        StatusError gone = errors::expired("too old resource version: " + std::to_string(*rv) + " (" +
                                           std::to_string(t.watch.evicted_rv) + ")");
        st->queue.push_back({"ERROR", std::make_shared<const std::string>(gone.to_status().dump())});
        st->closed = true;
        return std::unique_ptr<Watcher>(
            std::make_unique<StoreWatcher>(st, std::weak_ptr<StoreState>(), s->storage_key));
      }
      st->min_rv = *rv;
      for (const ChangeEvent& e : t.watch.window) offer(*st, e, false);
    }
    t.watch.watchers.push_back(st);
    return std::unique_ptr<Watcher>(std::make_unique<StoreWatcher>(st, state_, s->storage_key));
  }();
  p.fire();
  return out;
}

}  // namespace unitrain::localcluster
