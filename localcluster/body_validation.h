// What kube-apiserver checks on a create, update or patch body before storage, besides the
// schema: that its kind and apiVersion are the URL's, and the `fieldValidation` directive
// (Ignore, Warn — the default —, Strict) for fields the object's type does not declare: a custom
// resource's fields outside its structural schema, a built-in kind's fields outside its type (the
// generated protobuf tables), and unknown metadata fields of every kind.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json/json.h"
#include "localcluster/http_message.h"
#include "localcluster/protobuf_tables.h"
#include "localcluster/store.h"

namespace unitrain::localcluster {

enum class FieldValidation { Ignore, Warn, Strict };

// The directive of the fieldValidation query parameter; an unknown value is 422, worded as
// kube-apiserver words invalid <options_kind> (CreateOptions, UpdateOptions, PatchOptions).
StoreResult<FieldValidation> field_validation(const Query& q, std::string_view options_kind);

// 400 when the body's apiVersion is not the URL's; for a kind other than the URL's, 400 for
// built-in resources ("... cannot be handled as a ...") and 422 for custom resources. Empty
// apiVersion and kind are accepted (the server fills them in).
std::optional<StatusError> check_type_meta(const ResourceInfo& r, const json::Value& body, std::string_view name,
                                           bool custom_resource);

// The fields of `body` the type does not declare: `builtin_kind` is a built-in kind's message
// (builtin_message()); otherwise `schema` is the custom resource version's openAPIV3Schema, or
// null for a kind with neither, whose metadata alone is checked.
std::vector<std::string> undeclared_fields(const json::Value& body, const json::Value& schema,
                                           const proto::Message* builtin_kind = nullptr);

// Applies the directive to undeclared fields: Strict gives the 400 `<context>strict decoding
// error: unknown field "<path>", ...` (context: decode_error_context() for create and update,
// empty for patches, as kube-apiserver words them); Warn adds one `unknown field "<path>"`
// warning per field.
std::optional<StatusError> enforce_field_validation(FieldValidation directive, const std::vector<std::string>& fields,
                                                    std::vector<std::string>& warnings, std::string_view context = {});
// `<Kind> in version "<version>" cannot be handled as a <Kind>: `: how kube-apiserver prefixes
// a body it could not decode.
std::string decode_error_context(const ResourceInfo& r);

}  // namespace unitrain::localcluster
