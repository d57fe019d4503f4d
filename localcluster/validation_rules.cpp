#include "localcluster/validation_rules.h"

#include <algorithm>
#include <map>

#include "localcluster/cel.h"

namespace unitrain::localcluster {
namespace {

using json::Value;

const Value* rule_member(const Value& v, const char* name) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(name);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

std::string rule_text(const Value& v, const char* name) {
  const Value* m = rule_member(v, name);
  return (m != nullptr && m->IsString()) ? std::string(m->GetString(), m->GetStringLength()) : std::string();
}

std::string trim_space(std::string s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string child_path(const std::string& base, std::string_view name) {
  return base.empty() ? std::string(name) : base + "." + std::string(name);
}

// A rule's fieldPath (".a.b", ".a['x.y']") appended to `base` as field.Path children.
std::string with_rule_field_path(std::string base, std::string_view field_path) {
  size_t i = 0;
  while (i < field_path.size()) {
    if (field_path[i] == '.') {
      size_t end = field_path.find_first_of(".[", i + 1);
      base = child_path(base, field_path.substr(i + 1, end == std::string_view::npos ? std::string_view::npos
                                                                                      : end - i - 1));
      i = end == std::string_view::npos ? field_path.size() : end;
    } else if (field_path.compare(i, 2, "['") == 0) {
      size_t end = field_path.find("']", i + 2);
      if (end == std::string_view::npos) break;
      base = child_path(base, field_path.substr(i + 2, end - i - 2));
      i = end + 2;
    } else {
      break;
    }
  }
  return base;
}

std::string schema_type(const Value& schema) { return rule_text(schema, "type"); }

struct RuleWalker {
  std::vector<FieldError> errors;

  void walk(const Value& v, const Value* old, const Value& schema, const std::string& path, RatchetState ratchet) {
    if (!schema.IsObject() || v.IsNull()) return;
    if (old != nullptr && old->IsNull()) old = nullptr;
    if (const Value* rules = rule_member(schema, "x-kubernetes-validations"); rules != nullptr && rules->IsArray()) {
      for (const Value& rule : rules->GetArray()) evaluate(rule, v, old, schema, path, ratchet.unchanged);
    }
    if (v.IsObject()) {
      const Value* props = rule_member(schema, "properties");
      const Value* additional = rule_member(schema, "additionalProperties");
      for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
        const Value* sub = props != nullptr ? rule_member(*props, it->name.GetString()) : nullptr;
        if (sub == nullptr && additional != nullptr && additional->IsObject()) sub = additional;
        if (sub == nullptr) continue;
        const Value* old_child = nullptr;
        if (old != nullptr && old->IsObject()) {
          auto o = old->FindMember(it->name);
          if (o != old->MemberEnd()) old_child = &o->value;
        }
        std::string_view key(it->name.GetString(), it->name.GetStringLength());
        std::string next = (sub == additional && (props == nullptr || !props->HasMember(it->name)))
                               ? path + "[" + std::string(key) + "]"
                               : child_path(path, key);
        walk(it->value, old_child, *sub, next, ratchet_property(it->value, key, ratchet, path.empty()));
      }
    } else if (v.IsArray()) {
      const Value* items = rule_member(schema, "items");
      if (items == nullptr) return;
      for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
        walk(v[i], correlated_item(v[i], old, schema), *items, path + "[" + std::to_string(i) + "]",
             ratchet_item(v[i], ratchet, schema));
      }
    }
  }

  // The old list item that corresponds to `item`: same map keys (listType map) or an equal
  // value (listType set); atomic lists have none.
  static const Value* correlated_item(const Value& item, const Value* old, const Value& schema) {
    if (old == nullptr || !old->IsArray()) return nullptr;
    std::string list_type = rule_text(schema, "x-kubernetes-list-type");
    if (list_type == "set") {
      for (const Value& o : old->GetArray()) {
        if (json::equal(o, item)) return &o;
      }
      return nullptr;
    }
    return correlated_map_list_item(item, old, schema);
  }

