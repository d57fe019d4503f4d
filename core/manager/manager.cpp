#include "core/manager/manager.h"

#include <exception>

namespace unitrain::manager {

namespace {
using SteadyClock = std::chrono::steady_clock;

std::chrono::milliseconds since(SteadyClock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - t0);
}
}  // namespace

Manager::Manager(ManagerOptions options) : options_(std::move(options)), leading_(!options_.leader_election) {}

Manager::~Manager() {
  if (stopper_.joinable()) stopper_.join();
}

void Manager::add(std::string name, Runnable& runnable, Leadership leadership) {
  entries_.push_back(Entry{std::move(name), &runnable, nullptr, leadership});
}

void Manager::add(std::string name, std::unique_ptr<Runnable> runnable, Leadership leadership) {
  Runnable* borrowed = runnable.get();
  entries_.push_back(Entry{std::move(name), borrowed, std::move(runnable), leadership});
}

void Manager::add_ready_check(std::string name, Check check) { ready_checks_.emplace_back(std::move(name), std::move(check)); }

void Manager::add_health_check(std::string name, Check check) {
  health_checks_.emplace_back(std::move(name), std::move(check));
}

void Manager::request_stop() {
  // Outside mu_: callbacks registered on stopping() run inside request_stop().
  const auto now = SteadyClock::now();
  const bool first = stopping_.request_stop();
  {
    std::lock_guard lock(mu_);
    if (first) stop_requested_at_ = now;
  }
  cv_.notify_all();
}

void Manager::leadership_acquired() {
  {
    std::lock_guard lock(mu_);
    if (stopping_.stop_requested()) return;
    leading_ = true;
  }
  cv_.notify_all();
}

void Manager::leadership_lost() {
  {
    std::lock_guard lock(mu_);
    leading_ = false;
    // The election ends on every stop (it releases the lease): only a loss while running is news.
    if (stopping_.stop_requested()) return;
    lost_ = true;
  }
  request_stop();
}

bool Manager::leading() const {
  std::lock_guard lock(mu_);
  return leading_;
}

void Manager::observe(Transition::Kind kind, const Entry& entry, SteadyClock::time_point t0,
                      std::string_view error) const {
  if (options_.observer) options_.observer(Transition{kind, entry.name, entry.leadership, since(t0), error});
}

bool Manager::start_all(Leadership leadership, RunOutcome& outcome) {
  for (const Entry& e : entries_) {
    if (e.leadership != leadership) continue;
    if (stopping_.stop_requested()) return false;
    const auto t0 = SteadyClock::now();
    Status started = e.runnable->start(stopping_.get_token());
    if (!started) {
      // A start cut short by a stop request is part of stopping, not a failure.
      if (!stopping_.stop_requested()) {
        outcome.reason = RunOutcome::Reason::StartFailed;
        outcome.error = e.name + ": " + started.error().message;
        request_stop();
      }
      return false;
    }
    {
      std::lock_guard lock(mu_);
      started_.push_back(&e);
    }
    observe(Transition::Kind::Started, e, t0);
  }
  return true;
}

RunOutcome Manager::run(std::stop_token stop) {
  RunOutcome outcome;
  {
    std::lock_guard lock(mu_);
    phase_ = Phase::Starting;
  }
  // The caller's stop request wakes run() through the same condition variable as leadership news.
  std::stop_callback on_stop(stop, [this] { request_stop(); });
  if (start_all(Leadership::NotNeeded, outcome)) {
    std::unique_lock lock(mu_);
    phase_ = Phase::Running;
    cv_.wait(lock, [&] { return stopping_.stop_requested() || leading_; });
    if (!stopping_.stop_requested()) {
      lock.unlock();
      const bool all = start_all(Leadership::Needed, outcome);
      lock.lock();
      if (all) cv_.wait(lock, [&] { return stopping_.stop_requested(); });
    }
  }
  {
    std::lock_guard lock(mu_);
    if (lost_) outcome.reason = RunOutcome::Reason::LeadershipLost;
  }
  stop_started(outcome);
  return outcome;
}

void Manager::stop_started(RunOutcome& outcome) {
  std::vector<const Entry*> order;
  SteadyClock::time_point deadline;
  {
    std::lock_guard lock(mu_);
    phase_ = Phase::Stopping;
    order.assign(started_.rbegin(), started_.rend());
    deadline = stop_requested_at_ + options_.graceful_shutdown_timeout;
  }
  // The stops run on their own thread so that run() can give up on one that does not return.
  stopper_ = std::thread([this, order = std::move(order)] {
    for (const Entry* e : order) {
      {
        std::lock_guard lock(mu_);
        stopping_now_ = e->name;
      }
      const auto t0 = SteadyClock::now();
      try {
        e->runnable->stop();
        observe(Transition::Kind::Stopped, *e, t0);
      } catch (const std::exception& ex) {  // thread entry: the process is stopping either way
        observe(Transition::Kind::Stopped, *e, t0, ex.what());
      }
    }
    {
      std::lock_guard lock(mu_);
      all_stopped_ = true;
      stopping_now_.clear();
    }
    cv_.notify_all();
  });
  std::unique_lock lock(mu_);
  if (cv_.wait_until(lock, deadline, [&] { return all_stopped_; })) {
    phase_ = Phase::Stopped;
    outcome.stop_time = since(stop_requested_at_);
    lock.unlock();
    stopper_.join();
  } else {
    outcome.not_stopped = stopping_now_;
    outcome.stop_time = since(stop_requested_at_);
  }
}

ProbeResult Manager::evaluate(const std::vector<std::pair<std::string, Check>>& checks, std::string ok_body) {
  std::string failed;
  for (const auto& [name, check] : checks) {
    if (auto s = check(); !s) failed += name + ": " + s.error().message + "\n";
  }
  if (!failed.empty()) return {false, std::move(failed)};
  return {true, std::move(ok_body)};
}

ProbeResult Manager::readiness() const {
  bool leading = false;
  {
    std::lock_guard lock(mu_);
    if (stopping_.stop_requested() || phase_ == Phase::Stopping || phase_ == Phase::Stopped)
      return {false, "stopping\n"};
    if (phase_ != Phase::Running) return {false, "starting\n"};
    leading = leading_;
  }
  return evaluate(ready_checks_, leading ? "ok\n" : "ok (standby)\n");
}

ProbeResult Manager::health() const { return evaluate(health_checks_, "ok\n"); }

}  // namespace unitrain::manager
