// PaddleJob (kubeflow.org/v1) as a framework module: collective (workers only) and
// parameter-server (Master + Workers) modes, wired with the PADDLE_* env.
#pragma once

#include "core/base/result.h"
#include "core/framework/registry.h"

namespace unitrain::frameworks::paddle {

// Registers "kubeflow.org/paddlejob" (aliases "paddlejob", "paddle"); no options.
Status register_paddle(framework::Registry& registry);

}  // namespace unitrain::frameworks::paddle