  // `unchanged`: the value equals its correlated old value, so a false result of a rule that does
  // not use oldSelf is ratcheted away (kube-apiserver turns it into a warning, which the local
  // cluster does not send).
  void evaluate(const Value& rule, const Value& v, const Value* old, const Value& schema, const std::string& path,
                bool unchanged) {
    std::string source = rule_text(rule, "rule");
    if (trim_space(source).empty()) return;
    std::string message = trim_space(rule_text(rule, "message"));
    // kube-apiserver names a rule by its message when it has one.
    std::string rule_name = message.empty() ? trim_space(source) : message;
    std::string type = schema_type(schema);
    std::string at = path.empty() ? "<nil>" : path;
    auto program = cel::Program::parse(source);
    if (!program) {
      errors.push_back(invalid_value_text(at, "\"" + type + "\"", "rule compile error: " + program.error().full));
      return;
    }
    bool optional_old = rule_member(rule, "optionalOldSelf") != nullptr && rule_member(rule, "optionalOldSelf")->IsBool() &&
                        rule_member(rule, "optionalOldSelf")->GetBool();
    bool transition = program->references("oldSelf");
    if (transition && old == nullptr && !optional_old) return;  // nothing to compare with
    std::map<std::string, cel::Value, std::less<>> vars;
    vars["self"] = cel::from_json(v, schema);
    if (transition) {
      if (optional_old) {
        cel::OptionalValue o;
        if (old != nullptr) o.value = std::make_shared<const cel::Value>(cel::from_json(*old, schema));
        vars["oldSelf"] = cel::Value(o);
      } else {
        vars["oldSelf"] = cel::from_json(*old, schema);
      }
    }
    cel::Value result = program->evaluate(vars);
    if (result.is_error()) {
      const std::string& e = result.error();
      if (e.rfind("no such overload", 0) == 0) {
        errors.push_back(invalid_value_text(at, "\"" + type + "\"",
                                            "'" + e + "': call arguments did not match a supported operator, "
                                                      "function or macro signature for rule: " + rule_name));
      } else {
        errors.push_back(invalid_value_text(at, "\"" + type + "\"", e + " evaluating rule: " + rule_name));
      }
      return;
    }
    if (auto* b = std::get_if<bool>(&result.v); b != nullptr && *b) return;
    if (unchanged && !transition) return;  // evaluation errors above are never ratcheted

    std::string field = at;
    if (std::string fp = rule_text(rule, "fieldPath"); !fp.empty()) field = with_rule_field_path(path, fp);
    if (field.empty()) field = "<nil>";
    std::string detail = message.empty() ? "failed rule: " + trim_space(source) : message;
    if (std::string expr = rule_text(rule, "messageExpression"); !expr.empty()) {
      // A messageExpression that fails or yields no usable string falls back to the message.
      if (auto mp = cel::Program::parse(expr)) {
        cel::Value m = mp->evaluate(vars);
        if (auto* s = std::get_if<std::string>(&m.v)) {
          std::string text = trim_space(*s);
          if (!text.empty() && text.find('\n') == std::string::npos) detail = text;
        }
      }
    }
    std::string reason = rule_text(rule, "reason");
    if (reason == "FieldValueForbidden") {
      errors.push_back(forbidden(field, detail));
    } else if (reason == "FieldValueRequired") {
      errors.push_back(required_value(field, detail));
    } else if (reason == "FieldValueDuplicate") {
      errors.push_back({"FieldValueDuplicate", field, "Duplicate value: \"" + type + "\""});
    } else {
      // kube-apiserver shows the rule's schema type as the value ("object", "string"), not the data.
      errors.push_back(invalid_value_text(field, "\"" + type + "\"", detail));
    }
  }
};

void check_node(const Value& schema, const std::string& path, std::vector<FieldError>& errs) {
  if (!schema.IsObject()) return;
  if (const Value* rules = rule_member(schema, "x-kubernetes-validations"); rules != nullptr && rules->IsArray()) {
    for (rapidjson::SizeType i = 0; i < rules->Size(); ++i) {
      const Value& rule = (*rules)[i];
      std::string at = path + ".x-kubernetes-validations[" + std::to_string(i) + "]";
      for (const char* key : {"rule", "messageExpression"}) {
        std::string source = rule_text(rule, key);
        if (source.empty()) continue;
        auto p = cel::Program::parse(source);
        if (!p) {
          errs.push_back(invalid_value_text(at + "." + key, value_repr(*rule_member(rule, key)),
                                            std::string(key == std::string_view("rule") ? "compilation failed: "
                                                                                        : "messageExpression compilation failed: ") +
                                                p.error().full));
        }
      }
      if (rule_text(rule, "message").find('\n') != std::string::npos) {
        errs.push_back(invalid_value_text(at + ".message", value_repr(*rule_member(rule, "message")),
                                          "message must not contain line breaks"));
      }
      std::string reason = rule_text(rule, "reason");
      if (!reason.empty() && reason != "FieldValueInvalid" && reason != "FieldValueForbidden" &&
          reason != "FieldValueRequired" && reason != "FieldValueDuplicate") {
        errs.push_back({"FieldValueNotSupported", at + ".reason",
                        "Unsupported value: \"" + reason +
                            "\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", "
                            "\"FieldValueInvalid\", \"FieldValueRequired\""});
      }
    }
  }
  if (const Value* props = rule_member(schema, "properties"); props != nullptr && props->IsObject()) {
    for (auto it = props->MemberBegin(); it != props->MemberEnd(); ++it) {
      check_node(it->value, path + ".properties[" + std::string(it->name.GetString(), it->name.GetStringLength()) + "]",
                 errs);
    }
  }
  if (const Value* items = rule_member(schema, "items")) check_node(*items, path + ".items", errs);
  if (const Value* additional = rule_member(schema, "additionalProperties")) {
    check_node(*additional, path + ".additionalProperties", errs);
  }
}

}  // namespace

std::vector<FieldError> validate_rules(const Value& object, const Value* old, const Value& schema) {
  RuleWalker w;
  w.walk(object, old, schema, "", ratchet_root(object, old));
  return std::move(w.errors);
}

std::vector<FieldError> check_rules(const Value& schema, const std::string& path) {
  std::vector<FieldError> errs;
  check_node(schema, path, errs);
  return errs;
}

}  // namespace unitrain::localcluster
