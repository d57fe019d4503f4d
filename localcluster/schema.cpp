#include "localcluster/schema.h"

#include <cmath>
#include <cstdio>
#include <regex>

namespace unitrain::localcluster {
namespace {

using json::Value;

bool flag(const Value& schema, const char* name) {
  auto it = schema.FindMember(name);
  return it != schema.MemberEnd() && it->value.IsBool() && it->value.GetBool();
}

const Value* member(const Value& v, const char* name) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(name);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

std::string string_of(const Value* v) {
  return (v != nullptr && v->IsString()) ? std::string(v->GetString(), v->GetStringLength()) : std::string();
}

// The OpenAPI type name of a JSON value, as kube-openapi reports a mismatch.
std::string type_name(const Value& v) {
  if (v.IsNull()) return "null";
  if (v.IsBool()) return "boolean";
  if (v.IsString()) return "string";
  if (v.IsArray()) return "array";
  if (v.IsObject()) return "object";
  if (v.IsInt64() || v.IsUint64()) return "integer";
  double d = v.GetDouble();
  return (std::isfinite(d) && std::floor(d) == d) ? "integer" : "number";
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

std::string number_text(double d) {
  if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 1e15) return std::to_string(static_cast<int64_t>(d));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", d);
  return buf;
}

std::string join_path(const std::string& base, std::string_view name) {
  return base.empty() ? std::string(name) : base + "." + std::string(name);
}

bool is_metadata_name(std::string_view k) { return k == "apiVersion" || k == "kind" || k == "metadata"; }

bool type_matches(const std::string& want, const Value& v, bool int_or_string) {
  if (int_or_string) return v.IsString() || type_name(v) == "integer";
  if (want.empty()) return true;
  std::string have = type_name(v);
  if (want == "number") return have == "number" || have == "integer";
  return want == have;
}

struct Validator {
  std::vector<FieldError> errors;
  // The node being checked is unchanged from its correlated old value (see ratchet_child): its
  // own errors are dropped.
  bool ratchet = false;

  void report(FieldError e) {
    if (!ratchet) errors.push_back(std::move(e));
  }

  void walk_child(const Value& v, const Value& schema, const std::string& path, RatchetState child) {
    bool saved = ratchet;
    walk(v, schema, path, child);
    ratchet = saved;
  }

  void walk(const Value& v, const Value& schema, const std::string& path, RatchetState state) {
    if (!schema.IsObject()) return;
    ratchet = state.unchanged;
    std::string type = string_of(member(schema, "type"));
    bool int_or_string = flag(schema, "x-kubernetes-int-or-string");
    if (v.IsNull()) {
      if (flag(schema, "nullable") || (type.empty() && !int_or_string)) return;
      report(invalid_value_text(path, quote("null"), path + " in body must be of type " +
                                                                    (int_or_string ? "integer-or-string" : type) +
                                                                    ": " + quote("null")));
      return;
    }
    if (!type_matches(type, v, int_or_string)) {
      std::string have = type_name(v);
      std::string want = int_or_string ? "integer,string" : type;
      report(invalid_value_text(path, quote(have),
                                          path + " in body must be of type " + want + ": " + quote(have)));
      return;
    }
    if (const Value* e = member(schema, "enum"); e != nullptr && e->IsArray() && !e->Empty()) {
      bool found = false;
      for (const Value& option : e->GetArray()) found = found || json::equal(option, v);
      if (!found) {
        std::string supported;
        for (const Value& option : e->GetArray()) {
          if (!supported.empty()) supported += ", ";
          supported += value_repr(option);
        }
        report({"FieldValueNotSupported", path,
                          "Unsupported value: " + value_repr(v) + ": supported values: " + supported});
      }
    }
    if (v.IsNumber()) check_number(v, schema, path, type);
    if (v.IsString()) check_string(v, schema, path);
    if (v.IsArray()) {
      if (const Value* mx = member(schema, "maxItems"); mx != nullptr && mx->IsNumber() &&
                                                      v.Size() > mx->GetDouble()) {
        report({"FieldValueTooMany", path,
                          "Too many: " + std::to_string(v.Size()) + ": must have at most " +
                              number_text(mx->GetDouble()) + " items"});
      }
      if (const Value* mn = member(schema, "minItems"); mn != nullptr && mn->IsNumber() &&
                                                      v.Size() < mn->GetDouble()) {
        report(invalid_value_text(path, std::to_string(v.Size()),
                                            path + " in body should have at least " + number_text(mn->GetDouble()) +
                                                " items"));
      }
      if (const Value* items = member(schema, "items")) {
        for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
          walk_child(v[i], *items, path + "[" + std::to_string(i) + "]", ratchet_item(v[i], state, schema));
        }
      }
    }
    if (v.IsObject()) check_object(v, schema, path, state);
  }

