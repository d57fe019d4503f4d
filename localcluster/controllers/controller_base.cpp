#include "localcluster/controllers/controller_base.h"

#include <unordered_set>

#include <fmt/format.h>

namespace unitrain::localcluster::controllers {

namespace {
constexpr auto kRetryDelay = std::chrono::milliseconds(500);
}

EventLoop::EventLoop(Store& store, std::string name) : store_(store), name_(std::move(name)) {}

EventLoop::~EventLoop() { stop(); }

void EventLoop::watch(const ResourceInfo& resource, std::string label_selector, Handler handler) {
  auto w = std::make_unique<Watch>();
  w->resource = resource;
  w->label_selector = std::move(label_selector);
  w->handler = std::move(handler);
  std::lock_guard lock(mu_);
  new_watches_.push_back(std::move(w));
  cv_.notify_one();
}

void EventLoop::set_after_batch(std::function<void()> fn) { after_batch_ = std::move(fn); }

void EventLoop::start() {
  std::lock_guard lock(mu_);
  if (started_) return;
  started_ = true;
  thread_ = std::thread([this] { run(); });
}

void EventLoop::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
  // The store may call a watcher's notify until stop() returns; mu_ outlives both.
  for (auto& w : watches_) {
    if (w->watcher) w->watcher->stop();
    w->watcher.reset();
  }
}

EventLoop::TimerId EventLoop::at(Clock::time_point deadline, std::function<void()> fn) {
  std::lock_guard lock(mu_);
  TimerId id = next_timer_++;
  timers_.emplace(deadline, std::make_pair(id, std::move(fn)));
  timer_deadlines_.emplace(id, deadline);
  cv_.notify_one();
  return id;
}

void EventLoop::cancel(TimerId id) {
  std::lock_guard lock(mu_);
  auto it = timer_deadlines_.find(id);
  if (it == timer_deadlines_.end()) return;
  auto [lo, hi] = timers_.equal_range(it->second);
  for (auto t = lo; t != hi; ++t) {
    if (t->second.first == id) {
      timers_.erase(t);
      break;
    }
  }
  timer_deadlines_.erase(it);
}

void EventLoop::post(std::function<void()> fn) {
  std::lock_guard lock(mu_);
  posted_.push_back(std::move(fn));
  cv_.notify_one();
}

void EventLoop::run() {
  for (;;) {
    std::vector<std::function<void()>> work;
    bool events = false;
    {
      std::unique_lock lock(mu_);
      for (;;) {
        if (stopping_) return;
        auto now = Clock::now();
        Clock::time_point wake = Clock::time_point::max();
        if (!timers_.empty()) wake = timers_.begin()->first;
        for (auto& w : watches_)
          if (!w->watcher) wake = std::min(wake, w->retry_at);
        if (events_pending_ || !posted_.empty() || !new_watches_.empty() || wake <= now) break;
        if (wake == Clock::time_point::max())
          cv_.wait(lock);
        else
          cv_.wait_until(lock, wake);
      }
      for (auto& w : new_watches_) watches_.push_back(std::move(w));
      new_watches_.clear();
      events = events_pending_;
      events_pending_ = false;
      work.swap(posted_);
      auto now = Clock::now();
      while (!timers_.empty() && timers_.begin()->first <= now) {
        work.push_back(std::move(timers_.begin()->second.second));
        timer_deadlines_.erase(timers_.begin()->second.first);
        timers_.erase(timers_.begin());
      }
    }
    auto now = Clock::now();
    for (auto& w : watches_)
      if (!w->watcher && w->retry_at <= now) establish(*w);
    if (events)
      for (auto& w : watches_)
        if (w->watcher) drain(*w);
    for (auto& fn : work) fn();
    if (after_batch_) after_batch_();
  }
}

void EventLoop::deliver(Watch& w, EventType type, const json::Value& obj) {
  std::string key = key_of(str_at(obj, "/metadata/namespace"), str_at(obj, "/metadata/name"));
  if (type == EventType::Deleted)
    w.known.erase(key);
  else
    w.known[key] = std::string(str_at(obj, "/metadata/uid"));
  w.handler(type, obj);
}

void EventLoop::establish(Watch& w) {
  ListRequest lreq;
  lreq.label_selector = w.label_selector;
  auto listed = store_.list(w.resource, "", lreq);
  if (!listed) {
    w.retry_at = Clock::now() + kRetryDelay;
    return;
  }
  auto doc = json::Document::parse(*listed);
  if (!doc) {
    w.retry_at = Clock::now() + kRetryDelay;
    return;
  }
  std::unordered_set<std::string> present;
  if (const auto* items = json::find(doc->root(), "/items"); items && items->IsArray()) {
    for (const auto& item : items->GetArray()) {
      std::string key = key_of(str_at(item, "/metadata/namespace"), str_at(item, "/metadata/name"));
      present.insert(key);
      auto it = w.known.find(key);
      if (it == w.known.end()) {
        deliver(w, EventType::Added, item);
      } else if (it->second != str_at(item, "/metadata/uid")) {
        json::Document gone = json::Document::object();
        std::string ns(str_at(item, "/metadata/namespace"));
        (void)json::set_string(gone, "/metadata/name", str_at(item, "/metadata/name"));
        if (!ns.empty()) (void)json::set_string(gone, "/metadata/namespace", ns);
        (void)json::set_string(gone, "/metadata/uid", it->second);
        deliver(w, EventType::Deleted, gone.root());
        deliver(w, EventType::Added, item);
      } else {
        deliver(w, EventType::Modified, item);
      }
    }
  }
  std::vector<std::string> vanished;
  for (auto& [key, uid] : w.known)
    if (!present.count(key)) vanished.push_back(key);
  for (auto& key : vanished) {
    json::Document gone = json::Document::object();
    auto slash = key.find('/');
    if (slash == std::string::npos) {
      (void)json::set_string(gone, "/metadata/name", key);
    } else {
      (void)json::set_string(gone, "/metadata/namespace", std::string_view(key).substr(0, slash));
      (void)json::set_string(gone, "/metadata/name", std::string_view(key).substr(slash + 1));
    }
    (void)json::set_string(gone, "/metadata/uid", w.known[key]);
    deliver(w, EventType::Deleted, gone.root());
  }
  w.resource_version = std::string(str_at(doc->root(), "/metadata/resourceVersion"));

  if (!resume(w)) w.retry_at = Clock::now() + kRetryDelay;
}

