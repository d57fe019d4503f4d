// JAXJob (kubeflow.org/v1) as a framework module: Worker replicas only, one pod and one headless
// Service each, worker 0 the coordinator of jax.distributed.initialize (COORDINATOR_ADDRESS,
// COORDINATOR_PORT, NUM_PROCESSES, PROCESS_ID).
#pragma once

#include "core/base/result.h"
#include "core/framework/registry.h"

namespace unitrain::frameworks::jax {

// Registers "kubeflow.org/jaxjob" (aliases "jaxjob", "jax").
Status register_jax(framework::Registry& registry);

}  // namespace unitrain::frameworks::jax
