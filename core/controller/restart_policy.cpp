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

namespace {
std::optional<int32_t> exit_code_of(const json::Value& pod, std::string_view container, bool last_state_too) {
  const json::Value* statuses = json::find(pod, "/status/containerStatuses");
  if (!statuses || !statuses->IsArray()) return std::nullopt;
  for (const auto& s : statuses->GetArray()) {
    if (json::get_string(s, "/name") != container) continue;
    if (auto code = json::get_int(s, "/state/terminated/exitCode")) return static_cast<int32_t>(*code);
    if (!last_state_too) continue;
    if (auto code = json::get_int(s, "/lastState/terminated/exitCode")) return static_cast<int32_t>(*code);
  }
  return std::nullopt;
}
}  // namespace

std::optional<int32_t> container_exit_code(const json::Value& pod, std::string_view container) {
  return exit_code_of(pod, container, true);
}

std::optional<int32_t> terminated_exit_code(const json::Value& pod, std::string_view container) {
  return exit_code_of(pod, container, false);
}

}  // namespace unitrain::controller
