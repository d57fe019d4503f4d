// What the local cluster knows about one served resource (group, version, plural): what discovery
// publishes and what the store, the router and the webhooks need to serve it.
#pragma once

#include <string>
#include <vector>

namespace unitrain::localcluster {

struct ResourceInfo {
  std::string group;        // "" for core
  std::string version;      // "v1"
  std::string resource;     // plural: "pods"
  std::string singular;     // "pod"
  std::string kind;         // "Pod"
  std::string list_kind;    // "PodList"
  bool namespaced = true;
  bool has_status = false;  // status subresource
  bool has_scale = false;   // scale subresource (CRDs that declare one, apps/v1 workloads)
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<std::string> verbs;  // create delete deletecollection get list patch update watch
  // Custom resources: the version objects are stored at, and whether other versions are
  // converted by the CRD's conversion webhook (strategy Webhook) rather than by relabelling.
  std::string storage_version;
  bool conversion_webhook = false;
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
};

}  // namespace unitrain::localcluster
