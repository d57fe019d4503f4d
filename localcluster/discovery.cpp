#include "localcluster/discovery.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <tuple>

namespace unitrain::localcluster {
namespace {

using json::Document;
using json::Value;

// (kind rank, major, minor): GA=2, beta=1, alpha=0; non-kube versions rank -1.
std::tuple<int, long, long> version_key(std::string_view v) {
  if (v.size() < 2 || v[0] != 'v') return {-1, 0, 0};
  size_t i = 1;
  long major = 0;
  auto [p, ec] = std::from_chars(v.data() + i, v.data() + v.size(), major);
  if (ec != std::errc() || p == v.data() + i) return {-1, 0, 0};
  std::string_view rest(p, static_cast<size_t>(v.data() + v.size() - p));
  if (rest.empty()) return {2, major, 0};
  int rank = -1;
  if (rest.starts_with("beta")) {
    rank = 1;
    rest.remove_prefix(4);
  } else if (rest.starts_with("alpha")) {
    rank = 0;
    rest.remove_prefix(5);
  } else {
    return {-1, 0, 0};
  }
  long minor = 0;
  auto [q, ec2] = std::from_chars(rest.data(), rest.data() + rest.size(), minor);
  if (ec2 != std::errc() || q != rest.data() + rest.size()) return {-1, 0, 0};
  return {rank, major, minor};
}

Value str(std::string_view s, json::Allocator& a) { return json::str(s, a); }

Value string_array(const std::vector<std::string>& v, json::Allocator& a) {
  Value arr(rapidjson::kArrayType);
  for (const auto& s : v) arr.PushBack(str(s, a), a);
  return arr;
}

Value group_version(std::string_view group, std::string_view version, json::Allocator& a) {
  Value gv(rapidjson::kObjectType);
  std::string name = group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version);
  gv.AddMember("groupVersion", str(name, a), a);
  gv.AddMember("version", str(version, a), a);
  return gv;
}

// Groups in first-seen order (the store lists built-ins in kube's order, CRD groups after).
std::vector<std::string> group_names(const std::vector<ResourceInfo>& resources) {
  std::vector<std::string> out;
  for (const auto& r : resources) {
    if (r.group.empty()) continue;
    if (std::find(out.begin(), out.end(), r.group) == out.end()) out.push_back(r.group);
  }
  return out;
}

Value group_object(const std::vector<ResourceInfo>& resources, const std::string& group, json::Allocator& a) {
  Value g(rapidjson::kObjectType);
  g.AddMember("name", str(group, a), a);
  Value versions(rapidjson::kArrayType);
  auto vs = group_versions(resources, group);
  for (const auto& v : vs) versions.PushBack(group_version(group, v, a), a);
  g.AddMember("versions", versions, a);
  g.AddMember("preferredVersion", group_version(group, vs.front(), a), a);
  return g;
}

Value subresource_verbs(bool with_update, json::Allocator& a) {
  std::vector<std::string> verbs = with_update ? std::vector<std::string>{"get", "patch", "update"}
                                               : std::vector<std::string>{"get"};
  return string_array(verbs, a);
}

}  // namespace

bool version_before(std::string_view a, std::string_view b) {
  auto ka = version_key(a), kb = version_key(b);
  if (std::get<0>(ka) == -1 && std::get<0>(kb) == -1) return a < b;
  return ka > kb;
}

std::vector<std::string> group_versions(const std::vector<ResourceInfo>& resources, std::string_view group) {
  std::vector<std::string> out;
  for (const auto& r : resources) {
    if (r.group != group) continue;
    if (std::find(out.begin(), out.end(), r.version) == out.end()) out.push_back(r.version);
  }
  std::sort(out.begin(), out.end(), [](const std::string& x, const std::string& y) { return version_before(x, y); });
  return out;
}

