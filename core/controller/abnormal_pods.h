// training-operator's abnormal-pod events (RecordAbnormalPods): every pass over a job that is
// neither finished nor suspended records, for each active pod (not Succeeded or Failed, not being
// deleted), a Warning for each container that terminated with a non-zero code or waits with a
// message, or, while no container has a status yet, for the pod's latest condition when it is
// not True. Pure: the pass records what this returns through its framework's wording.
#pragma once

#include <string>
#include <vector>

#include "core/json/json.h"

namespace unitrain::controller {

struct AbnormalPod {
  std::string pod;
  std::string reason;   // the container state's or the condition's reason (may be empty)
  std::string message;  // "Error pod <pod> container <c> exitCode: <n> terminated message: <m>", ...
};

std::vector<AbnormalPod> abnormal_pods(const std::vector<const json::Value*>& pods);

}  // namespace unitrain::controller
