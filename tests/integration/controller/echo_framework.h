// A framework that exists only in the tests: one replica type "Worker", a headless service per
// pod, Running while any pod runs, Succeeded when every pod succeeded, Failed when one failed
// under restartPolicy Never. It is built from core/ alone, which is the point: a new kind needs
// no edit to the core.
#pragma once

#include <fmt/format.h>

#include "core/api/field_errors.h"
#include "core/controller/pod_builder.h"
#include "core/framework/plugin.h"

namespace unitrain::testing::echo {

namespace c = unitrain::controller;
namespace fw = unitrain::framework;
namespace json = unitrain::json;
namespace kube = unitrain::kube;
using json::Document;

inline const kube::GroupVersionResource kJobs{"test.unitrain.io", "v1", "echojobs"};
inline const kube::GroupVersionResource kServices{"", "v1", "services"};

inline fw::FrameworkDescriptor echo_descriptor() {
  fw::FrameworkDescriptor d;
  d.name = "test.unitrain.io/echojob";
  d.group = "test.unitrain.io";
  d.version = "v1";
  d.kind = "EchoJob";
  d.plural = "echojobs";
  d.replica_specs_field = "echoReplicaSpecs";
  d.replica_types = {"Worker"};
  d.default_container = "echo";
  d.controller_name = "echojob-controller";
  d.managed_by = {"kubeflow.org/training-operator"};
  return d;
}

class EchoPlugin final : public fw::FrameworkPlugin {
 public:
  // Another descriptor makes another kind with the same behaviour (two modules in one process).
  explicit EchoPlugin(fw::FrameworkDescriptor d = echo_descriptor()) : d_(std::move(d)) {}
  const fw::FrameworkDescriptor& descriptor() const override { return d_; }
  void set_defaults(Document& job) const override {
    if (json::find(job.root(), "/spec/echoReplicaSpecs/Worker") &&
        !json::find(job.root(), "/spec/echoReplicaSpecs/Worker/restartPolicy"))
      (void)json::set_string(job, "/spec/echoReplicaSpecs/Worker/restartPolicy", "Never");
  }
  fw::Validation validate(const json::Value*, const json::Value& job) const override {
    fw::Validation v;
    if (!json::find(job, "/spec/echoReplicaSpecs/Worker"))
      v.errors.push_back(unitrain::api::FieldError::required(unitrain::api::FieldPath("spec").child("echoReplicaSpecs").key("Worker"), "must be present"));
    return v;
  }
  std::vector<fw::PodSlot> pod_slots(const json::Value& job) const override {
    std::vector<fw::PodSlot> out;
    for (int32_t i = 0; i < c::replicas_of(d_, job, "Worker"); ++i) out.push_back({"Worker", i});
    return out;
  }
  unitrain::Status decorate_pod(const json::Value&, const fw::PodSlot& s, Document& pod) const override {
    return json::set_string(pod, "/metadata/annotations/echo-index", std::to_string(s.index));
  }
  unitrain::Result<std::vector<fw::DesiredObject>> desired_objects(const json::Value& job, const fw::Observed&) const override {
    std::vector<fw::DesiredObject> out;
    if (json::get_bool(job, "/spec/runPolicy/suspend").value_or(false)) return out;
    const std::string name(json::get_string(job, "/metadata/name").value_or(""));
    for (const auto& s : pod_slots(job)) {
      fw::DesiredObject o;
      o.resource = kServices;
      const auto labels = c::replica_labels(d_, name, "Worker", s.index);
      o.object = Document::parse(fmt::format(R"({{"apiVersion":"v1","kind":"Service","metadata":{{"name":"{}","labels":{}}},"spec":{{"clusterIP":"None","selector":{}}}}})",
                                             c::replica_name(name, "Worker", s.index), labels.dump(), labels.dump())).value();
      out.push_back(std::move(o));
    }
    return out;
  }
  fw::StatusProposal compute_status(const json::Value& job, const fw::Observed& observed) const override {
    fw::StatusProposal p;
    auto& w = p.replica_statuses["Worker"];
    for (const auto* pod : observed.pods) {
      auto phase = json::get_string(*pod, "/status/phase").value_or("");
      if (phase == "Running") ++w.active;
      if (phase == "Succeeded") ++w.succeeded;
      if (phase == "Failed") ++w.failed;
    }
    const std::string name(json::get_string(job, "/metadata/name").value_or(""));
    const int32_t n = c::replicas_of(d_, job, "Worker");
    if (w.succeeded == n) {
      p.conditions.push_back({"Succeeded", "True", "EchoJobSucceeded", fmt::format("EchoJob {} is successfully completed.", name)});
      p.set_completion_time = true;
    } else if (w.failed > 0 && json::get_string(job, "/spec/echoReplicaSpecs/Worker/restartPolicy") == "Never") {
      p.conditions.push_back({"Failed", "True", "EchoJobFailed", fmt::format("EchoJob {} is failed because {} Worker replica(s) failed.", name, w.failed)});
      p.set_completion_time = true;
    } else if (w.active > 0) {
      p.conditions.push_back({"Running", "True", "EchoJobRunning", fmt::format("EchoJob {} is running.", name)});
    }
    return p;
  }
  std::vector<kube::GroupVersionResource> pruned_resources() const override { return {kServices}; }

 private:
  fw::FrameworkDescriptor d_;
};

}  // namespace unitrain::testing::echo
