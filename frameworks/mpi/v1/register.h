// MPIJob kubeflow.org/v1 (training-operator v1.8 semantics) as a framework module: the launcher
// is a bare Pod that drives the workers through `kubectl exec` (kubexec.sh), with a per-job
// ServiceAccount, Role and RoleBinding allowing exactly that, a hostfile ConfigMap and the
// kubectl-delivery init container that brings kubectl into the launcher.
#pragma once

#include "core/base/result.h"
#include "core/framework/registry.h"

namespace unitrain::frameworks::mpi::v1 {

// The operator flag that names the kubectl-delivery init container's image.
inline constexpr const char* kKubectlDeliveryImageOption = "mpi-kubectl-delivery-image";

// Registers "kubeflow.org/mpijob@v1" (aliases "mpijob-v1", "mpijobv1", and the bare kind "MPIJob",
// as in training-operator's --enable-scheme). Option:
// mpi-kubectl-delivery-image (default kubeflow/kubectl-delivery:latest).
Status register_mpi_v1(framework::Registry& registry);

}  // namespace unitrain::frameworks::mpi::v1
