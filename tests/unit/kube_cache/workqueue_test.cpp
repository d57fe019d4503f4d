#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "core/kube/workqueue.h"

using namespace unitrain::kube;
using namespace std::chrono_literals;

namespace {
std::unique_ptr<RateLimiter> no_limit() {
  return std::make_unique<ItemExponentialRateLimiter>(0ns, 0ns);
}
}  // namespace

TEST_CASE("workqueue: duplicate adds before get are processed once", "[workqueue]") {
  FakeClock clock;
  WorkQueue q(clock, no_limit());
  q.add("ns/a");
  q.add("ns/a");
  q.add("ns/b");
  CHECK(q.len() == 2);
  CHECK(q.metrics().adds == 2);
  CHECK(q.get() == "ns/a");
  CHECK(q.get() == "ns/b");
  CHECK(q.len() == 0);
}

TEST_CASE("workqueue: re-added while processing is requeued only after done", "[workqueue]") {
  FakeClock clock;
  WorkQueue q(clock, no_limit());
  q.add("k");
  auto k = q.get();
  REQUIRE(k == "k");
  q.add("k");
  CHECK(q.len() == 0);  // not handed to a second worker while the first holds it
  CHECK(!q.get_until(clock.steady_now()).has_value());
  q.done("k");
  CHECK(q.len() == 1);
  CHECK(q.get() == "k");
  q.done("k");
  CHECK(q.len() == 0);
}

TEST_CASE("workqueue: concurrent workers never hold the same key", "[workqueue]") {
  RealClock clock;
  WorkQueue q(clock, no_limit());
  std::mutex mu;
  std::set<std::string> held;
  std::atomic<int> overlaps{0}, processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto key = q.get()) {
        {
          std::lock_guard g(mu);
          if (!held.insert(*key).second) ++overlaps;
        }
        std::this_thread::yield();
        {
          std::lock_guard g(mu);
          held.erase(*key);
        }
        ++processed;
        q.done(*key);
      }
    });
  }
  for (int round = 0; round < 200; ++round) {
    for (int k = 0; k < 5; ++k) q.add("key-" + std::to_string(k));
  }
  CHECK(q.shut_down_with_drain(10s));
  for (auto& t : workers) t.join();
  CHECK(overlaps == 0);
  CHECK(processed >= 5);
  CHECK(processed <= 1000);
}

TEST_CASE("workqueue: add_after becomes ready only when the clock passes the delay", "[workqueue]") {
  FakeClock clock;
  WorkQueue q(clock, no_limit());
  q.add_after("later", 5s);
  q.add_after("later", 10s);  // keeps the earlier time
  CHECK(q.metrics().delayed == 1);
  clock.advance(4s);
  CHECK(!q.get_until(clock.steady_now()).has_value());
  std::optional<std::string> got;
  std::thread worker([&] { got = q.get(); });
  REQUIRE(clock.await_waiters(1));
  clock.advance(1s);
  worker.join();
  CHECK(got == "later");
}

TEST_CASE("workqueue: earlier add_after wakes a sleeping worker", "[workqueue]") {
  FakeClock clock;
  WorkQueue q(clock, no_limit());
  q.add_after("slow", 100s);
  std::optional<std::string> got;
  std::thread worker([&] { got = q.get(); });
  REQUIRE(clock.await_waiters(1));
  q.add_after("fast", 1s);
  clock.advance(1s);
  worker.join();
  CHECK(got == "fast");
}

TEST_CASE("workqueue: rate limited adds back off exponentially and forget resets", "[workqueue]") {
  FakeClock clock;
  WorkQueue q(clock, std::make_unique<ItemExponentialRateLimiter>(5ms, 1000s));
  q.add_rate_limited("k");  // 5ms
  CHECK(q.num_requeues("k") == 1);
  CHECK(q.len() == 0);
  clock.advance(4ms);
  CHECK(!q.get_until(clock.steady_now()).has_value());
  clock.advance(1ms);
  CHECK(q.get_until(clock.steady_now()) == "k");
  q.done("k");
  q.add_rate_limited("k");  // 10ms
  clock.advance(9ms);
  CHECK(!q.get_until(clock.steady_now()).has_value());
  clock.advance(1ms);
  CHECK(q.get_until(clock.steady_now()) == "k");
  q.done("k");
  q.forget("k");
  CHECK(q.num_requeues("k") == 0);
  CHECK(q.metrics().retries == 2);
}

TEST_CASE("rate limiters: exponential caps at the maximum", "[workqueue]") {
  ItemExponentialRateLimiter l(5ms, 1000s);
  CHECK(l.when("a") == 5ms);
  CHECK(l.when("a") == 10ms);
  CHECK(l.when("a") == 20ms);
  CHECK(l.when("b") == 5ms);
  for (int i = 0; i < 100; ++i) (void)l.when("a");
  CHECK(l.when("a") == 1000s);
  CHECK(l.num_requeues("b") == 1);
}

