// training-operator's per-replica Services: one headless Service per pod slot, named like the
// pod, selecting it by the job labels, with every port of the default container.
#pragma once

#include <vector>

#include "core/base/result.h"
#include "core/framework/descriptor.h"
#include "core/framework/plugin.h"
#include "core/json/json.h"

namespace unitrain::framework {

// None while the job is suspended: the core deletes a suspended job's Services with its pods,
// and upstream does not reconcile Services then, so desiring them would re-create them. Fails
// when a slot's replica spec has no default container (its ports are unknown).
Result<std::vector<DesiredObject>> replica_services(const FrameworkDescriptor& d, const json::Value& job);

}  // namespace unitrain::framework
