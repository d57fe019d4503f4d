// The operator process's edges: SIGTERM and SIGINT in as a stop request, its identity towards the
// cluster, and the manager's outcome out as an exit status.
#pragma once

#include <atomic>
#include <stop_token>
#include <string>
#include <thread>

#include "core/manager/manager.h"

namespace unitrain::operator_cmd {

// SIGTERM and SIGINT are blocked in every thread (construct this before any thread starts, so
// they all inherit the mask) and taken by one thread waiting in sigwait(): no handler runs at an
// arbitrary point, and the stop reaches the manager as a std::stop_token. SIGPIPE is ignored: a
// peer that closes a connection is an error value, not the process's end.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  std::stop_token token() const { return source_.get_token(); }

 private:
  std::stop_source source_;
  std::atomic<bool> closing_{false};
  std::thread waiter_;
};

// "<hostname>_<16 random hex digits>": the lease holder and the events' reporting instance.
std::string replica_identity();

// Logs how the run ended and returns the exit status: 0 after a stop request, 1 after a failed
// start or a lost lease. When a runnable did not stop in time it ends the process at once
// (std::_Exit(1)): that runnable may still use what the others own, so no destructor may run.
int exit_status(const manager::RunOutcome& outcome);

}  // namespace unitrain::operator_cmd
