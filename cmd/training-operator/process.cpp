#include "cmd/training-operator/process.h"

#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <random>

#include <fmt/format.h>

#include <spdlog/spdlog.h>

namespace unitrain::operator_cmd {

namespace {
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}
}  // namespace

StopSignals::StopSignals() {
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  waiter_ = std::thread([this, set] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0 || closing_.load()) return;
      if (source_.stop_requested()) {
        spdlog::info("signal {} received, already stopping", sig);
      } else {
        spdlog::info("signal {} received, stopping", sig);
        source_.request_stop();
      }
    }
  });
}

StopSignals::~StopSignals() {
  // Wakes the waiter with a signal only it takes (the mask blocks it everywhere else).
  closing_ = true;
  pthread_kill(waiter_.native_handle(), SIGTERM);
  waiter_.join();
}

std::string replica_identity() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::random_device rd;
  return fmt::format("{}_{:08x}{:08x}", host, rd(), rd());
}

int exit_status(const manager::RunOutcome& out) {
  if (!out.not_stopped.empty()) {
    spdlog::error("{} did not stop within the graceful stop ({} ms); exiting", out.not_stopped, out.stop_time.count());
    spdlog::shutdown();
    std::_Exit(1);
  }
  spdlog::info("stopped in {} ms", out.stop_time.count());
  switch (out.reason) {
    case manager::RunOutcome::Reason::StartFailed:
      spdlog::error("{}", out.error);
      return 1;
    case manager::RunOutcome::Reason::LeadershipLost:
      spdlog::error("leader election lost; exiting");
      return 1;
    case manager::RunOutcome::Reason::Stopped:
      break;
  }
  return 0;
}

}  // namespace unitrain::operator_cmd
