// Leader election on a coordination.k8s.io Lease (kube::LeaderElector) as a runnable of the
// manager. It runs on every replica and is added before the leader's runnables, so it starts
// after the caches and probes (a new leader acts on synced caches) and stops after the leader's
// runnables: the lease is released only once they have stopped, and a successor, which takes it
// over at its next retry, never overlaps with them.
#pragma once

#include <memory>
#include <stop_token>

#include "core/base/passkey.h"
#include "core/base/result.h"
#include "core/kube/client.h"
#include "core/kube/clock.h"
#include "core/kube/leader_election.h"
#include "core/manager/manager.h"

namespace unitrain::manager {

class LeaseElection final : public Runnable {
 public:
  // `manager` must be built with leader_election set; it hears of leadership after `config`'s own
  // on_started_leading / on_stopped_leading ran. Errors name the configuration field.
  static Result<std::unique_ptr<LeaseElection>> create(Manager& manager, kube::Client& client, kube::Clock& clock,
                                                       kube::LeaderElectionConfig config);

  Status start(std::stop_token) override;
  void stop() override;  // releases the lease when leading (release_on_cancel)

  const kube::LeaderElector& elector() const { return *elector_; }

  // Only create() can make the key; public so std::make_unique can call it.
  LeaseElection(PassKey<LeaseElection>, std::unique_ptr<kube::LeaderElector> elector) : elector_(std::move(elector)) {}

 private:
  std::unique_ptr<kube::LeaderElector> elector_;
};

}  // namespace unitrain::manager
