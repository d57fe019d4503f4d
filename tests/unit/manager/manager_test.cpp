#include <catch2/catch.hpp>

#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "core/kube/clock.h"
#include "core/kube/fake_client.h"
#include "core/manager/lease_election.h"
#include "core/manager/manager.h"
#include "tests/support/eventually.h"

using namespace unitrain;
using manager::Leadership;
using manager::Manager;
using manager::ManagerOptions;
using manager::RunOutcome;
using unitrain::testing::eventually;

namespace {

// What the runnables did, in order: "start a", "stop a".
class Log {
 public:
  void add(std::string line) {
    std::lock_guard lock(mu_);
    lines_.push_back(std::move(line));
  }
  std::vector<std::string> lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }
  bool has(const std::string& line) const {
    auto l = lines();
    return std::find(l.begin(), l.end(), line) != l.end();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

// A gate a runnable waits at until the test opens it.
class Gate {
 public:
  void open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

class Part final : public manager::Runnable {
 public:
  Part(Log& log, std::string name) : log_(log), name_(std::move(name)) {}
  std::string start_error;      // start() fails with it
  bool start_waits = false;     // start() waits for the stop request, then fails
  Gate* stop_gate = nullptr;    // stop() waits at it

  Status start(std::stop_token stopping) override {
    if (start_waits) {
      log_.add("starting " + name_);
      std::mutex mu;
      std::condition_variable_any cv;
      std::unique_lock lock(mu);
      cv.wait(lock, stopping, [] { return false; });
      return fail("interrupted");
    }
    if (!start_error.empty()) return fail(start_error);
    log_.add("start " + name_);
    return {};
  }
  void stop() override {
    log_.add("stopping " + name_);
    if (stop_gate) stop_gate->wait();
    log_.add("stop " + name_);
  }

 private:
  Log& log_;
  std::string name_;
};

// run() on its own thread, as main runs it on the main thread while signals arrive elsewhere.
class Running {
 public:
  explicit Running(Manager& m) : thread_([this, &m] { outcome_ = m.run(stop_.get_token()); }) {}
  ~Running() { finish(); }
  RunOutcome finish() {
    stop_.request_stop();
    if (thread_.joinable()) thread_.join();
    return outcome_;
  }
  // Waits for run() to return by itself (leadership lost, a failed start).
  RunOutcome join() {
    thread_.join();
    return outcome_;
  }

 private:
  std::stop_source stop_;
  RunOutcome outcome_;
  std::thread thread_;
};

using Lines = std::vector<std::string>;

}  // namespace

TEST_CASE("runnables start in the order added, the leader's last, and stop in reverse") {
  Log log;
  Part a(log, "a"), b(log, "b"), workers(log, "workers"), c(log, "c");
  std::vector<std::string> transitions;
  ManagerOptions options;
  options.observer = [&](const manager::Transition& t) {
    transitions.push_back(std::string(t.kind == manager::Transition::Kind::Started ? "started " : "stopped ") +
                          std::string(t.name));
  };
  Manager m(options);
  m.add("a", a);
  m.add("b", b);
  m.add("workers", workers, Leadership::Needed);
  m.add("c", c);
  Running run(m);
  // Without an election every replica leads: the leader's runnables start right after the others.
  REQUIRE(eventually([&] { return log.has("start workers"); }));
  RunOutcome out = run.finish();
  CHECK(out.reason == RunOutcome::Reason::Stopped);
  CHECK(out.not_stopped.empty());
  CHECK(log.lines() == Lines{"start a", "start b", "start c", "start workers", "stopping workers", "stop workers",
                             "stopping c", "stop c", "stopping b", "stop b", "stopping a", "stop a"});
  CHECK(transitions == Lines{"started a", "started b", "started c", "started workers", "stopped workers",
                             "stopped c", "stopped b", "stopped a"});
}

TEST_CASE("runnables made of a start/stop pair") {
  Log log;
  Manager m;
  m.add("void", manager::runnable([&] { log.add("start void"); }, [&] { log.add("stop void"); }));
  m.add("token", manager::runnable(
                     [&](std::stop_token t) {
                       log.add(t.stop_requested() ? "start token (stopping)" : "start token");
                       return Status{};
                     },
                     [&] { log.add("stop token"); }));
  Running run(m);
  REQUIRE(eventually([&] { return log.has("start token"); }));
  run.finish();
  CHECK(log.lines() == Lines{"start void", "start token", "stop token", "stop void"});
}

TEST_CASE("leader runnables wait for leadership") {
  Log log;
  Part caches(log, "caches"), workers(log, "workers");
  ManagerOptions options;
  options.leader_election = true;
  Manager m(options);
  m.add("caches", caches);
  m.add("workers", workers, Leadership::Needed);
  CHECK_FALSE(m.leading());

  SECTION("a follower starts them when it becomes leader, and stops everything when it loses the lease") {
    Running run(m);
    // Running, and ready as a follower: everything but the leader's runnables has started.
    REQUIRE(eventually([&] { return m.readiness().body == "ok (standby)\n"; }));
    CHECK(log.lines() == Lines{"start caches"});
    m.leadership_acquired();
    REQUIRE(eventually([&] { return log.has("start workers"); }));
    CHECK(m.leading());
    CHECK(m.readiness().body == "ok\n");
    m.leadership_lost();
    RunOutcome out = run.join();
    CHECK(out.reason == RunOutcome::Reason::LeadershipLost);
    CHECK(log.lines() == Lines{"start caches", "start workers", "stopping workers", "stop workers", "stopping caches",
                               "stop caches"});
    CHECK(m.stopping().stop_requested());
  }
  SECTION("a follower that is stopped never starts them") {
    Running run(m);
    REQUIRE(eventually([&] { return m.readiness().ok; }));
    RunOutcome out = run.finish();
    CHECK(out.reason == RunOutcome::Reason::Stopped);
    CHECK(log.lines() == Lines{"start caches", "stopping caches", "stop caches"});
    m.leadership_acquired();  // too late: nothing starts any more
    CHECK_FALSE(m.leading());
  }
  SECTION("leadership lost while stopping is not news") {
    Running run(m);
    m.leadership_acquired();
    REQUIRE(eventually([&] { return log.has("start workers"); }));
    RunOutcome out = run.finish();
    m.leadership_lost();  // the election releasing the lease as it stops
    CHECK(out.reason == RunOutcome::Reason::Stopped);
  }
}

TEST_CASE("a failed start stops what started, in reverse, and starts nothing after it") {
  Log log;
  Part a(log, "a"), b(log, "b"), bad(log, "webhooks"), c(log, "c");
  bad.start_error = "port 9443 is in use";
  Manager m;
  m.add("a", a);
  m.add("b", b);
  m.add("webhooks", bad);
  m.add("c", c);
  Running run(m);
  RunOutcome out = run.join();
  CHECK(out.reason == RunOutcome::Reason::StartFailed);
  CHECK(out.error == "webhooks: port 9443 is in use");
  CHECK(log.lines() == Lines{"start a", "start b", "stopping b", "stop b", "stopping a", "stop a"});
  CHECK(m.stopping().stop_requested());
}

TEST_CASE("a stop request ends a start that waits, and is no start failure") {
  Log log;
  Part a(log, "a"), slow(log, "certificates"), c(log, "c");
  slow.start_waits = true;
  Manager m;
  m.add("a", a);
  m.add("certificates", slow);
  m.add("c", c);
  Running run(m);
  REQUIRE(eventually([&] { return log.has("starting certificates"); }));
  CHECK(m.readiness().body == "starting\n");
  RunOutcome out = run.finish();
  CHECK(out.reason == RunOutcome::Reason::Stopped);
  CHECK(out.error.empty());
  // The interrupted start did not succeed, so only `a` has anything to stop.
  CHECK(log.lines() == Lines{"start a", "starting certificates", "stopping a", "stop a"});
}

TEST_CASE("the stop is bounded: a runnable that does not stop is named, and those before it wait") {
  Log log;
  Part a(log, "a"), stuck(log, "workers"), c(log, "c");
  Gate gate;
  stuck.stop_gate = &gate;
  ManagerOptions options;
  options.graceful_shutdown_timeout = std::chrono::milliseconds(50);
  std::optional<Manager> m(std::in_place, options);
  m->add("a", a);
  m->add("workers", stuck);
  m->add("c", c);
  {
    Running run(*m);
    REQUIRE(eventually([&] { return log.has("start c"); }));
    RunOutcome out = run.finish();
    CHECK(out.reason == RunOutcome::Reason::Stopped);
    CHECK(out.not_stopped == "workers");
    CHECK(out.stop_time >= options.graceful_shutdown_timeout);
    // `a` is not stopped under a runnable that may still use it.
    CHECK(log.lines() == Lines{"start a", "start workers", "start c", "stopping c", "stop c", "stopping workers"});
    CHECK(m->readiness().body == "stopping\n");
  }
  gate.open();
  m.reset();  // waits for the stop still in progress
  CHECK(log.lines().back() == "stop a");
}

TEST_CASE("readiness and health aggregate their checks") {
  Log log;
  Part caches(log, "caches");
  Status certificates = fail("certificates are not ready");
  Status pytorch = fail("caches not synced");
  Status alive;
  std::mutex mu;
  auto read = [&](const Status& s) {
    return [&mu, &s]() -> Status {
      std::lock_guard lock(mu);
      return s;
    };
  };
  auto set = [&](Status& s, Status v) {
    std::lock_guard lock(mu);
    s = std::move(v);
  };
  ManagerOptions options;
  options.leader_election = true;
  Manager m(options);
  m.add("caches", caches);
  m.add_ready_check("webhook-certificates", read(certificates));
  m.add_ready_check("pytorchjob", read(pytorch));
  m.add_ready_check("tfjob", [] { return Status{}; });
  m.add_health_check("event-loop", read(alive));

  CHECK(m.readiness().body == "starting\n");
  CHECK_FALSE(m.readiness().ok);
  CHECK(m.health().ok);  // liveness does not depend on the phase
  Running run(m);
  REQUIRE(eventually([&] { return m.readiness().body != "starting\n"; }));
  auto r = m.readiness();
  CHECK_FALSE(r.ok);
  CHECK(r.body == "webhook-certificates: certificates are not ready\npytorchjob: caches not synced\n");
  set(certificates, {});
  r = m.readiness();
  CHECK_FALSE(r.ok);
  CHECK(r.body == "pytorchjob: caches not synced\n");
  set(pytorch, {});
  r = m.readiness();
  CHECK(r.ok);
  CHECK(r.body == "ok (standby)\n");
  m.leadership_acquired();
  CHECK(m.readiness().body == "ok\n");

  CHECK(m.health().body == "ok\n");
  set(alive, fail("stuck"));
  CHECK_FALSE(m.health().ok);
  CHECK(m.health().body == "event-loop: stuck\n");

  run.finish();
  CHECK(m.readiness().body == "stopping\n");
}

TEST_CASE("the lease election gates the leader's runnables and releases the lease after them") {
  const kube::GroupVersionResource leases{"coordination.k8s.io", "v1", "leases"};
  kube::FakeClient client;
  kube::RealClock clock;
  Log log;
  auto holder = [&] {
    auto lease = client.get(leases, "default", "unitrain-manager-test");
    return lease ? std::string(json::get_string(lease->root(), "/spec/holderIdentity").value_or("")) : "<none>";
  };
  ManagerOptions options;
  options.leader_election = true;
  Manager m(options);
  kube::LeaderElectionConfig config;
  config.lease_namespace = "default";
  config.lease_name = "unitrain-manager-test";
  config.identity = "me";
  int own_callbacks = 0;
  config.on_started_leading = [&] { ++own_callbacks; };
  auto election = manager::LeaseElection::create(m, client, clock, config);
  REQUIRE(election);
  Part caches(log, "caches");
  m.add("caches", caches);
  m.add("election", **election);
  // The workers see the lease still held when they stop: it is released only after them.
  m.add("workers",
        manager::runnable([&] { log.add("start workers"); },
                          [&] { log.add("stop workers, holder " + holder()); }),
        Leadership::Needed);

  SECTION("a free lease is taken, the workers start, and the stop releases it after them") {
    Running run(m);
    REQUIRE(eventually([&] { return log.has("start workers"); }));
    CHECK(holder() == "me");
    CHECK(own_callbacks == 1);
    CHECK(m.leading());
    RunOutcome out = run.finish();
    CHECK(out.reason == RunOutcome::Reason::Stopped);
    CHECK(log.lines() == Lines{"start caches", "start workers", "stop workers, holder me", "stopping caches",
                               "stop caches"});
    CHECK(holder() == "");
  }
  SECTION("a lease another replica holds keeps the workers stopped") {
    auto lease = json::Document::parse(R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease",
      "metadata":{"name":"unitrain-manager-test","namespace":"default"},
      "spec":{"holderIdentity":"other","leaseDurationSeconds":15,"acquireTime":"2026-01-01T00:00:00.000000Z",
              "renewTime":"2026-01-01T00:00:00.000000Z","leaseTransitions":0}})");
    REQUIRE(lease);
    client.seed(leases, lease->root());
    Running run(m);
    // The first attempt saw the lease held; a 15 s lease cannot expire during this test.
    REQUIRE(eventually([&] { return (*election)->elector().attempts() >= 1 && m.readiness().ok; }));
    CHECK(m.readiness().body == "ok (standby)\n");
    CHECK_FALSE(m.leading());
    RunOutcome out = run.finish();
    CHECK(out.reason == RunOutcome::Reason::Stopped);
    CHECK(log.lines() == Lines{"start caches", "stopping caches", "stop caches"});
    CHECK(holder() == "other");
  }
}
