// Reading a Kubeflow job's replica specs (`spec.<descriptor.replica_specs_field>`: replica type →
// {replicas, restartPolicy, template}), the shape every kind here shares. Readers are lenient: a
// member of the wrong type reads as absent; validation is where wrong shapes get reported.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/framework/descriptor.h"
#include "core/framework/plugin.h"
#include "core/json/json.h"

namespace unitrain::framework {

// .spec.<replica_specs_field> when it is an object, else null.
const json::Value* replica_specs(const FrameworkDescriptor& d, const json::Value& job);
const json::Value* replica_spec(const FrameworkDescriptor& d, const json::Value& job, std::string_view rt);
// Replicas of one spec; a missing field counts 1, as upstream's defaulting makes it.
int32_t replicas_of(const json::Value* spec);
// Sum over every key of the replica map.
int32_t total_replicas(const FrameworkDescriptor& d, const json::Value& job);
// template.spec.containers of a replica spec when it is an array, else null.
const json::Value* containers_of_spec(const json::Value* spec);
// The container named d.default_container in a replica spec, or null.
const json::Value* default_container(const FrameworkDescriptor& d, const json::Value* spec);
// containerPort of the port called `port_name` on the default container of `spec`.
std::optional<int32_t> named_port(const FrameworkDescriptor& d, const json::Value* spec, std::string_view port_name);

// Every index of every present type, in d.replica_types order (a negative count gives none).
std::vector<PodSlot> pod_slots(const FrameworkDescriptor& d, const json::Value& job);

}  // namespace unitrain::framework
