// Records core/v1 Events about objects without ever blocking the caller: event() only appends to
// a bounded queue (dropping, and counting, when full); a background thread applies client-go's
// event correlation and writes to the API server:
//  - spam filter: a token bucket per source + involved object (burst 25, one more every 5 min);
//    events beyond it are dropped;
//  - aggregation: once 10 events with the same source, object, type and reason but different
//    messages occur within 10 minutes, further ones become a single event whose message is
//    "(combined from similar events): <latest message>";
//  - dedup: an event identical to one already written (same key) PATCHes that Event's count,
//    lastTimestamp and message instead of creating a new one.
// Event names are "<object name>.<16 hex digits>" (the nanosecond timestamp, as client-go does).
// Writes go through the client the recorder is given: the operator gives it a client of its own,
// so events have their own rate limit and never take the object writes' budget. When that client
// has a rate limit (Client::rate_limit) and events are queued, the recorder waits until the budget
// holds a few tokens and writes that many back to back: the same rate and order as one write per
// token, but one wake-up of this thread, of the connection and of the API server per burst instead
// of per event (a paced write costs about twice a write in a burst). The creates of a burst go to
// the client together (Client::create_all: one pipelined HTTP/1.1 exchange), a dedup PATCH (and
// the creates it depends on) in its place; a create repeated after its answer was lost (sent again
// by the client, or retried here) that is answered AlreadyExists was stored the first time and
// counts as written: the name is this recorder's, unique per nanosecond. Every event that
// is not written (queue full, spam filter, failed write) is counted in stats() and logged, once
// per cause and interval with a repeat count.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/kube/client.h"
#include "core/kube/clock.h"
#include "core/log/throttle.h"

namespace unitrain::kube {

struct EventRecorderOptions {
  std::string component;  // source.component / reportingComponent, e.g. "pytorchjob-controller"
  std::string host;       // source.host / reportingInstance
  size_t queue_capacity = 1000;
  int spam_burst = 25;
  Clock::Duration spam_refill = std::chrono::minutes(5);  // one token per this
  int max_similar = 10;
  Clock::Duration aggregation_window = std::chrono::minutes(10);
  size_t cache_size = 4096;  // correlation state per key is an LRU of this many entries
  int max_attempts = 3;      // per write, for retryable errors
  // Under a backlog, events are written this many back to back, once the client's rate limit holds
  // as many tokens (never more than its burst). An event waits at most about write_burst / qps
  // longer than one written per token; one alone, with a token available, is written at once.
  // 1 writes one at a time, as each token comes. The creates of a burst go to the client in one
  // Client::create_all (one pipelined exchange over HTTP). A client without a rate limit gets
  // what is queued at once, this many at a time. 16 (0.8 s at the default --events-qps 20, within
  // its --events-burst 30): each burst costs a wake-up of this thread and one exchange's syscalls
  // whatever its size, and a drained backlog of 8 per burst paid them twice as often.
  int write_burst = 16;
  // Lines about dropped events: at most one per cause per interval, with a repeat count.
  std::chrono::seconds drop_log_interval{30};
};

struct EventRecorderStats {
  uint64_t recorded = 0;       // accepted into the queue
  uint64_t dropped = 0;        // queue full
  uint64_t spam_filtered = 0;  // rejected by the per-object token bucket
  uint64_t aggregated = 0;     // turned into a "combined from similar events" event
  uint64_t created = 0;
  uint64_t patched = 0;
  uint64_t failed = 0;         // writes given up on
  // Every event that was not written: dropped + spam_filtered + failed.
  uint64_t lost() const { return dropped + spam_filtered + failed; }
};

class EventRecorder {
 public:
  EventRecorder(Client& client, Clock& clock, EventRecorderOptions options);
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;
  ~EventRecorder();  // stop()

  void start();
  // Writes what is queued, then ends the sender thread. Later events are dropped.
  void stop();

