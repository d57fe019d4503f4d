// The JobSet plugin: the webhooks' defaults and checks, and a workload plan per pass (no pods of
// its own: its children are batch Jobs, run by the cluster's Job controller).
#include <fmt/format.h>

#include "core/api/time.h"
#include "core/framework/module_plugin.h"
#include "frameworks/jobset/jobset.h"
#include "frameworks/jobset/register.h"

namespace unitrain::frameworks::jobset {

namespace {

class JobSetPlugin final : public framework::WorkloadModulePlugin, public framework::PipelineDepartures {
 public:
  JobSetPlugin(framework::FrameworkDescriptor descriptor, const framework::PluginConfig& config)
      : WorkloadModulePlugin(std::move(descriptor), config) {}

  framework::Capabilities capabilities() const override { return {.departures = this, .workloads = this}; }

  void set_defaults(json::Document& job) const override { jobset::set_defaults(job); }
  framework::Validation validate(const json::Value* old_job, const json::Value& job) const override {
    return jobset::validate(old_job, job);
  }

  framework::WorkloadPlan plan_at(const json::Value& job, const framework::Observed& observed,
                                  api::TimePoint now) const override {
    return jobset::plan(job, observed, now);
  }

  // The controller's events about its children: only failed creates (JobCreationFailed,
  // HeadlessServiceCreationFailed, PVCCreationFailed); a deletion or creation records nothing.
  framework::CoreWording child_event(framework::ChildEvent e, const json::Value&,
                                     const framework::ChildSubject& subject) const override {
    if (e != framework::ChildEvent::CreateFailed) return {};
    if (subject.kind == "Service") return {"HeadlessServiceCreationFailed", std::string(subject.detail), "Warning"};
    if (subject.kind == "PersistentVolumeClaim") return {"PVCCreationFailed", std::string(subject.detail), "Warning"};
    return {"JobCreationFailed", fmt::format("job \"{}\" creation failed with error: {}", subject.name, subject.detail),
            "Warning"};
  }

  // Every create and delete of a child Job matters (a previous attempt gone lets its successor
  // be created).
  bool reconciles_on_any_child() const override { return true; }
  // The validating webhook sees what the defaulting one wrote (CREATE), and an update that
  // leaves a default out is compared with it filled in.
  bool validates_defaulted() const override { return true; }

 private:
};

framework::FrameworkDescriptor make_descriptor() {
  framework::FrameworkDescriptor d;
  d.name = "jobset.x-k8s.io/jobset";
  d.aliases = {"jobset"};
  d.group = std::string(kGroup);
  d.version = std::string(kVersion);
  d.kind = "JobSet";
  d.plural = "jobsets";
  d.singular = "jobset";
  d.controller_name = "jobset-controller";
  d.metrics_framework = "jobset";
  // spec.managedBy (not runPolicy's) is the plan's business: the core takes every JobSet.
  d.owns_unset_managed_by = true;
  d.owned_resources = {{"batch", "v1", "jobs"}};
  // Its pods are its Jobs' (the Job controller's), read by no plan; its one child of the core's
  // kinds is the headless Service. Upstream's children carry no constant label (and objects it
  // created before a migration cannot be given one), so no child_label_selector: the caches
  // keep what a JobSet controls.
  d.core_children = {.pods = false, .services = true};
  return d;
}

}  // namespace

Status register_jobset(framework::Registry& registry) {
  auto r = framework::registration_of<JobSetPlugin>(make_descriptor());
  r.permissions = {
      {{"batch"}, {"jobs"}, {"get", "list", "watch", "create", "update", "delete"}, "JobSet: its child batch/v1 Jobs."},
      {{"batch"}, {"jobs/status"}, {"update"}, "JobSet: a resumed Job's startTime is cleared before its template changes."},
      {{""}, {"persistentvolumeclaims"}, {"create"}, "JobSet: the claims of its volumeClaimPolicies."}};
  r.webhooks.validate = {"CREATE", "UPDATE"};
  r.webhooks.mutate = {"CREATE"};
  return registry.add(std::move(r));
}

}  // namespace unitrain::frameworks::jobset
