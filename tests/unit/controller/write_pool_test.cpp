#include <atomic>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/controller/write_pool.h"
#include "tests/support/eventually.h"

using unitrain::controller::internal_error;
using unitrain::controller::WritePool;
using unitrain::kube::ApiError;
using unitrain::testing::eventually;

namespace {

// Counts the items running at once and the most seen; items can wait until `n` ran together.
class Concurrency {
 public:
  void enter() {
    std::lock_guard lock(mu_);
    most_ = std::max(most_, ++running_);
    cv_.notify_all();
  }
  void leave() {
    std::lock_guard lock(mu_);
    --running_;
  }
  bool wait_for_together(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return most_ >= n; });
  }
  int most() const {
    std::lock_guard lock(mu_);
    return most_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
  int most_ = 0;
};

}  // namespace

TEST_CASE("write pool: the caller runs the first item itself, the rest run once each") {
  WritePool pool(4);
  std::vector<int> items{0, 1, 2, 3, 4, 5};
  std::vector<std::thread::id> ran_on(items.size());
  std::vector<std::atomic<int>> runs(items.size());
  auto fn = [&](int i) -> std::optional<ApiError> {
    ran_on[i] = std::this_thread::get_id();
    ++runs[i];
    return std::nullopt;
  };
  CHECK_FALSE(pool.run_all(items, fn));
  CHECK(ran_on[0] == std::this_thread::get_id());
  for (const auto& n : runs) CHECK(n == 1);
}

TEST_CASE("write pool: a batch wakes no more threads than it has items besides the caller's") {
  WritePool pool(8);
  REQUIRE(eventually([&] { return pool.idle_threads() == 7; }));
  auto fn = [](int) -> std::optional<ApiError> { return std::nullopt; };
  std::vector<int> four{0, 1, 2, 3};
  CHECK_FALSE(pool.run_all(four, fn));
  CHECK(pool.wakeups() == 3);

  REQUIRE(eventually([&] { return pool.idle_threads() == 7; }));
  std::vector<int> two{0, 1};
  CHECK_FALSE(pool.run_all(two, fn));
  CHECK(pool.wakeups() == 4);

  REQUIRE(eventually([&] { return pool.idle_threads() == 7; }));
  std::vector<int> many(20);
  CHECK_FALSE(pool.run_all(many, fn));
  CHECK(pool.wakeups() == 11);  // seven threads for the other 19 items: the pool has no more
}

TEST_CASE("write pool: at most max_in_flight items run at once, the caller's included, and that many do") {
  WritePool pool(3);
  Concurrency c;
  std::vector<int> items(9);
  std::atomic<int> started{0};
  auto fn = [&](int) -> std::optional<ApiError> {
    c.enter();
    // The first three wait for one another: the pool's two threads and the caller run together.
    const bool first_three = started++ < 3;
    const bool together = !first_three || c.wait_for_together(3);
    c.leave();
    return together ? std::nullopt : std::optional<ApiError>(internal_error("three never ran together"));
  };
  CHECK_FALSE(pool.run_all(items, fn));
  CHECK(c.most() == 3);
}

TEST_CASE("write pool: every item runs, the first error in item order is returned, exceptions become errors") {
  WritePool pool(4);
  std::vector<int> items{0, 1, 2, 3, 4, 5};
  std::atomic<int> ran{0};
  std::atomic<bool> four_done{false};
  auto fn = [&](int i) -> std::optional<ApiError> {
    ++ran;
    if (i == 1) {
      // Fails after item 4 did: the error returned is still item 1's.
      const bool after_four = eventually([&] { return four_done.load(); });
      return internal_error(after_four ? "item one" : "item four never ran");
    }
    if (i == 4) {
      four_done = true;
      throw std::runtime_error("item four");
    }
    return std::nullopt;
  };
  auto e = pool.run_all(items, fn);
  REQUIRE(e);
  CHECK(e->message == "item one");
  CHECK(ran == 6);

  std::vector<int> only_four{4, 0};
  e = pool.run_all(only_four, fn);
  REQUIRE(e);
  CHECK(e->message == "item four");
}

TEST_CASE("write pool: callers on several threads share its slots and each gets its own batch back") {
  WritePool pool(3);
  Concurrency c;
  constexpr int kCallers = 4, kItems = 5;
  std::vector<std::atomic<int>> done(kCallers);
  // Catch2 assertions belong to the test's thread: the callers record what they saw.
  std::vector<int> done_at_return(kCallers, -1);
  std::vector<bool> failed(kCallers);
  std::vector<std::thread> callers;
  for (int caller = 0; caller < kCallers; ++caller) {
    callers.emplace_back([&, caller] {
      std::vector<int> items(kItems);
      auto fn = [&](int) -> std::optional<ApiError> {
        c.enter();
        std::this_thread::yield();
        c.leave();
        ++done[caller];
        return caller == 2 ? std::optional<ApiError>(internal_error("caller two")) : std::nullopt;
      };
      auto e = pool.run_all(items, fn);
      done_at_return[caller] = done[caller];
      failed[caller] = static_cast<bool>(e);
    });
  }
  for (auto& t : callers) t.join();
  for (int caller = 0; caller < kCallers; ++caller) {
    CHECK(done_at_return[caller] == kItems);  // returned only once all of its own items ran
    CHECK(failed[caller] == (caller == 2));
  }
  CHECK(c.most() <= 3);
}

TEST_CASE("write pool: with room for one write, the caller runs them all in order") {
  WritePool pool(1);
  std::vector<int> items{0, 1, 2, 3};
  std::vector<int> order;
  bool elsewhere = false;
  const auto caller = std::this_thread::get_id();
  auto fn = [&](int i) -> std::optional<ApiError> {
    elsewhere = elsewhere || std::this_thread::get_id() != caller;
    order.push_back(i);
    return std::nullopt;
  };
  CHECK_FALSE(pool.run_all(items, fn));
  CHECK(order == items);
  CHECK_FALSE(elsewhere);
  CHECK(pool.wakeups() == 0);
}