  // `object` is the involved object (its kind, apiVersion, namespace, name, uid and
  // resourceVersion are referenced); `type` is "Normal" or "Warning". Never blocks on I/O.
  void event(const json::Value& object, std::string_view type, std::string_view reason, std::string_view message);

  // Blocks (real time) until the queue is empty and the sender idle; for tests and shutdown.
  bool flush(std::chrono::milliseconds timeout);
  EventRecorderStats stats() const;

 private:
  struct Pending {
    json::Document involved;  // the involvedObject reference
    std::string type, reason, message;
    Clock::SysTime when;
  };
  template <class V>
  class Lru {
   public:
    explicit Lru(size_t cap) : cap_(cap) {}
    V* find(const std::string& k);
    V& put(const std::string& k, V v);
   private:
    size_t cap_;
    std::list<std::pair<std::string, V>> order_;
    std::unordered_map<std::string, typename std::list<std::pair<std::string, V>>::iterator> index_;
  };
  struct Bucket {
    double tokens;
    Clock::SteadyTime last;
  };
  struct Aggregate {
    std::deque<std::string> messages;  // distinct messages seen in the window
    Clock::SteadyTime last;
  };
  struct Written {
    std::string name;
    std::string ns;
    int64_t count = 0;
    std::string first_timestamp;
  };

  // The outcome of correlation for an event that is to be written: its dedup key and message.
  struct Correlated {
    std::string key;
    std::string message;
  };
  // An Event create of the burst being written, beside its object.
  struct NewEvent {
    const Pending* pending;
    std::string key, name, ns, timestamp;
  };
  struct Creates {
    std::vector<json::Document> docs;  // sent together (Client::create_all)
    std::vector<NewEvent> meta;
  };

  void run();
  // With events queued: waits (stop-aware; `lock` holds mu_) until the client's rate limit holds a
  // burst's worth of tokens, at most as long as the bucket takes to refill that many; returns how
  // many queued events to write back to back (at least 1).
  size_t await_budget(std::unique_lock<std::mutex>& lock);
  // Correlates the burst's events in order and writes them: the creates together, as one
  // pipelined exchange, each PATCH (and any create its dedup depends on) in its place.
  void write_burst(std::vector<Pending>& burst);
  // Spam filter and aggregation; nullopt when the spam filter drops the event (counted).
  std::optional<Correlated> correlate(const Pending& p);
  // The dedup PATCH of `w`; false when the Event is gone (to be created anew).
  bool patch_event(const Pending& p, const Correlated& c, Written& w);
  void add_create(Creates& creates, const Pending& p, Correlated c);
  void write_creates(Creates& creates);
  // Creates one Event with retries; `first_failure`: how a first attempt already made failed.
  void create_event(const json::Document& ev, const NewEvent& meta, std::optional<ApiError> first_failure);
  void event_created(const NewEvent& meta);
  // Up to max_attempts calls while the error is retryable; `first_failure`: the error of a first
  // attempt already made elsewhere (the retries continue from it).
  std::optional<ApiError> write_with_retry(const std::function<ApiResult<json::Document>()>& call,
                                           std::optional<ApiError> first_failure = std::nullopt);
  std::string next_name(const std::string& object_name, Clock::SysTime when);
  // Logs (throttled per `cause_key`) that the event `p` was not written and why.
  void log_lost(const Pending& p, const std::string& cause_key, const std::string& why);

  Client& client_;
  Clock& clock_;
  EventRecorderOptions opts_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  bool started_ = false;
  bool busy_ = false;
  // Events of the burst being written: they count against the queue's capacity until written.
  size_t taken_ = 0;
  // The sender waits for events (not for the budget): only then does event() wake it; a burst
  // being prepared picks new events up when it is written, without a wake-up per event.
  bool awaiting_events_ = false;
  std::thread thread_;
  EventRecorderStats stats_;
  log::Throttle lost_log_;

  // Sender-thread state.
  Lru<Bucket> spam_;
  Lru<Aggregate> aggregates_;
  Lru<Written> written_;
  int64_t last_nanos_ = 0;
};

}  // namespace unitrain::kube
