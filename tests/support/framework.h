#pragma once
// Driving a framework plugin's pure logic in unit tests, without a cluster.

#include <memory>
#include <string>
#include <string_view>

#include <catch2/catch.hpp>

#include "core/framework/plugin.h"
#include "core/framework/registry.h"
#include "core/json/json.h"

namespace unitrain::testing {

// The plugin `kind` of the framework that `register_framework` adds to a registry, built with
// `config`, as the operator builds it.
template <class Register>
std::unique_ptr<framework::FrameworkPlugin> instantiate(Register register_framework, std::string_view kind,
                                                       framework::PluginConfig config = {}) {
  framework::Registry registry;
  REQUIRE(register_framework(registry));
  auto plugin = registry.instantiate(kind, std::move(config));
  REQUIRE(plugin);
  return std::move(*plugin);
}

// A pod as the job controller sees it: labelled with its replica type and index, in `phase`; with
// `exit_code` >= 0, its first container (named `container`) terminated with that code.
inline json::Document pod_status(const std::string& replica_type, int index, const std::string& phase,
                                 int exit_code = -1, const std::string& container = "tensorflow") {
  json::Document pod = json::Document::object();
  REQUIRE(json::set_string(pod, "/metadata/labels/training.kubeflow.org~1replica-type", replica_type));
  REQUIRE(json::set_string(pod, "/metadata/labels/training.kubeflow.org~1replica-index", std::to_string(index)));
  REQUIRE(json::set_string(pod, "/status/phase", phase));
  if (exit_code >= 0) {
    auto statuses = json::Document::parse(R"([{"name":")" + container + R"(","state":{"terminated":{"exitCode":)" +
                                          std::to_string(exit_code) + "}}}]");
    REQUIRE(statuses);
    REQUIRE(json::set(pod, "/status/containerStatuses", json::clone(statuses->root(), pod.alloc())));
  }
  return pod;
}

// A status proposal's conditions, one "Type/Reason: message" line each, for readable CHECKs.
inline std::string conditions(const framework::StatusProposal& proposal) {
  std::string out;
  for (const auto& c : proposal.conditions) out += c.type + "/" + c.reason + ": " + c.message + "\n";
  return out;
}

}  // namespace unitrain::testing
