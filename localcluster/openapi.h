// A minimal OpenAPI surface (/openapi/v3, /openapi/v3/<gv> and /openapi/v2), enough for kubectl 1.32:
// its field-validation check finds a PATCH operation per kind with the fieldValidation query
// parameter (so it leaves validation to the server instead of failing on a missing OpenAPI
// document), and `kubectl explain` finds the schemas of CRDs and of built-in kinds (field names and
// types from the generated protobuf tables, see builtin_types.h; no descriptions). PATCH operations
// declare no request body media types, so kubectl computes strategic merge patches of built-in
// kinds from its compiled-in types, as it always did.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"
#include "localcluster/store.h"

namespace unitrain::localcluster {

// One served resource and, for CRDs, its version's openAPIV3Schema (null otherwise).
struct OpenApiResource {
  ResourceInfo info;
  json::Document schema;
};

// The group version's OpenAPI v3 document; empty when `resources` is empty.
std::string openapi_v3_group_version(const std::vector<OpenApiResource>& resources);

// GET /openapi/v3: {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}}}.
// `hashes` maps "api/v1" / "apis/<g>/<v>" to a content hash of that group version's document.
std::string openapi_v3_root(const std::map<std::string, std::string>& hashes);

// GET /openapi/v2: the whole Swagger 2.0 document of every served resource. kubectl reads it
// when a kind is missing from OpenAPI v3 (client-side validation of an unknown kind, which must
// succeed for kubectl to go on to its "no matches for kind" error) and in `kubectl explain` when
// v3 is unavailable. Custom resources carry their schema as OpenAPI v2 can say it.
json::Document openapi_v2_document(const std::vector<OpenApiResource>& resources, std::string_view version);
// The document as gnostic's openapi_v2.Document protobuf
// (application/com.github.proto-openapi.spec.v2@v1.0+protobuf), the only form kubectl's
// discovery client accepts.
std::string openapi_v2_protobuf(const json::Value& document);

// "api/v1" or "apis/<g>/<v>".
std::string openapi_gv_path(std::string_view group, std::string_view version);

// A stable hex hash of a document's text.
std::string content_hash(std::string_view text);

}  // namespace unitrain::localcluster
