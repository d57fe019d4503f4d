#include <atomic>
#include <future>
#include <regex>
#include <thread>

#include <catch2/catch.hpp>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "core/kube/event_recorder.h"
#include "core/kube/fake_client.h"
#include "core/kube/qps_limiter.h"
#include "tests/support/eventually.h"
#include "tests/support/forwarding_client.h"
#include "tests/unit/kube_cache/test_objects.h"

using namespace unitrain;
using namespace unitrain::kube;
using namespace unitrain::kube::testing;
using unitrain::testing::eventually;
using namespace std::chrono_literals;

namespace {

EventRecorderOptions options() {
  EventRecorderOptions o;
  o.component = "pytorchjob-controller";
  o.host = "node-1";
  return o;
}

json::Document job(const std::string& name = "mnist") {
  auto d = json::Document::parse(fmt::format(
      R"({{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{{"name":"{}","namespace":"team","uid":"u-{}","resourceVersion":"9"}}}})",
      name, name));
  return d ? std::move(*d) : json::Document();
}

std::vector<json::Document> events(FakeClient& c) {
  auto l = c.list(kEvents, "", ListOptions{});
  REQUIRE(l);
  std::vector<json::Document> out;
  for (const auto& i : json::find(l->root(), "/items")->GetArray()) out.push_back(json::Document::copy_of(i));
  return out;
}

size_t writes_of(FakeClient& c, FakeClient::Verb v) {
  size_t n = 0;
  for (const auto& w : c.writes()) n += w.verb == v && w.resource == "events" ? 1 : 0;
  return n;
}

// A client with a rate limit on the fake clock, over a FakeClient: each request takes a token as
// RestClient does (waiting on the clock for it when the bucket is empty; after `stop()` a request
// that waits for its token fails as Cancelled, like stop_ends_rate_limit_wait). It notes when each
// Event write went out and whether it had to wait for its token.
class PacedClient final : public Client {
 public:
  PacedClient(FakeClient& inner, FakeClock& clock, double qps, int burst)
      : inner_(inner), clock_(clock), limiter_(qps, burst, [&clock] { return clock.steady_now(); }) {}

  struct Write {
    Clock::SteadyTime at;
    bool waited_for_token;
  };
  std::vector<Write> writes() const {
    std::lock_guard g(mu_);
    return writes_;
  }
  size_t write_count() const { return writes().size(); }
  // How many requests have started to wait for a token.
  int token_waits() const {
    std::lock_guard g(mu_);
    return token_waits_;
  }
  QpsLimiter& limiter() { return limiter_; }
  void stop() {
    std::lock_guard g(mu_);
    stopping_ = true;
    cv_.notify_all();
  }

  const QpsLimiter* rate_limit() const override { return &limiter_; }

  ApiResult<json::Document> get(const GroupVersionResource& r, std::string_view ns, std::string_view name) override {
    return inner_.get(r, ns, name);
  }
  ApiResult<json::Document> list(const GroupVersionResource& r, std::string_view ns, const ListOptions& o) override {
    return inner_.list(r, ns, o);
  }
  ApiResult<json::Document> create(const GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                   const WriteOptions& o = {}) override {
    if (auto e = take_token()) return fail(std::move(*e));
    return inner_.create(r, ns, obj, o);
  }
  // The size of each create_all call (a burst's creates, sent together).
  std::vector<size_t> batches() const {
    std::lock_guard g(mu_);
    return batches_;
  }
  std::vector<CreateOutcome> create_all(const GroupVersionResource& r, std::span<const json::Document> objects,
                                        const WriteOptions& o = {}) override {
    {
      std::lock_guard g(mu_);
      batches_.push_back(objects.size());
    }
    return Client::create_all(r, objects, o);  // through create(): one token each, in order
  }
  ApiResult<json::Document> update(const GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                   const WriteOptions& o = {}) override {
    return inner_.update(r, ns, obj, o);
  }
  ApiResult<json::Document> update_status(const GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                          const WriteOptions& o = {}) override {
    return inner_.update_status(r, ns, obj, o);
  }
  ApiResult<json::Document> patch(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                                  PatchType type, std::string_view body, const PatchOptions& o = {},
                                  std::string_view subresource = {}) override {
    if (auto e = take_token()) return fail(std::move(*e));
    return inner_.patch(r, ns, name, type, body, o, subresource);
  }
  ApiResult<json::Document> remove(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                                   const DeleteOptions& o = {}) override {
    return inner_.remove(r, ns, name, o);
  }
  ApiResult<json::Document> delete_collection(const GroupVersionResource& r, std::string_view ns,
                                              const ListOptions& selector, const DeleteOptions& o = {}) override {
    return inner_.delete_collection(r, ns, selector, o);
  }
  ApiResult<std::unique_ptr<WatchStream>> watch(const GroupVersionResource& r, std::string_view ns,
                                                const WatchOptions& o) override {
    return inner_.watch(r, ns, o);
  }

