// The rules kube-apiserver applies to metadata.name (each check returns its message, or nullopt
// when the name is valid), label and annotation keys, and label values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"
#include "localcluster/resource_info.h"
#include "localcluster/schema.h"

namespace unitrain::localcluster {

std::optional<std::string> check_dns1123_subdomain(std::string_view name);
std::optional<std::string> check_dns1123_label(std::string_view name);
std::optional<std::string> check_dns1035_label(std::string_view name);
std::optional<std::string> check_path_segment(std::string_view name);
// The rule for metadata.name of resource `r`.
std::optional<std::string> check_object_name(const ResourceInfo& r, std::string_view name);

// Every kind's metadata.labels and metadata.annotations rules (syntax of keys and values; the
// annotations together at most 256 KiB), as field errors under metadata.
std::vector<FieldError> validate_labels_and_annotations(const json::Value& object);

}  // namespace unitrain::localcluster
