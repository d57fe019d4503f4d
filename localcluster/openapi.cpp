#include "localcluster/openapi.h"

#include <fmt/format.h>

#include "localcluster/builtin_types.h"
#include "localcluster/protobuf_wire.h"

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

using ParamBuilder = Value (*)(std::string_view name, std::string_view in, json::Allocator& a);

// One operation of a path; `param` writes a parameter in the document's OpenAPI version.
Value operation(const ResourceInfo& r, std::string_view action, bool writes, json::Allocator& a,
                ParamBuilder param_of = param) {
  Value op(rapidjson::kObjectType);
  op.AddMember("operationId", json::str(fmt::format("{}{}{}", action, r.kind, r.version), a), a);
  Value params(rapidjson::kArrayType);
  if (writes) {
    params.PushBack(param_of("dryRun", "query", a), a);
    params.PushBack(param_of("fieldManager", "query", a), a);
    params.PushBack(param_of("fieldValidation", "query", a), a);
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

// A CRD version's schema as a definition: kubectl explain finds the kind through
// x-kubernetes-group-version-kind and expects the standard fields.
Value crd_definition(const OpenApiResource& res, json::Allocator& a) {
  const ResourceInfo& r = res.info;
  Value s = json::clone(res.schema.root(), a);
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
  return s;
}

// A built-in kind's schema and every schema it reaches, from the generated protobuf tables; the
// kind's own carries x-kubernetes-group-version-kind, which kubectl explain looks it up by.
// False for a kind outside the tables.
bool add_builtin_definitions(const ResourceInfo& r, OpenApiVersion version, Value& definitions, json::Allocator& a) {
  const proto::Message* m = builtin_message(r.api_version(), r.kind);
  if (m == nullptr) return false;
  add_openapi_definitions(*m, version, definitions, a);
  Value& def = definitions.FindMember(openapi_definition_name(*m).c_str())->value;
  if (!def.HasMember("x-kubernetes-group-version-kind")) {
    Value list(rapidjson::kArrayType);
    list.PushBack(gvk(r, a), a);
    def.AddMember("x-kubernetes-group-version-kind", list, a);
  }
  return true;
}

// ---- OpenAPI v2 ----

Value v2_param(std::string_view name, std::string_view in, json::Allocator& a) {
  Value p(rapidjson::kObjectType);
  p.AddMember("name", json::str(name, a), a);
  p.AddMember("in", json::str(in, a), a);
  p.AddMember("type", "string", a);
  if (in == "path") p.AddMember("required", true, a);
  else p.AddMember("uniqueItems", true, a);
  return p;
}

Value v2_operation(const ResourceInfo& r, std::string_view action, bool writes, json::Allocator& a) {
  return operation(r, action, writes, a, v2_param);
}

// What OpenAPI v2 cannot say about a structural schema is left out, as kube-apiserver publishes
// CRD schemas in v2: no nullable, oneOf/anyOf/not, defaults; an int-or-string has no type.
void to_v2_schema(Value& s) {
  if (!s.IsObject()) return;
  for (const char* k : {"nullable", "oneOf", "anyOf", "not", "allOf", "default", "example"}) s.RemoveMember(k);
  if (auto* ios = json::find(s, "/x-kubernetes-int-or-string"); ios != nullptr && ios->IsTrue()) s.RemoveMember("type");
  if (auto it = s.FindMember("properties"); it != s.MemberEnd() && it->value.IsObject()) {
    for (auto& p : it->value.GetObject()) to_v2_schema(p.value);
  }
  if (auto it = s.FindMember("items"); it != s.MemberEnd()) to_v2_schema(it->value);
  if (auto it = s.FindMember("additionalProperties"); it != s.MemberEnd()) to_v2_schema(it->value);
}

// ---- gnostic openapi_v2.Document, field numbers of github.com/google/gnostic's OpenAPIv2.proto ----

// A vendor extension or enum value: gnostic's Any carries it as YAML, and JSON is YAML.
std::string any_yaml(const Value& v) {
  proto::WireWriter any;
  any.bytes(2, json::dump(v));
  return any.data();
}

std::string named_any(std::string_view name, const Value& v) {
  proto::WireWriter w;
  w.bytes(1, name);
  w.bytes(2, any_yaml(v));
  return w.data();
}

std::string schema_pb(const Value& s) {
  proto::WireWriter w;
  if (!s.IsObject()) return w.data();
  const auto text = [&](const char* key, uint32_t number) {
    if (auto v = json::get_string(s, std::string("/") + key)) w.bytes(number, *v);
  };
  const auto number_of = [&](const char* key, uint32_t number) {
    auto it = s.FindMember(key);
    if (it != s.MemberEnd() && it->value.IsNumber()) w.double_value(number, it->value.GetDouble());
  };
  const auto integer_of = [&](const char* key, uint32_t number) {
    auto it = s.FindMember(key);
    if (it != s.MemberEnd() && it->value.IsInt64()) w.varint(number, static_cast<uint64_t>(it->value.GetInt64()));
  };
  const auto flag = [&](const char* key, uint32_t number) {
    auto it = s.FindMember(key);
    if (it != s.MemberEnd() && it->value.IsBool() && it->value.GetBool()) w.boolean(number, true);
  };
  text("$ref", 1);
  text("format", 2);
  text("title", 3);
  text("description", 4);
  number_of("multipleOf", 6);
  number_of("maximum", 7);
  flag("exclusiveMaximum", 8);
  number_of("minimum", 9);
  flag("exclusiveMinimum", 10);
  integer_of("maxLength", 11);
  integer_of("minLength", 12);
  text("pattern", 13);
  integer_of("maxItems", 14);
  integer_of("minItems", 15);
  flag("uniqueItems", 16);
  integer_of("maxProperties", 17);
  integer_of("minProperties", 18);
  if (auto* req = json::find(s, "/required"); req != nullptr && req->IsArray()) {
    for (const auto& r : req->GetArray()) {
      if (r.IsString()) w.bytes(19, std::string_view(r.GetString(), r.GetStringLength()));
    }
  }
  if (auto* e = json::find(s, "/enum"); e != nullptr && e->IsArray()) {
    for (const auto& v : e->GetArray()) w.bytes(20, any_yaml(v));
  }
  if (auto it = s.FindMember("additionalProperties"); it != s.MemberEnd()) {
    proto::WireWriter item;
    if (it->value.IsObject()) item.bytes(1, schema_pb(it->value));
    else if (it->value.IsBool()) item.boolean(2, it->value.GetBool());
    w.bytes(21, item.data());
  }
  if (auto t = json::get_string(s, "/type")) {
    proto::WireWriter type;
    type.bytes(1, *t);
    w.bytes(22, type.data());
  }
  if (auto it = s.FindMember("items"); it != s.MemberEnd() && it->value.IsObject()) {
    proto::WireWriter items;
    items.bytes(1, schema_pb(it->value));
    w.bytes(23, items.data());
  }
  if (auto it = s.FindMember("properties"); it != s.MemberEnd() && it->value.IsObject()) {
    proto::WireWriter props;
    for (const auto& p : it->value.GetObject()) {
      proto::WireWriter named;
      named.bytes(1, std::string_view(p.name.GetString(), p.name.GetStringLength()));
      named.bytes(2, schema_pb(p.value));
      props.bytes(1, named.data());
    }
    w.bytes(25, props.data());
  }
  for (const auto& m : s.GetObject()) {
    std::string_view key(m.name.GetString(), m.name.GetStringLength());
    if (key.starts_with("x-")) w.bytes(31, named_any(key, m.value));
  }
  return w.data();
}

std::string parameter_pb(const Value& p) {
  const bool path = json::get_string(p, "/in").value_or("") == "path";
  proto::WireWriter sub;  // QueryParameterSubSchema or PathParameterSubSchema
  if (json::get_bool(p, "/required").value_or(false)) sub.boolean(1, true);
  sub.bytes(2, json::get_string(p, "/in").value_or(""));
  sub.bytes(4, json::get_string(p, "/name").value_or(""));
  sub.bytes(path ? 5 : 6, json::get_string(p, "/type").value_or("string"));
  if (json::get_bool(p, "/uniqueItems").value_or(false)) sub.boolean(path ? 19 : 20, true);
  proto::WireWriter non_body;
  non_body.bytes(path ? 4 : 3, sub.data());
  proto::WireWriter parameter;
  parameter.bytes(2, non_body.data());
  proto::WireWriter item;  // ParametersItem
  item.bytes(1, parameter.data());
  return item.data();
}

std::string operation_pb(const Value& op) {
  proto::WireWriter w;
  if (auto id = json::get_string(op, "/operationId")) w.bytes(5, *id);
  if (auto* ps = json::find(op, "/parameters"); ps != nullptr && ps->IsArray()) {
    for (const auto& p : ps->GetArray()) w.bytes(8, parameter_pb(p));
  }
  proto::WireWriter responses;
  if (auto* rs = json::find(op, "/responses"); rs != nullptr && rs->IsObject()) {
    for (const auto& r : rs->GetObject()) {
      proto::WireWriter response;
      response.bytes(1, json::get_string(r.value, "/description").value_or(""));
      proto::WireWriter value;
      value.bytes(1, response.data());
      proto::WireWriter named;
      named.bytes(1, std::string_view(r.name.GetString(), r.name.GetStringLength()));
      named.bytes(2, value.data());
      responses.bytes(1, named.data());
    }
  }
  w.bytes(9, responses.data());
  for (const auto& m : op.GetObject()) {
    std::string_view key(m.name.GetString(), m.name.GetStringLength());
    if (key.starts_with("x-")) w.bytes(13, named_any(key, m.value));
  }
  return w.data();
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
      schemas.AddMember(json::str(definition_name(r), a), crd_definition(res, a), a);
    } else {
      add_builtin_definitions(r, OpenApiVersion::V3, schemas, a);
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

namespace unitrain::localcluster {

json::Document openapi_v2_document(const std::vector<OpenApiResource>& resources, std::string_view version) {
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  d.root().AddMember("swagger", "2.0", a);
  Value info(rapidjson::kObjectType);
  info.AddMember("title", "Kubernetes", a);
  info.AddMember("version", json::str(version, a), a);
  d.root().AddMember("info", info, a);
  Value paths(rapidjson::kObjectType);
  Value definitions(rapidjson::kObjectType);
  for (const auto& res : resources) {
    const ResourceInfo& r = res.info;
    std::string base = "/" + openapi_gv_path(r.group, r.version) + "/";
    std::string collection = base + (r.namespaced ? "namespaces/{namespace}/" : "") + r.resource;
    Value coll(rapidjson::kObjectType);
    coll.AddMember("get", v2_operation(r, "list", false, a), a);
    coll.AddMember("post", v2_operation(r, "post", true, a), a);
    Value coll_params(rapidjson::kArrayType);
    if (r.namespaced) coll_params.PushBack(v2_param("namespace", "path", a), a);
    coll.AddMember("parameters", coll_params, a);
    Value one(rapidjson::kObjectType);
    one.AddMember("get", v2_operation(r, "get", false, a), a);
    one.AddMember("put", v2_operation(r, "put", true, a), a);
    one.AddMember("patch", v2_operation(r, "patch", true, a), a);
    one.AddMember("delete", v2_operation(r, "delete", false, a), a);
    Value one_params(rapidjson::kArrayType);
    one_params.PushBack(v2_param("name", "path", a), a);
    if (r.namespaced) one_params.PushBack(v2_param("namespace", "path", a), a);
    one.AddMember("parameters", one_params, a);
    paths.AddMember(json::str(collection, a), coll, a);
    paths.AddMember(json::str(collection + "/{name}", a), one, a);
    Value def;
    if (res.schema.root().IsObject()) {
      def = crd_definition(res, a);
      to_v2_schema(def);
    } else if (add_builtin_definitions(r, OpenApiVersion::V2, definitions, a)) {
      continue;
    } else {
      // A built-in kind outside the protobuf tables carries no schema: no type, so clients treat it
      // as arbitrary JSON (kubectl validates it on the server, with fieldValidation).
      def.SetObject();
      def.AddMember("description", json::str(r.kind + " (schema not published by the local cluster)", a), a);
      Value list(rapidjson::kArrayType);
      list.PushBack(gvk(r, a), a);
      def.AddMember("x-kubernetes-group-version-kind", list, a);
    }
    definitions.AddMember(json::str(definition_name(r), a), def, a);
  }
  d.root().AddMember("paths", paths, a);
  d.root().AddMember("definitions", definitions, a);
  return d;
}

std::string openapi_v2_protobuf(const json::Value& doc) {
  proto::WireWriter w;
  w.bytes(1, json::get_string(doc, "/swagger").value_or("2.0"));
  proto::WireWriter info;
  info.bytes(1, json::get_string(doc, "/info/title").value_or(""));
  info.bytes(2, json::get_string(doc, "/info/version").value_or(""));
  w.bytes(2, info.data());
  proto::WireWriter paths;
  if (auto* ps = json::find(doc, "/paths"); ps != nullptr && ps->IsObject()) {
    for (const auto& p : ps->GetObject()) {
      proto::WireWriter item;  // PathItem: get 2, put 3, post 4, delete 5, patch 8, parameters 9
      static constexpr std::pair<const char*, uint32_t> kOperations[] = {
          {"get", 2}, {"put", 3}, {"post", 4}, {"delete", 5}, {"patch", 8}};
      for (auto [verb, number] : kOperations) {
        auto it = p.value.FindMember(verb);
        if (it != p.value.MemberEnd() && it->value.IsObject()) item.bytes(number, operation_pb(it->value));
      }
      if (auto it = p.value.FindMember("parameters"); it != p.value.MemberEnd() && it->value.IsArray()) {
        for (const auto& param : it->value.GetArray()) item.bytes(9, parameter_pb(param));
      }
      proto::WireWriter named;
      named.bytes(1, std::string_view(p.name.GetString(), p.name.GetStringLength()));
      named.bytes(2, item.data());
      paths.bytes(2, named.data());
    }
  }
  w.bytes(8, paths.data());
  proto::WireWriter definitions;
  if (auto* ds = json::find(doc, "/definitions"); ds != nullptr && ds->IsObject()) {
    for (const auto& def : ds->GetObject()) {
      proto::WireWriter named;
      named.bytes(1, std::string_view(def.name.GetString(), def.name.GetStringLength()));
      named.bytes(2, schema_pb(def.value));
      definitions.bytes(1, named.data());
    }
  }
  w.bytes(9, definitions.data());
  return w.data();
}

}  // namespace unitrain::localcluster