 private:
  std::optional<ApiError> take_token() {
    const auto wait = limiter_.reserve();
    std::unique_lock lock(mu_);
    if (wait > 0ns) ++token_waits_;
    if (wait > 0ns && clock_.wait_for(lock, cv_, wait, [&] { return stopping_; })) {
      ApiError e;
      e.reason = ApiError::Reason::Cancelled;
      e.message = "stopping: the request was still waiting for the client's rate limit";
      return e;
    }
    writes_.push_back(Write{clock_.steady_now(), wait > 0ns});
    return std::nullopt;
  }

  FakeClient& inner_;
  FakeClock& clock_;
  QpsLimiter limiter_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  int token_waits_ = 0;
  std::vector<Write> writes_;
  std::vector<size_t> batches_;
};

// Declared after the recorder: when a test ends early (a failed REQUIRE), the recorder's stop
// finds the client's token waits ended instead of waiting on a fake clock nobody moves.
struct StopClientFirst {
  PacedClient& client;
  ~StopClientFirst() { client.stop(); }
};

// Empties `limiter`'s bucket (as a run of earlier writes would have).
void drain(QpsLimiter& limiter) {
  while (limiter.try_take()) {
  }
}

}  // namespace

TEST_CASE("events: an event is created with client-go's name and fields", "[events]") {
  FakeClient c;
  FakeClock clock;
  EventRecorder r(c, clock, options());
  r.start();
  r.event(job().root(), "Normal", "SuccessfulCreatePod", "Created pod: mnist-worker-0");
  REQUIRE(r.flush(10s));
  auto evs = events(c);
  REQUIRE(evs.size() == 1);
  const auto& e = evs[0].root();
  CHECK(std::regex_match(std::string(json::get_string(e, "/metadata/name").value_or("")),
                         std::regex(R"(mnist\.[0-9a-f]{16})")));
  CHECK(json::get_string(e, "/metadata/namespace") == "team");
  CHECK(json::get_string(e, "/involvedObject/kind") == "PyTorchJob");
  CHECK(json::get_string(e, "/involvedObject/uid") == "u-mnist");
  CHECK(json::get_string(e, "/involvedObject/apiVersion") == "kubeflow.org/v1");
  CHECK(json::get_string(e, "/reason") == "SuccessfulCreatePod");
  CHECK(json::get_string(e, "/message") == "Created pod: mnist-worker-0");
  CHECK(json::get_string(e, "/type") == "Normal");
  CHECK(json::get_string(e, "/source/component") == "pytorchjob-controller");
  CHECK(json::get_string(e, "/firstTimestamp") == "2024-01-02T03:04:05Z");
  CHECK(json::get_int(e, "/count") == 1);
}

TEST_CASE("events: a repeated event patches count and lastTimestamp", "[events]") {
  FakeClient c;
  FakeClock clock;
  EventRecorder r(c, clock, options());
  r.start();
  r.event(job().root(), "Warning", "Restarting", "worker-0 exited with 137");
  REQUIRE(r.flush(10s));
  clock.advance(30s);
  r.event(job().root(), "Warning", "Restarting", "worker-0 exited with 137");
  r.event(job().root(), "Warning", "Restarting", "worker-0 exited with 137");
  REQUIRE(r.flush(10s));
  auto evs = events(c);
  REQUIRE(evs.size() == 1);
  CHECK(json::get_int(evs[0].root(), "/count") == 3);
  CHECK(json::get_string(evs[0].root(), "/lastTimestamp") == "2024-01-02T03:04:35Z");
  CHECK(json::get_string(evs[0].root(), "/firstTimestamp") == "2024-01-02T03:04:05Z");
  CHECK(writes_of(c, FakeClient::Verb::Create) == 1);
  CHECK(writes_of(c, FakeClient::Verb::Patch) == 2);
  CHECK(r.stats().patched == 2);
}

