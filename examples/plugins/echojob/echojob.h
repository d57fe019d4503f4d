// EchoJob: a Kubeflow-v1-style kind of its own API group, served by a module loaded at run time.
#pragma once

#include "core/base/result.h"
#include "core/framework/registry.h"

namespace example::echojob {

// Registers "example.unitrain.io/echojob" (aliases "echojob", "echo").
unitrain::Status register_echojob(unitrain::framework::Registry& registry);

}  // namespace example::echojob
