#include "core/kube/event_recorder.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/api/time.h"
#include "core/kube/qps_limiter.h"
#include "core/log/log.h"

namespace unitrain::kube {

namespace {

const GroupVersionResource kEvents{"", "v1", "events"};

std::string field(const json::Value& v, const char* pointer) {
  return std::string(json::get_string(v, pointer).value_or(""));
}

}  // namespace

template <class V>
V* EventRecorder::Lru<V>::find(const std::string& k) {
  auto it = index_.find(k);
  if (it == index_.end()) return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  return &it->second->second;
}

template <class V>
V& EventRecorder::Lru<V>::put(const std::string& k, V v) {
  if (auto* existing = find(k)) {
    *existing = std::move(v);
    return *existing;
  }
  order_.emplace_front(k, std::move(v));
  index_[k] = order_.begin();
  if (order_.size() > cap_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
  return order_.front().second;
}

EventRecorder::EventRecorder(Client& client, Clock& clock, EventRecorderOptions options)
    : client_(client),
      clock_(clock),
      opts_(std::move(options)),
      lost_log_(opts_.drop_log_interval),
      spam_(opts_.cache_size),
      aggregates_(opts_.cache_size),
      written_(opts_.cache_size) {}

EventRecorder::~EventRecorder() { stop(); }

void EventRecorder::start() {
  std::lock_guard g(mu_);
  if (started_ || stopping_) return;
  started_ = true;
  thread_ = std::thread([this] {
    // Thread entry: nothing may escape, or the process terminates.
    try {
      run();
    } catch (const std::exception&) {
      std::lock_guard g2(mu_);
      ++stats_.failed;
      busy_ = false;
      idle_cv_.notify_all();
    }
  });
}

void EventRecorder::stop() {
  {
    std::lock_guard g(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void EventRecorder::event(const json::Value& object, std::string_view type, std::string_view reason,
                          std::string_view message) {
  Pending p;
  p.involved = json::Document::object();
  for (const auto& [from, to] : std::initializer_list<std::pair<const char*, const char*>>{
           {"/kind", "/kind"},
           {"/apiVersion", "/apiVersion"},
           {"/metadata/namespace", "/namespace"},
           {"/metadata/name", "/name"},
           {"/metadata/uid", "/uid"},
           {"/metadata/resourceVersion", "/resourceVersion"}}) {
    if (auto v = json::get_string(object, from)) (void)json::set_string(p.involved, to, *v);
  }
  p.type = type;
  p.reason = reason;
  p.message = message;
  p.when = clock_.now();
  {
    std::lock_guard g(mu_);
    if (!stopping_ && queue_.size() + taken_ < opts_.queue_capacity) {
      ++stats_.recorded;
      queue_.push_back(std::move(p));
      if (awaiting_events_) cv_.notify_all();
      return;
    }
    ++stats_.dropped;
    if (stopping_) return;  // the process is stopping: nobody would read the events anyway
  }
  log_lost(p, "queue", fmt::format("{} events are waiting to be written (the queue is full)", opts_.queue_capacity));
}

void EventRecorder::log_lost(const Pending& p, const std::string& cause_key, const std::string& why) {
  auto report = lost_log_.occur(cause_key, clock_.steady_now());
  if (!report) return;
  const json::Value& obj = p.involved.root();
  log::write(log::Level::warn,
             fmt::format("event {} {} on {} {}/{} dropped: {}{}", p.type, p.reason, field(obj, "/kind"),
                         field(obj, "/namespace"), field(obj, "/name"), why, report->suffix()),
             {{"controller", opts_.component}});
}

bool EventRecorder::flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [&] { return queue_.empty() && !busy_; });
}

EventRecorderStats EventRecorder::stats() const {
  std::lock_guard g(mu_);
  return stats_;
}

void EventRecorder::run() {
  for (;;) {
    std::vector<Pending> burst;
    {
      std::unique_lock lock(mu_);
      taken_ = 0;
      busy_ = false;
      idle_cv_.notify_all();
      awaiting_events_ = true;
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      awaiting_events_ = false;
      if (queue_.empty()) return;  // stopping and drained
      busy_ = true;
      // The queue only shrinks here, so it still holds the burst.
      const size_t n = await_budget(lock);
      burst.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        burst.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      taken_ = n;
    }
    write_burst(burst);
  }
}

size_t EventRecorder::await_budget(std::unique_lock<std::mutex>& lock) {
  const QpsLimiter* budget = client_.rate_limit();
  // No budget to wait for: what is queued goes at once, a burst at a time.
  if (budget == nullptr || budget->qps() <= 0)
    return std::min(static_cast<size_t>(std::max(opts_.write_burst, 1)), queue_.size());
  const size_t most = static_cast<size_t>(std::clamp(opts_.write_burst, 1, budget->burst()));
  // Waiting longer than `most` tokens take to refill would delay events without making the burst
  // larger; and a bucket another writer drains as it refills must not hold this one back forever.
  // (Capped at an hour only to keep the arithmetic in range for a budget of nearly nothing.)
  const std::chrono::duration<double> refill(std::min(static_cast<double>(most) / budget->qps(), 3600.0));
  const auto give_up = clock_.steady_now() + std::chrono::duration_cast<Clock::Duration>(refill);
  for (;;) {
    const size_t want = std::min(most, queue_.size());
    if (stopping_) return want;  // stop() writes what is queued at once (the client decides how)
    const auto wait = budget->time_until(static_cast<double>(want));
    const auto now = clock_.steady_now();
    if (wait <= Clock::Duration::zero() || now >= give_up) return want;
    clock_.wait_until(lock, cv_, std::min<Clock::SteadyTime>(now + std::chrono::duration_cast<Clock::Duration>(wait), give_up),
                      [&] { return stopping_; });
  }
}

std::string EventRecorder::next_name(const std::string& object_name, Clock::SysTime when) {
  int64_t nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count();
  // Two events in the same nanosecond (or on a fake clock) still get distinct names.
  nanos = std::max(nanos, last_nanos_ + 1);
  last_nanos_ = nanos;
  return fmt::format("{}.{:016x}", object_name, static_cast<uint64_t>(nanos));
}

std::optional<ApiError> EventRecorder::write_with_retry(const std::function<ApiResult<json::Document>()>& call,
                                                        std::optional<ApiError> first_failure) {
  std::optional<ApiError> last = std::move(first_failure);
  for (int attempt = last ? 1 : 0; attempt < opts_.max_attempts; ++attempt) {
    if (last) {
      if (!last->retryable()) return last;
      std::unique_lock lock(mu_);
      // Waiting here delays only the sender; stop() cuts it short.
      auto wait = std::chrono::seconds(1 << (attempt - 1));
      if (clock_.wait_until(lock, cv_, clock_.steady_now() + wait, [&] { return stopping_; })) return last;
    }
    auto r = call();
    if (r) return std::nullopt;
    last = r.error();
  }
  return last;
}

std::optional<EventRecorder::Correlated> EventRecorder::correlate(const Pending& p) {
  const json::Value& obj = p.involved.root();
  std::string source_key = fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", opts_.component, opts_.host,
                                       field(obj, "/kind"), field(obj, "/namespace"), field(obj, "/name"),
                                       field(obj, "/uid"), field(obj, "/apiVersion"));
  auto now = clock_.steady_now();

  // Spam filter: a token bucket per source + object.
  {
    Bucket* b = spam_.find(source_key);
    if (!b) b = &spam_.put(source_key, Bucket{static_cast<double>(opts_.spam_burst), now});
    double refill = std::chrono::duration<double>(now - b->last) / std::chrono::duration<double>(opts_.spam_refill);
    b->tokens = std::min<double>(opts_.spam_burst, b->tokens + std::max(0.0, refill));
    b->last = now;
    if (b->tokens < 1) {
      {
        std::lock_guard g(mu_);
        ++stats_.spam_filtered;
      }
      log_lost(p, "spam", fmt::format("more than {} events about this object (client-go's spam filter: one more every {}s)",
                                      opts_.spam_burst,
                                      std::chrono::duration_cast<std::chrono::seconds>(opts_.spam_refill).count()));
      return std::nullopt;
    }
    b->tokens -= 1;
  }

  // Aggregation of similar events (same everything but the message).
  std::string aggregate_key = fmt::format("{}\x1f{}\x1f{}", source_key, p.type, p.reason);
  Correlated c{aggregate_key + "\x1f" + p.message, p.message};
  {
    Aggregate* a = aggregates_.find(aggregate_key);
    if (!a || now - a->last > opts_.aggregation_window) a = &aggregates_.put(aggregate_key, Aggregate{{}, now});
    if (std::find(a->messages.begin(), a->messages.end(), p.message) == a->messages.end()) {
      a->messages.push_back(p.message);
    }
    a->last = now;
    if (static_cast<int>(a->messages.size()) >= opts_.max_similar) {
      // Keep the set bounded; it only has to stay at the threshold.
      a->messages.pop_front();
      c.key = std::move(aggregate_key);
      c.message = "(combined from similar events): " + p.message;
      std::lock_guard g(mu_);
      ++stats_.aggregated;
    }
  }
  return c;
}

void EventRecorder::write_burst(std::vector<Pending>& burst) {
  Creates creates;
  for (const Pending& p : burst) {
    auto c = correlate(p);
    if (!c) continue;
    // Dedup reads what was written, so a create of the same key still waiting here goes out
    // first; and so does every waiting create before a PATCH, to keep the order.
    const bool same_key_waiting = std::any_of(creates.meta.begin(), creates.meta.end(),
                                              [&](const NewEvent& e) { return e.key == c->key; });
    if (same_key_waiting || (!creates.meta.empty() && written_.find(c->key) != nullptr)) write_creates(creates);
    if (Written* w = written_.find(c->key)) {
      if (patch_event(p, *c, *w)) continue;
      // The Event expired or was deleted: start a new one, as client-go does.
    }
    add_create(creates, p, std::move(*c));
  }
  write_creates(creates);
}

bool EventRecorder::patch_event(const Pending& p, const Correlated& c, Written& w) {
  int64_t count = w.count + 1;
  auto patch = json::Document::object();
  (void)json::set_int(patch, "/count", count);
  (void)json::set_string(patch, "/lastTimestamp", api::format_time(p.when));
  (void)json::set_string(patch, "/message", c.message);
  std::string body = patch.dump();
  std::string name = w.name, wns = w.ns;
  bool not_found = false;
  auto err = write_with_retry([&]() -> ApiResult<json::Document> {
    PatchOptions opts;
    opts.response_fields = nothing_read();  // nothing of the Event is read back
    auto r = client_.patch(kEvents, wns, name, PatchType::Strategic, body, opts);
    if (!r && r.error().is(ApiError::Reason::NotFound)) not_found = true;
    return r;
  });
  if (!err) {
    w.count = count;
    std::lock_guard g(mu_);
    ++stats_.patched;
    return true;
  }
  if (not_found) return false;
  {
    std::lock_guard g(mu_);
    ++stats_.failed;
  }
  log_lost(p, "write", "updating the Event failed: " + err->to_string());
  return true;
}

void EventRecorder::add_create(Creates& creates, const Pending& p, Correlated c) {
  const json::Value& obj = p.involved.root();
  std::string timestamp = api::format_time(p.when);
  std::string ns = field(obj, "/namespace");
  if (ns.empty()) ns = "default";
  auto ev = json::Document::object();
  std::string name = next_name(field(obj, "/name"), p.when);
  (void)json::set_string(ev, "/apiVersion", "v1");
  (void)json::set_string(ev, "/kind", "Event");
  (void)json::set_string(ev, "/metadata/name", name);
  (void)json::set_string(ev, "/metadata/namespace", ns);
  (void)json::set(ev, "/involvedObject", json::clone(obj, ev.alloc()));
  (void)json::set_string(ev, "/reason", p.reason);
  (void)json::set_string(ev, "/message", c.message);
  (void)json::set_string(ev, "/type", p.type);
  (void)json::set_string(ev, "/source/component", opts_.component);
  if (!opts_.host.empty()) (void)json::set_string(ev, "/source/host", opts_.host);
  (void)json::set_string(ev, "/firstTimestamp", timestamp);
  (void)json::set_string(ev, "/lastTimestamp", timestamp);
  (void)json::set_int(ev, "/count", 1);
  (void)json::set_string(ev, "/reportingComponent", opts_.component);
  (void)json::set_string(ev, "/reportingInstance", opts_.host);
  creates.docs.push_back(std::move(ev));
  creates.meta.push_back(NewEvent{&p, std::move(c.key), std::move(name), std::move(ns), std::move(timestamp)});
}

void EventRecorder::write_creates(Creates& creates) {
  if (creates.docs.size() == 1) {
    create_event(creates.docs[0], creates.meta[0], std::nullopt);
  } else if (!creates.docs.empty()) {
    // Several at once: one pipelined exchange (with a client that can), one token each.
    auto outcomes = client_.create_all(kEvents, creates.docs, WriteOptions{nothing_read()});
    for (size_t i = 0; i < outcomes.size(); ++i) {
      auto& o = outcomes[i];
      if (o.result || (o.resent && o.result.error().is(ApiError::Reason::AlreadyExists))) {
        // Answered AlreadyExists when sent again: the first copy, which got no answer, was stored.
        event_created(creates.meta[i]);
      } else {
        create_event(creates.docs[i], creates.meta[i], std::move(o.result.error()));
      }
    }
  }
  creates.docs.clear();
  creates.meta.clear();
}

void EventRecorder::create_event(const json::Document& ev, const NewEvent& meta, std::optional<ApiError> first_failure) {
  // Every attempt after the first repeats a create the server may have stored (its answer was lost,
  // or an error such as a timeout came after the write): AlreadyExists then means it was, and the
  // name (this recorder's, unique per nanosecond) rules out anyone else's Event.
  bool repeat = first_failure.has_value();
  auto err = write_with_retry(
      [&]() -> ApiResult<json::Document> {
        auto r = client_.create(kEvents, meta.ns, ev.root(), WriteOptions{nothing_read()});
        if (!r && repeat && r.error().is(ApiError::Reason::AlreadyExists)) return json::Document::object();
        repeat = true;
        return r;
      },
      std::move(first_failure));
  if (!err) return event_created(meta);
  {
    std::lock_guard g(mu_);
    ++stats_.failed;
  }
  log_lost(*meta.pending, "write", "creating the Event failed: " + err->to_string());
}

void EventRecorder::event_created(const NewEvent& meta) {
  std::lock_guard g(mu_);
  ++stats_.created;
  written_.put(meta.key, Written{meta.name, meta.ns, 1, meta.timestamp});
}

}  // namespace unitrain::kube