TEST_CASE("events: similar events are aggregated after 10 within 10 minutes", "[events]") {
  FakeClient c;
  FakeClock clock;
  EventRecorder r(c, clock, options());
  r.start();
  for (int i = 0; i < 12; ++i) r.event(job().root(), "Normal", "SuccessfulCreatePod", fmt::format("Created pod: w-{}", i));
  REQUIRE(r.flush(10s));
  auto evs = events(c);
  // 9 individual events, then one combined event counted 3 times.
  REQUIRE(evs.size() == 10);
  int combined = 0;
  for (const auto& e : evs) {
    auto msg = std::string(json::get_string(e.root(), "/message").value_or(""));
    if (msg.rfind("(combined from similar events): ", 0) == 0) {
      ++combined;
      CHECK(msg == "(combined from similar events): Created pod: w-11");
      CHECK(json::get_int(e.root(), "/count") == 3);
    }
  }
  CHECK(combined == 1);
  CHECK(r.stats().aggregated == 3);
  // Outside the window the messages count afresh.
  clock.advance(11min);
  r.event(job().root(), "Normal", "SuccessfulCreatePod", "Created pod: w-99");
  REQUIRE(r.flush(10s));
  CHECK(events(c).size() == 11);
  CHECK(r.stats().aggregated == 3);
}

TEST_CASE("events: the spam filter allows a burst of 25 per object then one per 5 minutes", "[events]") {
  FakeClient c;
  FakeClock clock;
  auto o = options();
  o.queue_capacity = 100;
  EventRecorder r(c, clock, o);
  r.start();
  for (int i = 0; i < 30; ++i) r.event(job().root(), "Normal", fmt::format("Reason{}", i), "m");
  r.event(job("other").root(), "Normal", "Reason", "m");  // another object has its own bucket
  REQUIRE(r.flush(10s));
  CHECK(r.stats().spam_filtered == 5);
  CHECK(events(c).size() == 26);
  clock.advance(5min);
  r.event(job().root(), "Normal", "Late1", "m");
  r.event(job().root(), "Normal", "Late2", "m");
  REQUIRE(r.flush(10s));
  CHECK(r.stats().spam_filtered == 6);
  CHECK(events(c).size() == 27);
}

TEST_CASE("events: a full queue drops events instead of blocking", "[events]") {
  FakeClient c;
  FakeClock clock;
  auto o = options();
  o.queue_capacity = 3;
  EventRecorder r(c, clock, o);
  // Not started: nothing drains the queue.
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) r.event(job().root(), "Normal", "R", fmt::format("m{}", i));
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  CHECK(r.stats().dropped == 7);
  CHECK(r.stats().recorded == 3);
  r.start();
  REQUIRE(r.flush(10s));
  CHECK(events(c).size() == 3);
}

TEST_CASE("events: an expired event is created again, failures are counted", "[events]") {
  FakeClient c;
  FakeClock clock;
  EventRecorder r(c, clock, options());
  r.start();
  r.event(job().root(), "Normal", "R", "m");
  REQUIRE(r.flush(10s));
  auto first = events(c);
  REQUIRE(first.size() == 1);
  REQUIRE(c.remove(kEvents, "team", std::string(json::get_string(first[0].root(), "/metadata/name").value_or(""))));
  r.event(job().root(), "Normal", "R", "m");
  REQUIRE(r.flush(10s));
  CHECK(events(c).size() == 1);
  CHECK(r.stats().created == 2);

  ApiError forbidden;
  forbidden.reason = ApiError::Reason::Forbidden;
  forbidden.code = 403;
  c.fail_next(FakeClient::Verb::Create, forbidden);
  r.event(job("x").root(), "Normal", "R", "m");
  REQUIRE(r.flush(10s));
  CHECK(r.stats().failed == 1);
}

TEST_CASE("events: stop writes what is queued", "[events]") {
  FakeClient c;
  FakeClock clock;
  {
    EventRecorder r(c, clock, options());
    r.start();
    for (int i = 0; i < 5; ++i) r.event(job(fmt::format("j{}", i)).root(), "Normal", "R", "m");
    r.stop();
    r.event(job().root(), "Normal", "R", "late");
    CHECK(r.stats().dropped == 1);
  }
  CHECK(events(c).size() == 5);
}

