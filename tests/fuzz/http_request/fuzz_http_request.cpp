// One HTTP request to the local cluster's API server, from its text: "METHOD TARGET", header lines
// ("Accept: ..", "Content-Type: ..") and, after an empty line, the body. Boost.Beast reads the
// bytes off the socket in the server; everything the server does with what Beast hands it is run
// here in the order server.cpp's handle() runs it: the target's path and query, the
// /unitrain/faults and /unitrain/restart admin endpoints, non-resource paths (discovery, OpenAPI,
// /version, /metrics), route resolution, watches (their initial events framed as the server frames
// them) and every REST verb against a fresh store holding a namespace, a pod and a CRD.
// Invariants: nothing crashes; the reply has a valid status, never a 500 (nothing here fails on
// the server's side), and a JSON reply's body is JSON.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "localcluster/api_front.h"
#include "localcluster/content_negotiation.h"
#include "localcluster/faults.h"
#include "localcluster/http_message.h"
#include "localcluster/memory_store.h"
#include "localcluster/metrics.h"
#include "localcluster/non_resource.h"
#include "localcluster/pod_logs.h"
#include "localcluster/request_options.h"
#include "localcluster/resource_handler.h"
#include "localcluster/routing.h"
#include "localcluster/watch_framing.h"
#include "tests/fuzz/invariant.h"

namespace {

namespace json = unitrain::json;
namespace lc = unitrain::localcluster;
using unitrain::fuzz::require;

constexpr std::string_view kSeedObjects[][3] = {
    {"/api/v1/namespaces", "", R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}})"},
    {"/api/v1/namespaces/{ns}/pods", "team",
     R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},)"
     R"("spec":{"nodeName":"node-0","containers":[{"name":"c","image":"i"}]},"status":{"phase":"Running"}})"},
    {"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "",
     R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},)"
     R"("spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget"},)"
     R"("versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},)"
     R"("additionalPrinterColumns":[{"name":"Size","type":"integer","jsonPath":".spec.size"}],)"
     R"("schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}})"},
};

struct Server {
  std::unique_ptr<lc::Store> store;
  std::unique_ptr<lc::ApiFront> front;
  lc::PodLogs logs{100};
  lc::RequestMetrics metrics;
  lc::FaultInjector faults;
  std::unique_ptr<lc::ResourceHandler> resources;

  Server() {
    auto s = lc::make_memory_store({});
    require(s.has_value());
    store = std::move(*s);
    front = std::make_unique<lc::ApiFront>(*store, lc::WebhookOptions{});
    resources = std::make_unique<lc::ResourceHandler>(*store, *front, logs);
    for (const auto& [path, ns, object] : kSeedObjects) {
      std::string target(path);
      if (auto at = target.find("{ns}"); at != std::string::npos) target.replace(at, 4, ns);
      auto route = lc::resolve_route(*store, lc::split_path(target));
      require(route.has_value());
      lc::CallNotes notes;
      auto obj = json::Document::parse(object);
      require(obj.has_value());
      require(front->create(route->info, ns, std::move(*obj), false, notes).has_value());
    }
    logs.append(lc::PodLogs::key("team", "p", "c"), "hello");
  }
};

struct RawRequest {
  std::string method, target, accept, content_type;
  std::string_view body;
};

RawRequest read_request(std::string_view text) {
  RawRequest r;
  auto line = [&text]() {
    const size_t end = text.find('\n');
    std::string_view l = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    return l;
  };
  const std::string_view first = line();
  const size_t space = first.find(' ');
  r.method = std::string(first.substr(0, space));
  if (space != std::string_view::npos) r.target = std::string(first.substr(space + 1));
  for (std::string_view h = line(); !h.empty(); h = line()) {
    const size_t colon = h.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = h.substr(0, colon), value = lc::trim(h.substr(colon + 1));
    if (name == "Accept") r.accept = std::string(value);
    if (name == "Content-Type") r.content_type = std::string(value);
  }
  r.body = text;
  return r;
}

void check_reply(const lc::HttpReply& reply) {
  require(reply.status >= 200 && reply.status < 600);
  require(reply.status != 500);
  if (reply.content_type == "application/json") require(json::Document::parse(reply.body).has_value());
}

void watch(Server& s, const lc::HttpRequest& hr, const lc::ResourceRoute& route) {
  auto request = lc::watch_request(hr.query, route.name);
  if (!request) {
    check_reply(lc::error_reply(request.error()));
    return;
  }
  auto watcher = s.front->watch(route.info, route.ns, *request);
  if (!watcher) {
    check_reply(lc::error_reply(watcher.error()));
    return;
  }
  const auto neg = lc::negotiate(hr.accept);
  const auto include = lc::include_object(hr.query);
  std::optional<std::vector<lc::PrinterColumn>> columns;
  if (neg.representation == lc::Representation::Table) columns = s.resources->crd_columns(route.info);
  (*watcher)->request_bookmark();
  bool closed = false;
  for (const auto& ev : (*watcher)->drain(closed)) {
    const std::string line = lc::watch_event_line(ev, route.info, neg.representation, include, columns);
    require(!line.empty() && line.back() == '\n');
    require(json::Document::parse(std::string_view(line).substr(0, line.size() - 1)).has_value());
  }
  (*watcher)->stop();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const RawRequest raw = read_request(std::string_view(reinterpret_cast<const char*>(data), size));
  Server s;
  auto [path, query] = lc::parse_target(raw.target);
  lc::HttpRequest hr{raw.method, std::move(path), std::move(query), raw.accept, raw.content_type, raw.body};

  if (hr.path == "/unitrain/faults") {
    const lc::HttpReply r = lc::serve_faults_admin(hr, &s.faults);
    check_reply(r);
    if (r.status == 200 && hr.method != "GET") {
      auto reread = lc::FaultConfig::parse(s.faults.config().to_json());
      require(reread.has_value());
      require(reread->to_json() == s.faults.config().to_json());
    }
    return 0;
  }
  if (hr.path == "/unitrain/restart") {
    check_reply(lc::serve_restart_admin(hr, true));
    return 0;
  }
  const auto segments = lc::split_path(hr.path);
  if (!lc::is_resource_path(segments)) {
    const lc::NonResourceContext context{*s.store, s.metrics, "v1.29.0", "127.0.0.1:1"};
    check_reply(lc::serve_non_resource(hr, segments, context));
    return 0;
  }
  auto route = lc::resolve_route(*s.store, segments);
  if (!route) {
    check_reply(lc::error_reply(route.error()));
    return 0;
  }
  const bool is_watch = hr.method == "GET" && (route->legacy_watch || lc::query_flag(hr.query, "watch"));
  const auto ctype = lc::parse_media_type(hr.content_type);
  const bool apply = hr.method == "PATCH" && ctype.type == "application/apply-patch+yaml";
  (void)lc::metrics_verb(hr.method, *route, is_watch, apply);
  if (is_watch && route->subresource.empty()) {
    watch(s, hr, *route);
    return 0;
  }
  check_reply(s.resources->handle(hr, *route, ctype, apply));
  return 0;
}
