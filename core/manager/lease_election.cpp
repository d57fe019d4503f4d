#include "core/manager/lease_election.h"

#include <utility>

namespace unitrain::manager {

Result<std::unique_ptr<LeaseElection>> LeaseElection::create(Manager& manager, kube::Client& client,
                                                             kube::Clock& clock, kube::LeaderElectionConfig config) {
  config.on_started_leading = [&manager, own = std::move(config.on_started_leading)] {
    if (own) own();
    manager.leadership_acquired();
  };
  config.on_stopped_leading = [&manager, own = std::move(config.on_stopped_leading)] {
    if (own) own();
    manager.leadership_lost();
  };
  auto elector = kube::LeaderElector::create(client, clock, std::move(config));
  if (!elector) return fail(std::move(elector.error()));
  return std::make_unique<LeaseElection>(PassKey<LeaseElection>{}, std::move(*elector));
}

Status LeaseElection::start(std::stop_token) {
  elector_->start();
  return {};
}

void LeaseElection::stop() { elector_->stop(); }

}  // namespace unitrain::manager
