// The trainer module's flags: upstream's `--feature-gates` (its one gate, TrainJobStatus) and the
// status server's port (upstream's statusServer.port).
#pragma once

#include <optional>
#include <vector>

#include "core/base/result.h"
#include "core/framework/plugin.h"
#include "frameworks/trainer/trainjob_status.h"

namespace unitrain::frameworks::trainer {

inline constexpr std::string_view kFeatureGatesOption = "feature-gates";
inline constexpr std::string_view kStatusServerPortOption = "status-server-port";

std::vector<framework::OptionSpec> trainer_options();

// nullopt when the TrainJobStatus gate is off. Errors name the flag: an unknown gate, a value
// other than true/false, a port outside 1..65535 (0 only asks the kernel for one, for tests).
Result<std::optional<StatusServerConfig>> status_server_config(const framework::PluginConfig& config);

}  // namespace unitrain::frameworks::trainer
