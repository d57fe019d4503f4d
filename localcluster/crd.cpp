#include "localcluster/crd.h"

#include <algorithm>
#include <cctype>

#include "localcluster/validation_rules.h"

namespace unitrain::localcluster {
namespace {

using json::Value;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const std::vector<std::string> kVerbs = {"delete", "deletecollection", "get", "list", "patch", "create", "update",
                                         "watch"};

}  // namespace

const CrdVersion* CrdDefinition::version(std::string_view v) const {
  for (const CrdVersion& cv : versions) {
    if (cv.name == v) return &cv;
  }
  return nullptr;
}

std::vector<ResourceInfo> CrdDefinition::resources() const {
  std::vector<ResourceInfo> out;
  for (const CrdVersion& v : versions) {
    if (!v.served) continue;
    ResourceInfo r;
    r.group = group;
    r.version = v.name;
    r.resource = plural;
    r.singular = singular;
    r.kind = kind;
    r.list_kind = list_kind;
    r.namespaced = namespaced;
    r.has_status = v.has_status;
    r.has_scale = v.has_scale;
    r.short_names = short_names;
    r.categories = categories;
    r.verbs = kVerbs;
    r.storage_version = storage_version;
    r.conversion_webhook = conversion_webhook;
    out.push_back(std::move(r));
  }
  return out;
}

std::string crd_path_to_pointer(std::string_view path) {
  std::string out;
  if (!path.empty() && path.front() == '.') path.remove_prefix(1);
  size_t start = 0;
  while (start <= path.size() && !path.empty()) {
    size_t dot = path.find('.', start);
    std::string_view tok = path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    out += "/" + json::escape_pointer_token(tok);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return out;
}

void default_crd(json::Document& crd) {
  Value& root = crd.root();
  std::string kind = json::string_at(root, "/spec/names/kind");
  if (!kind.empty()) {
    if (json::string_at(root, "/spec/names/singular").empty()) (void)json::set_string(crd, "/spec/names/singular", lower(kind));
    if (json::string_at(root, "/spec/names/listKind").empty()) (void)json::set_string(crd, "/spec/names/listKind", kind + "List");
  }
  if (json::find(root, "/spec/conversion") == nullptr) (void)json::set_string(crd, "/spec/conversion/strategy", "None");
}

Result<CrdDefinition, std::vector<FieldError>> parse_crd(const Value& crd) {
  std::vector<FieldError> errs;
  CrdDefinition d;
  d.name = json::string_at(crd, "/metadata/name");
  d.group = json::string_at(crd, "/spec/group");
  d.plural = json::string_at(crd, "/spec/names/plural");
  d.singular = json::string_at(crd, "/spec/names/singular");
  d.kind = json::string_at(crd, "/spec/names/kind");
  d.list_kind = json::string_at(crd, "/spec/names/listKind");
  d.short_names = json::strings_at(crd, "/spec/names/shortNames");
  d.categories = json::strings_at(crd, "/spec/names/categories");
  std::string scope = json::string_at(crd, "/spec/scope");
  if (d.group.empty()) errs.push_back(required_value("spec.group"));
  if (d.plural.empty()) errs.push_back(required_value("spec.names.plural"));
  if (d.kind.empty()) errs.push_back(required_value("spec.names.kind"));
  if (!d.group.empty() && !d.plural.empty() && d.name != d.plural + "." + d.group) {
    errs.push_back(invalid_value_text("metadata.name", "\"" + d.name + "\"",
                                      "must be spec.names.plural+\".\"+spec.group"));
  }
  if (scope == "Namespaced") {
    d.namespaced = true;
  } else if (scope == "Cluster") {
    d.namespaced = false;
  } else if (scope.empty()) {
    errs.push_back(required_value("spec.scope"));
  } else {
    errs.push_back({"FieldValueNotSupported", "spec.scope",
                    "Unsupported value: \"" + scope + "\": supported values: \"Cluster\", \"Namespaced\""});
  }
  d.conversion_webhook = json::string_at(crd, "/spec/conversion/strategy") == "Webhook";
  if (d.conversion_webhook && json::find(crd, "/spec/conversion/webhook/clientConfig") == nullptr) {
    errs.push_back(required_value("spec.conversion.webhook", "required when strategy is set to Webhook"));
  }
  const Value* versions = json::find(crd, "/spec/versions");
  if (versions == nullptr || !versions->IsArray() || versions->Empty()) {
    errs.push_back(required_value("spec.versions", "must have exactly one version marked as storage version"));
  } else {
    int storage = 0;
    for (rapidjson::SizeType i = 0; i < versions->Size(); ++i) {
      const Value& v = (*versions)[i];
      std::string field = "spec.versions[" + std::to_string(i) + "]";
      CrdVersion cv;
      cv.name = json::string_at(v, "/name");
      if (cv.name.empty()) errs.push_back(required_value(field + ".name"));
      if (d.version(cv.name) != nullptr) {
        errs.push_back({"FieldValueDuplicate", field + ".name", "Duplicate value: \"" + cv.name + "\""});
      }
      cv.served = json::get_bool(v, "/served").value_or(false);
      cv.storage = json::get_bool(v, "/storage").value_or(false);
      if (cv.storage) {
        ++storage;
        d.storage_version = cv.name;
      }
      if (const Value* s = json::find(v, "/schema/openAPIV3Schema")) {
        cv.schema = json::Document::copy_of(*s);
        cv.schema_has_defaults = schema_has_defaults(*s);
        std::vector<FieldError> rule_errs = check_rules(*s, field + ".schema.openAPIV3Schema");
        errs.insert(errs.end(), rule_errs.begin(), rule_errs.end());
      }
      if (const Value* pc = json::find(v, "/additionalPrinterColumns"); pc != nullptr && pc->IsArray()) {
        cv.printer_columns = json::Document::copy_of(*pc);
      }
      cv.has_status = json::find(v, "/subresources/status") != nullptr;
      if (json::find(v, "/subresources/scale") != nullptr) {
        cv.has_scale = true;
        cv.spec_replicas_path = json::string_at(v, "/subresources/scale/specReplicasPath");
        cv.status_replicas_path = json::string_at(v, "/subresources/scale/statusReplicasPath");
        cv.label_selector_path = json::string_at(v, "/subresources/scale/labelSelectorPath");
        if (cv.spec_replicas_path.empty()) errs.push_back(required_value(field + ".subresources.scale.specReplicasPath"));
        if (cv.status_replicas_path.empty()) {
          errs.push_back(required_value(field + ".subresources.scale.statusReplicasPath"));
        }
      }
      d.versions.push_back(std::move(cv));
    }
    if (storage != 1) {
      errs.push_back(invalid_value_text("spec.versions", "\"" + std::to_string(storage) + " storage versions\"",
                                        "must have exactly one version marked as storage version"));
    }
  }
  if (!errs.empty()) return fail(std::move(errs));
  return d;
}

void set_crd_status(json::Document& crd, const CrdDefinition& def, const std::string& now) {
  auto& a = crd.alloc();
  // Keep the transition times of conditions that stay True.
  std::string names_time = now, established_time = now;
  if (const Value* conds = json::find(crd.root(), "/status/conditions"); conds != nullptr && conds->IsArray()) {
    for (const Value& c : conds->GetArray()) {
      std::string type = json::string_at(c, "/type");
      std::string t = json::string_at(c, "/lastTransitionTime");
      if (json::string_at(c, "/status") != "True" || t.empty()) continue;
      if (type == "NamesAccepted") names_time = t;
      if (type == "Established") established_time = t;
    }
  }
  std::vector<std::string> stored = json::strings_at(crd.root(), "/status/storedVersions");
  if (std::find(stored.begin(), stored.end(), def.storage_version) == stored.end()) stored.push_back(def.storage_version);

  Value status(rapidjson::kObjectType);
  Value conditions(rapidjson::kArrayType);
  auto condition = [&](const char* type, const std::string& time, const char* reason, const char* message) {
    Value c(rapidjson::kObjectType);
    c.AddMember("type", Value(type, a), a);
    c.AddMember("status", "True", a);
    c.AddMember("lastTransitionTime", json::str(time, a), a);
    c.AddMember("reason", Value(reason, a), a);
    c.AddMember("message", Value(message, a), a);
    conditions.PushBack(c, a);
  };
  condition("NamesAccepted", names_time, "NoConflicts", "no conflicts found");
  condition("Established", established_time, "InitialNamesAccepted", "the initial names have been accepted");
  status.AddMember("conditions", conditions, a);
  Value names(rapidjson::kObjectType);
  names.AddMember("plural", json::str(def.plural, a), a);
  names.AddMember("singular", json::str(def.singular, a), a);
  if (!def.short_names.empty()) {
    Value sn(rapidjson::kArrayType);
    for (const auto& s : def.short_names) sn.PushBack(json::str(s, a), a);
    names.AddMember("shortNames", sn, a);
  }
  names.AddMember("kind", json::str(def.kind, a), a);
  names.AddMember("listKind", json::str(def.list_kind, a), a);
  if (!def.categories.empty()) {
    Value cat(rapidjson::kArrayType);
    for (const auto& s : def.categories) cat.PushBack(json::str(s, a), a);
    names.AddMember("categories", cat, a);
  }
  status.AddMember("acceptedNames", names, a);
  Value sv(rapidjson::kArrayType);
  for (const auto& s : stored) sv.PushBack(json::str(s, a), a);
  status.AddMember("storedVersions", sv, a);
  (void)json::set(crd, "/status", std::move(status));
}

std::optional<json::Document> find_crd_object(const Store& store, const ResourceInfo& r) {
  if (r.group.find('.') == std::string::npos) return std::nullopt;  // built-in groups have no dot
  auto crd_info = store.find_resource("apiextensions.k8s.io", "v1", "customresourcedefinitions");
  if (!crd_info) return std::nullopt;
  auto crd = store.get(*crd_info, "", r.resource + "." + r.group);
  if (!crd) return std::nullopt;
  return std::move(*crd);
}

}  // namespace unitrain::localcluster
