#include "localcluster/content_negotiation.h"

#include <algorithm>
#include <cctype>

#include "localcluster/http_message.h"
#include "localcluster/protobuf_body.h"

namespace unitrain::localcluster {

std::string MediaType::param(const std::string& k) const {
  auto it = params.find(k);
  return it == params.end() ? std::string() : it->second;
}

MediaType parse_media_type(std::string_view s) {
  MediaType m;
  size_t semi = s.find(';');
  m.type = std::string(trim(s.substr(0, semi)));
  std::transform(m.type.begin(), m.type.end(), m.type.begin(), [](unsigned char c) { return std::tolower(c); });
  while (semi != std::string_view::npos) {
    s = s.substr(semi + 1);
    semi = s.find(';');
    std::string_view p = trim(s.substr(0, semi));
    size_t eq = p.find('=');
    if (eq == std::string_view::npos) continue;
    m.params[std::string(trim(p.substr(0, eq)))] = std::string(trim(p.substr(eq + 1)));
  }
  return m;
}

std::vector<MediaType> parse_accept(std::string_view accept) {
  std::vector<MediaType> out;
  while (!accept.empty()) {
    size_t comma = accept.find(',');
    auto one = trim(accept.substr(0, comma));
    if (!one.empty()) out.push_back(parse_media_type(one));
    accept = comma == std::string_view::npos ? std::string_view{} : accept.substr(comma + 1);
  }
  return out;
}

Negotiated negotiate(std::string_view accept) {
  for (const auto& m : parse_accept(accept)) {
    std::string as = m.param("as");
    if (as.empty()) continue;
    if (m.type != "application/json") continue;
    if (m.param("g") != "meta.k8s.io" || m.param("v") != "v1") continue;
    if (as == "Table") return {Representation::Table, "application/json;as=Table;v=v1;g=meta.k8s.io"};
    if (as == "PartialObjectMetadata" || as == "PartialObjectMetadataList") {
      return {Representation::Metadata, "application/json;as=" + as + ";v=v1;g=meta.k8s.io"};
    }
  }
  return {};
}

bool accepts_json(std::string_view accept) {
  auto ranges = parse_accept(accept);
  if (ranges.empty()) return true;
  return std::any_of(ranges.begin(), ranges.end(), [](const MediaType& m) {
    return m.type == "*/*" || m.type == "application/*" || m.type == "application/json" ||
           m.type.ends_with("+json");
  });
}

std::optional<std::string> aggregated_discovery_version(std::string_view accept) {
  for (const auto& m : parse_accept(accept)) {
    if (m.type != "application/json" || m.param("g") != "apidiscovery.k8s.io" ||
        m.param("as") != "APIGroupDiscoveryList") {
      continue;
    }
    auto v = m.param("v");
    if (v == "v2" || v == "v2beta1") return v;
  }
  return std::nullopt;
}

json::Value partial_object_metadata(const json::Value& obj, json::Allocator& a) {
  json::Value p(rapidjson::kObjectType);
  p.AddMember("kind", "PartialObjectMetadata", a);
  p.AddMember("apiVersion", "meta.k8s.io/v1", a);
  if (auto* m = json::find(obj, "/metadata")) p.AddMember("metadata", json::clone(*m, a), a);
  return p;
}

json::Document metadata_only(const json::Value& v) {
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  if (v.IsObject() && v.HasMember("items")) {
    d.root().AddMember("kind", "PartialObjectMetadataList", a);
    d.root().AddMember("apiVersion", "meta.k8s.io/v1", a);
    if (auto* m = json::find(v, "/metadata")) d.root().AddMember("metadata", json::clone(*m, a), a);
    json::Value items(rapidjson::kArrayType);
    if (v["items"].IsArray()) {
      for (const auto& it : v["items"].GetArray()) items.PushBack(partial_object_metadata(it, a), a);
    }
    d.root().AddMember("items", items, a);
  } else {
    d.root() = partial_object_metadata(v, a);
  }
  return d;
}

StoreResult<json::Document> decode_body(std::string_view body, const MediaType& ctype) {
  if (ctype.type == kProtobufMediaType) return decode_protobuf_object(body);
  if (ctype.type == "application/yaml" || ctype.type == "application/apply-patch+yaml") {
    auto docs = json::parse_yaml(body);
    if (!docs) {
      return fail(errors::bad_request("the body of the request was in an unknown format: " + docs.error().message));
    }
    if (docs->empty()) return fail(errors::bad_request("the request body is empty"));
    return std::move(docs->front());
  }
  if (!ctype.type.empty() && ctype.type != "application/json" && ctype.type != "*/*" &&
      !ctype.type.ends_with("+json")) {
    return fail(errors::unsupported_media_type(
        "the body of the request was in an unknown format - accepted media types include: application/json, "
        "application/yaml, application/vnd.kubernetes.protobuf"));
  }
  auto doc = json::Document::parse(body);
  if (!doc) return fail(errors::bad_request("the object provided is unrecognized: " + doc.error().message));
  return std::move(*doc);
}

std::optional<PatchKind> patch_kind(const MediaType& ctype) {
  if (ctype.type == "application/merge-patch+json") return PatchKind::Merge;
  if (ctype.type == "application/json-patch+json") return PatchKind::JSON;
  if (ctype.type == "application/strategic-merge-patch+json") return PatchKind::Strategic;
  if (ctype.type == "application/apply-patch+yaml") return PatchKind::Apply;
  return std::nullopt;
}

}  // namespace unitrain::localcluster

