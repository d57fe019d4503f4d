// What kube-apiserver's defaulting (and the admission plugins it enables by default) fills in on
// built-in objects: pod and container fields, Service cluster IPs and ports, Secret type and
// stringData, Namespace labels and finalizers, batch/v1 Job fields and selectors. Custom
// resources get their schema's defaults instead (schema.h).
#pragma once

#include <random>
#include <string>

#include "core/json/json.h"
#include "localcluster/resource_info.h"

namespace unitrain::localcluster {

// Applied on every create and update of a built-in resource; idempotent. `rng` picks cluster IPs.
void default_builtin(const ResourceInfo& r, json::Document& d, std::mt19937_64& rng);
// A Job's generated selector and pod template labels; they need the uid, so only on create.
void default_job_selector(json::Document& d);
// status.qosClass of a pod with this spec: BestEffort, Burstable or Guaranteed.
std::string qos_class(const json::Value& spec);

}  // namespace unitrain::localcluster
