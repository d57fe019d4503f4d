// `training-operator manifests`: the files under manifests/ that depend on which job kinds the
// operator runs — each module's CRDs and the kustomization that installs them, the ClusterRole and
// namespaced Role, and the webhook configurations — generated from the modules' registrations (their descriptors, permissions and
// webhook needs), so adding a module never means editing them by hand. A test compares the
// checked-in files with this output.
#pragma once

#include <string>
#include <vector>

#include "core/base/result.h"
#include "core/framework/registry.h"

namespace unitrain::operator_cmd {

struct GeneratedManifest {
  std::string path;  // relative to manifests/, e.g. "rbac/cluster/cluster_role.yaml"
  std::string text;
};

// The generated files for the modules named in `enabled` (registry names, in registry order).
Result<std::vector<GeneratedManifest>> generate_manifests(const framework::Registry& registry,
                                                          const std::vector<std::string>& enabled);

// The subcommand: `training-operator manifests [--enable-scheme S]... [--output-dir DIR]
// [--framework-module PATH]...`. Without --output-dir the files are printed, each after a
// "# manifests/<path>" line. Returns the process exit code (2 for a usage error).
int manifests_command(int argc, char** argv, const framework::Registry& registry);

}  // namespace unitrain::operator_cmd
