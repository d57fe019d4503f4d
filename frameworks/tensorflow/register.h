// TFJob (kubeflow.org/v1) as a framework module: one pod and one headless Service per replica,
// TF_CONFIG on the `tensorflow` container of distributed jobs.
#pragma once

#include "core/base/result.h"
#include "core/framework/registry.h"

namespace unitrain::frameworks::tensorflow {

// Registers "kubeflow.org/tfjob" (aliases "tfjob", "tensorflow"); no options.
Status register_tensorflow(framework::Registry& registry);

}  // namespace unitrain::frameworks::tensorflow
