// ResourceQuota status as kube-controller-manager's quota controller keeps it: status.hard copies
// spec.hard and status.used counts the namespace's non-terminal pods (pod_admission.h says what
// is counted), rewritten whenever a pod or quota of the namespace changes.
#pragma once

#include <memory>

#include "localcluster/store.h"

namespace unitrain::localcluster::controllers {

class QuotaController {
 public:
  explicit QuotaController(Store& store);
  ~QuotaController();
  QuotaController(const QuotaController&) = delete;
  QuotaController& operator=(const QuotaController&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace unitrain::localcluster::controllers