  void check_number(const Value& v, const Value& schema, const std::string& path, const std::string& type) {
    double d = v.GetDouble();
    std::string repr = value_repr(v);
    if (const Value* mn = member(schema, "minimum"); mn != nullptr && mn->IsNumber()) {
      bool excl = flag(schema, "exclusiveMinimum");
      if (excl ? d <= mn->GetDouble() : d < mn->GetDouble()) {
        report(invalid_value_text(path, repr,
                                            path + " in body should be greater than " +
                                                (excl ? "" : "or equal to ") + number_text(mn->GetDouble())));
      }
    }
    if (const Value* mx = member(schema, "maximum"); mx != nullptr && mx->IsNumber()) {
      bool excl = flag(schema, "exclusiveMaximum");
      if (excl ? d >= mx->GetDouble() : d > mx->GetDouble()) {
        report(invalid_value_text(path, repr,
                                            path + " in body should be less than " + (excl ? "" : "or equal to ") +
                                                number_text(mx->GetDouble())));
      }
    }
    if (type == "integer" && string_of(member(schema, "format")) == "int32" &&
        (d < -2147483648.0 || d > 2147483647.0)) {
      report(invalid_value_text(path, repr, path + " in body must be of type int32: " + quote(repr)));
    }
  }

  void check_string(const Value& v, const Value& schema, const std::string& path) {
    std::string_view s(v.GetString(), v.GetStringLength());
    // Lengths count Unicode code points, as Go's utf8.RuneCountInString does.
    size_t runes = 0;
    for (unsigned char c : s) runes += (c & 0xC0) != 0x80;
    if (const Value* mx = member(schema, "maxLength"); mx != nullptr && mx->IsNumber() && runes > mx->GetDouble()) {
      report({"FieldValueTooLong", path, "Too long: may not be more than " + number_text(mx->GetDouble()) +
                                                       " bytes"});
    }
    if (const Value* mn = member(schema, "minLength"); mn != nullptr && mn->IsNumber() && runes < mn->GetDouble()) {
      report(invalid_value_text(path, value_repr(v),
                                          path + " in body should be at least " + number_text(mn->GetDouble()) +
                                              " chars long"));
    }
    if (const Value* p = member(schema, "pattern"); p != nullptr && p->IsString()) {
      std::string pattern = string_of(p);
      bool ok = true;
      try {
        ok = std::regex_search(s.begin(), s.end(), std::regex(pattern, std::regex::ECMAScript));
      } catch (const std::regex_error&) {
        ok = true;  // the CRD author's pattern is not ECMAScript-compatible: do not reject data for it
      }
      if (!ok) report(invalid_value_text(path, value_repr(v), path + " in body should match '" + pattern + "'"));
    }
  }

  void check_object(const Value& v, const Value& schema, const std::string& path, RatchetState state) {
    const Value* props = member(schema, "properties");
    if (const Value* req = member(schema, "required"); req != nullptr && req->IsArray()) {
      for (const Value& name : req->GetArray()) {
        if (!name.IsString()) continue;
        if (!v.HasMember(name.GetString())) report(required_value(join_path(path, name.GetString())));
      }
    }
    const Value* additional = member(schema, "additionalProperties");
    for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
      std::string_view key(it->name.GetString(), it->name.GetStringLength());
      if (path.empty() && is_metadata_name(key)) continue;
      const Value* sub = props != nullptr ? member(*props, it->name.GetString()) : nullptr;
      if (sub == nullptr && additional != nullptr && additional->IsObject()) sub = additional;
      if (sub != nullptr) walk_child(it->value, *sub, join_path(path, key), ratchet_property(it->value, key, state, path.empty()));
    }
  }
};

}  // namespace

