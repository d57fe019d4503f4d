#include "localcluster/object_names.h"

#include <cctype>

#include "core/api/labels.h"

namespace unitrain::localcluster {
namespace {

bool alnum_lower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool is_label(std::string_view s, bool alpha_start) {
  if (s.empty() || s.size() > 63) return false;
  if (alpha_start ? !(s.front() >= 'a' && s.front() <= 'z') : !alnum_lower(s.front())) return false;
  if (!alnum_lower(s.back())) return false;
  for (char c : s) {
    if (!alnum_lower(c) && c != '-') return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> check_dns1123_subdomain(std::string_view name) {
  if (name.size() > 253) return "must be no more than 253 characters";
  bool ok = !name.empty();
  size_t start = 0;
  while (ok) {
    size_t dot = name.find('.', start);
    std::string_view part = name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    // Parts of a subdomain follow the label syntax but are not limited to 63 characters.
    ok = !part.empty() && alnum_lower(part.front()) && alnum_lower(part.back());
    for (char c : part) ok = ok && (alnum_lower(c) || c == '-');
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (ok) return std::nullopt;
  return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
         "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
}

std::optional<std::string> check_dns1123_label(std::string_view name) {
  if (name.size() > 63) return "must be no more than 63 characters";
  if (is_label(name, false)) return std::nullopt;
  return "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
         "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
}

std::optional<std::string> check_dns1035_label(std::string_view name) {
  if (name.size() > 63) return "must be no more than 63 characters";
  if (is_label(name, true)) return std::nullopt;
  return "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
         "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
         "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
}

std::optional<std::string> check_path_segment(std::string_view name) {
  if (name == "." || name == "..") return "may not be '" + std::string(name) + "'";
  if (name.find('/') != std::string_view::npos) return "may not contain '/'";
  if (name.find('%') != std::string_view::npos) return "may not contain '%'";
  return std::nullopt;
}

std::optional<std::string> check_object_name(const ResourceInfo& r, std::string_view name) {
  if (r.group.empty() && r.resource == "namespaces") return check_dns1123_label(name);
  if (r.group.empty() && r.resource == "services") return check_dns1035_label(name);
  if (r.group == "rbac.authorization.k8s.io") return check_path_segment(name);
  return check_dns1123_subdomain(name);
}

namespace {

constexpr size_t kTotalAnnotationSizeLimit = 256 * 1024;

}  // namespace

std::vector<FieldError> validate_labels_and_annotations(const json::Value& object) {
  std::vector<FieldError> errs;
  const json::Value* labels = json::find(object, "/metadata/labels");
  if (labels != nullptr && labels->IsObject()) {
    for (auto it = labels->MemberBegin(); it != labels->MemberEnd(); ++it) {
      for (const std::string& m : api::validate_qualified_name(json::view(it->name))) {
        errs.push_back(invalid_value("metadata.labels", it->name, m));
      }
      if (!it->value.IsString()) continue;  // the decoder refuses non-strings before this
      for (const std::string& m : api::validate_label_value(json::view(it->value))) {
        errs.push_back(invalid_value("metadata.labels", it->value, m));
      }
    }
  }
  const json::Value* annotations = json::find(object, "/metadata/annotations");
  if (annotations != nullptr && annotations->IsObject()) {
    size_t total = 0;
    for (auto it = annotations->MemberBegin(); it != annotations->MemberEnd(); ++it) {
      std::string lower(json::view(it->name));
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      for (const std::string& m : api::validate_qualified_name(lower)) {
        errs.push_back(invalid_value("metadata.annotations", it->name, m));
      }
      total += it->name.GetStringLength() + (it->value.IsString() ? it->value.GetStringLength() : 0);
    }
    if (total > kTotalAnnotationSizeLimit) {
      errs.push_back({"FieldValueTooLong", "metadata.annotations",
                      "Too long: may not be more than " + std::to_string(kTotalAnnotationSizeLimit) + " bytes"});
    }
  }
  return errs;
}

}  // namespace unitrain::localcluster
