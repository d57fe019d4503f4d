// API discovery: which resource serves a kind, whether it is namespaced, which group versions
// the server offers. Backed by /api, /apis and /apis/G/V, cached per group version. A lookup that
// misses in a cached group version refetches it once, so a CRD installed after the first lookup
// is found without an explicit invalidate().
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/kube/client.h"

namespace unitrain::kube {

struct GroupVersionKind {
  std::string group;  // "" for core
  std::string version;
  std::string kind;
  friend bool operator==(const GroupVersionKind&, const GroupVersionKind&) = default;
  // "batch/v1" or "v1"
  std::string group_version() const { return group.empty() ? version : group + "/" + version; }
};

struct ApiResourceInfo {
  GroupVersionResource gvr;
  std::string kind;
  bool namespaced = false;
  std::vector<std::string> verbs;
  std::vector<std::string> subresources;  // "status", "scale"
};

// GET of an API path, e.g. RestClient::get_path; a function so tests can serve canned documents.
using PathGetter = std::function<ApiResult<json::Document>(std::string_view path)>;

// Parses an APIResourceList ("/api/v1", "/apis/batch/v1").
Result<std::vector<ApiResourceInfo>> parse_api_resource_list(const json::Value& list, std::string_view group,
                                                             std::string_view version);

class Discovery {
 public:
  explicit Discovery(PathGetter get) : get_(std::move(get)) {}

  ApiResult<ApiResourceInfo> resource_for(const GroupVersionKind& gvk);
  ApiResult<ApiResourceInfo> info_for(const GroupVersionResource& gvr);
  // Every served group version ("v1", "batch/v1", ...), core first.
  ApiResult<std::vector<std::string>> group_versions();
  // The server's preferred version of a group.
  ApiResult<std::string> preferred_version(std::string_view group);

  void invalidate();
  void invalidate(std::string_view group, std::string_view version);

 private:
  // Returns the cached list of a group version, fetching it if absent or `refresh`.
  ApiResult<std::vector<ApiResourceInfo>> resources_of(const std::string& group, const std::string& version,
                                                       bool refresh);
  ApiResult<bool> load_groups_locked();

  PathGetter get_;
  std::mutex mu_;
  std::map<std::string, std::vector<ApiResourceInfo>> by_group_version_;
  std::optional<std::vector<std::string>> group_versions_;
  std::map<std::string, std::string> preferred_;
};

}  // namespace unitrain::kube
