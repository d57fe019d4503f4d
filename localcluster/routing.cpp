#include "localcluster/routing.h"

#include <algorithm>

namespace unitrain::localcluster {

bool is_resource_path(const std::vector<std::string>& segs) {
  return (segs.size() >= 3 && segs[0] == "api") || (segs.size() >= 4 && segs[0] == "apis");
}

StoreResult<ResourceRoute> resolve_route(const Store& store, const std::vector<std::string>& segs) {
  if (!is_resource_path(segs)) return fail(errors::resource_not_found());
  std::string group, version;
  size_t i;
  if (segs[0] == "api") {
    version = segs[1];
    i = 2;
  } else {
    group = segs[1];
    version = segs[2];
    i = 3;
  }
  ResourceRoute route;
  std::vector<std::string> rest(segs.begin() + static_cast<std::ptrdiff_t>(i), segs.end());
  if (!rest.empty() && rest[0] == "watch") {
    route.legacy_watch = true;
    rest.erase(rest.begin());
  }
  if (rest.size() >= 3 && rest[0] == "namespaces") {
    auto inner = store.find_resource(group, version, rest[2]);
    if (inner && inner->namespaced) {
      route.ns = rest[1];
      rest.erase(rest.begin(), rest.begin() + 2);
    }
  }
  if (rest.empty() || rest.size() > 3) return fail(errors::resource_not_found());
  auto info = store.find_resource(group, version, rest[0]);
  if (!info) return fail(errors::resource_not_found());
  route.info = std::move(*info);
  if (rest.size() >= 2) route.name = rest[1];
  if (rest.size() == 3) route.subresource = rest[2];
  if (!route.ns.empty() && !route.info.namespaced) return fail(errors::resource_not_found());
  if (!route.subresource.empty()) {
    bool ok = (route.subresource == "status" && route.info.has_status) ||
              (route.subresource == "scale" && route.info.has_scale) ||
              ((is_pod_stream(route.subresource) || route.subresource == "eviction") && route.info.group.empty() &&
               route.info.resource == "pods") ||
              (route.subresource == "token" && route.info.group.empty() && route.info.resource == "serviceaccounts");
    if (!ok) return fail(errors::resource_not_found());
  }
  return route;
}

bool is_pod_stream(std::string_view subresource) {
  return subresource == "log" || subresource == "exec" || subresource == "attach" || subresource == "portforward";
}

std::string metrics_verb(std::string_view method, const ResourceRoute& r, bool watch, bool apply) {
  if (method == "GET") {
    if (watch) return "WATCH";
    return r.name.empty() ? "LIST" : "GET";
  }
  if (method == "PATCH") return apply ? "APPLY" : "PATCH";
  if (method == "DELETE") return r.name.empty() ? "DELETECOLLECTION" : "DELETE";
  return std::string(method);  // POST, PUT and anything else
}

bool has_verb(const ResourceInfo& r, std::string_view verb) {
  return r.verbs.empty() || std::find(r.verbs.begin(), r.verbs.end(), verb) != r.verbs.end();
}

}  // namespace unitrain::localcluster
