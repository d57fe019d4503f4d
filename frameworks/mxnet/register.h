// MXJob (kubeflow.org/v1) as a framework module: parameter-server training (MXTrain) and tuning
// (MXTune) with MX_CONFIG and the DMLC_* env. Kubeflow removed MXJob in training-operator 1.9;
// Unitrain keeps serving it and says so through the DeprecationNotice capability.
#pragma once

#include "core/base/result.h"
#include "core/framework/registry.h"

namespace unitrain::frameworks::mxnet {

// Registers "kubeflow.org/mxjob" (aliases "mxjob", "mxnet"); no options.
Status register_mxnet(framework::Registry& registry);

// The warning returned on every create/update/delete and by the DeprecationNotice capability.
inline constexpr const char* kDeprecationWarning =
    "MXJob is deprecated: Kubeflow training-operator removed it in v1.9.0 (kubeflow/training-operator#1996); "
    "Unitrain still serves it, but plan a move to another job kind";

}  // namespace unitrain::frameworks::mxnet
