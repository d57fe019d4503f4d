// The in-memory defaults training-operator's kinds share (its SetDefaults_<Kind> functions):
// applied on every pass and never written back to the spec.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/framework/descriptor.h"
#include "core/json/json.h"

namespace unitrain::framework {

// Appends {d.default_port_name, d.default_port} to the default container (else the first one)
// unless a port of that name exists there already; a custom-named port does not count.
void ensure_default_port(const FrameworkDescriptor& d, json::Value& containers, json::Allocator& a);

// cleanPodPolicy unset -> None; replica keys in `recased` re-cased to their canonical spelling
// (a key already canonical wins over a variant); replicas unset -> 1; restartPolicy "" ->
// `restart_policy`; the default port on every replica template.
void set_replica_defaults(const FrameworkDescriptor& d, json::Document& job, std::string_view restart_policy,
                          const std::vector<std::string>& recased);

// spec.elasticPolicy (PyTorch, Paddle): only max -> min = max; only min -> max = min; neither ->
// both = Worker replicas. No-op without an elasticPolicy object.
void set_elastic_replica_defaults(const FrameworkDescriptor& d, json::Document& job);

}  // namespace unitrain::framework
