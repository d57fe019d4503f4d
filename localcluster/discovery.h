// Discovery documents built from the resources the store serves: the legacy per-group-version
// form and the aggregated form (apidiscovery.k8s.io v2 / v2beta1) that kubectl 1.32 asks for first.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "localcluster/store.h"

namespace unitrain::localcluster {

// kube's version priority: GA before beta before alpha, higher numbers first, then anything else
// alphabetically ("v2" < "v1" < "v1beta2" < "v1beta1" < "v1alpha1" < "foo").
bool version_before(std::string_view a, std::string_view b);

// Versions of `group` in preference order; empty when the group is not served.
std::vector<std::string> group_versions(const std::vector<ResourceInfo>& resources, std::string_view group);

std::string api_versions_json(std::string_view server_address);                       // GET /api
std::string api_group_list_json(const std::vector<ResourceInfo>& resources);          // GET /apis
// GET /apis/<group>; empty string when the group is not served.
std::string api_group_json(const std::vector<ResourceInfo>& resources, std::string_view group);
// GET /api/v1, /apis/<g>/<v>; empty string when the group version is not served.
std::string api_resource_list_json(const std::vector<ResourceInfo>& resources, std::string_view group,
                                   std::string_view version);
// Aggregated discovery for /api (core_only) or /apis; `api_version` is "apidiscovery.k8s.io/v2"
// or "apidiscovery.k8s.io/v2beta1".
std::string aggregated_discovery_json(const std::vector<ResourceInfo>& resources, bool core_only,
                                      std::string_view api_version);

}  // namespace unitrain::localcluster
