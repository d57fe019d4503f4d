#include "localcluster/watch_cache.h"

#include <algorithm>

#include "localcluster/object_meta.h"

namespace unitrain::localcluster {

void WatchState::call_notify() {
  std::lock_guard l(notify_mu);
  if (notify) notify();
}

bool WatchState::matches(const json::Document& d) const {
  const json::Value& root = d.root();
  if (!ns.empty() && json::string_at(root, "/metadata/namespace") != ns) return false;
  if (!labels.empty() && !labels.matches(member_or_null(member_or_null(root, "metadata"), "labels"))) return false;
  return fields.empty() || fields.matches(root);
}

void PendingNotifications::fire() {
  for (auto& st : states) st->call_notify();
  states.clear();
}

TextPtr with_api_version(const json::Document& d, const std::string& api_version) {
  json::Document copy = d;
  set_member(copy, "apiVersion", json::Value(api_version.c_str(), copy.alloc()));
  return std::make_shared<const std::string>(copy.dump());
}

std::string bookmark_text(const ResourceInfo& r, uint64_t rv, bool initial_events_end) {
  std::string s = "{\"kind\":\"" + r.kind + "\",\"apiVersion\":\"" + r.api_version() +
                  "\",\"metadata\":{\"resourceVersion\":\"" + std::to_string(rv) + "\"";
  if (initial_events_end) s += ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}";
  return s + "}}";
}

bool offer(WatchState& st, const ChangeEvent& e, bool enforce_limit) {
  if (e.rv <= st.min_rv) return false;
  bool cur = st.matches(*e.obj);
  bool prev = e.prev != nullptr && st.matches(*e.prev);
  const char* type = e.type;
  if (std::string_view(type) == "MODIFIED") {
    if (cur && !prev) type = "ADDED";
    else if (!cur && prev) type = "DELETED";
    else if (!cur) return false;
  } else if (!cur) {
    return false;
  }
  TextPtr text = st.rewrite_api_version ? with_api_version(*e.obj, *st.rewrite_api_version) : e.text;
  std::lock_guard l(st.mu);
  if (st.closed) return false;
  if (enforce_limit && st.queue.size() >= st.limit) {
    st.closed = true;
    return true;
  }
  bool was_empty = st.queue.empty();
  st.queue.push_back({type, std::move(text)});
  return was_empty;
}

void WatchCache::publish(ChangeEvent e, size_t window_size, PendingNotifications& pending) {
  for (auto& st : watchers) {
    if (offer(*st, e, true)) pending.states.push_back(st);
  }
  std::erase_if(watchers, [](const std::shared_ptr<WatchState>& st) {
    std::lock_guard l(st->mu);
    return st->closed;
  });
  window.push_back(std::move(e));
  while (window.size() > std::max<size_t>(window_size, 1)) {
    evicted_rv = window.front().rv;
    window.pop_front();
  }
}

}  // namespace unitrain::localcluster
