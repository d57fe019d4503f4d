#include "localcluster/non_resource.h"

#include <algorithm>
#include <map>
#include <utility>

#include "localcluster/content_negotiation.h"
#include "localcluster/crd.h"
#include "localcluster/discovery.h"
#include "localcluster/openapi.h"

namespace unitrain::localcluster {
namespace {

bool is_probe(const std::string& path) {
  return path == "/healthz" || path == "/readyz" || path == "/livez" || path.starts_with("/healthz/") ||
         path.starts_with("/readyz/") || path.starts_with("/livez/");
}

HttpReply version_reply(const std::string& gv) {
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  size_t dot1 = gv.find('.'), dot2 = gv.find('.', dot1 + 1);
  std::string major = dot1 == std::string::npos ? "1" : gv.substr(1, dot1 - 1);
  std::string minor = dot1 == std::string::npos ? "0" : gv.substr(dot1 + 1, dot2 - dot1 - 1);
  d.root().AddMember("major", json::str(major, a), a);
  d.root().AddMember("minor", json::str(minor, a), a);
  d.root().AddMember("gitVersion", json::str(gv, a), a);
  d.root().AddMember("gitCommit", "unitrain-localcluster", a);
  d.root().AddMember("gitTreeState", "clean", a);
  d.root().AddMember("buildDate", "2024-01-01T00:00:00Z", a);
  d.root().AddMember("goVersion", "go1.23.0", a);
  d.root().AddMember("compiler", "gc", a);
  d.root().AddMember("platform", "linux/amd64", a);
  return HttpReply{200, "application/json", d.pretty(), {}};
}

// The served resources of one group version, each CRD's with its version's openAPIV3Schema.
std::vector<OpenApiResource> openapi_resources(const Store& store, const std::vector<ResourceInfo>& resources,
                                               const std::string& group, const std::string& version) {
  std::vector<OpenApiResource> out;
  for (const auto& r : resources) {
    if (r.group != group || r.version != version) continue;
    OpenApiResource o{r, json::Document()};
    if (auto crd = find_crd_object(store, r)) {
      auto* versions = json::find(crd->root(), "/spec/versions");
      if (versions != nullptr && versions->IsArray()) {
        for (const auto& v : versions->GetArray()) {
          if (json::get_string(v, "/name").value_or("") != version) continue;
          if (auto* sch = json::find(v, "/schema/openAPIV3Schema")) o.schema = json::Document::copy_of(*sch);
        }
      }
    }
    out.push_back(std::move(o));
  }
  return out;
}

// /openapi/v3 and /openapi/v3/<api/v1 | apis/g/v>; an empty reply body when not served.
std::string openapi_document(const Store& store, const std::vector<ResourceInfo>& resources,
                             const std::vector<std::string>& segs) {
  if (segs.size() == 2) {
    std::map<std::string, std::string> hashes;
    std::vector<std::pair<std::string, std::string>> gvs;
    for (const auto& r : resources) {
      std::pair<std::string, std::string> gv{r.group, r.version};
      if (std::find(gvs.begin(), gvs.end(), gv) == gvs.end()) gvs.push_back(gv);
    }
    for (const auto& [g, v] : gvs) {
      hashes[openapi_gv_path(g, v)] = content_hash(openapi_v3_group_version(openapi_resources(store, resources, g, v)));
    }
    return openapi_v3_root(hashes);
  }
  std::string group, version;
  if (segs.size() == 4 && segs[2] == "api") {
    version = segs[3];
  } else if (segs.size() == 5 && segs[2] == "apis") {
    group = segs[3];
    version = segs[4];
  }
  if (version.empty()) return {};
  return openapi_v3_group_version(openapi_resources(store, resources, group, version));
}

// What kubectl asks for ('@' is not a valid media type character, so kube-openapi answers with the
// dotted form, which Go's mime parser accepts).
constexpr std::string_view kOpenApiV2ProtobufAccepted = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
constexpr std::string_view kOpenApiV2Protobuf = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

// /openapi/v2 in the first representation the Accept header lists that is served: JSON or
// gnostic protobuf (kubectl asks for protobuf only); 406 when neither is acceptable.
HttpReply openapi_v2_reply(const HttpRequest& req, const Store& store, const std::vector<ResourceInfo>& resources,
                           const std::string& version) {
  bool protobuf = false, acceptable = req.accept.empty();
  for (const auto& m : parse_accept(req.accept)) {
    if (m.type == kOpenApiV2Protobuf || m.type == kOpenApiV2ProtobufAccepted) {
      protobuf = acceptable = true;
      break;
    }
    if (m.type == "application/json" || m.type == "*/*" || m.type == "application/*") {
      acceptable = true;
      break;
    }
  }
  if (!acceptable) {
    return error_reply(errors::status(406, "NotAcceptable",
                                      "only the following media types are accepted: application/json, " +
                                          std::string(kOpenApiV2Protobuf)));
  }
  std::vector<OpenApiResource> all;
  std::vector<std::pair<std::string, std::string>> gvs;
  for (const auto& r : resources) {
    std::pair<std::string, std::string> gv{r.group, r.version};
    if (std::find(gvs.begin(), gvs.end(), gv) != gvs.end()) continue;
    gvs.push_back(gv);
    for (auto& o : openapi_resources(store, resources, r.group, r.version)) all.push_back(std::move(o));
  }
  auto doc = openapi_v2_document(all, version);
  if (protobuf) return HttpReply{200, std::string(kOpenApiV2Protobuf), openapi_v2_protobuf(doc.root()), {}};
  return HttpReply{200, "application/json", doc.dump(), {}};
}

}  // namespace

HttpReply serve_non_resource(const HttpRequest& req, const std::vector<std::string>& segs,
                             const NonResourceContext& context) {
  if (req.method != "GET") return error_reply(errors::method_not_allowed());
  const std::string& path = req.path;
  if (is_probe(path)) return HttpReply{200, "text/plain; charset=utf-8", "ok", {}};
  if (path == "/version" || path == "/version/") return version_reply(context.git_version);
  if (path == "/metrics") {
    return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", context.metrics.render(), {}};
  }
  auto resources = context.store.resources();
  if (segs.size() == 1 && (segs[0] == "api" || segs[0] == "apis")) {
    if (auto v = aggregated_discovery_version(req.accept)) {
      std::string av = "apidiscovery.k8s.io/" + *v;
      return HttpReply{200, "application/json;g=apidiscovery.k8s.io;v=" + *v + ";as=APIGroupDiscoveryList",
                       aggregated_discovery_json(resources, segs[0] == "api", av),
                       {}};
    }
    if (segs[0] == "api") return HttpReply{200, "application/json", api_versions_json(context.server_address), {}};
    return HttpReply{200, "application/json", api_group_list_json(resources), {}};
  }
  if (segs.size() == 2 && segs[0] == "api" && segs[1] == "v1") {
    return HttpReply{200, "application/json", api_resource_list_json(resources, "", "v1"), {}};
  }
  if (segs.size() == 2 && segs[0] == "apis") {
    auto body = api_group_json(resources, segs[1]);
    if (!body.empty()) return HttpReply{200, "application/json", std::move(body), {}};
  }
  if (segs.size() == 3 && segs[0] == "apis") {
    auto body = api_resource_list_json(resources, segs[1], segs[2]);
    if (!body.empty()) return HttpReply{200, "application/json", std::move(body), {}};
  }
  if (segs.size() >= 2 && segs[0] == "openapi" && segs[1] == "v3") {
    auto doc = openapi_document(context.store, resources, segs);
    if (!doc.empty()) return HttpReply{200, "application/json", std::move(doc), {}};
  }
  if (segs.size() == 2 && segs[0] == "openapi" && segs[1] == "v2") {
    return openapi_v2_reply(req, context.store, resources, context.git_version);
  }
  return error_reply(errors::resource_not_found());
}

HttpReply serve_faults_admin(const HttpRequest& req, FaultInjector* faults) {
  if (faults == nullptr) {
    return error_reply(errors::status(404, "NotFound", "fault injection is not enabled on this server"));
  }
  if (req.method == "GET") return HttpReply{200, "application/json", faults->describe(), {}};
  if (req.method == "PUT" || req.method == "POST") {
    auto c = FaultConfig::parse(req.body);
    if (!c) return error_reply(errors::bad_request(c.error().message));
    faults->configure(std::move(*c));
    return HttpReply{200, "application/json", faults->describe(), {}};
  }
  return error_reply(errors::method_not_allowed());
}

HttpReply serve_restart_admin(const HttpRequest& req, bool available) {
  if (!available) return error_reply(errors::status(404, "NotFound", "restart is not available on this server"));
  if (req.method != "POST") return error_reply(errors::method_not_allowed());
  return HttpReply{202, "application/json", R"({"restarting":true})", {}};
}

}  // namespace unitrain::localcluster
