// XGBoostJob (kubeflow.org/v1) as a framework module: a Master and Workers wired together with
// the rabit tracker env (MASTER_ADDR/PORT, WORKER_ADDRS/PORT, WORLD_SIZE, RANK).
#pragma once

#include "core/base/result.h"
#include "core/framework/registry.h"

namespace unitrain::frameworks::xgboost {

// Registers "kubeflow.org/xgboostjob" (aliases "xgboostjob", "xgboost"); no options.
Status register_xgboost(framework::Registry& registry);

}  // namespace unitrain::frameworks::xgboost
