// backoffLimit and activeDeadlineSeconds: when a job has used up its retries or its time. Pure
// functions of the job, its pods and the clock, so the counting rules are unit-tested; the
// pipeline turns an exceeded limit into a Failed status that is written before any pod of the
// job is deleted.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/kubeflow.h"
#include "core/api/time.h"
#include "core/framework/descriptor.h"
#include "core/framework/plugin.h"
#include "core/json/json.h"
#include "core/kube/clock.h"

namespace unitrain::controller {

// The failed pods the core deleted for re-creation, persisted on the job: container restarts
// reset with a new pod, so without this count an ExitCode or OnFailure job's backoffLimit could
// never be reached. The count is written before the failed pods are deleted, together with the
// UIDs it counted, so a pass that finds a counted pod still there (its delete failed) deletes it
// without counting it again; a failed write leaves the pods alone.
struct RecreatedPods {
  static constexpr std::string_view kCountAnnotation = "training.unitrain.io/pod-restarts";
  static constexpr std::string_view kCountedAnnotation = "training.unitrain.io/pod-restarts-counted";

  int64_t count = 0;
  std::set<std::string> counted_uids;  // the failed pods the last increment counted

  // A missing or hand-edited count reads as 0: counting starts again rather than fail the job.
  static RecreatedPods of(const json::Value& job);
  // The record once `failed_uids` are re-created: the ones not counted yet add to the count, and
  // the counted set becomes exactly these.
  RecreatedPods after(const std::vector<std::string>& failed_uids) const;
  // The JSON merge patch that writes this record onto the job's annotations.
  std::string merge_patch() const;

  friend bool operator==(const RecreatedPods&, const RecreatedPods&) = default;
};

// The restarts counted against backoffLimit: the re-creations plus, as training-operator's
// pastBackoffLimit counts them, the container (and init container) restarts of Running pods
// whose replica restartPolicy retries them.
int64_t backoff_restarts(const framework::FrameworkDescriptor& descriptor, const json::Value& job,
                         const std::vector<const json::Value*>& pods, int64_t recreated);

struct RunLimitsVerdict {
  // BackoffLimitExceeded or DeadlineExceeded; unset while the job is within its limits.
  std::optional<framework::CoreEvent> exceeded;
  // Time left until activeDeadlineSeconds, to requeue the job then (nothing else may happen).
  std::optional<kube::Clock::Duration> deadline_in;
};

// backoffLimit first (0 fails on the first restart; n on the n-th), then activeDeadlineSeconds
// counted from `start_time`.
RunLimitsVerdict check_run_limits(const api::RunPolicy& run_policy, int64_t restarts,
                                  std::optional<api::TimePoint> start_time, api::TimePoint now);

}  // namespace unitrain::controller
