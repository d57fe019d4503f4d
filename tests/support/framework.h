#pragma once
// Driving a framework plugin's pure logic in unit tests, without a cluster.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "core/framework/plugin.h"
#include "core/framework/registry.h"
#include "core/json/json.h"
#include "tests/support/json.h"

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

// `job` with each RFC 7386 merge patch of `patches` applied in turn (a null member removes it, so
// {"spec":{"x":null}} then {"spec":{"x":{}}} leaves an empty map).
inline json::Document patched(const json::Document& job, const std::vector<std::string>& patches) {
  json::Document out = job;
  for (const auto& p : patches) json::apply_merge_patch(out, doc(p).root());
  return out;
}

// The field errors (one "field: detail" line each) `plugin` reports for `job` as its admission
// webhook validates it (the raw object, or the defaulted one where the reference validates that)
// and as the job controller validates it (always defaulted).
struct ValidationViews {
  std::vector<std::string> admission;
  std::vector<std::string> controller;
};
inline ValidationViews validation_views(const framework::FrameworkPlugin& plugin, const json::Document& job) {
  auto lines = [](const framework::Validation& v) {
    std::vector<std::string> out;
    for (const auto& e : v.errors) out.push_back(e.to_string());
    return out;
  };
  json::Document defaulted = job;
  plugin.set_defaults(defaulted);
  ValidationViews views;
  views.admission = lines(plugin.validate(nullptr, framework::pipeline_behaviour(plugin).validates_defaulted ? defaulted.root() : job.root()));
  views.controller = lines(plugin.validate(nullptr, defaulted.root()));
  return views;
}

// A spec the reference operator accepts and then never runs (or runs wrongly), and what
// validation must say about it.
struct Refusal {
  std::vector<std::string> patches;  // merge patches onto a valid job
  std::vector<std::string> errors;   // every field error, in order
};
// `base` must be valid; each refusal must give exactly its errors, at admission and in the
// controller alike, so a job stored without webhooks fails with the message admission gives.
inline void check_refusals(const framework::FrameworkPlugin& plugin, const json::Document& base,
                           const std::vector<Refusal>& refusals) {
  const auto valid = validation_views(plugin, base);
  CHECK(valid.admission.empty());
  CHECK(valid.controller.empty());
  for (const auto& r : refusals) {
    std::string shown;
    for (const auto& p : r.patches) shown += p + " ";
    INFO("patches: " << shown);
    const auto views = validation_views(plugin, patched(base, r.patches));
    CHECK(views.admission == r.errors);
    CHECK(views.controller == r.errors);
  }
}

}  // namespace unitrain::testing
