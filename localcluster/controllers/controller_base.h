// The one mechanism every in-process controller of the local cluster runs on: a thread that
// consumes Store watches (list, then watch from the list's resourceVersion, re-list when the watch
// closes or reports 410) and a timer queue for deadlines. Handlers and timers run on that thread
// only, so a controller's state needs no locking of its own. No polling: the thread sleeps on a
// condition variable until a watcher has events, a timer is due, or work is posted.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/json/json.h"
#include "localcluster/object_meta.h"
#include "localcluster/store.h"

namespace unitrain::localcluster::controllers {

using Clock = std::chrono::steady_clock;

enum class EventType { Added, Modified, Deleted };

// Called with each object change. After a re-list, objects that vanished while the watch was
// down arrive as Deleted (with their last known namespace/name only), so handlers stay
// level-consistent.
using Handler = std::function<void(EventType type, const json::Value& object)>;

class EventLoop {
 public:
  EventLoop(Store& store, std::string name);
  ~EventLoop();  // stop()
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Watches every namespace of `resource`. Safe before start() and from the loop thread.
  void watch(const ResourceInfo& resource, std::string label_selector, Handler handler);
  // Runs once after every batch of events, timers and posted work (coalesced reconciles).
  void set_after_batch(std::function<void()> fn);

  void start();
  void stop();  // idempotent; joins the thread

  using TimerId = uint64_t;
  // Thread-safe. `fn` runs on the loop thread once the deadline has passed.
  TimerId at(Clock::time_point deadline, std::function<void()> fn);
  TimerId after(Clock::duration delay, std::function<void()> fn) { return at(Clock::now() + delay, std::move(fn)); }
  void cancel(TimerId id);  // thread-safe; no-op for fired or unknown ids
  void post(std::function<void()> fn);  // thread-safe

  Store& store() { return store_; }

 private:
  struct Watch {
    ResourceInfo resource;
    std::string label_selector;
    Handler handler;
    std::unique_ptr<Watcher> watcher;
    std::string resource_version;
    // namespace/name -> uid of what the handler has seen, to report deletions missed while the
    // watch was down.
    std::unordered_map<std::string, std::string> known;
    Clock::time_point retry_at{};
  };

  void run();
  void establish(Watch& w);  // list + watch; on failure schedules a retry
  bool resume(Watch& w);     // watch from w.resource_version; false when the store refused
  void drain(Watch& w);
  void deliver(Watch& w, EventType type, const json::Value& obj);

  Store& store_;
  std::string name_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool started_ = false;
  bool events_pending_ = false;
  std::multimap<Clock::time_point, std::pair<TimerId, std::function<void()>>> timers_;
  std::unordered_map<TimerId, Clock::time_point> timer_deadlines_;
  TimerId next_timer_ = 1;
  std::vector<std::function<void()>> posted_;
  std::vector<std::unique_ptr<Watch>> new_watches_;

  // Loop-thread state.
  std::vector<std::unique_ptr<Watch>> watches_;
  std::function<void()> after_batch_;
  std::thread thread_;
};

// ---- small helpers shared by the controllers ------------------------------------------------
// (now_rfc3339 and the other metadata helpers: object_meta.h)

// Go's time.ParseDuration syntax: "1s", "500ms", "1m30s", "1.5h", "0".
std::optional<std::chrono::nanoseconds> parse_go_duration(std::string_view s);

std::string key_of(std::string_view ns, std::string_view name);  // "ns/name" or "name"
std::string_view str_at(const json::Value& v, std::string_view pointer);  // "" if missing
// The condition of `type` in a conditions array at `pointer`, or nullptr.
const json::Value* find_condition(const json::Value& obj, std::string_view pointer, std::string_view type);

// A resource the store serves, by group/version/resource (nullopt while a CRD is not served).
std::optional<ResourceInfo> resource(const Store& store, std::string_view group, std::string_view version,
                                     std::string_view plural);

}  // namespace unitrain::localcluster::controllers
