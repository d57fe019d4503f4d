// Content negotiation as kube-apiserver does it for JSON: which representation a client's Accept
// header asks for (the object, a meta.k8s.io Table, PartialObjectMetadata, aggregated discovery),
// how a request body is decoded by its Content-Type (JSON, YAML, Kubernetes protobuf, the patch
// types), and the PartialObjectMetadata form. Responses are JSON only: protobuf is decoded, never
// produced.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"
#include "localcluster/api_errors.h"
#include "localcluster/store.h"

namespace unitrain::localcluster {

// One media range of an Accept or Content-Type header: "application/json;as=Table;g=meta.k8s.io;v=v1".
struct MediaType {
  std::string type;  // lower case
  std::map<std::string, std::string> params;
  std::string param(const std::string& k) const;
};

MediaType parse_media_type(std::string_view text);
std::vector<MediaType> parse_accept(std::string_view accept);

enum class Representation { Object, Table, Metadata };

struct Negotiated {
  Representation representation = Representation::Object;
  std::string content_type = "application/json";
};

// The first acceptable representation in `accept`; the object as JSON when none is asked for.
// Every Kubernetes client that asks for protobuf lists JSON as an alternative.
Negotiated negotiate(std::string_view accept);
// Whether a response in JSON is acceptable: no Accept header, */*, application/*, JSON or a
// +json type. A client that accepts only protobuf gets 406 (errors::not_acceptable_json).
bool accepts_json(std::string_view accept);
// Which aggregated discovery version ("v2", "v2beta1") the client asks for, if any.
std::optional<std::string> aggregated_discovery_version(std::string_view accept);

// PartialObjectMetadata of one object, or a PartialObjectMetadataList for a list.
json::Document metadata_only(const json::Value& object_or_list);
// PartialObjectMetadata of one object, allocated in `a`.
json::Value partial_object_metadata(const json::Value& obj, json::Allocator& a);

// The request body as a JSON document: JSON (and +json types), YAML or Kubernetes protobuf
// (protobuf_body.h) converted. Other types are 415, undecodable bodies 400.
StoreResult<json::Document> decode_body(std::string_view body, const MediaType& content_type);
// The patch a PATCH body's Content-Type announces, or nullopt (415) for anything else.
std::optional<PatchKind> patch_kind(const MediaType& content_type);

}  // namespace unitrain::localcluster
