// The frameworks this binary ships, registered explicitly (no static-initialisation magic).
#pragma once

#include <string_view>

#include "core/base/result.h"
#include "core/framework/registry.h"

namespace unitrain::operator_cmd {

Status register_frameworks(framework::Registry& registry);

// The module that stands in for mpi-operator: its jobs are what mpi_operator_* metrics count.
inline constexpr std::string_view kMpiOperatorFramework = "kubeflow.org/mpijob@v2beta1";

}  // namespace unitrain::operator_cmd
