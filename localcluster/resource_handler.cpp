#include "localcluster/resource_handler.h"

#include <chrono>

#include <fmt/format.h>

#include "localcluster/body_validation.h"
#include "localcluster/builtin_types.h"
#include "localcluster/crd.h"
#include "localcluster/disruption.h"
#include "localcluster/object_meta.h"
#include "localcluster/request_options.h"

namespace unitrain::localcluster {
namespace {

// dryRun and fieldValidation of a write, checked before the body is read (as kube-apiserver
// validates its Create/Update/PatchOptions); whether the write is a dry run.
StoreResult<bool> write_options(const Query& q, std::string_view kind) {
  auto dry = dry_run(q, kind);
  if (!dry) return dry;
  if (auto fv = check_field_validation(q, kind); !fv) return fail(std::move(fv).error());
  return dry;
}

}  // namespace

namespace {
json::Document answer_access_review(const ResourceInfo& r, json::Document review);
}

HttpReply ResourceHandler::handle(const HttpRequest& req, const ResourceRoute& route, const MediaType& content_type,
                                  bool apply) {
  CallNotes notes;
  HttpReply reply = call(req, route, content_type, apply, notes);
  for (const auto& w : notes.warnings) {
    std::string text;
    for (char c : w) {
      if (c == '"' || c == '\\') text += '\\';
      text += c;
    }
    reply.headers.emplace_back("Warning", "299 - \"" + text + "\"");
  }
  return reply;
}

std::optional<std::vector<PrinterColumn>> ResourceHandler::crd_columns(const ResourceInfo& r) const {
  auto crd = find_crd_object(store_, r);
  if (!crd) return std::nullopt;
  return crd_printer_columns(crd->root(), r.version);
}

std::optional<StatusError> ResourceHandler::check_body(const Query& q, const ResourceInfo& r, const json::Value& body,
                                                       std::string_view name, std::string_view options_kind,
                                                       bool type_meta, CallNotes& notes) const {
  auto directive = field_validation(q, options_kind);
  if (!directive) return std::move(directive).error();
  auto crd = find_crd_object(store_, r);
  if (type_meta) {
    if (auto bad = check_type_meta(r, body, name, crd.has_value())) return bad;
  }
  if (*directive == FieldValidation::Ignore) return std::nullopt;
  const json::Value* schema = nullptr;
  if (crd) {
    if (const json::Value* versions = json::find(crd->root(), "/spec/versions"); versions != nullptr && versions->IsArray()) {
      for (const auto& v : versions->GetArray()) {
        if (json::string_at(v, "/name") == r.version) schema = json::find(v, "/schema/openAPIV3Schema");
      }
    }
  }
  static const json::Value no_schema;
  // Create and update decode the body (kube-apiserver's decoder names the kind); patches do not.
  std::string context = options_kind == "PatchOptions" ? std::string() : decode_error_context(r);
  const proto::Message* builtin_kind = crd ? nullptr : builtin_message(r.api_version(), r.kind);
  return enforce_field_validation(*directive, undeclared_fields(body, schema ? *schema : no_schema, builtin_kind),
                                  notes.warnings, context);
}

HttpReply ResourceHandler::render(const ResourceInfo& r, const HttpRequest& req, unsigned status,
                                  const json::Value& v) const {
  auto neg = negotiate(req.accept);
  switch (neg.representation) {
    case Representation::Table:
      return HttpReply{status, neg.content_type,
                       make_table(r, v, crd_columns(r), include_object(req.query), std::chrono::system_clock::now())
                           .dump(),
                       {}};
    case Representation::Metadata:
      return HttpReply{status, neg.content_type, metadata_only(v).dump(), {}};
    case Representation::Object:
      break;
  }
  return HttpReply{status, "application/json", json::dump(v), {}};
}

HttpReply ResourceHandler::call(const HttpRequest& req, const ResourceRoute& route, const MediaType& content_type,
                                bool apply, CallNotes& notes) {
  const ResourceInfo& r = route.info;
  const Query& q = req.query;
  bool collection = route.name.empty();
  // Namespaced resources are listed across namespaces at the cluster path; every other verb
  // needs the namespace in the path.
  if (r.namespaced && route.ns.empty() && !(collection && req.method == "GET")) {
    return error_reply(errors::resource_not_found());
  }
  const auto method_not_allowed = [] { return error_reply(errors::method_not_allowed()); };
  if (route.subresource == "exec" || route.subresource == "attach" || route.subresource == "portforward") {
    // kubectl exec, attach, cp and port-forward need a process; the simulated kubelet runs none.
    auto pod = store_.get(r, route.ns, route.name);
    if (!pod) return error_reply(pod.error());
    return error_reply(errors::bad_request(fmt::format(
        "pods/{} is not supported: the local cluster simulates containers and runs no process in pod {} "
        "(kubectl exec, attach, cp and port-forward need a real cluster; kubectl logs works)",
        route.subresource, route.name)));
  }
  if (req.method == "GET") {
    if (route.subresource == "log") return pod_log(route, q);
    if (collection) {
      if (!has_verb(r, "list")) return method_not_allowed();
      auto options = list_request(q);
      if (!options) return error_reply(options.error());
      auto l = front_.list(r, route.ns, *options);
      if (!l) return error_reply(l.error());
      if (negotiate(req.accept).representation == Representation::Object) {
        return HttpReply{200, "application/json", std::move(*l), {}};
      }
      auto doc = json::Document::parse(*l);
      if (!doc) return error_reply(errors::internal(doc.error().message));
      return render(r, req, 200, doc->root());
    }
    if (!has_verb(r, "get")) return method_not_allowed();
    auto obj = front_.get(r, route.ns, route.name, route.subresource);
    if (!obj) return error_reply(obj.error());
    return render(r, req, 200, obj->root());
  }
  if (route.subresource == "eviction") {
    if (req.method != "POST") return method_not_allowed();
    auto dry = write_options(q, "CreateOptions");
    if (!dry) return error_reply(dry.error());
    auto body = decode_body(req.body, content_type);
    if (!body) return error_reply(body.error());
    auto evicted = evict_pod(store_, r, route.ns, route.name, body->root(), *dry);
    if (!evicted) return error_reply(evicted.error());
    return HttpReply{201, "application/json", evicted->dump(), {}};
  }
  if (route.subresource == "token") {
    if (req.method != "POST") return method_not_allowed();
    auto dry = write_options(q, "CreateOptions");
    if (!dry) return error_reply(dry.error());
    auto account = store_.get(r, route.ns, route.name);
    if (!account) return error_reply(account.error());
    auto body = decode_body(req.body, content_type);
    if (!body) return error_reply(body.error());
    auto answer = answer_token_request(tokens_, account->root(), body->root(), std::chrono::system_clock::now());
    if (!answer) return error_reply(errors::status(answer.error().code, "Invalid", answer.error().message));
    return HttpReply{201, "application/json", answer->dump(), {}};
  }
  if (req.method == "POST") {
    if (!collection || !route.subresource.empty() || !has_verb(r, "create")) return method_not_allowed();
    auto dry = write_options(q, "CreateOptions");
    if (!dry) return error_reply(dry.error());
    auto body = decode_body(req.body, content_type);
    if (!body) return error_reply(body.error());
    if (r.group == "authorization.k8s.io") return render(r, req, 201, answer_access_review(r, std::move(*body)).root());
    if (r.group == "authentication.k8s.io") {
      auto lookup_uid = [this](std::string_view ns, std::string_view name) {
        auto accounts = store_.find_resource("", "v1", "serviceaccounts");
        if (!accounts) return std::string();
        auto account = store_.get(*accounts, ns, name);
        return account ? json::string_at(account->root(), "/metadata/uid") : std::string();
      };
      return render(r, req, 201, answer_token_review(tokens_, std::move(*body), lookup_uid, std::chrono::system_clock::now()).root());
    }
    if (auto bad = check_body(q, r, body->root(), json::string_at(body->root(), "/metadata/name"), "CreateOptions",
                              true, notes)) {
      return error_reply(*bad);
    }
    auto created = front_.create(r, route.ns, std::move(*body), *dry, notes, query_value(q, "fieldManager"));
    if (!created) return error_reply(created.error());
    return render(r, req, 201, created->root());
  }
  if (req.method == "PUT") {
    if (collection || !has_verb(r, "update")) return method_not_allowed();
    auto dry = write_options(q, "UpdateOptions");
    if (!dry) return error_reply(dry.error());
    auto body = decode_body(req.body, content_type);
    if (!body) return error_reply(body.error());
    if (route.subresource.empty() || route.subresource == "status") {
      if (auto bad = check_body(q, r, body->root(), route.name, "UpdateOptions", true, notes)) return error_reply(*bad);
    }
    auto updated = front_.update(r, route.ns, route.name, std::move(*body), route.subresource, *dry, notes,
                                 query_value(q, "fieldManager"));
    if (!updated) return error_reply(updated.error());
    return render(r, req, 200, updated->root());
  }
  if (req.method == "PATCH") {
    if (collection || !has_verb(r, "patch")) return method_not_allowed();
    return patch(req, route, content_type, apply, notes);
  }
  if (req.method == "DELETE") {
    if (!route.subresource.empty()) return method_not_allowed();
    auto d = delete_request(q, req.body);
    if (!d) return error_reply(d.error());
    if (collection) {
      if (!has_verb(r, "deletecollection")) return method_not_allowed();
      auto options = list_request(q);
      if (!options) return error_reply(options.error());
      auto out = front_.remove_collection(r, route.ns, *options, *d, notes);
      if (!out) return error_reply(out.error());
      return HttpReply{200, "application/json", std::move(*out), {}};
    }
    if (!has_verb(r, "delete")) return method_not_allowed();
    auto out = front_.remove(r, route.ns, route.name, *d, notes);
    if (!out) return error_reply(out.error());
    return render(r, req, 200, out->root());
  }
  return method_not_allowed();
}

HttpReply ResourceHandler::patch(const HttpRequest& req, const ResourceRoute& route, const MediaType& content_type,
                                 bool apply, CallNotes& notes) {
  const Query& q = req.query;
  auto kind = patch_kind(content_type);
  if (!kind) {
    return error_reply(errors::unsupported_media_type(
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, "
        "application/strategic-merge-patch+json"));
  }
  auto dry = write_options(q, "PatchOptions");
  if (!dry) return error_reply(dry.error());
  std::string body(req.body);
  if (*kind == PatchKind::Apply) {
    auto doc = decode_body(req.body, content_type);
    if (!doc) return error_reply(doc.error());
    body = doc->dump();
  }
  if ((*kind == PatchKind::Apply || *kind == PatchKind::Merge || *kind == PatchKind::Strategic) &&
      (route.subresource.empty() || route.subresource == "status")) {
    // Merge-style patches mirror the object, so their undeclared fields are the result's.
    auto doc = json::Document::parse(body);
    if (doc) {
      if (auto bad = check_body(q, route.info, doc->root(), route.name, "PatchOptions", *kind == PatchKind::Apply,
                                notes)) {
        return error_reply(*bad);
      }
    }
  }
  if (apply && query_value(q, "fieldManager").empty()) {
    return error_reply(errors::status(422, "Invalid",
                                      "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is "
                                      "required for apply patch"));
  }
  auto patched = front_.patch(route.info, route.ns, route.name, *kind, body, route.subresource,
                              query_value(q, "fieldManager"), *dry, notes, query_value(q, "force") == "true");
  if (!patched) return error_reply(patched.error());
  return render(route.info, req, 200, patched->root());
}

namespace {

// The local cluster has one identity with every right (the admin token, or no token at all), and
// no authorizer: every review is allowed, as kube-apiserver answers a member of system:masters.
json::Document answer_access_review(const ResourceInfo& r, json::Document review) {
  json::Document out = std::move(review);
  auto& a = out.alloc();
  (void)json::set_string(out, "/apiVersion", "authorization.k8s.io/v1");
  (void)json::set_string(out, "/kind", r.kind);
  json::remove(out, "/status");
  if (r.resource == "selfsubjectrulesreviews") {
    auto rules = json::Document::parse(
        R"({"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}],)"
        R"("nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}],"incomplete":false})");
    (void)json::set(out, "/status", json::clone(rules->root(), a));
  } else {
    (void)json::set_bool(out, "/status/allowed", true);
    (void)json::set_string(out, "/status/reason", "the local cluster authorizes every authenticated request");
  }
  if (!json::find(out.root(), "/metadata")) (void)json::set(out, "/metadata", json::Value(rapidjson::kObjectType));
  (void)json::set_string(out, "/metadata/creationTimestamp", now_rfc3339());
  return out;
}

}  // namespace

HttpReply ResourceHandler::pod_log(const ResourceRoute& route, const Query& q) {
  auto pod = store_.get(route.info, route.ns, route.name);
  if (!pod) return error_reply(pod.error());
  auto target = log_target(pod->root(), q);
  if (!target) return error_reply(target.error());
  std::string key = PodLogs::key(route.ns, route.name, target->container);
  std::vector<std::string> lines;
  // While a container waits to restart, its last run is both the current and the previous log.
  if (target->previous && !target->restarting)
    lines = logs_.read_previous(key).value_or(std::vector<std::string>{});
  else
    lines = logs_.read(key, 0).first;
  keep_tail_lines(lines, q);
  std::string body = join_lines(lines);
  limit_bytes(body, q);
  return HttpReply{200, "text/plain", std::move(body), {}};
}

}  // namespace unitrain::localcluster
