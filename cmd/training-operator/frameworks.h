// The frameworks this binary ships, registered explicitly (no static-initialisation magic), and
// the modules --framework-module / --framework-module-dir load at start.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/framework/registry.h"

namespace unitrain::operator_cmd {

// The built-in modules (generated from UNITRAIN_BUILTIN_FRAMEWORKS, frameworks/CMakeLists.txt).
Status register_builtin_frameworks(framework::Registry& registry);
// The built-in modules and the conversions between the versions of the kinds they serve.
Status register_frameworks(framework::Registry& registry);

// The shared modules the command line names, in its order: every --framework-module PATH, and
// the *.so files of every --framework-module-dir DIR (sorted by name). Read before the other
// flags, since a module's options are flags too; an error names the flag.
Result<std::vector<std::string>> module_paths(int argc, const char* const* argv);

// Loads each module and adds its framework to `registry`. The error names the file and the cause
// (it cannot be loaded, it was built for another plugin ABI, its kind or names collide).
Status load_modules(const std::vector<std::string>& paths, framework::Registry& registry);

// The module that stands in for mpi-operator: its jobs are what mpi_operator_* metrics count.
inline constexpr std::string_view kMpiOperatorFramework = "kubeflow.org/mpijob@v2beta1";

}  // namespace unitrain::operator_cmd
