#include "localcluster/builtin_types.h"

#include <algorithm>

namespace unitrain::localcluster {
namespace {

using json::Value;
using proto::Cardinality;
using proto::FieldType;

// The field a JSON key names, looking through inlined messages (Volume's VolumeSource).
const proto::Field* field_named(const proto::Message& m, std::string_view json_name) {
  for (const auto& f : fields_of(m)) {
    if (f.inline_fields) {
      if (const proto::Field* inner = field_named(message_of(f), json_name)) return inner;
    } else if (f.name == json_name) {
      return &f;
    }
  }
  return nullptr;
}

std::string dotted_path(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

void collect_unknown(const Value& v, const proto::Message& m, const std::string& path,
                     std::vector<std::string>& out) {
  if (json_form(m) != JsonForm::Object || !v.IsObject()) return;  // wrong types are not this check's business
  for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
    const std::string_view key = json::view(it->name);
    if (key.starts_with("$")) continue;  // strategic merge patch directives
    if (m.type_meta && (key == "apiVersion" || key == "kind")) continue;
    const proto::Field* f = field_named(m, key);
    if (f == nullptr) {
      out.push_back(dotted_path(path, key));
      continue;
    }
    if (f->type != FieldType::Message) continue;
    const proto::Message& sub = message_of(*f);
    const std::string here = dotted_path(path, key);
    switch (f->cardinality) {
      case Cardinality::Single: collect_unknown(it->value, sub, here, out); break;
      case Cardinality::Repeated:
        if (it->value.IsArray()) {
          for (rapidjson::SizeType i = 0; i < it->value.Size(); ++i) {
            collect_unknown(it->value[i], sub, here + "[" + std::to_string(i) + "]", out);
          }
        }
        break;
      case Cardinality::Map:
        if (it->value.IsObject()) {
          for (auto e = it->value.MemberBegin(); e != it->value.MemberEnd(); ++e) {
            collect_unknown(e->value, sub, dotted_path(here, json::view(e->name)), out);
          }
        }
        break;
    }
  }
}

// ---- OpenAPI ----

Value type_schema(const char* type, const char* format, json::Allocator& a) {
  Value s(rapidjson::kObjectType);
  s.AddMember("type", rapidjson::StringRef(type), a);
  if (format != nullptr) s.AddMember("format", rapidjson::StringRef(format), a);
  return s;
}

// OpenAPI v3's oneOf of plain types (kube-openapi's OpenAPIV3OneOfTypes).
Value one_of(std::initializer_list<const char*> types, json::Allocator& a) {
  Value list(rapidjson::kArrayType);
  for (const char* t : types) list.PushBack(type_schema(t, nullptr, a), a);
  Value s(rapidjson::kObjectType);
  s.AddMember("oneOf", list, a);
  return s;
}

Value scalar_schema(FieldType t, json::Allocator& a) {
  switch (t) {
    case FieldType::String: return type_schema("string", nullptr, a);
    case FieldType::Bytes: return type_schema("string", "byte", a);
    case FieldType::Int32: return type_schema("integer", "int32", a);
    case FieldType::Int64: return type_schema("integer", "int64", a);
    case FieldType::Bool: return type_schema("boolean", nullptr, a);
    case FieldType::Double: return type_schema("number", "double", a);
    case FieldType::Float: return type_schema("number", "float", a);
    case FieldType::Message: break;
  }
  return Value(rapidjson::kObjectType);
}

Value ref_to(const proto::Message& m, OpenApiVersion version, json::Allocator& a) {
  Value s(rapidjson::kObjectType);
  const char* prefix = version == OpenApiVersion::V2 ? "#/definitions/" : "#/components/schemas/";
  s.AddMember("$ref", json::str(prefix + openapi_definition_name(m), a), a);
  return s;
}

Value value_schema(const proto::Field& f, OpenApiVersion version, json::Allocator& a) {
  return f.type == FieldType::Message ? ref_to(message_of(f), version, a) : scalar_schema(f.type, a);
}

// A property: the value's schema, wrapped in an array or map, with the patch extensions. A $ref
// with extensions next to it is wrapped in allOf in v3, where siblings of $ref do not count.
Value property_schema(const proto::Field& f, OpenApiVersion version, json::Allocator& a) {
  Value s;
  if (f.cardinality == Cardinality::Repeated) {
    s = type_schema("array", nullptr, a);
    s.AddMember("items", value_schema(f, version, a), a);
  } else if (f.cardinality == Cardinality::Map) {
    s = type_schema("object", nullptr, a);
    s.AddMember("additionalProperties", value_schema(f, version, a), a);
  } else {
    s = value_schema(f, version, a);
  }
  if (f.patch_strategy.empty() && f.patch_merge_key.empty()) return s;
  if (version == OpenApiVersion::V3 && s.HasMember("$ref")) {
    Value all(rapidjson::kArrayType);
    all.PushBack(s, a);
    s.SetObject();
    s.AddMember("allOf", all, a);
  }
  if (!f.patch_merge_key.empty()) s.AddMember("x-kubernetes-patch-merge-key", json::str(f.patch_merge_key, a), a);
  if (!f.patch_strategy.empty()) s.AddMember("x-kubernetes-patch-strategy", json::str(f.patch_strategy, a), a);
  return s;
}

void add_properties(const proto::Message& m, OpenApiVersion version, Value& props, json::Allocator& a) {
  for (const auto& f : fields_of(m)) {
    if (f.inline_fields) {
      add_properties(message_of(f), version, props, a);
    } else if (!props.HasMember(json::str(f.name, a))) {
      props.AddMember(json::str(f.name, a), property_schema(f, version, a), a);
    }
  }
}

Value message_schema(const proto::Message& m, OpenApiVersion version, json::Allocator& a) {
  const bool v3 = version == OpenApiVersion::V3;
  switch (json_form(m)) {
    case JsonForm::Time:
    case JsonForm::MicroTime: return type_schema("string", "date-time", a);
    case JsonForm::Duration: return type_schema("string", nullptr, a);
    case JsonForm::Quantity: return v3 ? one_of({"string", "number"}, a) : type_schema("string", nullptr, a);
    case JsonForm::IntOrString: {
      Value s = v3 ? one_of({"integer", "string"}, a) : type_schema("string", nullptr, a);
      s.AddMember("format", "int-or-string", a);
      return s;
    }
    case JsonForm::RawExtension:
    case JsonForm::FieldsV1: return type_schema("object", nullptr, a);
    case JsonForm::RawJson:
    case JsonForm::SchemaOrArray:
    case JsonForm::SchemaOrBool:
    case JsonForm::SchemaOrStringArray: return Value(rapidjson::kObjectType);  // any JSON: no type
    case JsonForm::Array: {
      Value s = type_schema("array", nullptr, a);
      s.AddMember("items", value_schema(fields_of(m)[0], version, a), a);
      return s;
    }
    case JsonForm::Object: break;
  }
  Value s = type_schema("object", nullptr, a);
  Value props(rapidjson::kObjectType);
  if (m.type_meta) {
    props.AddMember("apiVersion", type_schema("string", nullptr, a), a);
    props.AddMember("kind", type_schema("string", nullptr, a), a);
  }
  add_properties(m, version, props, a);
  s.AddMember("properties", props, a);
  return s;
}

}  // namespace

const proto::Message* find_proto_message(std::string_view name) {
  auto messages = proto::all_messages();
  auto it = std::lower_bound(messages.begin(), messages.end(), name,
                             [](const proto::Message& m, std::string_view n) { return m.name < n; });
  return it != messages.end() && it->name == name ? &*it : nullptr;
}

const proto::Message* builtin_message(std::string_view api_version, std::string_view kind) {
  for (const auto& p : proto::all_packages()) {
    if (p.api_version == api_version) return find_proto_message(std::string(p.name) + "." + std::string(kind));
  }
  return nullptr;
}

std::span<const proto::Field> fields_of(const proto::Message& m) {
  return proto::all_fields().subspan(m.first_field, m.field_count);
}

const proto::Field* field_of(const proto::Message& m, uint32_t number) {
  auto fields = fields_of(m);
  auto it = std::lower_bound(fields.begin(), fields.end(), number,
                             [](const proto::Field& f, uint32_t n) { return f.number < n; });
  return it != fields.end() && it->number == number ? &*it : nullptr;
}

const proto::Message& message_of(const proto::Field& f) { return proto::all_messages()[f.message]; }

JsonForm json_form(const proto::Message& m) {
  const std::string_view n = m.name;
  if (n == "k8s.io.apimachinery.pkg.apis.meta.v1.Time") return JsonForm::Time;
  if (n == "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime") return JsonForm::MicroTime;
  if (n == "k8s.io.apimachinery.pkg.apis.meta.v1.Duration") return JsonForm::Duration;
  if (n == "k8s.io.apimachinery.pkg.api.resource.Quantity") return JsonForm::Quantity;
  if (n == "k8s.io.apimachinery.pkg.util.intstr.IntOrString") return JsonForm::IntOrString;
  if (n == "k8s.io.apimachinery.pkg.runtime.RawExtension") return JsonForm::RawExtension;
  if (n == "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1") return JsonForm::FieldsV1;
  constexpr std::string_view kApiextensions = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.";
  if (n.starts_with(kApiextensions)) {
    const std::string_view type = n.substr(kApiextensions.size());
    if (type == "JSON") return JsonForm::RawJson;
    if (type == "JSONSchemaPropsOrArray") return JsonForm::SchemaOrArray;
    if (type == "JSONSchemaPropsOrBool") return JsonForm::SchemaOrBool;
    if (type == "JSONSchemaPropsOrStringArray") return JsonForm::SchemaOrStringArray;
  }
  // A Go slice type (ExtraValue): one repeated field "items", a JSON array.
  auto f = fields_of(m);
  if (f.size() == 1 && f[0].name == "items" && f[0].cardinality == Cardinality::Repeated) return JsonForm::Array;
  return JsonForm::Object;
}

std::vector<std::string> undeclared_message_fields(const json::Value& value, const proto::Message& m,
                                                   std::string_view path) {
  std::vector<std::string> out;
  collect_unknown(value, m, std::string(path), out);
  return out;
}

std::optional<std::string> builtin_merge_key(const proto::Message& kind, std::string_view list_path) {
  auto tokens = json::split_pointer(list_path);
  if (!tokens || tokens->empty()) return std::nullopt;
  const proto::Message* m = &kind;
  for (size_t i = 0; i < tokens->size(); ++i) {
    if (json_form(*m) != JsonForm::Object) return std::nullopt;
    const proto::Field* f = field_named(*m, (*tokens)[i]);
    if (f == nullptr) return std::nullopt;
    if (i + 1 == tokens->size()) {
      if (f->cardinality != Cardinality::Repeated || f->patch_strategy.find("merge") == std::string_view::npos) {
        return std::nullopt;
      }
      return std::string(f->patch_merge_key);
    }
    if (f->type != FieldType::Message) return std::nullopt;
    // An element of a list or the value of a map entry: its index ("*") or key is the next token.
    if (f->cardinality != Cardinality::Single) ++i;
    m = &message_of(*f);
  }
  return std::nullopt;
}

std::string openapi_definition_name(const proto::Message& m) {
  // "k8s.io.api.core.v1.Pod" -> "io.k8s.api.core.v1.Pod"
  std::string_view n = m.name;
  if (n.starts_with("k8s.io.")) return "io.k8s." + std::string(n.substr(7));
  return std::string(n);
}

void add_openapi_definitions(const proto::Message& kind, OpenApiVersion version, json::Value& definitions,
                             json::Allocator& a) {
  std::vector<const proto::Message*> stack{&kind};
  while (!stack.empty()) {
    const proto::Message* m = stack.back();
    stack.pop_back();
    std::string name = openapi_definition_name(*m);
    if (definitions.HasMember(name.c_str())) continue;
    definitions.AddMember(json::str(name, a), message_schema(*m, version, a), a);
    if (json_form(*m) != JsonForm::Object && json_form(*m) != JsonForm::Array) continue;
    for (const auto& f : fields_of(*m)) {
      if (f.type == FieldType::Message) stack.push_back(&message_of(f));
    }
  }
}

}  // namespace unitrain::localcluster
