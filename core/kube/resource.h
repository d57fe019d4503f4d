// A resource of the Kubernetes API by group, version and plural name: what the client addresses
// and what a framework module names when it declares the kinds it owns. A header of its own so
// that the framework contract (and the plugin SDK built on it) need not include the client.
#pragma once

#include <string>

namespace unitrain::kube {

struct GroupVersionResource {
  std::string group;     // "" for core
  std::string version;   // "v1"
  std::string resource;  // plural, lower case: "pods"
  friend bool operator==(const GroupVersionResource&, const GroupVersionResource&) = default;
  // "pods", "jobs.batch", "pytorchjobs.kubeflow.org"
  std::string group_resource() const { return group.empty() ? resource : resource + "." + group; }
};

}  // namespace unitrain::kube
