#include "core/kube/leader_election.h"

#include <random>

#include <fmt/format.h>

#include "core/api/time.h"

namespace unitrain::kube {

namespace {

const GroupVersionResource kLeases{"coordination.k8s.io", "v1", "leases"};

int64_t whole_seconds(Clock::Duration d) { return std::chrono::duration_cast<std::chrono::seconds>(d).count(); }

}  // namespace

Result<std::unique_ptr<LeaderElector>> LeaderElector::create(Client& client, Clock& clock,
                                                             LeaderElectionConfig config) {
  if (config.lease_name.empty()) return fail("leader election: lease_name must be set");
  if (config.lease_namespace.empty()) return fail("leader election: lease_namespace must be set");
  if (config.identity.empty()) return fail("leader election: identity must be set");
  if (config.retry_period <= Clock::Duration::zero()) return fail("leader election: retry_period must be positive");
  if (config.lease_duration <= config.renew_deadline) {
    return fail("leader election: lease_duration must be greater than renew_deadline");
  }
  if (config.jitter < 0) return fail("leader election: jitter must not be negative");
  // client-go: RenewDeadline > JitterFactor * RetryPeriod, so a renewal round has room to retry.
  if (static_cast<double>(config.renew_deadline.count()) <=
      config.jitter * static_cast<double>(config.retry_period.count())) {
    return fail("leader election: renew_deadline must be greater than jitter * retry_period");
  }
  return std::make_unique<LeaderElector>(PassKey<LeaderElector>{}, client, clock, std::move(config));
}

LeaderElector::LeaderElector(PassKey<LeaderElector>, Client& client, Clock& clock, LeaderElectionConfig config)
    : client_(client), clock_(clock), cfg_(std::move(config)) {}

LeaderElector::~LeaderElector() { stop(); }

void LeaderElector::start() {
  std::lock_guard g(mu_);
  if (started_) return;
  started_ = true;
  thread_ = std::thread([this] {
    // Thread entry: nothing may escape, or the process terminates.
    try {
      run();
    } catch (const std::exception&) {
      if (leading_.exchange(false) && cfg_.on_stopped_leading) cfg_.on_stopped_leading();
    }
    finished_ = true;
  });
}

void LeaderElector::stop() {
  {
    std::lock_guard g(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

std::string LeaderElector::observed_leader() const {
  std::lock_guard g(mu_);
  return observed_holder_;
}

bool LeaderElector::wait_until(Clock::SteadyTime deadline) {
  std::unique_lock lock(mu_);
  clock_.wait_until(lock, cv_, deadline, [&] { return stopping_; });
  return !stopping_;
}

bool LeaderElector::try_acquire_or_renew() {
  ++attempts_;
  std::string now = api::format_micro_time(clock_.now());
  auto steady = clock_.steady_now();
  auto current = client_.get(kLeases, cfg_.lease_namespace, cfg_.lease_name);
  if (!current) {
    if (!current.error().is(ApiError::Reason::NotFound)) return false;
    auto lease = json::Document::object();
    (void)json::set_string(lease, "/apiVersion", "coordination.k8s.io/v1");
    (void)json::set_string(lease, "/kind", "Lease");
    (void)json::set_string(lease, "/metadata/name", cfg_.lease_name);
    (void)json::set_string(lease, "/metadata/namespace", cfg_.lease_namespace);
    (void)json::set_string(lease, "/spec/holderIdentity", cfg_.identity);
    (void)json::set_int(lease, "/spec/leaseDurationSeconds", whole_seconds(cfg_.lease_duration));
    (void)json::set_string(lease, "/spec/acquireTime", now);
    (void)json::set_string(lease, "/spec/renewTime", now);
    (void)json::set_int(lease, "/spec/leaseTransitions", 0);
    auto created = client_.create(kLeases, cfg_.lease_namespace, lease.root());
    if (!created) return false;  // AlreadyExists: another candidate was faster
    std::lock_guard g(mu_);
    observed_holder_ = cfg_.identity;
    observed_record_ = json::canonical(*json::find(created->root(), "/spec"));
    observed_time_ = steady;
    have_observation_ = true;
    return true;
  }

  json::Document lease = std::move(*current);
  const json::Value* spec = json::find(lease.root(), "/spec");
  std::string record = spec ? json::canonical(*spec) : "";
  std::string holder(json::get_string(lease.root(), "/spec/holderIdentity").value_or(""));
  int64_t transitions = json::get_int(lease.root(), "/spec/leaseTransitions").value_or(0);
  Clock::SteadyTime observed_time;
  {
    std::lock_guard g(mu_);
    // Expiry is judged from when *we* saw the record change, not from its renewTime, so clock
    // skew between machines cannot make a live lease look expired.
    if (!have_observation_ || record != observed_record_) {
      observed_record_ = record;
      observed_time_ = steady;
      have_observation_ = true;
    }
    observed_holder_ = holder;
    observed_time = observed_time_;
  }
  if (holder != reported_leader_) {
    reported_leader_ = holder;
    if (!holder.empty() && cfg_.on_new_leader) cfg_.on_new_leader(holder);
  }
  bool mine = holder == cfg_.identity;
  if (!holder.empty() && !mine && steady < observed_time + cfg_.lease_duration) return false;

  if (!mine) {
    (void)json::set_string(lease, "/spec/acquireTime", now);
    (void)json::set_int(lease, "/spec/leaseTransitions", transitions + 1);
  }
  (void)json::set_string(lease, "/spec/holderIdentity", cfg_.identity);
  (void)json::set_int(lease, "/spec/leaseDurationSeconds", whole_seconds(cfg_.lease_duration));
  (void)json::set_string(lease, "/spec/renewTime", now);
  // The update carries the resourceVersion we read: a concurrent writer makes it a 409.
  auto updated = client_.update(kLeases, cfg_.lease_namespace, lease.root());
  if (!updated) return false;
  std::lock_guard g(mu_);
  observed_holder_ = cfg_.identity;
  observed_record_ = json::canonical(*json::find(updated->root(), "/spec"));
  observed_time_ = steady;
  if (reported_leader_ != cfg_.identity) {
    reported_leader_ = cfg_.identity;
    if (cfg_.on_new_leader) cfg_.on_new_leader(cfg_.identity);
  }
  return true;
}

void LeaderElector::release() {
  auto current = client_.get(kLeases, cfg_.lease_namespace, cfg_.lease_name);
  if (!current) return;
  json::Document lease = std::move(*current);
  if (json::get_string(lease.root(), "/spec/holderIdentity") != cfg_.identity) return;
  std::string now = api::format_micro_time(clock_.now());
  (void)json::set_string(lease, "/spec/holderIdentity", "");
  (void)json::set_int(lease, "/spec/leaseDurationSeconds", 1);
  (void)json::set_string(lease, "/spec/acquireTime", now);
  (void)json::set_string(lease, "/spec/renewTime", now);
  // A failed release is harmless: the lease simply expires.
  (void)client_.update(kLeases, cfg_.lease_namespace, lease.root());
}

void LeaderElector::run() {
  std::mt19937_64 rng(cfg_.seed ? cfg_.seed : std::random_device{}());
  std::uniform_real_distribution<double> jitter(0.0, cfg_.jitter > 0 ? cfg_.jitter : 0.0);
  auto jittered_retry = [&] {
    double factor = 1.0 + (cfg_.jitter > 0 ? jitter(rng) : 0.0);
    return std::chrono::duration_cast<Clock::Duration>(cfg_.retry_period * factor);
  };

  // Candidate.
  while (!try_acquire_or_renew()) {
    if (!wait_until(clock_.steady_now() + jittered_retry())) return;
  }
  leading_ = true;
  if (cfg_.on_started_leading) cfg_.on_started_leading();

  // Leader: renew every retry_period; a round that cannot renew within renew_deadline loses.
  for (;;) {
    if (!wait_until(clock_.steady_now() + cfg_.retry_period)) {
      if (cfg_.release_on_cancel) release();
      break;
    }
    auto round_deadline = clock_.steady_now() + cfg_.renew_deadline;
    bool renewed = false;
    bool stopped = false;
    for (;;) {
      if (try_acquire_or_renew()) {
        renewed = true;
        break;
      }
      auto next = std::min(clock_.steady_now() + cfg_.retry_period, round_deadline);
      if (!wait_until(next)) {
        stopped = true;
        break;
      }
      if (clock_.steady_now() >= round_deadline) break;
    }
    if (stopped) {
      if (cfg_.release_on_cancel) release();
      break;
    }
    if (!renewed) break;  // lost the lease
  }
  leading_ = false;
  if (cfg_.on_stopped_leading) cfg_.on_stopped_leading();
}

}  // namespace unitrain::kube
