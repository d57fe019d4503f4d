// JobSet (jobset.x-k8s.io/v1alpha2) as a framework module, after kubernetes-sigs/jobset v0.12.0:
// the webhook's defaults and checks, the child batch Jobs, the headless Service and the
// volumeClaimPolicies claims it wants, and one reconcile pass as a plan
// (framework::WorkloadPlanner): replicatedJobsStatus, the success and failure policies with
// restarts (Recreate, BlockingRecreate), InOrder startup and dependsOn, suspend and resume, TTL.
// Everything here is pure, so each rule is tested against fixtures without a cluster.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/time.h"
#include "core/framework/plugin.h"
#include "core/json/json.h"

namespace unitrain::frameworks::jobset {

inline constexpr std::string_view kGroup = "jobset.x-k8s.io";
inline constexpr std::string_view kVersion = "v1alpha2";
inline constexpr std::string_view kControllerName = "jobset.sigs.k8s.io/jobset-controller";

// The keys JobSet puts on its Jobs and their pod templates (as labels and annotations).
namespace keys {
inline constexpr std::string_view kJobSetName = "jobset.sigs.k8s.io/jobset-name";
inline constexpr std::string_view kJobSetUid = "jobset.sigs.k8s.io/jobset-uid";
inline constexpr std::string_view kReplicatedJobName = "jobset.sigs.k8s.io/replicatedjob-name";
inline constexpr std::string_view kRestartAttempt = "jobset.sigs.k8s.io/restart-attempt";
inline constexpr std::string_view kReplicatedJobReplicas = "jobset.sigs.k8s.io/replicatedjob-replicas";
inline constexpr std::string_view kGlobalReplicas = "jobset.sigs.k8s.io/global-replicas";
inline constexpr std::string_view kJobIndex = "jobset.sigs.k8s.io/job-index";
inline constexpr std::string_view kJobKey = "jobset.sigs.k8s.io/job-key";
inline constexpr std::string_view kJobGlobalIndex = "jobset.sigs.k8s.io/job-global-index";
inline constexpr std::string_view kGroupName = "jobset.sigs.k8s.io/group-name";
inline constexpr std::string_view kGroupReplicas = "jobset.sigs.k8s.io/group-replicas";
inline constexpr std::string_view kJobGroupIndex = "jobset.sigs.k8s.io/job-group-index";
inline constexpr std::string_view kCoordinator = "jobset.sigs.k8s.io/coordinator";
inline constexpr std::string_view kExclusiveTopology = "alpha.jobset.sigs.k8s.io/exclusive-topology";
inline constexpr std::string_view kNodeSelectorStrategy = "alpha.jobset.sigs.k8s.io/node-selector";
// Exclusive placement by node selector: the nodeSelector key (value "<namespace>_<job>") and the
// taint the Job's pods tolerate.
inline constexpr std::string_view kNamespacedJob = "alpha.jobset.sigs.k8s.io/namespaced-job";
inline constexpr std::string_view kNoScheduleTaint = "alpha.jobset.sigs.k8s.io/no-schedule";
}  // namespace keys

// The mutating webhook's defaults (CREATE), applied to fields that are absent.
void set_defaults(json::Document& js);

// The validating webhook: `old_js` null on CREATE. Messages are upstream's.
framework::Validation validate(const json::Value* old_js, const json::Value& js);

// A replicated Job's `replicas` (the CRD's default 1 when unset).
int32_t replicas_of(const json::Value& rjob);

// Lower-case hex SHA-1 of `text` (the job-key label is the SHA-1 of "<namespace>/<job name>").
std::string sha1_hex(std::string_view text);

// The child Job `<jobset>-<rjob>-<index>` of replicatedJobs[rjob_position] at the JobSet's
// current restart attempt (status.restarts), without owner reference (the core adds it): with
// exclusive placement's annotations, its node selector and toleration, and a volume for each
// claim of volumeClaimPolicies a container mounts.
json::Document child_job(const json::Value& js, std::size_t rjob_position, int32_t job_index);

// The headless Service named after network.subdomain (or the JobSet).
json::Document headless_service(const json::Value& js);

// A PersistentVolumeClaim of spec.volumeClaimPolicies, and whether the JobSet owns it
// (`whenDeleted: Delete`; a Retain claim outlives the JobSet).
struct VolumeClaim {
  json::Document object;
  bool owned_by_jobset = true;
};
// One claim per template of every policy, named claim_name(jobset, template), with the
// template's labels (plus jobset-name), annotations and spec.
std::vector<VolumeClaim> volume_claims(const json::Value& js);
// `<template>-<jobset>`.
std::string claim_name(std::string_view jobset_name, std::string_view template_name);
// The template names of every volumeClaimPolicies entry, in order.
std::vector<std::string> claim_template_names(const json::Value& js);
// Whether a container or init container of `pod_spec` mounts the volume named `volume`.
bool mounts_volume(const json::Value& pod_spec, std::string_view volume);

// One reconcile pass (v0.12.0's Reconcile), decided from the defaulted JobSet, its observed
// Jobs (observed.owned["jobs.batch"]) and Services, at `now`.
framework::WorkloadPlan plan(const json::Value& js, const framework::Observed& observed, api::TimePoint now);

}  // namespace unitrain::frameworks::jobset
