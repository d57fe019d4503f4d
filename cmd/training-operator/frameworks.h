// The frameworks this binary ships, registered explicitly (no static-initialisation magic).
#pragma once

#include "core/base/result.h"
#include "core/framework/registry.h"

namespace unitrain::operator_cmd {

Status register_frameworks(framework::Registry& registry);

}  // namespace unitrain::operator_cmd
