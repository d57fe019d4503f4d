// The local cluster's storage: a simulated provisioner behind the default StorageClass.
//
// At start the StorageClass `standard` (provisioner sim.unitrain.io/hostpath, reclaimPolicy Delete,
// volumeBindingMode Immediate, annotated storageclass.kubernetes.io/is-default-class) is created
// unless it exists. A new PersistentVolume without a claimRef becomes Available. A
// PersistentVolumeClaim is bound as soon as it is seen, as the PV controller binds: a claim without
// storageClassName gets the default class (retroactive default assignment, as Kubernetes does
// since 1.28); a volume pre-bound to the claim (claimRef), or else the smallest Available volume of
// the claim's class ("" for storageClassName "" or when there is no default) with the requested
// access modes and volume mode, the claim's selector and at least the requested size, is bound to
// it; otherwise a claim of an existing class without a selector gets a provisioned
// PersistentVolume "pvc-<claim uid>" of the requested size, access modes and class. Claims that no
// volume fits and nothing can provision wait (FailedBinding event) and are looked at again when a
// volume becomes Available. A claim whose class does not exist stays Pending with a
// ProvisioningFailed event. A claim naming a volume in spec.volumeName waits for it. When a claim
// is deleted its volume is deleted (reclaimPolicy Delete) or marked Released (Retain). No data is
// stored anywhere.
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