bool EventLoop::resume(Watch& w) {
  WatchRequest wreq;
  wreq.label_selector = w.label_selector;
  wreq.resource_version = w.resource_version;
  wreq.allow_bookmarks = true;
  auto watcher = store_.watch(w.resource, "", wreq);
  if (!watcher) return false;
  w.watcher = std::move(*watcher);
  w.watcher->set_notify([this] {
    std::lock_guard lock(mu_);
    events_pending_ = true;
    cv_.notify_one();
  });
  // Events queued before set_notify would otherwise wait for the next write.
  std::lock_guard lock(mu_);
  events_pending_ = true;
  return true;
}

void EventLoop::drain(Watch& w) {
  bool closed = false;
  auto events = w.watcher->drain(closed);
  bool relist = false;
  for (auto& ev : events) {
    if (!ev.object) continue;
    if (ev.type == "ERROR") {
      relist = true;
      break;
    }
    auto doc = json::Document::parse(*ev.object);
    if (!doc) continue;
    if (auto rv = str_at(doc->root(), "/metadata/resourceVersion"); !rv.empty()) w.resource_version = std::string(rv);
    if (ev.type == "ADDED")
      deliver(w, EventType::Added, doc->root());
    else if (ev.type == "MODIFIED")
      deliver(w, EventType::Modified, doc->root());
    else if (ev.type == "DELETED")
      deliver(w, EventType::Deleted, doc->root());
  }
  if (!closed && !relist) return;
  w.watcher->stop();
  w.watcher.reset();
  // Resume where we left off; the store answers 410 (error here) once that is out of its window.
  if (!relist && resume(w)) return;
  establish(w);
}

// ---- helpers ----------------------------------------------------------------------------------

std::optional<std::chrono::nanoseconds> parse_go_duration(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool negative = false;
  if (s[0] == '-' || s[0] == '+') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return std::chrono::nanoseconds(0);
  if (s.empty()) return std::nullopt;
  long double total = 0;
  while (!s.empty()) {
    size_t i = 0;
    long double number = 0;
    bool digits = false;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      number = number * 10 + (s[i] - '0');
      digits = true;
      ++i;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      long double scale = 0.1L;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        number += (s[i] - '0') * scale;
        scale /= 10;
        digits = true;
        ++i;
      }
    }
    if (!digits) return std::nullopt;
    size_t j = i;
    while (j < s.size() && !(s[j] >= '0' && s[j] <= '9') && s[j] != '.') ++j;
    std::string_view unit = s.substr(i, j - i);
    long double ns_per_unit;
    if (unit == "ns")
      ns_per_unit = 1;
    else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs")
      ns_per_unit = 1e3L;
    else if (unit == "ms")
      ns_per_unit = 1e6L;
    else if (unit == "s")
      ns_per_unit = 1e9L;
    else if (unit == "m")
      ns_per_unit = 60e9L;
    else if (unit == "h")
      ns_per_unit = 3600e9L;
    else
      return std::nullopt;
    total += number * ns_per_unit;
    s.remove_prefix(j);
  }
  auto ns = std::chrono::nanoseconds(static_cast<int64_t>(total));
  return negative ? -ns : ns;
}

std::string key_of(std::string_view ns, std::string_view name) {
  if (ns.empty()) return std::string(name);
  std::string k;
  k.reserve(ns.size() + name.size() + 1);
  k.append(ns).append("/").append(name);
  return k;
}

std::string_view str_at(const json::Value& v, std::string_view pointer) {
  const json::Value* p = json::find(v, pointer);
  if (!p || !p->IsString()) return {};
  return {p->GetString(), p->GetStringLength()};
}

const json::Value* find_condition(const json::Value& obj, std::string_view pointer, std::string_view type) {
  const json::Value* conds = json::find(obj, pointer);
  if (!conds || !conds->IsArray()) return nullptr;
  for (const auto& c : conds->GetArray())
    if (str_at(c, "/type") == type) return &c;
  return nullptr;
}

std::optional<ResourceInfo> resource(const Store& store, std::string_view group, std::string_view version,
                                     std::string_view plural) {
  return store.find_resource(group, version, plural);
}

}  // namespace unitrain::localcluster::controllers