TEST_CASE("events: every event not written is counted and said once per cause and interval", "[events]") {
  std::ostringstream out;
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger->set_pattern("%l %v");
  spdlog::set_default_logger(logger);
  FakeClient c;
  FakeClock clock;
  auto o = options();
  o.queue_capacity = 2;
  EventRecorder r(c, clock, o);
  for (int i = 0; i < 6; ++i) r.event(job().root(), "Normal", "SuccessfulCreatePod", fmt::format("Created pod: p{}", i));
  clock.advance(31s);
  r.event(job().root(), "Normal", "SuccessfulCreatePod", "Created pod: late");
  spdlog::set_default_logger(previous);
  CHECK(r.stats().dropped == 5);
  CHECK(r.stats().lost() == 5);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[0], Catch::StartsWith("warning event Normal SuccessfulCreatePod on PyTorchJob team/mnist dropped: 2 events "
                                         "are waiting to be written (the queue is full)"));
  CHECK_THAT(lines[0], Catch::EndsWith("\x1f" "controller=pytorchjob-controller"));
  CHECK_THAT(lines[1], Catch::EndsWith("(repeated 3 times in the last 31s)" "\x1f" "controller=pytorchjob-controller"));
}

TEST_CASE("events: under a backlog, events go out in bursts at the client's rate, in order", "[events]") {
  FakeClient inner;
  FakeClock clock;
  PacedClient c(inner, clock, 20, 30);  // --events-qps 20, --events-burst 30
  auto o = options();
  o.write_burst = 5;
  EventRecorder r(c, clock, o);
  StopClientFirst guard{c};
  const auto t0 = clock.steady_now();
  // 40 events about 40 jobs (neither spam filter nor aggregation folds them): the bucket's 30
  // tokens write the first 30 at once, the other 10 wait for it to refill.
  for (int i = 0; i < 40; ++i) r.event(job(fmt::format("j{:02}", i)).root(), "Normal", "SuccessfulCreatePod", "m");
  r.start();
  REQUIRE(eventually([&] { return c.write_count() == 30 && clock.waiters() == 1; }));
  clock.advance(200ms);  // 4 tokens: not yet a burst
  clock.advance(50ms);   // 5: one burst of 5
  REQUIRE(eventually([&] { return c.write_count() == 35 && clock.waiters() == 1; }));
  clock.advance(50ms);
  clock.advance(200ms);
  REQUIRE(r.flush(10s));
  auto writes = c.writes();
  REQUIRE(writes.size() == 40);
  for (size_t i = 0; i < 40; ++i) {
    INFO("write " << i);
    // The recorder waited for the budget itself: every write found its token ready.
    CHECK_FALSE(writes[i].waited_for_token);
    const auto expected = i < 30 ? t0 : i < 35 ? t0 + 250ms : t0 + 500ms;  // 20 per second
    CHECK(writes[i].at == expected);
  }
  // In the order they were recorded.
  auto creates = inner.writes();
  REQUIRE(creates.size() == 40);
  for (size_t i = 0; i < creates.size(); ++i) CHECK_THAT(creates[i].name, Catch::StartsWith(fmt::format("j{:02}.", i)));
  CHECK(r.stats().created == 40);
}

TEST_CASE("events: a long backlog keeps the client's rate, in bursts no larger than its burst", "[events]") {
  FakeClient inner;
  FakeClock clock;
  PacedClient c(inner, clock, 20, 3);  // a client burst below write_burst: bursts of 3
  auto o = options();
  o.write_burst = 8;
  EventRecorder r(c, clock, o);
  StopClientFirst guard{c};
  drain(c.limiter());
  const auto t0 = clock.steady_now();
  for (int i = 0; i < 30; ++i) r.event(job(fmt::format("j{:02}", i)).root(), "Normal", "SuccessfulCreatePod", "m");
  r.start();
  for (size_t burst = 0; burst < 10; ++burst) {
    INFO("burst " << burst);
    // The recorder waits for the budget once the previous burst is written.
    REQUIRE(eventually([&] { return c.write_count() == 3 * burst && clock.waiters() == 1; }));
    clock.advance(140ms);  // 2.8 tokens: not yet
    clock.advance(10ms);
  }
  REQUIRE(r.flush(10s));
  auto writes = c.writes();
  REQUIRE(writes.size() == 30);
  for (size_t i = 0; i < writes.size(); ++i) {
    INFO("write " << i);
    CHECK_FALSE(writes[i].waited_for_token);
    // Three back to back every 150 ms: 20 per second, as one per 50 ms would be.
    CHECK(writes[i].at == t0 + (i / 3 + 1) * 150ms);
  }
}

