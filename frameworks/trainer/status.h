// A TrainJob's status from its spec and its JobSet (Kubeflow Trainer v2.3.0's reconcile steps
// 7-9): the Suspended condition, the JobSet's terminal condition renamed, jobsStatus, and the
// active deadline. Failed is terminal here (upstream's v2.3.0 clears a Failed condition on every
// pass and may re-run the job; fixed after the release).
#pragma once

#include <chrono>
#include <optional>

#include "core/api/time.h"
#include "core/json/json.h"

namespace unitrain::frameworks::trainer {

struct StatusDecision {
  json::Document status = json::Document::object();  // the whole new .status
  bool delete_jobset = false;                         // the deadline passed just now
  std::optional<std::chrono::seconds> requeue_after;  // the deadline is still ahead
};

// `jobset` is the observed JobSet <trainjob>, or nullptr when there is none.
StatusDecision next_status(const json::Value& trainjob, const json::Value* jobset, api::TimePoint now);

// Complete=True or Failed=True.
bool finished(const json::Value& trainjob);

}  // namespace unitrain::frameworks::trainer
