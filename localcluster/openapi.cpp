#include "localcluster/openapi.h"

#include <fmt/format.h>

namespace unitrain::localcluster {
namespace {

using json::Value;

std::string definition_name(const ResourceInfo& r) {
  // Reverse-DNS like kube's definitions: "io.unitrain.e2e.v1.Widget".
  std::string g;
  std::string_view rest = r.group;
  while (!rest.empty()) {
    size_t dot = rest.rfind('.');
    std::string_view part = dot == std::string_view::npos ? rest : rest.substr(dot + 1);
    g += (g.empty() ? "" : ".") + std::string(part);
    rest = dot == std::string_view::npos ? std::string_view{} : rest.substr(0, dot);
  }
  if (g.empty()) g = "io.k8s.api.core";
  return g + "." + r.version + "." + r.kind;
}

Value gvk(const ResourceInfo& r, json::Allocator& a) {
  Value o(rapidjson::kObjectType);
  o.AddMember("group", json::str(r.group, a), a);
  o.AddMember("version", json::str(r.version, a), a);
  o.AddMember("kind", json::str(r.kind, a), a);
  return o;
}

Value param(std::string_view name, std::string_view in, json::Allocator& a) {
  Value p(rapidjson::kObjectType);
  p.AddMember("name", json::str(name, a), a);
  p.AddMember("in", json::str(in, a), a);
  if (in == "path") p.AddMember("required", true, a);
  Value s(rapidjson::kObjectType);
  s.AddMember("type", "string", a);
  p.AddMember("schema", s, a);
  return p;
}

Value operation(const ResourceInfo& r, std::string_view action, bool field_validation, json::Allocator& a) {
  Value op(rapidjson::kObjectType);
  op.AddMember("operationId", json::str(fmt::format("{}{}{}", action, r.kind, r.version), a), a);
  Value params(rapidjson::kArrayType);
  if (field_validation) {
    params.PushBack(param("dryRun", "query", a), a);
    params.PushBack(param("fieldManager", "query", a), a);
    params.PushBack(param("fieldValidation", "query", a), a);
  }
  op.AddMember("parameters", params, a);
  Value responses(rapidjson::kObjectType);
  Value ok(rapidjson::kObjectType);
  ok.AddMember("description", "OK", a);
  responses.AddMember("200", ok, a);
  op.AddMember("responses", responses, a);
  op.AddMember("x-kubernetes-action", json::str(action, a), a);
  op.AddMember("x-kubernetes-group-version-kind", gvk(r, a), a);
  return op;
}

}  // namespace

std::string openapi_gv_path(std::string_view group, std::string_view version) {
  return group.empty() ? "api/" + std::string(version) : "apis/" + std::string(group) + "/" + std::string(version);
}

std::string content_hash(std::string_view text) {
  // FNV-1a, 64 bit: only needs to change when the document does.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016X}", h);
}

std::string openapi_v3_group_version(const std::vector<OpenApiResource>& resources) {
  if (resources.empty()) return {};
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  d.root().AddMember("openapi", "3.0.0", a);
  Value info(rapidjson::kObjectType);
  info.AddMember("title", "Kubernetes", a);
  info.AddMember("version", "unversioned", a);
  d.root().AddMember("info", info, a);
  Value paths(rapidjson::kObjectType);
  Value schemas(rapidjson::kObjectType);
  for (const auto& res : resources) {
    const ResourceInfo& r = res.info;
    std::string base = "/" + openapi_gv_path(r.group, r.version) + "/";
    std::string collection = base + (r.namespaced ? "namespaces/{namespace}/" : "") + r.resource;
    std::string item = collection + "/{name}";
    Value coll(rapidjson::kObjectType);
    coll.AddMember("get", operation(r, "list", false, a), a);
    coll.AddMember("post", operation(r, "post", true, a), a);
    paths.AddMember(json::str(collection, a), coll, a);
    Value one(rapidjson::kObjectType);
    one.AddMember("get", operation(r, "get", false, a), a);
    one.AddMember("put", operation(r, "put", true, a), a);
    one.AddMember("patch", operation(r, "patch", true, a), a);
    one.AddMember("delete", operation(r, "delete", false, a), a);
    paths.AddMember(json::str(item, a), one, a);
    if (res.schema.root().IsObject()) {
      Value s = json::clone(res.schema.root(), a);
      // kubectl explain finds the kind through this extension and expects the standard fields.
      if (!s.HasMember("type")) s.AddMember("type", "object", a);
      if (!s.HasMember("properties")) s.AddMember("properties", Value(rapidjson::kObjectType), a);
      auto& props = s["properties"];
      if (props.IsObject()) {
        auto add_string = [&](const char* name, const char* desc) {
          if (props.HasMember(name)) return;
          Value p(rapidjson::kObjectType);
          p.AddMember("type", "string", a);
          p.AddMember("description", rapidjson::StringRef(desc), a);
          props.AddMember(rapidjson::StringRef(name), p, a);
        };
        add_string("apiVersion", "APIVersion defines the versioned schema of this representation of an object.");
        add_string("kind", "Kind is a string value representing the REST resource this object represents.");
        if (!props.HasMember("metadata")) {
          Value m(rapidjson::kObjectType);
          m.AddMember("type", "object", a);
          m.AddMember("description", "Standard object's metadata.", a);
          props.AddMember("metadata", m, a);
        }
      }
      Value list(rapidjson::kArrayType);
      list.PushBack(gvk(r, a), a);
      s.RemoveMember("x-kubernetes-group-version-kind");
      s.AddMember("x-kubernetes-group-version-kind", list, a);
      schemas.AddMember(json::str(definition_name(r), a), s, a);
    }
  }
  d.root().AddMember("paths", paths, a);
  Value components(rapidjson::kObjectType);
  components.AddMember("schemas", schemas, a);
  d.root().AddMember("components", components, a);
  return d.dump();
}

std::string openapi_v3_root(const std::map<std::string, std::string>& hashes) {
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  Value paths(rapidjson::kObjectType);
  for (const auto& [gv, hash] : hashes) {
    Value e(rapidjson::kObjectType);
    e.AddMember("serverRelativeURL", json::str("/openapi/v3/" + gv + "?hash=" + hash, a), a);
    paths.AddMember(json::str(gv, a), e, a);
  }
  d.root().AddMember("paths", paths, a);
  return d.dump();
}

}  // namespace unitrain::localcluster
