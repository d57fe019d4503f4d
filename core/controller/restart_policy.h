// What a replica's restartPolicy means, in one place: the pod restartPolicy a replica's pods
// get, and whether a pod that ended is worth another run. The restart step (delete a failed pod
// for re-creation) and the backoffLimit count (which restarts count) both ask `retryable`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/framework/replica_status.h"
#include "core/json/json.h"

namespace unitrain::controller {

// The pod restartPolicy written for a replica restartPolicy: ExitCode runs as Never (the core,
// not the kubelet, decides from the exit code whether the pod runs again).
std::string pod_restart_policy(std::string_view replica_restart_policy);

// Whether a replica pod that ended with `exit_code` runs again under the replica's
// `restart_policy`. Always and OnFailure: yes. ExitCode: when the code is >= 128 (killed by a
// signal: OOM, preemption, SIGTERM) or when no container terminated at all (node loss,
// eviction), which training-operator treats the same way through its 0xbeef sentinel. Never,
// and a policy this core does not know: no.
bool retryable(std::string_view restart_policy, std::optional<int32_t> exit_code);

using framework::container_exit_code;
using framework::terminated_exit_code;

}  // namespace unitrain::controller