std::string value_repr(const Value& v) {
  if (v.IsString()) return quote(std::string_view(v.GetString(), v.GetStringLength()));
  if (v.IsNull()) return "null";
  if (v.IsBool()) return v.GetBool() ? "true" : "false";
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  if (v.IsUint64()) return std::to_string(v.GetUint64());
  if (v.IsNumber()) return number_text(v.GetDouble());
  return json::dump(v);
}

FieldError invalid_value(std::string field, const Value& value, std::string_view detail) {
  return invalid_value_text(std::move(field), value_repr(value), detail);
}

FieldError invalid_value_text(std::string field, std::string_view repr, std::string_view detail) {
  std::string d = "Invalid value: " + std::string(repr);
  if (!detail.empty()) d += ": " + std::string(detail);
  return {"FieldValueInvalid", std::move(field), std::move(d)};
}

FieldError not_supported(std::string field, std::string_view value, const std::vector<std::string>& supported) {
  std::string d = "Unsupported value: " + quote(value) + ": supported values: ";
  for (size_t i = 0; i < supported.size(); ++i) d += (i ? ", " : "") + quote(supported[i]);
  return {"FieldValueNotSupported", std::move(field), std::move(d)};
}

FieldError required_value(std::string field, std::string_view detail) {
  std::string d = "Required value";
  if (!detail.empty()) d += ": " + std::string(detail);
  return {"FieldValueRequired", std::move(field), std::move(d)};
}

FieldError forbidden(std::string field, std::string_view detail) {
  return {"FieldValueForbidden", std::move(field), "Forbidden: " + std::string(detail)};
}

namespace {

// Prunes `object`; with `removed`, also records the path of each field taken out
// ("spec.runPolicy.cleanPodPolicyy", "spec.items[0].x").
void prune_node(Value& object, const Value& schema, bool root, const std::string& path,
                std::vector<std::string>* removed) {
  if (!schema.IsObject()) return;
  bool preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
  bool embedded = flag(schema, "x-kubernetes-embedded-resource");
  if (object.IsArray()) {
    if (const Value* items = member(schema, "items")) {
      for (rapidjson::SizeType i = 0; i < object.Size(); ++i) {
        prune_node(object[i], *items, false, path + "[" + std::to_string(i) + "]", removed);
      }
    }
    return;
  }
  if (!object.IsObject()) return;
  const Value* props = member(schema, "properties");
  const Value* additional = member(schema, "additionalProperties");
  bool additional_schema = additional != nullptr && additional->IsObject();
  bool additional_any = additional != nullptr && additional->IsBool() && additional->GetBool();
  for (auto it = object.MemberBegin(); it != object.MemberEnd();) {
    std::string_view key(it->name.GetString(), it->name.GetStringLength());
    const Value* sub = props != nullptr ? member(*props, it->name.GetString()) : nullptr;
    if ((root || embedded) && is_metadata_name(key)) {
      // metadata is validated by the API machinery, not the schema; keep it whole.
      if (sub != nullptr && key != "metadata") prune_node(it->value, *sub, false, join_path(path, key), removed);
      ++it;
      continue;
    }
    if (sub == nullptr && additional_schema) sub = additional;
    if (sub != nullptr) {
      prune_node(it->value, *sub, false, join_path(path, key), removed);
      ++it;
    } else if (preserve || additional_any) {
      ++it;
    } else {
      if (removed != nullptr) removed->push_back(join_path(path, key));
      it = object.EraseMember(it);
    }
  }
}

}  // namespace

void prune(Value& object, const Value& schema, json::Allocator& alloc, bool root) {
  (void)alloc;
  prune_node(object, schema, root, "", nullptr);
}

std::vector<std::string> unknown_fields(const Value& object, const Value& schema) {
  json::Document copy = json::Document::copy_of(object);
  std::vector<std::string> removed;
  prune_node(copy.root(), schema, true, "", &removed);
  return removed;
}

