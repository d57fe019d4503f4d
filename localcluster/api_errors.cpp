#include "localcluster/api_errors.h"

#include <utility>

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

StatusError make_status(int code, std::string reason, std::string message, json::Document det = json::Document()) {
  StatusError e;
  e.code = code;
  e.reason = std::move(reason);
  e.message = std::move(message);
  e.details = std::move(det);
  return e;
}

}  // namespace

json::Document StatusError::to_status() const {
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  Value& r = d.root();
  r.AddMember("kind", "Status", a);
  r.AddMember("apiVersion", "v1", a);
  Value meta(rapidjson::kObjectType);
  if (!continue_token.empty()) meta.AddMember("continue", json::str(continue_token, a), a);
  r.AddMember("metadata", meta, a);
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

std::string group_version_kind_text(std::string_view api_version, std::string_view kind) {
  return std::string(api_version) + ", Kind=" + std::string(kind);
}

namespace errors {

StatusError status(int code, std::string reason, std::string message) {
  return make_status(code, std::move(reason), std::move(message));
}

StatusError not_found(const ResourceInfo& r, std::string_view name) {
  return make_status(404, "NotFound", qualified_resource(r) + " \"" + std::string(name) + "\" not found",
              details(&r, name, true));
}

StatusError namespace_not_found(std::string_view ns) {
  ResourceInfo r;
  r.resource = "namespaces";
  return not_found(r, ns);
}

StatusError resource_not_found() {
  return make_status(404, "NotFound", "the server could not find the requested resource", json::Document::object());
}

StatusError already_exists(const ResourceInfo& r, std::string_view name) {
  return make_status(409, "AlreadyExists", qualified_resource(r) + " \"" + std::string(name) + "\" already exists",
              details(&r, name, true));
}

StatusError conflict(const ResourceInfo& r, std::string_view name, std::string_view detail) {
  return make_status(409, "Conflict",
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
  return make_status(422, "Invalid", std::move(msg), std::move(det));
}

StatusError forbidden(const ResourceInfo& r, std::string_view name, std::string_view detail) {
  return make_status(403, "Forbidden",
              qualified_resource(r) + " \"" + std::string(name) + "\" is forbidden: " + std::string(detail),
              details(&r, name, true));
}

StatusError bad_request(std::string message) { return make_status(400, "BadRequest", std::move(message)); }
StatusError name_mismatch(std::string_view body_name, std::string_view url_name) {
  return bad_request("the name of the object (" + std::string(body_name) + ") does not match the name on the URL (" +
                     std::string(url_name) + ")");
}
StatusError namespace_mismatch() {
  return bad_request("the namespace of the provided object does not match the namespace sent on the request");
}
StatusError unauthorized() { return make_status(401, "Unauthorized", "Unauthorized"); }
StatusError method_not_allowed() {
  return make_status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
}
StatusError expired(std::string message) { return make_status(410, "Expired", std::move(message)); }
StatusError gone(std::string message) { return make_status(410, "Gone", std::move(message)); }
StatusError unsupported_media_type(std::string message) {
  return make_status(415, "UnsupportedMediaType", std::move(message));
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
  return make_status(504, "Timeout",
              "Too large resource version: " + std::to_string(requested) + ", current: " + std::to_string(current),
              std::move(det));
}

StatusError internal(std::string message) { return make_status(500, "InternalError", std::move(message)); }

StatusError continue_expired(std::string inconsistent_continue_token) {
  auto e = make_status(410, "Expired",
                       "The provided continue parameter is too old to display a consistent list result. You can "
                       "start a new list without the continue parameter, or use the continue token in this "
                       "response to retrieve the remainder of the results. Continuing with the provided token "
                       "results in an inconsistent list - objects that were created, modified, or deleted between "
                       "the time the first chunk was returned and now may show up in the list.");
  e.continue_token = std::move(inconsistent_continue_token);
  return e;
}

StatusError not_acceptable_json() {
  return make_status(406, "NotAcceptable",
                     "only the following media types are accepted: application/json (the local cluster decodes "
                     "protobuf request bodies but answers in JSON only; add application/json to Accept)");
}

StatusError request_entity_too_large(uint64_t limit) {
  return make_status(413, "RequestEntityTooLarge", "Request entity too large: limit is " + std::to_string(limit));
}

StatusError internal_error_occurred(const std::string& cause) {
  json::Document det = json::Document::object();
  auto& a = det.alloc();
  Value causes(rapidjson::kArrayType);
  Value c(rapidjson::kObjectType);
  c.AddMember("message", json::str(cause, a), a);
  causes.PushBack(c, a);
  det.root().AddMember("causes", causes, a);
  return make_status(500, "InternalError", "Internal error occurred: " + cause, std::move(det));
}

}  // namespace errors

}  // namespace unitrain::localcluster
