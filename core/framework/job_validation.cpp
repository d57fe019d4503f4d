#include "core/framework/job_validation.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/api/labels.h"
#include "core/framework/job_spec.h"
#include "core/framework/json_members.h"

namespace unitrain::framework {

namespace {

using api::FieldError;
using api::FieldPath;
using json::Value;

const std::vector<std::string> kSupportedManagers = {"kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"};

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

}  // namespace unitrain::framework
