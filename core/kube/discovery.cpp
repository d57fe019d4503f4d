#include "core/kube/discovery.h"

#include <fmt/format.h>

namespace unitrain::kube {
namespace {

std::string gv_key(std::string_view group, std::string_view version) {
  return group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version);
}

ApiError not_found(std::string message) {
  ApiError e;
  e.reason = ApiError::Reason::NotFound;
  e.message = std::move(message);
  return e;
}

ApiError bad_response(std::string message) {
  ApiError e;
  e.reason = ApiError::Reason::BadResponse;
  e.message = std::move(message);
  return e;
}

}  // namespace

Result<std::vector<ApiResourceInfo>> parse_api_resource_list(const json::Value& list, std::string_view group,
                                                             std::string_view version) {
  const json::Value* resources = json::find(list, "/resources");
  if (!resources || !resources->IsArray())
    return fail(fmt::format("APIResourceList {}: \"resources\" missing or not a list", gv_key(group, version)));
  std::vector<ApiResourceInfo> out;
  std::vector<std::pair<std::string, std::string>> subs;
  rapidjson::SizeType i = 0;
  for (const auto& r : resources->GetArray()) {
    const auto idx = i++;
    auto name = json::get_string(r, "/name");
    if (!name || name->empty())
      return fail(fmt::format("APIResourceList {}: resources[{}].name missing", gv_key(group, version), idx));
    if (auto slash = name->find('/'); slash != std::string_view::npos) {
      subs.emplace_back(std::string(name->substr(0, slash)), std::string(name->substr(slash + 1)));
      continue;
    }
    ApiResourceInfo info;
    // A resource may live in another group version than the list it is listed in.
    info.gvr.group = std::string(json::get_string(r, "/group").value_or(group));
    info.gvr.version = std::string(json::get_string(r, "/version").value_or(version));
    info.gvr.resource = std::string(*name);
    info.kind = std::string(json::get_string(r, "/kind").value_or(""));
    info.namespaced = json::get_bool(r, "/namespaced").value_or(false);
    if (const json::Value* verbs = json::find(r, "/verbs"); verbs && verbs->IsArray())
      for (const auto& v : verbs->GetArray())
        if (v.IsString()) info.verbs.emplace_back(v.GetString(), v.GetStringLength());
    out.push_back(std::move(info));
  }
  for (auto& [parent, sub] : subs)
    for (auto& info : out)
      if (info.gvr.resource == parent) info.subresources.push_back(sub);
  return out;
}

ApiResult<std::vector<ApiResourceInfo>> Discovery::resources_of(const std::string& group, const std::string& version,
                                                                bool refresh) {
  const std::string key = gv_key(group, version);
  if (!refresh) {
    std::lock_guard lock(mu_);
    if (auto it = by_group_version_.find(key); it != by_group_version_.end()) return it->second;
  }
  const std::string path = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  auto doc = get_(path);
  if (!doc) {
    if (doc.error().is(ApiError::Reason::NotFound)) {
      std::lock_guard lock(mu_);
      by_group_version_.erase(key);
      return fail(not_found(fmt::format("the server does not serve {}", key)));
    }
    return fail(std::move(doc.error()));
  }
  auto parsed = parse_api_resource_list(doc->root(), group, version);
  if (!parsed) return fail(bad_response(parsed.error().message));
  std::lock_guard lock(mu_);
  by_group_version_[key] = *parsed;
  return std::move(*parsed);
}

ApiResult<ApiResourceInfo> Discovery::resource_for(const GroupVersionKind& gvk) {
  for (bool refresh : {false, true}) {
    auto list = resources_of(gvk.group, gvk.version, refresh);
    if (!list) return fail(std::move(list.error()));
    for (const auto& info : *list)
      if (info.kind == gvk.kind) return info;
  }
  return fail(not_found(fmt::format("no resource serves kind {} in {}", gvk.kind, gvk.group_version())));
}

ApiResult<ApiResourceInfo> Discovery::info_for(const GroupVersionResource& gvr) {
  for (bool refresh : {false, true}) {
    auto list = resources_of(gvr.group, gvr.version, refresh);
    if (!list) return fail(std::move(list.error()));
    for (const auto& info : *list)
      if (info.gvr.resource == gvr.resource) return info;
  }
  return fail(not_found(fmt::format("the server does not serve {} in {}", gvr.resource, gv_key(gvr.group, gvr.version))));
}

ApiResult<bool> Discovery::load_groups_locked() {
  if (group_versions_) return true;
  std::vector<std::string> gvs;
  std::map<std::string, std::string> preferred;
  auto core = get_("/api");
  if (!core) return fail(std::move(core.error()));
  if (const json::Value* v = json::find(core->root(), "/versions"); v && v->IsArray())
    for (const auto& s : v->GetArray())
      if (s.IsString()) gvs.emplace_back(s.GetString(), s.GetStringLength());
  if (!gvs.empty()) preferred[""] = gvs.front();
  auto groups = get_("/apis");
  if (!groups) return fail(std::move(groups.error()));
  const json::Value* list = json::find(groups->root(), "/groups");
  if (!list || !list->IsArray()) return fail(bad_response("/apis: \"groups\" missing or not a list"));
  for (const auto& g : list->GetArray()) {
    auto name = json::get_string(g, "/name");
    if (!name) continue;
    if (auto pv = json::get_string(g, "/preferredVersion/version")) preferred[std::string(*name)] = std::string(*pv);
    if (const json::Value* versions = json::find(g, "/versions"); versions && versions->IsArray())
      for (const auto& v : versions->GetArray())
        if (auto gv = json::get_string(v, "/groupVersion")) gvs.emplace_back(*gv);
  }
  group_versions_ = std::move(gvs);
  preferred_ = std::move(preferred);
  return true;
}

ApiResult<std::vector<std::string>> Discovery::group_versions() {
  std::lock_guard lock(mu_);
  auto ok = load_groups_locked();
  if (!ok) return fail(std::move(ok.error()));
  return *group_versions_;
}

ApiResult<std::string> Discovery::preferred_version(std::string_view group) {
  std::lock_guard lock(mu_);
  for (int pass = 0; pass < 2; ++pass) {
    auto ok = load_groups_locked();
    if (!ok) return fail(std::move(ok.error()));
    if (auto it = preferred_.find(std::string(group)); it != preferred_.end()) return it->second;
    group_versions_.reset();  // a group added since the last fetch
  }
  return fail(not_found(fmt::format("the server does not serve API group \"{}\"", group)));
}

void Discovery::invalidate() {
  std::lock_guard lock(mu_);
  by_group_version_.clear();
  group_versions_.reset();
  preferred_.clear();
}

void Discovery::invalidate(std::string_view group, std::string_view version) {
  std::lock_guard lock(mu_);
  by_group_version_.erase(gv_key(group, version));
}

}  // namespace unitrain::kube
