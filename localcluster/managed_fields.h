// Field ownership (metadata.managedFields, FieldsV1) as kube-apiserver's field manager keeps it
// for server-side apply: per manager and operation (Apply or Update), the fields it set. An
// Update (create, PUT, non-apply PATCH) gives its manager the fields whose values it changed and
// takes them from every other manager. An Apply owns exactly the fields of its configuration:
// a field another manager owns with a different value is a conflict (409, unless forced, which
// moves the field to the applier), and a field the applier owned before, no longer applies and
// nobody else owns is removed from the object.
//
// Ownership is tracked at leaves: scalar values, atomic lists and empty objects. List items are
// identified by their merge keys (`k:{"name":"x"}`) for built-in lists with a strategic merge
// key and for `x-kubernetes-list-type: map` lists of custom resources, by value (`v:"x"`) for
// set lists (metadata.finalizers, `x-kubernetes-list-type: set`); other lists are atomic.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json/json.h"
#include "localcluster/api_errors.h"

namespace unitrain::localcluster {

// One path element of FieldsV1: "f:<field>", "k:<json of the keys>", "v:<json value>", or "."
// (the list item itself).
using FieldPath = std::vector<std::string>;

// How lists are identified: built-in kinds use the strategic merge keys; a custom resource uses
// its schema (openAPIV3Schema; null when it has none).
struct FieldsContext {
  bool custom_resource = false;
  const json::Value* schema = nullptr;
};

// The leaf field paths an object (or apply configuration) sets, in document order. apiVersion,
// kind, status (unless `subresource` is "status": then only status) and the server-set metadata
// (name, namespace, uid, resourceVersion, ...) are not fields anyone owns.
std::vector<FieldPath> leaf_fields(const json::Value& obj, const FieldsContext& ctx, std::string_view subresource = {});
// FieldsV1 JSON of a set of paths, and back.
json::Value to_fields_v1(const std::vector<FieldPath>& paths, json::Allocator& a);
std::vector<FieldPath> from_fields_v1(const json::Value& fields);
// ".spec.containers[name=\"main\"].image": a path as kube-apiserver prints it in conflicts.
std::string path_text(const FieldPath& p);
// The value at `p` in `obj`, or null when absent.
const json::Value* value_at(const json::Value& obj, const FieldPath& p);

// Who writes: the manager name and the API version of the request.
struct FieldManagerRequest {
  std::string manager;
  std::string api_version;  // "v1", "kubeflow.org/v1"
  std::string subresource;  // "" or "status"
  std::string time;         // RFC 3339
};

// Records an Update by `req.manager` in `next`'s managedFields: `old` is the stored object
// (null on create). Client-supplied managedFields that differ from the stored ones are kept as
// sent (a client resetting them), an empty list clears them.
void record_update(const json::Value* old, json::Document& next, const FieldsContext& ctx,
                   const FieldManagerRequest& req);

// Server-side apply: checks `config` (the apply configuration) against the owners recorded in
// `live` (null on create), then sets `merged` (live with config applied)'s managedFields and
// removes fields the applier dropped. A 409 Conflict names each conflicting field and manager,
// worded as kube-apiserver words it, unless `force`.
StoreResult<void> record_apply(const json::Value* live, const json::Value& config, json::Document& merged,
                               const FieldsContext& ctx, const FieldManagerRequest& req, bool force);

}  // namespace unitrain::localcluster
