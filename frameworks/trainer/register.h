// TrainJob (trainer.kubeflow.org/v1alpha1, Kubeflow Trainer v2.3.0) as a framework module: a
// TrainJob and the (Cluster)TrainingRuntime it names become a JobSet plus the objects beside it,
// planned per pass (frameworks/trainer/plan.h) and carried out by the core. Needs a JobSet
// controller (the jobset module, or JobSet's own).
#pragma once

#include "core/base/result.h"
#include "core/framework/registry.h"

namespace unitrain::frameworks::trainer {

// Registers "trainer.kubeflow.org/trainjob" (aliases "trainjob", "trainer").
Status register_trainer(framework::Registry& registry);

}  // namespace unitrain::frameworks::trainer
