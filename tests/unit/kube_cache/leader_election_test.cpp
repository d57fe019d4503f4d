#include <atomic>
#include <regex>
#include <thread>

#include <catch2/catch.hpp>

#include "core/kube/fake_client.h"
#include "core/kube/leader_election.h"
#include "tests/unit/kube_cache/test_objects.h"
#include "tests/support/eventually.h"

using namespace unitrain;
using namespace unitrain::kube;
using namespace unitrain::kube::testing;
using namespace std::chrono_literals;

namespace {

using unitrain::testing::eventually;

struct Candidate {
  std::atomic<int> started{0}, stopped{0};
  std::mutex mu;
  std::vector<std::string> leaders;
  std::unique_ptr<LeaderElector> elector;

  Candidate(Client& c, Clock& clock, const std::string& id, bool release = true) {
    LeaderElectionConfig cfg;
    cfg.lease_namespace = "kube-system";
    cfg.lease_name = "unitrain";
    cfg.identity = id;
    cfg.jitter = 0;  // deterministic periods; the jittered path is the same code
    cfg.release_on_cancel = release;
    cfg.on_started_leading = [this] { ++started; };
    cfg.on_stopped_leading = [this] { ++stopped; };
    cfg.on_new_leader = [this](const std::string& l) {
      std::lock_guard g(mu);
      leaders.push_back(l);
    };
    auto e = LeaderElector::create(c, clock, std::move(cfg));
    REQUIRE(e);
    elector = std::move(*e);
  }
};

// Advances the fake clock by `d` once every running elector is parked on it, then waits until
// each has made its next attempt and parked again.
void step(FakeClock& clock, std::vector<Candidate*> running, Clock::Duration d) {
  REQUIRE(eventually([&] { return clock.waiters() == static_cast<int>(running.size()); }));
  std::vector<uint64_t> before;
  for (auto* c : running) before.push_back(c->elector->attempts());
  clock.advance(d);
  REQUIRE(eventually([&] {
    for (size_t i = 0; i < running.size(); ++i) {
      if (running[i]->elector->attempts() == before[i] && !running[i]->elector->finished()) return false;
    }
    return clock.waiters() == static_cast<int>(running.size());
  }));
}

json::Document lease(FakeClient& c) {
  auto l = c.get(kLeases, "kube-system", "unitrain");
  REQUIRE(l);
  return std::move(*l);
}

}  // namespace

TEST_CASE("leader election: configuration is validated", "[leader]") {
  FakeClient c;
  FakeClock clock;
  LeaderElectionConfig cfg;
  cfg.lease_namespace = "ns";
  cfg.lease_name = "l";
  auto no_id = LeaderElector::create(c, clock, cfg);
  REQUIRE(!no_id);
  CHECK(no_id.error().message.find("identity") != std::string::npos);
  cfg.identity = "me";
  cfg.renew_deadline = 20s;
  auto bad = LeaderElector::create(c, clock, cfg);
  REQUIRE(!bad);
  CHECK(bad.error().message.find("lease_duration") != std::string::npos);
  cfg.renew_deadline = 10s;
  CHECK(LeaderElector::create(c, clock, cfg));
}

TEST_CASE("leader election: of two candidates one leads and keeps renewing", "[leader]") {
  FakeClient c;
  FakeClock clock;
  Candidate a(c, clock, "a"), b(c, clock, "b");
  a.elector->start();
  REQUIRE(eventually([&] { return a.elector->is_leader(); }));
  b.elector->start();
  REQUIRE(eventually([&] { return b.elector->attempts() == 1 && clock.waiters() == 2; }));
  CHECK(!b.elector->is_leader());
  CHECK(b.elector->observed_leader() == "a");
  auto l = lease(c);
  CHECK(json::get_string(l.root(), "/spec/holderIdentity") == "a");
  CHECK(json::get_int(l.root(), "/spec/leaseDurationSeconds") == 15);
  CHECK(json::get_int(l.root(), "/spec/leaseTransitions") == 0);
  std::regex micro(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)");
  CHECK(std::regex_match(std::string(json::get_string(l.root(), "/spec/renewTime").value_or("")), micro));
  CHECK(json::get_string(l.root(), "/spec/acquireTime") == "2024-01-02T03:04:05.000000Z");

  for (int i = 0; i < 20; ++i) {
    step(clock, {&a, &b}, 2s);
    REQUIRE(a.elector->is_leader());
    REQUIRE(!b.elector->is_leader());
  }
  auto renewed = lease(c);
  CHECK(json::get_string(renewed.root(), "/spec/renewTime") == "2024-01-02T03:04:45.000000Z");
  CHECK(json::get_string(renewed.root(), "/spec/acquireTime") == "2024-01-02T03:04:05.000000Z");
  CHECK(a.started == 1);
  CHECK(a.stopped == 0);
  std::lock_guard g(b.mu);
  CHECK(b.leaders == std::vector<std::string>{"a"});
}