void apply_defaults(Value& object, const Value& schema, json::Allocator& alloc) {
  if (!schema.IsObject()) return;
  if (object.IsArray()) {
    if (const Value* items = member(schema, "items")) {
      for (Value& item : object.GetArray()) apply_defaults(item, *items, alloc);
    }
    return;
  }
  if (!object.IsObject()) return;
  if (const Value* props = member(schema, "properties"); props != nullptr && props->IsObject()) {
    for (auto p = props->MemberBegin(); p != props->MemberEnd(); ++p) {
      const Value& sub = p->value;
      const Value* def = member(sub, "default");
      auto it = object.FindMember(p->name);
      if (it != object.MemberEnd() && it->value.IsNull() && !flag(sub, "nullable")) {
        // kube-apiserver drops nulls of non-nullable fields, then defaults them.
        object.EraseMember(it);
        it = object.MemberEnd();
      }
      if (it == object.MemberEnd()) {
        if (def == nullptr) continue;
        object.AddMember(Value(p->name, alloc), Value(*def, alloc), alloc);
        it = object.FindMember(p->name);
      }
      apply_defaults(it->value, sub, alloc);
    }
  }
  if (const Value* additional = member(schema, "additionalProperties");
      additional != nullptr && additional->IsObject()) {
    const Value* props = member(schema, "properties");
    for (auto it = object.MemberBegin(); it != object.MemberEnd(); ++it) {
      if (props != nullptr && props->HasMember(it->name)) continue;
      apply_defaults(it->value, *additional, alloc);
    }
  }
}

std::vector<FieldError> validate_schema(const Value& object, const Value& schema, const Value* old) {
  Validator v;
  v.walk(object, schema, "", ratchet_root(object, old));
  return std::move(v.errors);
}

const Value* correlated_map_list_item(const Value& item, const Value* old_list, const Value& list_schema) {
  if (old_list == nullptr || !old_list->IsArray() || !item.IsObject()) return nullptr;
  if (string_of(member(list_schema, "x-kubernetes-list-type")) != "map") return nullptr;
  const Value* keys = member(list_schema, "x-kubernetes-list-map-keys");
  if (keys == nullptr || !keys->IsArray()) return nullptr;
  for (const Value& o : old_list->GetArray()) {
    if (!o.IsObject()) continue;
    bool same = true;
    for (const Value& k : keys->GetArray()) {
      if (!k.IsString()) continue;
      const Value* a = member(item, k.GetString());
      const Value* b = member(o, k.GetString());
      if ((a == nullptr) != (b == nullptr) || (a != nullptr && !json::equal(*a, *b))) same = false;
    }
    if (same) return &o;
  }
  return nullptr;
}

RatchetState ratchet_root(const Value& object, const Value* old) {
  if (old == nullptr || old->IsNull()) return {};
  return {old, json::equal(object, *old)};
}

RatchetState ratchet_property(const Value& value, std::string_view key, RatchetState parent, bool at_root) {
  // apiVersion and kind are never ratcheted: both versions are converted to the same one.
  if (at_root && (key == "apiVersion" || key == "kind")) return {};
  if (parent.old == nullptr || !parent.old->IsObject()) return {nullptr, parent.unchanged};
  const Value name(rapidjson::StringRef(key.data(), key.size()));
  auto it = parent.old->FindMember(name);
  if (it == parent.old->MemberEnd()) return {nullptr, parent.unchanged};
  return {&it->value, json::equal(value, it->value)};
}

RatchetState ratchet_item(const Value& item, RatchetState list, const Value& list_schema) {
  if (const Value* o = correlated_map_list_item(item, list.old, list_schema)) return {o, json::equal(item, *o)};
  return {nullptr, list.unchanged};
}

bool schema_has_defaults(const Value& schema) {
  if (schema.IsArray()) {
    for (const Value& v : schema.GetArray()) {
      if (schema_has_defaults(v)) return true;
    }
    return false;
  }
  if (!schema.IsObject()) return false;
  for (auto it = schema.MemberBegin(); it != schema.MemberEnd(); ++it) {
    std::string_view key(it->name.GetString(), it->name.GetStringLength());
    if (key == "default") return true;
    if (key == "enum" || key == "example") continue;
    if (schema_has_defaults(it->value)) return true;
  }
  return false;
}

}  // namespace unitrain::localcluster
