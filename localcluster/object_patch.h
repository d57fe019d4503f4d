// PATCH bodies and their application to an object, as kube-apiserver's patcher does it: JSON
// merge patches (RFC 7386), JSON patches (RFC 6902), strategic merge patches for built-in kinds
// (custom resources have none: 415), and apply patches (YAML), applied here as strategic merge
// patches (merge patches for custom resources) without managedFields. Used by the store, and by
// ConvertingStore for versions served through a conversion webhook.
#pragma once

#include <string_view>

#include "core/json/json.h"
#include "localcluster/store.h"

namespace unitrain::localcluster {

// The patch document of a body: JSON, or for apply patches YAML holding exactly one object.
StoreResult<json::Document> decode_patch(PatchKind kind, std::string_view body, bool custom_resource);
// Applies a decoded patch to `target`; `name` names the object in Invalid errors.
StoreResult<void> apply_patch(const ResourceInfo& r, std::string_view name, PatchKind kind, const json::Value& patch,
                              json::Document& target, bool custom_resource);

}  // namespace unitrain::localcluster
