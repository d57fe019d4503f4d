// The rules kube-apiserver applies to metadata.name; each check returns its message, or nullopt
// when the name is valid.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "localcluster/resource_info.h"

namespace unitrain::localcluster {

std::optional<std::string> check_dns1123_subdomain(std::string_view name);
std::optional<std::string> check_dns1123_label(std::string_view name);
std::optional<std::string> check_dns1035_label(std::string_view name);
std::optional<std::string> check_path_segment(std::string_view name);
// The rule for metadata.name of resource `r`.
std::optional<std::string> check_object_name(const ResourceInfo& r, std::string_view name);

}  // namespace unitrain::localcluster