TEST_CASE("events: a bucket that another writer keeps low does not hold a burst back for long", "[events]") {
  FakeClient inner;
  FakeClock clock;
  PacedClient c(inner, clock, 20, 30);
  auto o = options();
  o.write_burst = 5;
  EventRecorder r(c, clock, o);
  StopClientFirst guard{c};
  drain(c.limiter());
  const auto t0 = clock.steady_now();
  for (int i = 0; i < 5; ++i) r.event(job(fmt::format("j{}", i)).root(), "Normal", "SuccessfulCreatePod", "m");
  r.start();
  REQUIRE(clock.await_waiters(1));
  // Another writer of the same client takes each token as it comes (the last one reserved ahead):
  // the bucket never holds the 5 the recorder waits for.
  for (int i = 0; i < 4; ++i) {
    clock.advance(50ms);
    REQUIRE(c.limiter().try_take());
  }
  (void)c.limiter().reserve();
  clock.advance(50ms);
  // 250 ms is what 5 tokens take: the recorder stops waiting for a burst and writes one event per
  // token, each waiting for it in the client.
  for (int i = 0; i < 5; ++i) {
    INFO("write " << i);
    REQUIRE(eventually([&] { return c.token_waits() == i + 1; }));
    clock.advance(50ms);
  }
  REQUIRE(r.flush(10s));
  auto writes = c.writes();
  REQUIRE(writes.size() == 5);
  for (size_t i = 0; i < writes.size(); ++i) {
    INFO("write " << i);
    CHECK(writes[i].waited_for_token);
    CHECK(writes[i].at == t0 + 300ms + i * 50ms);
  }
}

TEST_CASE("events: by default a drained backlog goes out 16 at a time, one exchange per 0.8 s at 20 qps", "[events]") {
  FakeClient inner;
  FakeClock clock;
  PacedClient c(inner, clock, 20, 30);  // --events-qps 20, --events-burst 30 (the operator's defaults)
  EventRecorder r(c, clock, options());
  StopClientFirst guard{c};
  drain(c.limiter());
  const auto t0 = clock.steady_now();
  for (int i = 0; i < 32; ++i) r.event(job(fmt::format("j{:02}", i)).root(), "Normal", "SuccessfulCreatePod", "m");
  r.start();
  for (size_t burst = 0; burst < 2; ++burst) {
    INFO("burst " << burst);
    REQUIRE(eventually([&] { return c.write_count() == 16 * burst && clock.waiters() == 1; }));
    clock.advance(400ms);  // 8 tokens: a burst of 8 would go now
    clock.advance(400ms);
  }
  REQUIRE(r.flush(10s));
  // Each burst is one wake-up of the recorder and one pipelined exchange, whatever its size.
  CHECK(c.batches() == std::vector<size_t>{16, 16});
  auto writes = c.writes();
  REQUIRE(writes.size() == 32);
  for (size_t i = 0; i < writes.size(); ++i) {
    INFO("write " << i);
    CHECK_FALSE(writes[i].waited_for_token);
    CHECK(writes[i].at == t0 + (i / 16 + 1) * 800ms);  // still 20 per second
  }
}

TEST_CASE("events: one event with a token ready is written at once, alone, it waits for one token only", "[events]") {
  FakeClient inner;
  FakeClock clock;
  PacedClient c(inner, clock, 20, 30);
  EventRecorder r(c, clock, options());  // write_burst 16
  StopClientFirst guard{c};
  r.start();
  const auto t0 = clock.steady_now();
  while (c.limiter().tokens() >= 2) REQUIRE(c.limiter().try_take());  // one token left, fewer than a burst
  r.event(job().root(), "Normal", "SuccessfulCreatePod", "Created pod: mnist-worker-0");
  REQUIRE(r.flush(10s));  // the fake clock did not move
  REQUIRE(c.write_count() == 1);
  CHECK(c.writes()[0].at == t0);

  drain(c.limiter());
  r.event(job().root(), "Normal", "SuccessfulCreatePod", "Created pod: mnist-worker-1");
  REQUIRE(clock.await_waiters(1));
  clock.advance(50ms);  // its one token
  REQUIRE(r.flush(10s));
  REQUIRE(c.write_count() == 2);
  CHECK(c.writes()[1].at == t0 + 50ms);
  CHECK_FALSE(c.writes()[1].waited_for_token);
}

