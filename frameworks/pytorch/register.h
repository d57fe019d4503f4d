// PyTorchJob (kubeflow.org/v1) as a framework module: one pod and one headless Service per
// replica, the torch.distributed / torchrun env contract, an `init-pytorch` wait on workers and
// an autoscaling/v2 HPA for elastic jobs with metrics.
#pragma once

#include "core/base/result.h"
#include "core/framework/registry.h"

namespace unitrain::frameworks::pytorch {

// Registers "kubeflow.org/pytorchjob" (aliases "pytorchjob", "pytorch") with its options
// `pytorch-init-container-image`, `pytorch-init-container-max-tries` and
// `pytorch-init-container-template-file`.
Status register_pytorch(framework::Registry& registry);

}  // namespace unitrain::frameworks::pytorch
