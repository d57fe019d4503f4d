// The built-in kinds' types, as the generated protobuf tables (protobuf_tables.h) describe them:
// one source for decoding protobuf bodies (protobuf_body.h), the OpenAPI schemas of built-in
// kinds (openapi.h) and the fields a body of a built-in kind does not declare (fieldValidation).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"
#include "localcluster/protobuf_tables.h"

namespace unitrain::localcluster {

// The message named "k8s.io.api.core.v1.Pod"; null when the tables do not have it.
const proto::Message* find_proto_message(std::string_view name);
// The message of a built-in kind ("apps/v1", "Deployment"); null for kinds outside the tables
// (custom resources, apiextensions.k8s.io).
const proto::Message* builtin_message(std::string_view api_version, std::string_view kind);
std::span<const proto::Field> fields_of(const proto::Message& m);
const proto::Field* field_of(const proto::Message& m, uint32_t number);
const proto::Message& message_of(const proto::Field& f);  // f.type must be Message

// How a message looks in JSON. Most are objects of their fields; these apimachinery types
// marshal to a scalar (or, for RawExtension and FieldsV1, to arbitrary JSON), a message wrapping a
// Go slice (ExtraValue) to an array, and apiextensions' JSON (raw JSON bytes) and
// JSONSchemaPropsOr{Array,Bool,StringArray} to whichever of their alternatives is set.
enum class JsonForm {
  Object, Time, MicroTime, Duration, Quantity, IntOrString, RawExtension, FieldsV1, Array,
  RawJson, SchemaOrArray, SchemaOrBool, SchemaOrStringArray
};
JsonForm json_form(const proto::Message& m);

// The fields of `value` that message `m` does not declare, as kube-apiserver's strict decoder
// names them ("spec.containers[0].foo", "spec.template.metadata.x"; `path` is the value's own
// path, empty for a whole object). `value` is an object of the message or a merge-style patch of
// one (keys starting with '$' are patch directives); values of the wrong JSON type are left to
// other checks.
std::vector<std::string> undeclared_message_fields(const json::Value& value, const proto::Message& m,
                                                   std::string_view path = {});

// The strategic-merge-patch merge key of the list at `list_path` of a `kind` object (a JSON
// Pointer, array indices as "*": "/spec/template/spec/containers/*/env"), from the Go tags the
// tables carry: the patchMergeKey of a list whose patchStrategy merges ("" for a primitive list
// merged as a set, metadata.finalizers), nullopt for a list that a patch replaces whole
// (tolerations) or a path the kind does not have. The lookup json::apply_strategic_merge_patch
// takes, one source with the OpenAPI documents' x-kubernetes-patch-merge-key.
std::optional<std::string> builtin_merge_key(const proto::Message& kind, std::string_view list_path);

enum class OpenApiVersion { V2, V3 };

// Upstream's definition name of a message: "io.k8s.api.core.v1.Pod".
std::string openapi_definition_name(const proto::Message& m);
// Adds the schema of `kind` and of every message it reaches to `definitions` (an object), each
// under its definition name and referenced with $ref ("#/definitions/..." in v2,
// "#/components/schemas/..." in v3), with the strategic-merge-patch extensions
// (x-kubernetes-patch-strategy, x-kubernetes-patch-merge-key) kube-apiserver publishes.
// Types, formats and field names only: the tables carry no descriptions, required lists or enums.
void add_openapi_definitions(const proto::Message& kind, OpenApiVersion version, json::Value& definitions,
                             json::Allocator& a);

}  // namespace unitrain::localcluster
