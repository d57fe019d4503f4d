// The local cluster's storage: a simulated provisioner behind the default StorageClass.
//
// At start the StorageClass `standard` (provisioner sim.unitrain.io/hostpath, reclaimPolicy Delete,
// volumeBindingMode Immediate, annotated storageclass.kubernetes.io/is-default-class) is created
// unless it exists. A PersistentVolumeClaim is bound as soon as it is seen: a claim without
// storageClassName gets the default class (retroactive default assignment, as Kubernetes does
// since 1.28); one naming a class the store has gets a PersistentVolume "pvc-<claim uid>" of the
// requested size, access modes and class, and both report phase Bound. A claim naming an existing
// volume in spec.volumeName is bound to it. A claim whose class does not exist stays Pending
// with a ProvisioningFailed event. When a claim is deleted its dynamically provisioned volume is
// deleted (reclaimPolicy Delete) or marked Released (Retain). No data is stored anywhere.
#pragma once

#include <memory>

#include "localcluster/store.h"

namespace unitrain::localcluster::controllers {

class VolumeController {
 public:
  explicit VolumeController(Store& store);
  ~VolumeController();
  VolumeController(const VolumeController&) = delete;
  VolumeController& operator=(const VolumeController&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace unitrain::localcluster::controllers
