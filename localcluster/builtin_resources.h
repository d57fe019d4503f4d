// The built-in resources the local cluster serves, with the names, scopes, short names and verbs
// kube-apiserver publishes for them in discovery.
#pragma once

#include <vector>

#include "localcluster/store.h"

namespace unitrain::localcluster {

// In discovery order: core/v1 first, then the named groups.
const std::vector<ResourceInfo>& builtin_resources();

}  // namespace unitrain::localcluster