TEST_CASE("events: stop ends the wait for the budget at once", "[events]") {
  FakeClient inner;
  FakeClock clock;
  PacedClient c(inner, clock, 0.001, 30);  // one token per 1000 s
  EventRecorder r(c, clock, options());
  drain(c.limiter());
  r.start();
  for (int i = 0; i < 3; ++i) r.event(job(fmt::format("j{}", i)).root(), "Normal", "R", "m");
  REQUIRE(clock.await_waiters(1));  // the recorder waits for its tokens
  c.stop();                         // as the operator's stop ends its events client's token waits
  auto stopped = std::async(std::launch::async, [&r] { r.stop(); });
  const bool prompt = stopped.wait_for(10s) == std::future_status::ready;
  if (!prompt) clock.advance(std::chrono::hours(1));  // let it end, then fail
  REQUIRE(prompt);
  stopped.get();
  // The queued events went to the client, which gave them up as Cancelled: counted as lost.
  CHECK(c.write_count() == 0);
  CHECK(r.stats().failed == 3);
  CHECK(r.stats().lost() == 3);
}

TEST_CASE("events: a burst's creates go to the client together, in order, a PATCH keeps its place", "[events]") {
  FakeClient inner;
  FakeClock clock;
  PacedClient c(inner, clock, 20, 30);
  EventRecorder r(c, clock, options());  // write_burst 16
  StopClientFirst guard{c};
  for (int i = 0; i < 3; ++i) r.event(job(fmt::format("j{}", i)).root(), "Normal", "SuccessfulCreatePod", "m");
  r.event(job("j0").root(), "Normal", "SuccessfulCreatePod", "m");  // the same again: a dedup PATCH
  r.event(job("j3").root(), "Normal", "SuccessfulCreatePod", "m");
  r.start();
  REQUIRE(r.flush(10s));
  // One burst of 5: the three creates before the PATCH together (its Event must exist first),
  // then the PATCH, then the last create alone.
  CHECK(c.batches() == std::vector<size_t>{3});
  auto writes = inner.writes();
  REQUIRE(writes.size() == 5);
  const std::vector<std::pair<FakeClient::Verb, std::string>> expected{{FakeClient::Verb::Create, "j0."},
                                                                       {FakeClient::Verb::Create, "j1."},
                                                                       {FakeClient::Verb::Create, "j2."},
                                                                       {FakeClient::Verb::Patch, "j0."},
                                                                       {FakeClient::Verb::Create, "j3."}};
  for (size_t i = 0; i < writes.size(); ++i) {
    INFO("write " << i);
    CHECK(writes[i].verb == expected[i].first);
    CHECK_THAT(writes[i].name, Catch::StartsWith(expected[i].second));
  }
  CHECK(writes[3].name == writes[0].name);
  CHECK(c.write_count() == 5);  // one token per write
  CHECK(r.stats().created == 4);
  CHECK(r.stats().patched == 1);
}

TEST_CASE("events: under a backlog each burst's creates are one call to the client", "[events]") {
  FakeClient inner;
  FakeClock clock;
  PacedClient c(inner, clock, 20, 30);
  auto o = options();
  o.write_burst = 5;
  EventRecorder r(c, clock, o);
  StopClientFirst guard{c};
  for (int i = 0; i < 12; ++i) r.event(job(fmt::format("j{:02}", i)).root(), "Normal", "SuccessfulCreatePod", "m");
  r.start();
  REQUIRE(r.flush(10s));  // 30 tokens in the bucket: no wait
  CHECK(c.batches() == std::vector<size_t>{5, 5, 2});
  CHECK(c.write_count() == 12);  // one token per create
  auto creates = inner.writes();
  REQUIRE(creates.size() == 12);
  for (size_t i = 0; i < creates.size(); ++i) CHECK_THAT(creates[i].name, Catch::StartsWith(fmt::format("j{:02}.", i)));
}

