// The JobSet webhooks: defaults on CREATE (fields that are absent only) and the validating
// checks with upstream's messages.
#include <algorithm>
#include <climits>
#include <map>
#include <regex>
#include <set>
#include <string>

#include <fmt/format.h>

#include "core/api/labels.h"
#include "core/framework/json_members.h"
#include "frameworks/jobset/jobset.h"

namespace unitrain::frameworks::jobset {

namespace {

using api::FieldError;
using api::FieldPath;
using framework::json_members::ensure_object;
using framework::json_members::member;
using framework::json_members::put;
using json::Value;

void default_member(Value& obj, std::string_view key, Value value, json::Allocator& a) {
  if (member(&obj, key) == nullptr) put(obj, key, std::move(value), a);
}

const std::vector<std::string>& failure_reasons() {
  static const std::vector<std::string> reasons = {"BackoffLimitExceeded", "DeadlineExceeded", "FailedIndexes",
                                                   "MaxFailedIndexesExceeded", "PodFailurePolicy"};
  return reasons;
}

// Upstream reports the checks it words itself as plain errors, without a field; they reach the
// user under spec.
FieldError plain(std::string message) { return FieldError::forbidden(FieldPath("spec"), std::move(message)); }

bool mentions_too_long(const std::string& message) { return message.find("must be no more than 63 characters") != std::string::npos; }

void validate_failure_policy(const Value& policy, const std::set<std::string>& rjob_names, api::FieldErrorList& errs) {
  const Value* rules = member(&policy, "rules");
  if (rules == nullptr || !rules->IsArray()) return;
  static const std::regex name_format("^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$");
  std::map<std::string, std::vector<std::size_t>> by_name;
  std::vector<std::string> order;
  for (rapidjson::SizeType i = 0; i < rules->Size(); ++i) {
    const Value& rule = (*rules)[i];
    const std::string name = json::string_at(rule, "/name");
    if (by_name[name].empty()) order.push_back(name);
    by_name[name].push_back(i);
    if (name.empty() || name.size() > 128)
      errs.push_back(plain(fmt::format("invalid failure policy rule name of length {}, the rule name must be at least 1 "
                                       "characters long and at most 128 characters long",
                                       name.size())));
    else if (!std::regex_match(name, name_format))
      errs.push_back(plain(fmt::format("invalid failure policy rule name '{}', a failure policy rule name must start with "
                                       "an alphabetic character, optionally followed by a string of alphanumeric "
                                       "characters or '_,:', and must end with an alphanumeric character or '_'",
                                       name)));
    for (const auto& target : json::strings_at(rule, "/targetReplicatedJobs"))
      if (!rjob_names.count(target))
        errs.push_back(plain(fmt::format("invalid replicatedJob name '{}' in failure policy does not appear in "
                                         ".spec.ReplicatedJobs",
                                         target)));
    for (const auto& reason : json::strings_at(rule, "/onJobFailureReasons"))
      if (std::find(failure_reasons().begin(), failure_reasons().end(), reason) == failure_reasons().end())
        errs.push_back(plain(fmt::format("invalid job failure reason '{}' in failure policy is not a recognized job "
                                         "failure reason",
                                         reason)));
    const std::string action = json::string_at(rule, "/action");
    if (action == "RestartJob" || action == "RestartJobAndIgnoreMaxRestarts")
      errs.push_back(plain(fmt::format("{} failure policy action cannot be used when the RestartJob feature gate is "
                                       "disabled",
                                       action)));
  }
  for (const auto& name : order) {
    const auto& indices = by_name[name];
    if (indices.size() < 2) continue;
    std::string list;
    for (std::size_t i : indices) list += (list.empty() ? "" : ", ") + std::to_string(i);
    errs.push_back(plain(fmt::format("rule names are not unique, rules with indices [{}] all have the same name '{}'", list, name)));
  }
}

// Each claim template: a unique DNS-1123 name whose claim `<template>-<jobset>` fits 63
// characters, mounted by some container, and no pod volume of the same name. (Upstream's paths
// say `template[i]` for `templates[i]`; kept, as users see them.)
void validate_volume_claim_policies(const Value& js, api::FieldErrorList& errs) {
  const Value* policies = json::find(js, "/spec/volumeClaimPolicies");
  if (policies == nullptr || !policies->IsArray()) return;
  const std::string js_name = json::string_at(js, "/metadata/name");
  const Value* rjobs = json::find(js, "/spec/replicatedJobs");
  std::set<std::string> seen;
  for (rapidjson::SizeType p = 0; p < policies->Size(); ++p) {
    const Value* templates = member(&(*policies)[p], "templates");
    if (templates == nullptr || !templates->IsArray()) continue;
    for (rapidjson::SizeType t = 0; t < templates->Size(); ++t) {
      const std::string name = json::string_at((*templates)[t], "/metadata/name");
      const FieldPath path = FieldPath("spec").child("volumeClaimPolicies").index(p).child("template").index(t).child("name");
      if (seen.count(name)) errs.push_back(FieldError::invalid(path, name, "names must be unique for VolumeClaimPolicies template"));
      for (const auto& m : api::validate_dns1123_subdomain(name)) errs.push_back(FieldError::invalid(path, name, m));
      if (claim_name(js_name, name).size() > 63)
        errs.push_back(FieldError::invalid(path, name, "VolumeClaimPolicies template name is too long"));
      bool mounted = false;
      if (rjobs != nullptr && rjobs->IsArray()) {
        for (rapidjson::SizeType r = 0; r < rjobs->Size(); ++r) {
          const Value* pod_spec = json::find((*rjobs)[r], "/template/spec/template/spec");
          if (pod_spec == nullptr) continue;
          mounted = mounted || mounts_volume(*pod_spec, name);
          const Value* volumes = member(pod_spec, "volumes");
          if (volumes == nullptr || !volumes->IsArray()) continue;
          for (rapidjson::SizeType v = 0; v < volumes->Size(); ++v)
            if (json::string_at((*volumes)[v], "/name") == name)
              errs.push_back(FieldError::invalid(FieldPath("spec").child("replicatedJobs").index(r).child("template").child("spec")
                                                     .child("template").child("spec").child("volumes").index(v).child("name"),
                                                 name, fmt::format("volume name conflicts with VolumeClaimPolicy template name: {}", name)));
        }
      }
      if (!mounted)
        errs.push_back(FieldError::invalid(FieldPath("spec").child("replicatedJobs"), {},
                                           fmt::format("replicatedJob containers don't have a matching volumeMount: {} from "
                                                       "VolumeClaimPolicies",
                                                       name)));
      seen.insert(name);
    }
  }
}

}  // namespace

void set_defaults(json::Document& js) {
  auto& a = js.alloc();
  Value& spec = ensure_object(js.root(), "spec", a);
  if (member(&spec, "successPolicy") == nullptr) {
    Value policy(rapidjson::kObjectType);
    policy.AddMember("operator", "All", a);
    put(spec, "successPolicy", std::move(policy), a);
  }
  if (member(&spec, "startupPolicy") == nullptr) {
    Value policy(rapidjson::kObjectType);
    policy.AddMember("startupPolicyOrder", "AnyOrder", a);
    put(spec, "startupPolicy", std::move(policy), a);
  }
  if (Value* rjobs = member(&spec, "replicatedJobs"); rjobs != nullptr && rjobs->IsArray()) {
    for (auto& rjob : rjobs->GetArray()) {
      if (!rjob.IsObject()) continue;
      Value& job_spec = ensure_object(ensure_object(rjob, "template", a), "spec", a);
      default_member(job_spec, "completionMode", json::str("Indexed", a), a);
      Value& pod_spec = ensure_object(ensure_object(job_spec, "template", a), "spec", a);
      default_member(pod_spec, "restartPolicy", json::str("OnFailure", a), a);
    }
  }
  Value& network = ensure_object(spec, "network", a);
  default_member(network, "enableDNSHostnames", Value(true), a);
  default_member(network, "publishNotReadyAddresses", Value(true), a);
  if (Value* rules = json::find(spec, "/failurePolicy/rules"); rules != nullptr && rules->IsArray()) {
    for (rapidjson::SizeType i = 0; i < rules->Size(); ++i)
      if ((*rules)[i].IsObject() && json::string_at((*rules)[i], "/name").empty())
        put((*rules)[i], "name", fmt::format("failurePolicyRule{}", i), a);
  }
  if (Value* policies = member(&spec, "volumeClaimPolicies"); policies != nullptr && policies->IsArray()) {
    for (auto& p : policies->GetArray()) {
      if (!p.IsObject() || member(&p, "retentionPolicy") != nullptr) continue;
      Value retention(rapidjson::kObjectType);
      retention.AddMember("whenDeleted", "Delete", a);
      put(p, "retentionPolicy", std::move(retention), a);
    }
  }
}

framework::Validation validate(const Value* old_js, const Value& js) {
  framework::Validation out;
  auto& errs = out.errors;
  if (old_js != nullptr) {
    // UPDATE: replicatedJobs may change only in the pod-template fields Kueue edits while the
    // old or the new JobSet is suspended; managedBy never.
    const bool suspended = json::get_bool(*old_js, "/spec/suspend").value_or(false) ||
                           json::get_bool(js, "/spec/suspend").value_or(false);
    auto comparable = [&](const Value& obj) {
      const Value* rjobs = json::find(obj, "/spec/replicatedJobs");
      json::Document doc = rjobs != nullptr ? json::Document::copy_of(*rjobs) : json::Document::array();
      if (suspended && doc.root().IsArray()) {
        for (auto& rjob : doc.root().GetArray()) {
          for (std::string_view pointer : {"/template/spec/template/metadata/labels", "/template/spec/template/metadata/annotations",
                                           "/template/spec/template/spec/nodeSelector", "/template/spec/template/spec/tolerations",
                                           "/template/spec/template/spec/schedulingGates"}) {
            json::Document one = json::Document::copy_of(rjob);
            if (json::remove(one, pointer)) rjob = json::clone(one.root(), doc.alloc());
          }
        }
      }
      return doc;
    };
    if (!json::equal(comparable(js).root(), comparable(*old_js).root()))
      errs.push_back(FieldError::invalid(FieldPath("spec").child("replicatedJobs"), {}, "field is immutable"));
    const Value* old_managed = json::find(*old_js, "/spec/managedBy");
    const Value* new_managed = json::find(js, "/spec/managedBy");
    if ((old_managed == nullptr) != (new_managed == nullptr) ||
        (old_managed != nullptr && !json::equal(*old_managed, *new_managed)))
      errs.push_back(FieldError::invalid(FieldPath("spec").child("managedBy"),
                                         std::string(json::get_string(js, "/spec/managedBy").value_or("")),
                                         "field is immutable"));
    return out;
  }

  const std::string js_name = json::string_at(js, "/metadata/name");
  if (json::string_at(js, "/spec/failurePolicy/restartStrategy") == "InPlaceRestart")
    errs.push_back(plain("InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate is disabled"));
  const Value* rjobs = json::find(js, "/spec/replicatedJobs");
  if (rjobs != nullptr && rjobs->IsArray() && !rjobs->Empty() && member(&(*rjobs)[0], "dependsOn") != nullptr)
    errs.push_back(plain("DependsOn can't be set for the first ReplicatedJob"));
  const std::string subdomain(json::get_string(js, "/spec/network/subdomain").value_or(""));
  if (!subdomain.empty()) {
    const FieldPath path = FieldPath("spec").child("network").child("subdomain");
    for (const auto& m : api::validate_dns1123_subdomain(subdomain)) errs.push_back(FieldError::invalid(path, subdomain, m));
    for (const auto& m : api::validate_dns1035_label(subdomain))
      errs.push_back(FieldError::invalid(path, subdomain,
                                         mentions_too_long(m) ? ".spec.network.subdomain is too long, must be less than 63 characters" : m));
  }
  if (auto managed = json::get_string(js, "/spec/managedBy")) {
    const FieldPath path = FieldPath("spec").child("managedBy");
    const std::string value(*managed);
    const auto slash = value.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 >= value.size())
      errs.push_back(FieldError::invalid(path, value, "must be a domain-prefixed path (such as \"acme.io/foo\")"));
    else
      for (const auto& m : api::validate_dns1123_subdomain(value.substr(0, slash))) errs.push_back(FieldError::invalid(path, value, m));
    if (value.size() > 63) errs.push_back(FieldError::too_long(path, value, 63));
  }
  std::set<std::string> names;
  if (rjobs != nullptr && rjobs->IsArray()) {
    for (rapidjson::SizeType i = 0; i < rjobs->Size(); ++i) {
      const Value& rjob = (*rjobs)[i];
      const FieldPath path = FieldPath("spec").child("replicatedJobs").index(i);
      const std::string name = json::string_at(rjob, "/name");
      names.insert(name);
      const int64_t replicas = json::get_int(rjob, "/replicas").value_or(1);
      const int64_t parallelism = json::get_int(rjob, "/template/spec/parallelism").value_or(1);
      if (replicas * parallelism > INT32_MAX)
        errs.push_back(plain(fmt::format("the product of replicas and parallelism must not exceed {} for replicatedJob '{}'",
                                         INT32_MAX, name)));
      const std::string group(json::get_string(rjob, "/groupName").value_or("default"));
      for (const auto& m : api::validate_dns1035_label(group))
        errs.push_back(FieldError::invalid(path.child("groupName"), group,
                                           mentions_too_long(m) ? ".spec.replicatedJob[].groupName is too long, must be less than 63 characters" : m));
      const std::string longest_job = fmt::format("{}-{}-{}", js_name, name, replicas - 1);
      for (const auto& m : api::validate_dns1035_label(longest_job))
        errs.push_back(FieldError::invalid(path.child("name"), longest_job,
                                           mentions_too_long(m) ? "JobSet name is too long, job names generated for this JobSet will exceed 63 characters" : m));
      const auto completions = json::get_int(rjob, "/template/spec/completions");
      if (json::string_at(rjob, "/template/spec/completionMode") == "Indexed" && completions) {
        const std::string longest_pod = fmt::format("{}-{}-{}-{}-abcde", js_name, name, replicas - 1, *completions - 1);
        for (const auto& m : api::validate_dns1035_label(longest_pod))
          errs.push_back(FieldError::invalid(path.child("name"), longest_job,
                                             mentions_too_long(m) ? "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters" : m));
      }
      if (const Value* depends = member(&rjob, "dependsOn"); depends != nullptr && depends->IsArray())
        for (const auto& d : depends->GetArray()) {
          const std::string dep = json::string_at(d, "/name");
          // Only the replicated Jobs before this one count (the set grows in list order).
          if (!names.count(dep) || dep == name)
            errs.push_back(plain(fmt::format("replicatedJob: {} cannot depend on replicatedJob: {}", name, dep)));
        }
    }
  }
  for (const auto& target : json::strings_at(js, "/spec/successPolicy/targetReplicatedJobs"))
    if (!names.count(target))
      errs.push_back(plain(fmt::format("invalid replicatedJob name '{}' does not appear in .spec.ReplicatedJobs", target)));
  if (const Value* policy = json::find(js, "/spec/failurePolicy"); policy != nullptr && policy->IsObject())
    validate_failure_policy(*policy, names, errs);
  if (const Value* coordinator = json::find(js, "/spec/coordinator"); coordinator != nullptr && coordinator->IsObject()) {
    const std::string target = json::string_at(*coordinator, "/replicatedJob");
    const Value* found = nullptr;
    if (rjobs != nullptr && rjobs->IsArray())
      for (const auto& rjob : rjobs->GetArray())
        if (json::string_at(rjob, "/name") == target) found = &rjob;
    if (found == nullptr) {
      errs.push_back(plain(fmt::format("coordinator replicatedJob {} does not exist", target)));
    } else {
      const int64_t job_index = json::get_int(*coordinator, "/jobIndex").value_or(0);
      const int64_t pod_index = json::get_int(*coordinator, "/podIndex").value_or(0);
      const auto completions = json::get_int(*found, "/template/spec/completions");
      if (job_index < 0 || job_index >= json::get_int(*found, "/replicas").value_or(1))
        errs.push_back(plain(fmt::format("coordinator job index {} is invalid for replicatedJob {}", job_index, target)));
      else if (json::string_at(*found, "/template/spec/completionMode") != "Indexed" || !completions)
        errs.push_back(plain(fmt::format("job for coordinator pod must be indexed completion mode, and completions "
                                         "number must be set")));
      else if (pod_index < 0 || pod_index >= *completions)
        errs.push_back(plain(fmt::format("coordinator pod index {} is invalid for replicatedJob {} job index {}", pod_index,
                                         target, job_index)));
    }
  }
  validate_volume_claim_policies(js, errs);
  return out;
}

}  // namespace unitrain::frameworks::jobset
