// JobSet (jobset.x-k8s.io/v1alpha2) as a framework module: batch Jobs as children, planned by
// frameworks/jobset/jobset.h and carried out by the core (framework::WorkloadPlanner).
#pragma once

#include "core/base/result.h"
#include "core/framework/registry.h"

namespace unitrain::frameworks::jobset {

// Registers "jobset.x-k8s.io/jobset" (aliases "jobset").
Status register_jobset(framework::Registry& registry);

}  // namespace unitrain::frameworks::jobset
