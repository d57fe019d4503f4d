// metav1.Status rendering, the error constructors, and the Kubernetes name rules.
#include <utility>

#include "localcluster/memory_store.h"

namespace unitrain::localcluster {
namespace {

using json::Value;

json::Document details(const ResourceInfo* r, std::string_view name, bool kind_is_resource) {
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  if (!name.empty()) d.root().AddMember("name", json::str(name, a), a);
  if (r != nullptr) {
    if (!r->group.empty()) d.root().AddMember("group", json::str(r->group, a), a);
    d.root().AddMember("kind", json::str(kind_is_resource ? r->resource : r->kind, a), a);
  }
  return d;
}

StatusError make(int code, std::string reason, std::string message, json::Document det = json::Document()) {
  StatusError e;
  e.code = code;
  e.reason = std::move(reason);
  e.message = std::move(message);
  e.details = std::move(det);
  return e;
}

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

json::Document StatusError::to_status() const {
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  Value& r = d.root();
  r.AddMember("kind", "Status", a);
  r.AddMember("apiVersion", "v1", a);
  r.AddMember("metadata", Value(rapidjson::kObjectType), a);
  r.AddMember("status", "Failure", a);
  r.AddMember("message", json::str(message, a), a);
  if (!reason.empty()) r.AddMember("reason", json::str(reason, a), a);
  if (details.root().IsObject() && details.root().MemberCount() > 0) {
    r.AddMember("details", json::clone(details.root(), a), a);
  }
  r.AddMember("code", code, a);
  return d;
}

std::string qualified_resource(const ResourceInfo& r) {
  return r.group.empty() ? r.resource : r.resource + "." + r.group;
}

std::string qualified_kind(const ResourceInfo& r) { return r.group.empty() ? r.kind : r.kind + "." + r.group; }

namespace errors {

StatusError not_found(const ResourceInfo& r, std::string_view name) {
  return make(404, "NotFound", qualified_resource(r) + " \"" + std::string(name) + "\" not found",
              details(&r, name, true));
}

StatusError namespace_not_found(std::string_view ns) {
  ResourceInfo r;
  r.resource = "namespaces";
  return not_found(r, ns);
}

StatusError resource_not_found() {
  return make(404, "NotFound", "the server could not find the requested resource", json::Document::object());
}

StatusError already_exists(const ResourceInfo& r, std::string_view name) {
  return make(409, "AlreadyExists", qualified_resource(r) + " \"" + std::string(name) + "\" already exists",
              details(&r, name, true));
}

StatusError conflict(const ResourceInfo& r, std::string_view name, std::string_view detail) {
  return make(409, "Conflict",
              "Operation cannot be fulfilled on " + qualified_resource(r) + " \"" + std::string(name) +
                  "\": " + std::string(detail),
              details(&r, name, true));
}

StatusError stale_resource_version(const ResourceInfo& r, std::string_view name) {
  return conflict(r, name,
                  "the object has been modified; please apply your changes to the latest version and try again");
}

StatusError invalid(const ResourceInfo& r, std::string_view name, const std::vector<FieldError>& errs) {
  std::string msg = qualified_kind(r) + " \"" + std::string(name) + "\" is invalid: ";
  if (errs.size() == 1) {
    msg += errs.front().full();
  } else {
    msg += "[";
    for (size_t i = 0; i < errs.size(); ++i) msg += (i ? ", " : "") + errs[i].full();
    msg += "]";
  }
  json::Document det = details(&r, name, false);
  auto& a = det.alloc();
  Value causes(rapidjson::kArrayType);
  for (const FieldError& e : errs) {
    Value c(rapidjson::kObjectType);
    c.AddMember("reason", json::str(e.reason, a), a);
    c.AddMember("message", json::str(e.detail, a), a);
    c.AddMember("field", json::str(e.field, a), a);
    causes.PushBack(c, a);
  }
  det.root().AddMember("causes", causes, a);
  return make(422, "Invalid", std::move(msg), std::move(det));
}

StatusError forbidden(const ResourceInfo& r, std::string_view name, std::string_view detail) {
  return make(403, "Forbidden",
              qualified_resource(r) + " \"" + std::string(name) + "\" is forbidden: " + std::string(detail),
              details(&r, name, true));
}

StatusError bad_request(std::string message) { return make(400, "BadRequest", std::move(message)); }
StatusError expired(std::string message) { return make(410, "Expired", std::move(message)); }
StatusError gone(std::string message) { return make(410, "Gone", std::move(message)); }
StatusError unsupported_media_type(std::string message) {
  return make(415, "UnsupportedMediaType", std::move(message));
}

StatusError too_large_resource_version(uint64_t requested, uint64_t current) {
  json::Document det = json::Document::object();
  auto& a = det.alloc();
  Value causes(rapidjson::kArrayType);
  Value c(rapidjson::kObjectType);
  c.AddMember("reason", "ResourceVersionTooLarge", a);
  c.AddMember("message", "Too large resource version", a);
  causes.PushBack(c, a);
  det.root().AddMember("causes", causes, a);
  det.root().AddMember("retryAfterSeconds", 1, a);
  return make(504, "Timeout",
              "Too large resource version: " + std::to_string(requested) + ", current: " + std::to_string(current),
              std::move(det));
}

StatusError internal(std::string message) { return make(500, "InternalError", std::move(message)); }

}  // namespace errors

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

}  // namespace unitrain::localcluster
