// The JobSet plugin: the webhooks' defaults and checks, and a workload plan per pass (no pods of
// its own: its children are batch Jobs, run by the cluster's Job controller).
#include <fmt/format.h>

#include "core/api/time.h"
#include "frameworks/jobset/jobset.h"
#include "frameworks/jobset/register.h"

namespace unitrain::frameworks::jobset {

namespace {

class JobSetPlugin final : public framework::FrameworkPlugin,
                           public framework::WorkloadPlanner,
                           public framework::PipelineDepartures {
 public:
  JobSetPlugin(framework::FrameworkDescriptor descriptor, const framework::PluginConfig&) : d_(std::move(descriptor)) {}

  const framework::FrameworkDescriptor& descriptor() const override { return d_; }
  framework::Capabilities capabilities() const override { return {.departures = this, .workloads = this}; }

  void set_defaults(json::Document& job) const override { jobset::set_defaults(job); }
  framework::Validation validate(const json::Value* old_job, const json::Value& job) const override {
    return jobset::validate(old_job, job);
  }

  // Pods are the batch Job controller's: the core keeps none itself.
  std::vector<framework::PodSlot> pod_slots(const json::Value&) const override { return {}; }
  Status decorate_pod(const json::Value&, const framework::PodSlot&, json::Document&) const override { return {}; }
  Result<std::vector<framework::DesiredObject>> desired_objects(const json::Value&, const framework::Observed&) const override {
    return std::vector<framework::DesiredObject>{};
  }
  framework::StatusProposal compute_status(const json::Value&, const framework::Observed&) const override { return {}; }

  framework::WorkloadPlan plan(const json::Value& job, const framework::Observed& observed,
                               std::string_view now) const override {
    auto t = api::parse_time(now);
    return jobset::plan(job, observed, t ? *t : api::Clock::now());
  }

  // The controller's events about its children: only failed creates (JobCreationFailed,
  // HeadlessServiceCreationFailed); a deletion or creation records nothing.
  framework::CoreWording child_event(framework::ChildEvent e, const json::Value&,
                                     const framework::ChildSubject& subject) const override {
    if (e != framework::ChildEvent::CreateFailed) return {};
    if (subject.kind == "Service") return {"HeadlessServiceCreationFailed", std::string(subject.detail), "Warning"};
    return {"JobCreationFailed", fmt::format("job \"{}\" creation failed with error: {}", subject.name, subject.detail),
            "Warning"};
  }

  // Every create and delete of a child Job matters (a previous attempt gone lets its successor
  // be created).
  bool reconciles_on_any_child() const override { return true; }

 private:
  framework::FrameworkDescriptor d_;
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
  return d;
}

}  // namespace

Status register_jobset(framework::Registry& registry) {
  auto r = framework::registration_of<JobSetPlugin>(make_descriptor());
  r.permissions = {
      {{"batch"}, {"jobs"}, {"get", "list", "watch", "create", "update", "delete"}, "JobSet: its child batch/v1 Jobs."},
      {{"batch"}, {"jobs/status"}, {"update"}, "JobSet: a resumed Job's startTime is cleared before its template changes."}};
  r.webhooks.validate = {"CREATE", "UPDATE"};
  r.webhooks.mutate = {"CREATE"};
  return registry.add(std::move(r));
}

}  // namespace unitrain::frameworks::jobset