std::string api_versions_json(std::string_view server_address) {
  Document d = Document::object();
  auto& a = d.alloc();
  d.root().AddMember("kind", "APIVersions", a);
  Value versions(rapidjson::kArrayType);
  versions.PushBack("v1", a);
  d.root().AddMember("versions", versions, a);
  Value cidrs(rapidjson::kArrayType);
  Value c(rapidjson::kObjectType);
  c.AddMember("clientCIDR", "0.0.0.0/0", a);
  c.AddMember("serverAddress", str(server_address, a), a);
  cidrs.PushBack(c, a);
  d.root().AddMember("serverAddressByClientCIDRs", cidrs, a);
  return d.dump();
}

std::string api_group_list_json(const std::vector<ResourceInfo>& resources) {
  Document d = Document::object();
  auto& a = d.alloc();
  d.root().AddMember("kind", "APIGroupList", a);
  d.root().AddMember("apiVersion", "v1", a);
  Value groups(rapidjson::kArrayType);
  for (const auto& g : group_names(resources)) groups.PushBack(group_object(resources, g, a), a);
  d.root().AddMember("groups", groups, a);
  return d.dump();
}

std::string api_group_json(const std::vector<ResourceInfo>& resources, std::string_view group) {
  if (group.empty() || group_versions(resources, group).empty()) return {};
  Document d = Document::object();
  auto& a = d.alloc();
  d.root().AddMember("kind", "APIGroup", a);
  d.root().AddMember("apiVersion", "v1", a);
  Value g = group_object(resources, std::string(group), a);
  for (auto& m : g.GetObject()) d.root().AddMember(m.name, m.value, a);
  return d.dump();
}

std::string api_resource_list_json(const std::vector<ResourceInfo>& resources, std::string_view group,
                                   std::string_view version) {
  Document d = Document::object();
  auto& a = d.alloc();
  d.root().AddMember("kind", "APIResourceList", a);
  d.root().AddMember("apiVersion", "v1", a);
  std::string gv = group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version);
  d.root().AddMember("groupVersion", str(gv, a), a);
  Value list(rapidjson::kArrayType);
  bool any = false;
  for (const auto& r : resources) {
    if (r.group != group || r.version != version) continue;
    any = true;
    Value e(rapidjson::kObjectType);
    e.AddMember("name", str(r.resource, a), a);
    e.AddMember("singularName", str(r.singular, a), a);
    e.AddMember("namespaced", r.namespaced, a);
    e.AddMember("kind", str(r.kind, a), a);
    e.AddMember("verbs", string_array(r.verbs, a), a);
    if (!r.short_names.empty()) e.AddMember("shortNames", string_array(r.short_names, a), a);
    if (!r.categories.empty()) e.AddMember("categories", string_array(r.categories, a), a);
    list.PushBack(e, a);
    auto sub = [&](std::string_view name, std::string_view kind, Value verbs, std::string_view sgroup = {},
                   std::string_view sversion = {}) {
      Value s(rapidjson::kObjectType);
      s.AddMember("name", str(r.resource + "/" + std::string(name), a), a);
      s.AddMember("singularName", "", a);
      s.AddMember("namespaced", r.namespaced, a);
      if (!sgroup.empty()) {
        s.AddMember("group", str(sgroup, a), a);
        s.AddMember("version", str(sversion, a), a);
      }
      s.AddMember("kind", str(kind, a), a);
      s.AddMember("verbs", verbs, a);
      list.PushBack(s, a);
    };
    if (r.has_status) sub("status", r.kind, subresource_verbs(true, a));
    if (r.has_scale) sub("scale", "Scale", subresource_verbs(true, a), "autoscaling", "v1");
    if (r.group.empty() && r.resource == "pods") {
      sub("log", "Pod", subresource_verbs(false, a));
      // kubectl drain evicts (and so honours PodDisruptionBudgets) only where discovery lists this.
      sub("eviction", "Eviction", string_array({"create"}, a), "policy", "v1");
    }
    if (r.group.empty() && r.resource == "serviceaccounts") {
      sub("token", "TokenRequest", string_array({"create"}, a), "authentication.k8s.io", "v1");
    }
  }
  if (!any) return {};
  d.root().AddMember("resources", list, a);
  return d.dump();
}

