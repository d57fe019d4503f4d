#include "core/controller/restart_policy.h"

namespace unitrain::controller {

std::string pod_restart_policy(std::string_view replica_restart_policy) {
  if (replica_restart_policy == "ExitCode") return "Never";
  return std::string(replica_restart_policy);
}

bool retryable(std::string_view restart_policy, std::optional<int32_t> exit_code) {
  if (restart_policy == "Always" || restart_policy == "OnFailure") return true;
  if (restart_policy == "ExitCode") return !exit_code || *exit_code >= 128;
  return false;
}

}  // namespace unitrain::controller