namespace {

// Stores every create of a batch but answers those from `answered` on as RestClient does when
// the pipelined exchange broke after the server had stored them: sent again, AlreadyExists.
class BrokenExchangeClient final : public unitrain::testing::ForwardingClient {
 public:
  BrokenExchangeClient(Client& inner, size_t answered, bool resent)
      : ForwardingClient(inner), answered_(answered), resent_(resent) {}
  std::vector<CreateOutcome> create_all(const GroupVersionResource& r, std::span<const json::Document> objects,
                                        const WriteOptions& o = {}) override {
    ++calls_;
    auto out = inner_.create_all(r, objects, o);
    for (size_t i = answered_; i < out.size(); ++i) {
      ApiError e;
      e.reason = ApiError::Reason::AlreadyExists;
      e.code = 409;
      e.message = "events already exists";
      out[i].result = fail(std::move(e));
      out[i].resent = resent_;
    }
    return out;
  }
  int calls() const { return calls_.load(); }

 private:
  size_t answered_;
  bool resent_;
  std::atomic<int> calls_{0};
};

}  // namespace

TEST_CASE("events: a create sent again by the client and answered AlreadyExists is written, once", "[events]") {
  FakeClient inner;
  FakeClock clock;
  BrokenExchangeClient c(inner, 1, /*resent=*/true);
  EventRecorder r(c, clock, options());
  for (int i = 0; i < 4; ++i) r.event(job(fmt::format("j{}", i)).root(), "Normal", "SuccessfulCreatePod", "m");
  r.start();
  REQUIRE(r.flush(10s));
  CHECK(c.calls() == 1);  // no rate limit: the 4 queued events are one burst
  CHECK(r.stats().created == 4);
  CHECK(r.stats().failed == 0);
  CHECK(r.stats().lost() == 0);
  CHECK(events(inner).size() == 4);
  CHECK(writes_of(inner, FakeClient::Verb::Create) == 4);  // never a second copy
  // Known as written: the same event again is its PATCH.
  r.event(job("j3").root(), "Normal", "SuccessfulCreatePod", "m");
  REQUIRE(r.flush(10s));
  CHECK(writes_of(inner, FakeClient::Verb::Patch) == 1);
  CHECK(r.stats().patched == 1);
}

TEST_CASE("events: AlreadyExists on a create sent once is someone else's Event: not written", "[events]") {
  FakeClient inner;
  FakeClock clock;
  BrokenExchangeClient c(inner, 1, /*resent=*/false);
  EventRecorder r(c, clock, options());
  for (int i = 0; i < 2; ++i) r.event(job(fmt::format("j{}", i)).root(), "Normal", "SuccessfulCreatePod", "m");
  r.start();
  REQUIRE(r.flush(10s));
  CHECK(c.calls() == 1);
  CHECK(r.stats().created == 1);
  CHECK(r.stats().failed == 1);
}

namespace {

// Stores the first create but loses its answer (a transport error after the request was sent).
class LostAnswerClient final : public unitrain::testing::ForwardingClient {
 public:
  using ForwardingClient::ForwardingClient;
  ApiResult<json::Document> create(const GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                   const WriteOptions& o = {}) override {
    auto stored = inner_.create(r, ns, obj, o);
    if (!stored || lost_++ > 0) return stored;
    ApiError e;
    e.reason = ApiError::Reason::Transport;
    e.message = "POST /api/v1/namespaces/team/events: connection lost in the middle of the response";
    return fail(std::move(e));
  }

 private:
  int lost_ = 0;
};

}  // namespace

TEST_CASE("events: a create retried after its answer was lost, answered AlreadyExists, is written once", "[events]") {
  FakeClient inner;
  FakeClock clock;
  LostAnswerClient c(inner);
  EventRecorder r(c, clock, options());
  r.start();
  r.event(job().root(), "Normal", "SuccessfulCreatePod", "Created pod: mnist-worker-0");
  REQUIRE(clock.await_waiters(1));  // the retry's backoff
  clock.advance(1s);
  REQUIRE(r.flush(10s));
  CHECK(r.stats().created == 1);
  CHECK(r.stats().failed == 0);
  CHECK(events(inner).size() == 1);
}