TEST_CASE("rate limiters: token bucket allows the burst then paces at qps", "[workqueue]") {
  FakeClock clock;
  BucketRateLimiter b(clock, 10, 100);
  for (int i = 0; i < 100; ++i) REQUIRE(b.when("x") == RateLimiter::Duration::zero());
  CHECK(b.when("x") == 100ms);
  CHECK(b.when("x") == 200ms);
  clock.advance(1s);  // refills 10 tokens, 2 of them already reserved
  for (int i = 0; i < 8; ++i) REQUIRE(b.when("x") == RateLimiter::Duration::zero());
  CHECK(b.when("x") == 100ms);
}

TEST_CASE("rate limiters: default controller limiter takes the max of both", "[workqueue]") {
  FakeClock clock;
  auto l = default_controller_rate_limiter(clock);
  // 100 distinct keys drain the bucket at 5ms each.
  for (int i = 0; i < 100; ++i) REQUIRE(l->when("k" + std::to_string(i)) == 5ms);
  CHECK(l->when("fresh") == 100ms);  // the bucket dominates
  for (int i = 0; i < 15; ++i) (void)l->when("hot");
  clock.advance(1h);
  CHECK(l->when("hot") == 163840ms);  // exponential dominates: 5ms * 2^15
  CHECK(l->num_requeues("hot") == 16);
  for (int i = 0; i < 10; ++i) (void)l->when("hot");
  CHECK(l->when("hot") == 1000s);  // capped
}

TEST_CASE("workqueue: shut_down wakes workers and ignores new adds", "[workqueue]") {
  FakeClock clock;
  WorkQueue q(clock, no_limit());
  std::atomic<bool> returned{false};
  std::optional<std::string> got{"unset"};
  std::thread worker([&] {
    got = q.get();
    returned = true;
  });
  REQUIRE(clock.await_waiters(1));
  q.shut_down();
  worker.join();
  CHECK(returned);
  CHECK(!got.has_value());
  q.add("x");
  CHECK(q.len() == 0);
  CHECK(q.shutting_down());
}

TEST_CASE("workqueue: shut_down_with_drain hands out queued keys and waits for done", "[workqueue]") {
  FakeClock clock;
  WorkQueue q(clock, no_limit());
  q.add("a");
  q.add("b");
  auto a = q.get();
  REQUIRE(a == "a");
  std::atomic<bool> drained{false};
  std::thread closer([&] { drained = q.shut_down_with_drain(1h); });
  REQUIRE(clock.await_waiters(1));
  CHECK(!drained);
  CHECK(q.get() == "b");  // still handed out while draining
  q.done("a");
  CHECK(!drained);
  q.done("b");
  closer.join();
  CHECK(drained);
  CHECK(!q.get().has_value());
}

TEST_CASE("workqueue: drain gives up at its timeout", "[workqueue]") {
  FakeClock clock;
  WorkQueue q(clock, no_limit());
  q.add("stuck");
  REQUIRE(q.get() == "stuck");
  std::atomic<int> result{-1};
  std::thread closer([&] { result = q.shut_down_with_drain(30s) ? 1 : 0; });
  REQUIRE(clock.await_waiters(1));
  clock.advance(31s);
  closer.join();
  CHECK(result == 0);
}

TEST_CASE("workqueue: metrics record latency and work duration", "[workqueue]") {
  FakeClock clock;
  WorkQueue q(clock, no_limit());
  q.add("a");
  clock.advance(2s);
  REQUIRE(q.get() == "a");
  clock.advance(500ms);
  auto mid = q.metrics();
  CHECK(mid.processing == 1);
  CHECK(mid.longest_running_seconds == Approx(0.5));
  q.done("a");
  auto m = q.metrics();
  CHECK(m.queue_latency.count == 1);
  CHECK(m.queue_latency.sum_seconds == Approx(2.0));
  CHECK(m.queue_latency.buckets[6] == 0);  // <= 1s
  CHECK(m.queue_latency.buckets[7] == 1);  // <= 10s
  CHECK(m.work_duration.count == 1);
  CHECK(m.work_duration.sum_seconds == Approx(0.5));
  CHECK(m.depth == 0);
  CHECK(m.processing == 0);
}

TEST_CASE("workqueue: first-lane keys are handed out before the ordinary backlog", "[workqueue]") {
  FakeClock clock;
  WorkQueue q(clock, no_limit());
  for (int i = 0; i < 3; ++i) q.add("create-" + std::to_string(i));
  q.add_first("finished");
  CHECK(q.len() == 4);
  CHECK(q.get() == "finished");
  CHECK(q.get() == "create-0");
  CHECK(q.metrics().first_adds == 1);
}

