#include "localcluster/resource_handler.h"

#include <chrono>

#include "localcluster/crd.h"
#include "localcluster/request_options.h"

namespace unitrain::localcluster {

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
  if (req.method == "GET") {
    if (route.subresource == "log") return pod_log(route, q);
    if (collection) {
      if (!has_verb(r, "list")) return method_not_allowed();
      auto l = front_.list(r, route.ns, list_request(q));
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
  if (req.method == "POST") {
    if (!collection || !route.subresource.empty() || !has_verb(r, "create")) return method_not_allowed();
    auto body = decode_body(req.body, content_type);
    if (!body) return error_reply(body.error());
    auto created = front_.create(r, route.ns, std::move(*body), dry_run(q), notes);
    if (!created) return error_reply(created.error());
    return render(r, req, 201, created->root());
  }
  if (req.method == "PUT") {
    if (collection || !has_verb(r, "update")) return method_not_allowed();
    auto body = decode_body(req.body, content_type);
    if (!body) return error_reply(body.error());
    auto updated = front_.update(r, route.ns, route.name, std::move(*body), route.subresource, dry_run(q), notes);
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
      auto out = front_.remove_collection(r, route.ns, list_request(q), *d, notes);
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
  std::string body(req.body);
  if (*kind == PatchKind::Apply) {
    auto doc = decode_body(req.body, content_type);
    if (!doc) return error_reply(doc.error());
    body = doc->dump();
  }
  if (apply && query_value(q, "fieldManager").empty()) {
    return error_reply(errors::status(422, "Invalid",
                                      "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is "
                                      "required for apply patch"));
  }
  auto patched = front_.patch(route.info, route.ns, route.name, *kind, body, route.subresource,
                              query_value(q, "fieldManager"), dry_run(q), notes);
  if (!patched) return error_reply(patched.error());
  return render(route.info, req, 200, patched->root());
}

HttpReply ResourceHandler::pod_log(const ResourceRoute& route, const Query& q) {
  auto pod = store_.get(route.info, route.ns, route.name);
  if (!pod) return error_reply(pod.error());
  auto [lines, next] = logs_.read(PodLogs::key(route.ns, route.name), 0);
  keep_tail_lines(lines, q);
  std::string body = join_lines(lines);
  limit_bytes(body, q);
  return HttpReply{200, "text/plain", std::move(body), {}};
}

}  // namespace unitrain::localcluster