TEST_CASE("leader election: a leader that stops renewing is replaced only after the lease duration", "[leader]") {
  FakeClient c;
  FakeClock clock;
  Candidate a(c, clock, "a", /*release=*/false), b(c, clock, "b");
  a.elector->start();
  REQUIRE(eventually([&] { return a.elector->is_leader(); }));
  b.elector->start();
  REQUIRE(eventually([&] { return b.elector->attempts() == 1 && clock.waiters() == 2; }));
  a.elector->stop();  // as if the process died: no release
  CHECK(a.stopped == 1);
  CHECK(json::get_string(lease(c).root(), "/spec/holderIdentity") == "a");
  // b observed a's record at t=0; it may take over at t >= 15s, i.e. at its attempt at t=16s.
  for (int t = 2; t <= 14; t += 2) {
    step(clock, {&b}, 2s);
    REQUIRE(!b.elector->is_leader());
  }
  step(clock, {&b}, 2s);  // t = 16
  CHECK(b.elector->is_leader());
  auto l = lease(c);
  CHECK(json::get_string(l.root(), "/spec/holderIdentity") == "b");
  CHECK(json::get_int(l.root(), "/spec/leaseTransitions") == 1);
  CHECK(json::get_string(l.root(), "/spec/acquireTime") == "2024-01-02T03:04:21.000000Z");
  std::lock_guard g(b.mu);
  CHECK(b.leaders == std::vector<std::string>{"a", "b"});
}

TEST_CASE("leader election: release on stop lets the other candidate take over at once", "[leader]") {
  FakeClient c;
  FakeClock clock;
  Candidate a(c, clock, "a"), b(c, clock, "b");
  a.elector->start();
  REQUIRE(eventually([&] { return a.elector->is_leader(); }));
  b.elector->start();
  REQUIRE(eventually([&] { return b.elector->attempts() == 1 && clock.waiters() == 2; }));
  a.elector->stop();
  CHECK(a.stopped == 1);
  auto released = lease(c);
  CHECK(json::get_string(released.root(), "/spec/holderIdentity") == "");
  CHECK(json::get_int(released.root(), "/spec/leaseDurationSeconds") == 1);
  step(clock, {&b}, 2s);
  CHECK(b.elector->is_leader());
  CHECK(json::get_int(lease(c).root(), "/spec/leaseTransitions") == 1);
}

TEST_CASE("leader election: a 409 on renew is retried next period without losing the lease", "[leader]") {
  FakeClient c;
  FakeClock clock;
  Candidate a(c, clock, "a");
  a.elector->start();
  REQUIRE(eventually([&] { return a.elector->is_leader(); }));
  ApiError conflict;
  conflict.reason = ApiError::Reason::Conflict;
  conflict.code = 409;
  c.fail_next(FakeClient::Verb::Update, conflict);
  c.fail_next(FakeClient::Verb::Update, conflict);
  auto before = lease(c);
  step(clock, {&a}, 2s);  // fails (409)
  step(clock, {&a}, 2s);  // fails (409)
  CHECK(json::get_string(lease(c).root(), "/spec/renewTime") == json::get_string(before.root(), "/spec/renewTime"));
  CHECK(a.elector->is_leader());
  step(clock, {&a}, 2s);  // succeeds
  CHECK(a.elector->is_leader());
  CHECK(json::get_string(lease(c).root(), "/spec/renewTime") == "2024-01-02T03:04:11.000000Z");
  CHECK(a.stopped == 0);
}

TEST_CASE("leader election: a leader that cannot renew within the deadline steps down", "[leader]") {
  FakeClient c;
  FakeClock clock;
  Candidate a(c, clock, "a");
  a.elector->start();
  REQUIRE(eventually([&] { return a.elector->is_leader(); }));
  ApiError e;
  e.reason = ApiError::Reason::InternalError;
  e.code = 500;
  for (int i = 0; i < 20; ++i) c.fail_next(FakeClient::Verb::Update, e);
  step(clock, {&a}, 2s);  // round starts at t=2: attempts at 2, 4, 6, 8, 10; deadline 12
  for (int i = 0; i < 4; ++i) {
    step(clock, {&a}, 2s);
    REQUIRE(a.elector->is_leader());
  }
  clock.advance(2s);  // t = 12: the round's deadline
  REQUIRE(eventually([&] { return a.elector->finished(); }));
  CHECK(!a.elector->is_leader());
  CHECK(a.stopped == 1);
}

TEST_CASE("leader election: concurrent candidates never both lead", "[leader]") {
  FakeClient c;
  FakeClock clock;
  std::vector<std::unique_ptr<Candidate>> cs;
  for (int i = 0; i < 4; ++i) cs.push_back(std::make_unique<Candidate>(c, clock, fmt::format("c{}", i)));
  for (auto& x : cs) x->elector->start();
  std::vector<Candidate*> running;
  for (auto& x : cs) running.push_back(x.get());
  REQUIRE(eventually([&] { return clock.waiters() == 4; }));
  for (int i = 0; i < 10; ++i) {
    step(clock, running, 2s);
    int leaders = 0;
    for (auto& x : cs) leaders += x->elector->is_leader() ? 1 : 0;
    REQUIRE(leaders == 1);
  }
}
