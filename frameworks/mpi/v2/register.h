// MPIJob kubeflow.org/v2beta1 (mpi-operator v0.8 semantics) as a framework module: SSH between
// pods over a headless Service, a hostfile ConfigMap, a generated SSH key Secret, worker pods as
// slots, and the launcher as a batch/v1 Job created at startup or once every worker is Ready.
#pragma once

#include "core/base/result.h"
#include "core/framework/registry.h"

namespace unitrain::frameworks::mpi::v2 {

// Registers "kubeflow.org/mpijob@v2beta1" (aliases "mpijob-v2", "mpijobv2"; the bare kind
// "MPIJob" names MPIJob v1, as in training-operator).
Status register_mpi_v2(framework::Registry& registry);

}  // namespace unitrain::frameworks::mpi::v2