std::string aggregated_discovery_json(const std::vector<ResourceInfo>& resources, bool core_only,
                                      std::string_view api_version) {
  Document d = Document::object();
  auto& a = d.alloc();
  d.root().AddMember("kind", "APIGroupDiscoveryList", a);
  d.root().AddMember("apiVersion", str(api_version, a), a);
  d.root().AddMember("metadata", Value(rapidjson::kObjectType), a);
  Value items(rapidjson::kArrayType);
  std::vector<std::string> groups;
  if (core_only) {
    groups.push_back("");
  } else {
    groups = group_names(resources);
  }
  auto gvk = [&](std::string_view g, std::string_view v, std::string_view k) {
    Value o(rapidjson::kObjectType);
    o.AddMember("group", str(g, a), a);
    o.AddMember("version", str(v, a), a);
    o.AddMember("kind", str(k, a), a);
    return o;
  };
  for (const auto& group : groups) {
    Value item(rapidjson::kObjectType);
    Value meta(rapidjson::kObjectType);
    if (!group.empty()) meta.AddMember("name", str(group, a), a);
    meta.AddMember("creationTimestamp", Value(), a);
    item.AddMember("metadata", meta, a);
    Value versions(rapidjson::kArrayType);
    for (const auto& version : group_versions(resources, group)) {
      Value ver(rapidjson::kObjectType);
      ver.AddMember("version", str(version, a), a);
      Value list(rapidjson::kArrayType);
      for (const auto& r : resources) {
        if (r.group != group || r.version != version) continue;
        Value e(rapidjson::kObjectType);
        e.AddMember("resource", str(r.resource, a), a);
        e.AddMember("responseKind", gvk(r.group, r.version, r.kind), a);
        e.AddMember("scope", rapidjson::StringRef(r.namespaced ? "Namespaced" : "Cluster"), a);
        e.AddMember("singularResource", str(r.singular, a), a);
        e.AddMember("verbs", string_array(r.verbs, a), a);
        if (!r.short_names.empty()) e.AddMember("shortNames", string_array(r.short_names, a), a);
        if (!r.categories.empty()) e.AddMember("categories", string_array(r.categories, a), a);
        Value subs(rapidjson::kArrayType);
        auto sub = [&](std::string_view name, Value kind, Value verbs) {
          Value s(rapidjson::kObjectType);
          s.AddMember("subresource", str(name, a), a);
          s.AddMember("responseKind", kind, a);
          s.AddMember("verbs", verbs, a);
          subs.PushBack(s, a);
        };
        if (r.has_status) sub("status", gvk(r.group, r.version, r.kind), subresource_verbs(true, a));
        if (r.has_scale) sub("scale", gvk("autoscaling", "v1", "Scale"), subresource_verbs(true, a));
        if (r.group.empty() && r.resource == "pods") {
          sub("log", gvk("", "v1", "Pod"), subresource_verbs(false, a));
          sub("eviction", gvk("policy", "v1", "Eviction"), string_array({"create"}, a));
        }
        if (r.group.empty() && r.resource == "serviceaccounts") {
          sub("token", gvk("authentication.k8s.io", "v1", "TokenRequest"), string_array({"create"}, a));
        }
        if (!subs.Empty()) e.AddMember("subresources", subs, a);
        list.PushBack(e, a);
      }
      ver.AddMember("resources", list, a);
      ver.AddMember("freshness", "Current", a);
      versions.PushBack(ver, a);
    }
    item.AddMember("versions", versions, a);
    items.PushBack(item, a);
  }
  d.root().AddMember("items", items, a);
  return d.dump();
}

}  // namespace unitrain::localcluster
