// The PodGroup of an MPIJob v2beta1 as mpi-operator asks for it (its rules differ from
// training-operator's, which the core applies to the other kinds):
//  - minMember: schedulingPolicy.minAvailable, else the workers plus the launcher;
//  - Volcano queue: schedulingPolicy.queue, else the job's `scheduling.volcano.sh/queue-name`
//    annotation, else none;
//  - Volcano priorityClassName: schedulingPolicy.priorityClass, else the launcher template's,
//    else the worker template's, else none;
//  - scheduler-plugins scheduleTimeoutSeconds: schedulingPolicy's, else 0;
//  - minResources: schedulingPolicy.minResources as given; none when minMember is 0; else the
//    requests of every launcher and worker pod (a resource only limited counts its limit), where,
//    when more pods exist than minMember, the lower-priority replica type (the workers on a tie)
//    counts minMember - 1 pods.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "core/base/result.h"
#include "core/framework/plugin.h"
#include "core/json/json.h"

namespace unitrain::frameworks::mpi::v2 {

Result<framework::PodGroupPolicy> pod_group_policy(const json::Value& job,
                                                   const std::function<int32_t(std::string_view)>& priority_of);

}  // namespace unitrain::frameworks::mpi::v2
