#include "core/framework/job_validation.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/api/kubeflow.h"
#include "core/api/labels.h"
#include "core/framework/job_spec.h"
#include "core/framework/json_members.h"

namespace unitrain::framework {

namespace {

using api::FieldError;
using api::FieldPath;
using json::Value;

const std::vector<std::string> kSupportedManagers = {"kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"};
const std::vector<std::string> kCleanPodPolicies = {std::string(api::clean_pod_policy::kAll),
                                                    std::string(api::clean_pod_policy::kNone),
                                                    std::string(api::clean_pod_policy::kRunning)};
constexpr std::string_view kNonnegative = "must be greater than or equal to 0";

void append(api::FieldErrorList& to, const api::FieldErrorList& from) { to.insert(to.end(), from.begin(), from.end()); }

// `field` is `under` or a field inside it ("spec.x[Worker].replicas" is inside "spec.x").
bool within(std::string_view field, std::string_view under) {
  if (!field.starts_with(under)) return false;
  return field.size() == under.size() || field[under.size()] == '.' || field[under.size()] == '[';
}

}  // namespace

void validate_name(const Value& job, api::FieldErrorList& errs) {
  const std::string name = json::string_at(job, "/metadata/name");
  if (auto reasons = api::validate_dns1035_label(name); !reasons.empty()) {
    std::string joined;
    for (const auto& r : reasons) joined += (joined.empty() ? "" : ",") + r;
    errs.push_back(FieldError::invalid(FieldPath("metadata").child("name"), name, "should match: " + joined));
  }
}

void validate_managed_by(const Value* old_job, const Value& job, api::FieldErrorList& errs) {
  const FieldPath managed_path = FieldPath("spec").child("runPolicy").child("managedBy");
  const Value* managed = json::find(job, "/spec/runPolicy/managedBy");
  if (old_job != nullptr) {
    // Upstream's PyTorch update handler compares the new object with itself; we compare old and new.
    const Value* old_managed = json::find(*old_job, "/spec/runPolicy/managedBy");
    const bool same = (old_managed == nullptr && managed == nullptr) ||
                      (old_managed != nullptr && managed != nullptr && json::equal(*old_managed, *managed));
    if (!same) {
      errs.push_back(FieldError::invalid(managed_path, managed ? api::FieldValue::of_json(*managed) : api::FieldValue::null(),
                                         "field is immutable"));
    }
  }
  if (managed != nullptr && managed->IsString()) {
    std::string v = managed->GetString();
    if (std::find(kSupportedManagers.begin(), kSupportedManagers.end(), v) == kSupportedManagers.end()) {
      errs.push_back(FieldError::not_supported(managed_path, v, kSupportedManagers));
    }
  }
}

void validate_replica_specs(const FrameworkDescriptor& d, const Value& job, const ReplicaSpecRules& rules,
                            api::FieldErrorList& errs) {
  const FieldPath specs_path = FieldPath("spec").child(d.replica_specs_field);
  const Value* specs = json_members::member(json_members::member(&job, "spec"), d.replica_specs_field);
  if (specs == nullptr) {
    errs.push_back(FieldError::required(specs_path, "must be required"));
    return;
  }
  if (!specs->IsObject()) return;
  for (const auto& m : specs->GetObject()) {
    std::string rt(m.name.GetString(), m.name.GetStringLength());
    FieldPath role = specs_path.key(rt);
    FieldPath containers_path = role.child("template").child("spec").child("containers");
    if (rules.restrict_types && std::find(d.replica_types.begin(), d.replica_types.end(), rt) == d.replica_types.end()) {
      errs.push_back(FieldError::not_supported(role, rt, d.replica_types));
    }
    const Value* containers = containers_of_spec(&m.value);
    if (containers == nullptr || containers->Empty()) {
      errs.push_back(FieldError::required(containers_path, "must be specified"));
    }
    bool default_present = false;
    if (containers != nullptr) {
      for (rapidjson::SizeType i = 0; i < containers->Size(); ++i) {
        const Value& c = (*containers)[i];
        if (json::string_at(c, "/image").empty()) {
          errs.push_back(FieldError::required(containers_path.index(i).child("image"), "must be required"));
        }
        if (json::string_at(c, "/name") == d.default_container) default_present = true;
      }
    }
    if (!default_present) {
      const std::string shown = rules.quote_default_name ? fmt::format("\"{}\"", d.default_container) : d.default_container;
      errs.push_back(FieldError::required(containers_path, fmt::format("must have at least one container with name {}", shown)));
    }
  }
}

void validate_run_policy(const Value& job, api::FieldErrorList& errs) {
  auto policy = api::run_policy_of(job);
  if (!policy) {
    append(errs, policy.error());
    return;
  }
  const FieldPath path = FieldPath("spec").child("runPolicy");
  if (const Value* clean = json::find(job, "/spec/runPolicy/cleanPodPolicy")) {
    if (auto e = clean_pod_policy_error(*clean, path.child("cleanPodPolicy"))) errs.push_back(*e);
  }
  auto nonnegative = [&](std::optional<int64_t> v, std::string_view field) {
    if (v && *v < 0) errs.push_back(FieldError::invalid(path.child(field), *v, std::string(kNonnegative)));
  };
  nonnegative(policy->ttl_seconds_after_finished, "ttlSecondsAfterFinished");
  nonnegative(policy->active_deadline_seconds, "activeDeadlineSeconds");
  nonnegative(policy->backoff_limit, "backoffLimit");
}

std::optional<FieldError> clean_pod_policy_error(const Value& value, const FieldPath& path) {
  if (value.IsNull()) return std::nullopt;
  if (value.IsString() &&
      std::find(kCleanPodPolicies.begin(), kCleanPodPolicies.end(), json::view(value)) != kCleanPodPolicies.end())
    return std::nullopt;
  return FieldError::not_supported(path, api::FieldValue::of_json(value), kCleanPodPolicies);
}

void validate_replica_counts(const FrameworkDescriptor& d, const Value& job, api::FieldErrorList& errs) {
  const FieldPath path = FieldPath("spec").child(d.replica_specs_field);
  const Value* specs = json_members::member(json_members::member(&job, "spec"), d.replica_specs_field);
  if (specs == nullptr) return;
  if (!specs->IsObject()) {
    errs.push_back(FieldError::invalid(path, api::FieldValue::of_json(*specs), "must be an object"));
    return;
  }
  if (specs->MemberCount() == 0) {
    errs.push_back(FieldError::required(path, "must have at least one replica spec"));
    return;
  }
  for (const auto& m : specs->GetObject()) {
    if (m.value.IsNull()) continue;  // a nil spec: the framework reports its missing containers
    const std::string_view rt(m.name.GetString(), m.name.GetStringLength());
    auto spec = api::ReplicaSpec::from_json(m.value, path.key(rt));
    if (!spec) {
      append(errs, spec.error());
    } else if (spec->replicas && *spec->replicas < 0) {
      errs.push_back(FieldError::invalid(path.key(rt).child("replicas"), *spec->replicas, std::string(kNonnegative)));
    }
  }
}

void validate_elastic_replicas(const Value& job, api::FieldErrorList& errs) {
  const Value* elastic = json_members::member(json_members::member(&job, "spec"), "elasticPolicy");
  if (elastic == nullptr || !elastic->IsObject()) return;
  const FieldPath path = FieldPath("spec").child("elasticPolicy");
  std::optional<int64_t> bounds[2];
  const std::string_view names[2] = {"minReplicas", "maxReplicas"};
  for (int i = 0; i < 2; ++i) {
    const Value* v = json_members::member(elastic, names[i]);
    if (v == nullptr) continue;
    if (!v->IsInt()) {
      errs.push_back(FieldError::invalid(path.child(names[i]), api::FieldValue::of_json(*v), "must be an integer"));
    } else if (v->GetInt() < 1) {
      errs.push_back(FieldError::invalid(path.child(names[i]), v->GetInt(), "must be greater than or equal to 1"));
    } else {
      bounds[i] = v->GetInt();
    }
  }
  if (bounds[0] && bounds[1] && *bounds[0] > *bounds[1]) {
    errs.push_back(FieldError::invalid(path.child("maxReplicas"), *bounds[1],
                                       fmt::format("must be greater than or equal to minReplicas ({})", *bounds[0])));
  }
}

void add_unreported(api::FieldErrorList& errs, const api::FieldErrorList& more) {
  const size_t reported = errs.size();
  for (const FieldError& e : more) {
    const bool named = std::any_of(errs.begin(), errs.begin() + static_cast<std::ptrdiff_t>(reported),
                                   [&](const FieldError& r) { return within(r.field, e.field); });
    if (!named) errs.push_back(e);
  }
}

void validate_common_spec(const FrameworkDescriptor& d, const Value& job, api::FieldErrorList& errs) {
  api::FieldErrorList more;
  validate_run_policy(job, more);
  validate_replica_counts(d, job, more);
  add_unreported(errs, more);
}

}  // namespace unitrain::framework