TEST_CASE("workqueue: a queued ordinary key added first moves to the first lane, once", "[workqueue]") {
  FakeClock clock;
  WorkQueue q(clock, no_limit());
  q.add("a");
  q.add("b");
  q.add_first("b");
  q.add("b");  // stays first
  CHECK(q.len() == 2);
  CHECK(q.get() == "b");
  CHECK(q.get() == "a");
  CHECK(q.len() == 0);
  CHECK(!q.get_until(clock.steady_now()).has_value());  // the stale ordinary entry of "b" is not handed out
}

TEST_CASE("workqueue: a key added first while a worker holds it is requeued in the first lane", "[workqueue]") {
  FakeClock clock;
  WorkQueue q(clock, no_limit());
  q.add("busy");
  REQUIRE(q.get() == "busy");
  q.add("other");
  q.add_first("busy");
  q.done("busy");
  CHECK(q.get() == "busy");
  CHECK(q.get() == "other");
}

TEST_CASE("workqueue: a steady stream of first-lane keys does not starve the ordinary lane", "[workqueue]") {
  FakeClock clock;
  WorkQueue q(clock, no_limit());
  q.add("waiting-0");
  q.add("waiting-1");
  int next = 0;
  auto refill = [&] {
    while (q.len() < 10) q.add_first("status-" + std::to_string(next++));
  };
  std::vector<std::string> served;
  for (int i = 0; i < 2 * (WorkQueue::kFirstInARow + 1); ++i) {
    refill();
    auto k = q.get();
    REQUIRE(k);
    served.push_back(*k);
    q.done(*k);
  }
  // Each ordinary key got its turn after at most kFirstInARow first-lane keys.
  auto at = [&](const std::string& key) { return std::find(served.begin(), served.end(), key) - served.begin(); };
  CHECK(at("waiting-0") == WorkQueue::kFirstInARow);
  CHECK(at("waiting-1") == 2 * WorkQueue::kFirstInARow + 1);
}

TEST_CASE("workqueue: drain waits for both lanes", "[workqueue]") {
  RealClock clock;
  WorkQueue q(clock, no_limit());
  q.add("a");
  q.add_first("b");
  std::thread worker([&] {
    while (auto k = q.get()) q.done(*k);
  });
  CHECK(q.shut_down_with_drain(10s));
  worker.join();
  CHECK(q.len() == 0);
}

TEST_CASE("workqueue: with a settle time, a key is handed out that long after it was first queued", "[workqueue]") {
  FakeClock clock;
  WorkQueue q(clock, no_limit(), 100ms);
  const auto t0 = clock.steady_now();
  q.add("a");
  clock.advance(60ms);
  q.add("a");  // still the one queued at t0
  q.add_first("b");
  CHECK(!q.get_until(clock.steady_now()).has_value());
  clock.advance(40ms);  // "a" is ready (t0 + 100 ms), "b" not yet: the first lane waits for it
  CHECK(q.get_until(clock.steady_now()) == "a");
  CHECK(clock.steady_now() - t0 == 100ms);
  clock.advance(60ms);
  CHECK(q.get_until(clock.steady_now()) == "b");
  q.done("a");
  q.done("b");

  // A get() that waits wakes when the first key is ready.
  q.add("c");
  std::optional<std::string> got;
  std::thread worker([&] { got = q.get(); });
  REQUIRE(clock.await_waiters(1));
  clock.advance(100ms);
  worker.join();
  CHECK(got == "c");

  // Shutting down hands out what still settles.
  q.add("d");
  q.shut_down();
  CHECK(q.get() == "d");
}

TEST_CASE("workqueue: adds that settle behind a key a worker already waits for do not wake it", "[workqueue]") {
  FakeClock clock;
  WorkQueue q(clock, no_limit(), 100ms);
  q.add("a");
  std::optional<std::string> got;
  std::thread worker([&] { got = q.get(); });
  // The worker sleeps until "a" is ready.
  REQUIRE(clock.await_waiters(1));
  REQUIRE(q.metrics().waiting_workers == 1);
  clock.advance(10ms);
  q.add("b");
  q.add_first("c");
  q.add_after("d", 200ms);
  q.add("a");  // already queued
  CHECK(q.metrics().wakeups == 0);
  clock.advance(90ms);
  worker.join();
  CHECK(got == "a");
  CHECK(q.metrics().wakeups == 0);
  q.done("a");

  q.shut_down();

  // A key ready before the time a worker sleeps until wakes it.
  WorkQueue later(clock, no_limit(), 100ms);
  later.add_after("late", 10s);
  worker = std::thread([&] { got = later.get(); });
  REQUIRE(clock.await_waiters(1));
  REQUIRE(later.metrics().waiting_workers == 1);
  later.add("soon");
  CHECK(later.metrics().wakeups == 1);
  clock.advance(100ms);
  worker.join();
  CHECK(got == "soon");
}
