// The job's pod slots against the pods the cache shows: which slots have no pod, which slot pods
// failed and what their replica's restartPolicy makes of that, and which pods no slot wants any
// more. Pure, so the rules are unit-tested; the pipeline acts on the plan only after the
// decisions it implies (restart count, a failed job) are written.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/framework/descriptor.h"
#include "core/framework/plugin.h"
#include "core/json/json.h"

namespace unitrain::controller {

struct FailedSlotPod {
  // Restart: the pod is deleted and its slot filled again. FailJob: an ExitCode replica ended
  // with a permanent code. Keep: the framework's status rules decide (restartPolicy Never).
  enum class Outcome { Restart, FailJob, Keep };

  const json::Value* pod = nullptr;
  std::string replica_type;  // canonical: "Worker"
  std::optional<int32_t> exit_code;
  Outcome outcome = Outcome::Keep;
};

struct SlotPlan {
  std::vector<framework::PodSlot> missing;  // in slot order
  std::vector<FailedSlotPod> failed;        // failed, not terminating, in slot order
  std::vector<const json::Value*> surplus;  // pods no slot names, not terminating

  std::vector<const FailedSlotPod*> with_outcome(FailedSlotPod::Outcome outcome) const;
  // UIDs of the pods to restart (what the re-creation count records).
  std::vector<std::string> restart_uids() const;
};

// "<job>-<rt>-<index>", or the slot's own name (MPI v1's "<job>-launcher").
std::string slot_pod_name(std::string_view job_name, const framework::PodSlot& slot);

// Slot pods are recognised by name: the index label is not the slot index everywhere (MPI v2
// shifts it by one when the launcher also works).
SlotPlan plan_slots(const framework::FrameworkDescriptor& descriptor, const json::Value& job,
                    const std::vector<framework::PodSlot>& slots, const std::vector<const json::Value*>& pods);

}  // namespace unitrain::controller
