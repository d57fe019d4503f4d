// The watch side of the store, per resource: the window of recent change events that watches
// resume from, and the fan-out of each committed change to the open watches, with the selector
// transitions the watch cache applies (an object leaving a watch's selector is DELETED for it,
// one entering it ADDED). Every event is serialized once and shared by all its watchers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/api/labels.h"
#include "core/json/json.h"
#include "localcluster/field_selector.h"
#include "localcluster/resource_info.h"
#include "localcluster/store.h"

namespace unitrain::localcluster {

using DocPtr = std::shared_ptr<const json::Document>;
using TextPtr = std::shared_ptr<const std::string>;

// One committed change of an object.
struct ChangeEvent {
  uint64_t rv = 0;
  const char* type = "";  // ADDED MODIFIED DELETED
  std::string ns;
  DocPtr obj;   // new state (final state for DELETED)
  DocPtr prev;  // state before, for selector transitions; null for ADDED and DELETED
  TextPtr text;
};

// One open watch: what it selects, and its queue of events not yet drained.
struct WatchState {
  // Fixed at creation.
  std::string ns;
  api::LabelSelector labels;
  FieldSelector fields;
  ResourceInfo info;
  std::optional<std::string> rewrite_api_version;  // CR served at a version other than storage
  bool bookmarks = false;
  uint64_t min_rv = 0;
  size_t limit = 0;
  // Guarded by mu (taken after the store mutex, never before it).
  std::mutex mu;
  std::vector<WatchEvent> queue;
  bool closed = false;
  // Held while calling notify, so once stop() returns no call is running or will start. Recursive
  // because a consumer may stop the watch from inside its notify.
  std::recursive_mutex notify_mu;
  std::function<void()> notify;

  void call_notify();
  bool matches(const json::Document& d) const;
};

// Watches to notify once the store mutex is released.
struct PendingNotifications {
  std::vector<std::shared_ptr<WatchState>> states;
  void fire();
};

// Queues one event for a watch, translating selector transitions. Returns true when the watch
// must be notified. With `enforce_limit`, a watch whose queue is full is closed instead (too
// slow: the client resumes from its last resourceVersion).
bool offer(WatchState& st, const ChangeEvent& e, bool enforce_limit);

// The window and the watchers of one resource (storage key).
struct WatchCache {
  std::deque<ChangeEvent> window;
  uint64_t evicted_rv = 0;  // a watch can resume from any resourceVersion >= this
  std::vector<std::shared_ptr<WatchState>> watchers;

  // Offers `e` to every watcher (those to notify go into `pending`), forgets closed watchers and
  // keeps the newest `window_size` events.
  void publish(ChangeEvent e, size_t window_size, PendingNotifications& pending);
};

// The BOOKMARK object at `rv` (annotated k8s.io/initial-events-end after the initial events).
std::string bookmark_text(const ResourceInfo& r, uint64_t rv, bool initial_events_end);
// The object's JSON with another apiVersion: a custom resource watched at a non-storage version.
TextPtr with_api_version(const json::Document& d, const std::string& api_version);

}  // namespace unitrain::localcluster
