// The PodGroup CRDs the scheduler gates on (Volcano's scheduling.volcano.sh/v1beta1 and
// scheduler-plugins' scheduling.x-k8s.io/v1alpha1), from podgroup_crds.yaml. Nothing installs
// them implicitly: tests and demos opt in, as a cluster admin installs a gang scheduler.
#pragma once

#include <string_view>

#include "core/base/result.h"
#include "localcluster/store.h"

namespace unitrain::localcluster::controllers {

// The multi-document YAML of both CRDs.
std::string_view podgroup_crds_yaml();

struct PodGroupCrds {
  bool volcano = true;
  bool scheduler_plugins = true;
};

// Creates the chosen CRDs (an existing one is left as is). Errors name the CRD and the
// store's message.
Status install_podgroup_crds(Store& store, PodGroupCrds which = {});

}  // namespace unitrain::localcluster::controllers
