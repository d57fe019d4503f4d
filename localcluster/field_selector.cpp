#include "localcluster/field_selector.h"

#include <utility>

namespace unitrain::localcluster {
namespace {

// field -> pointer pairs per resource, beyond metadata.name/metadata.namespace.
using FieldMap = std::vector<std::pair<std::string_view, std::string_view>>;

const FieldMap& fields_for(const ResourceInfo& r) {
  static const FieldMap none;
  static const FieldMap pods = {
      {"spec.nodeName", "/spec/nodeName"},
      {"spec.restartPolicy", "/spec/restartPolicy"},
      {"spec.schedulerName", "/spec/schedulerName"},
      {"spec.serviceAccountName", "/spec/serviceAccountName"},
      {"spec.hostNetwork", "/spec/hostNetwork"},
      {"status.phase", "/status/phase"},
      {"status.podIP", "/status/podIP"},
      {"status.nominatedNodeName", "/status/nominatedNodeName"},
  };
  static const FieldMap core_events = {
      {"involvedObject.kind", "/involvedObject/kind"},
      {"involvedObject.namespace", "/involvedObject/namespace"},
      {"involvedObject.name", "/involvedObject/name"},
      {"involvedObject.uid", "/involvedObject/uid"},
      {"involvedObject.apiVersion", "/involvedObject/apiVersion"},
      {"involvedObject.resourceVersion", "/involvedObject/resourceVersion"},
      {"involvedObject.fieldPath", "/involvedObject/fieldPath"},
      {"reason", "/reason"},
      {"reportingComponent", "/reportingComponent"},
      {"source", "/source/component"},
      {"type", "/type"},
  };
  static const FieldMap new_events = {
      {"regarding.kind", "/regarding/kind"},
      {"regarding.namespace", "/regarding/namespace"},
      {"regarding.name", "/regarding/name"},
      {"regarding.uid", "/regarding/uid"},
      {"regarding.apiVersion", "/regarding/apiVersion"},
      {"regarding.resourceVersion", "/regarding/resourceVersion"},
      {"regarding.fieldPath", "/regarding/fieldPath"},
      {"reason", "/reason"},
      {"reportingController", "/reportingController"},
      {"type", "/type"},
  };
  static const FieldMap secrets = {{"type", "/type"}};
  static const FieldMap nodes = {{"spec.unschedulable", "/spec/unschedulable"}};
  static const FieldMap namespaces = {{"status.phase", "/status/phase"}};
  static const FieldMap jobs = {{"status.successful", "/status/succeeded"}};
  if (r.group.empty()) {
    if (r.resource == "pods") return pods;
    if (r.resource == "events") return core_events;
    if (r.resource == "secrets") return secrets;
    if (r.resource == "nodes") return nodes;
    if (r.resource == "namespaces") return namespaces;
  } else if (r.group == "events.k8s.io" && r.resource == "events") {
    return new_events;
  } else if (r.group == "batch" && r.resource == "jobs") {
    return jobs;
  }
  return none;
}

std::string value_text(const json::Value* v) {
  if (v == nullptr || v->IsNull()) return {};
  if (v->IsString()) return std::string(v->GetString(), v->GetStringLength());
  if (v->IsBool()) return v->GetBool() ? "true" : "false";
  if (v->IsInt64()) return std::to_string(v->GetInt64());
  if (v->IsUint64()) return std::to_string(v->GetUint64());
  return json::dump(*v);
}

}  // namespace

std::optional<std::string> field_selector_pointer(const ResourceInfo& r, std::string_view field) {
  if (field == "metadata.name") return "/metadata/name";
  if (field == "metadata.namespace") return "/metadata/namespace";
  for (const auto& [name, pointer] : fields_for(r)) {
    if (name == field) return std::string(pointer);
  }
  return std::nullopt;
}

Result<FieldSelector> FieldSelector::parse(std::string_view text) {
  FieldSelector sel;
  // Split on unescaped commas first, then find the operator in each term.
  std::vector<std::string> terms;
  std::string cur;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      cur += c;
      cur += text[++i];
    } else if (c == ',') {
      terms.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  terms.push_back(std::move(cur));
  for (const std::string& raw : terms) {
    std::string_view term = raw;
    while (!term.empty() && term.front() == ' ') term.remove_prefix(1);
    while (!term.empty() && term.back() == ' ') term.remove_suffix(1);
    if (term.empty()) continue;
    FieldRequirement req;
    size_t op = std::string_view::npos;
    size_t op_len = 0;
    for (size_t i = 0; i < term.size(); ++i) {
      if (term[i] == '\\') {
        ++i;
        continue;
      }
      if (term[i] == '!' && i + 1 < term.size() && term[i + 1] == '=') {
        op = i, op_len = 2, req.equals = false;
        break;
      }
      if (term[i] == '=') {
        op = i, op_len = (i + 1 < term.size() && term[i + 1] == '=') ? 2 : 1;
        break;
      }
    }
    if (op == std::string_view::npos) {
      return fail("invalid field selector: '" + std::string(term) + "': expected '=', '==' or '!='");
    }
    req.field = std::string(term.substr(0, op));
    while (!req.field.empty() && req.field.back() == ' ') req.field.pop_back();
    std::string_view value = term.substr(op + op_len);
    for (size_t i = 0; i < value.size(); ++i) {
      if (value[i] == '\\' && i + 1 < value.size()) ++i;
      req.value += value[i];
    }
    if (req.field.empty()) return fail("invalid field selector: '" + std::string(term) + "': empty field name");
    sel.requirements_.push_back(std::move(req));
  }
  return sel;
}

Status FieldSelector::bind(const ResourceInfo& r) {
  for (FieldRequirement& req : requirements_) {
    auto p = field_selector_pointer(r, req.field);
    if (!p) return fail("field label not supported: " + req.field);
    req.pointer = std::move(*p);
  }
  return {};
}

bool FieldSelector::matches(const json::Value& object) const {
  for (const FieldRequirement& req : requirements_) {
    bool eq = value_text(json::find(object, req.pointer)) == req.value;
    if (eq != req.equals) return false;
  }
  return true;
}

}  // namespace unitrain::localcluster
