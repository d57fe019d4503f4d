// Which module owns a job. A job names its controller in spec.runPolicy.managedBy; where several
// modules serve one kind (MPIJob v1 and v2beta1) and a job leaves managedBy unset, the module that
// takes it records itself in an annotation at its first pass, so that a later change of which
// module takes unset jobs (--mpi-default-version) never hands a running job to a second module.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/json/json.h"

namespace unitrain::framework {

// Set by the operator, never by users; the admission webhooks keep it from changing once set.
inline constexpr std::string_view kOwnerAnnotation = "unitrain.io/managed-by";

// spec.runPolicy.managedBy, else the owner annotation; nullopt when the job names no owner.
inline std::optional<std::string> declared_owner(const json::Value& job) {
  if (auto managed = json::get_string(job, "/spec/runPolicy/managedBy")) return std::string(*managed);
  if (auto pinned = json::get_string(job, "/metadata/annotations/" + json::escape_pointer_token(kOwnerAnnotation)))
    return std::string(*pinned);
  return std::nullopt;
}

}  // namespace unitrain::framework
