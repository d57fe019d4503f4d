// Kubernetes REST paths: /api/<v>/..., /apis/<g>/<v>/..., with or without namespaces/<ns>/, the
// legacy /watch/ prefix, an object name and a subresource, resolved against what the store serves.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "localcluster/store.h"

namespace unitrain::localcluster {

struct ResourceRoute {
  ResourceInfo info;
  std::string ns;
  std::string name;
  std::string subresource;
  bool legacy_watch = false;  // /api/v1/watch/... paths
};

// Whether decoded path segments address a resource (as opposed to discovery, /version, ...).
bool is_resource_path(const std::vector<std::string>& segments);
// The route of a resource path; 404 when the resource, the scope or the subresource is not served.
StoreResult<ResourceRoute> resolve_route(const Store& store, const std::vector<std::string>& segments);

// The verb kube-apiserver's metrics name a request by: GET LIST WATCH POST PUT PATCH APPLY DELETE
// DELETECOLLECTION (others: the HTTP method).
// The pods subresources that stream from a container: log, exec, attach, portforward.
bool is_pod_stream(std::string_view subresource);

std::string metrics_verb(std::string_view method, const ResourceRoute& route, bool watch, bool apply);
// Whether discovery lists `verb` for the resource (resources without a verb list allow all).
bool has_verb(const ResourceInfo& r, std::string_view verb);

}  // namespace unitrain::localcluster
