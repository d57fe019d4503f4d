// Object metadata over JSON objects (ObjectMeta, OwnerReference, metav1.Condition).
//
// Objects stay JSON documents, so fields nobody here knows survive read-modify-write; these accessors read the few metadata
// fields controllers decide on and the mutators change them in place, leaving every other
// field untouched. Readers are lenient: a missing or mistyped field reads as unset.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/field_errors.h"
#include "core/api/labels.h"
#include "core/api/time.h"
#include "core/base/result.h"
#include "core/json/json.h"

namespace unitrain::api {

// ---- ObjectMeta readers ("" / 0 / empty / nullopt when unset) -------------------------------
std::string_view api_version_of(const json::Value& obj);
std::string_view kind_of(const json::Value& obj);
std::string_view name_of(const json::Value& obj);
std::string_view namespace_of(const json::Value& obj);
std::string_view uid_of(const json::Value& obj);
std::string_view resource_version_of(const json::Value& obj);
int64_t generation_of(const json::Value& obj);
Labels annotations_of(const json::Value& obj);  // labels: labels_of() in labels.h
// The value of one label (metadata.labels[key]) when it is a string. Looks the key up as it is,
// without building a JSON pointer for it (an escaped key and a pointer string per lookup, on
// every watch event that asks).
std::optional<std::string_view> label_of(const json::Value& obj, std::string_view key);
std::optional<TimePoint> creation_timestamp_of(const json::Value& obj);
std::optional<TimePoint> deletion_timestamp_of(const json::Value& obj);
std::vector<std::string> finalizers_of(const json::Value& obj);
bool has_finalizer(const json::Value& obj, std::string_view finalizer);
// "<namespace>/<name>", or "<name>" for cluster-scoped objects (the work-queue key form).
std::string key_of(const json::Value& obj);

// ---- ObjectMeta mutators (create metadata/labels/... as needed) -----------------------------
Status set_label(json::Document& obj, std::string_view key, std::string_view value);
Status set_annotation(json::Document& obj, std::string_view key, std::string_view value);
bool remove_label(json::Document& obj, std::string_view key);
bool remove_annotation(json::Document& obj, std::string_view key);
// Idempotent; false when nothing changed.
bool add_finalizer(json::Document& obj, std::string_view finalizer);
bool remove_finalizer(json::Document& obj, std::string_view finalizer);

// ---- OwnerReference --------------------------------------------------------------------------
struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::optional<bool> block_owner_deletion;

  // apiVersion, kind, name and uid are required (Required value errors under `path`).
  static Result<OwnerReference, FieldErrorList> from_json(const json::Value& v, const FieldPath& path);
  // Member order and omission as metav1.OwnerReference marshals.
  json::Value to_json(json::Allocator& a) const;
  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};

// Well-formed entries of metadata.ownerReferences (malformed entries are skipped).
std::vector<OwnerReference> owner_references_of(const json::Value& obj);
// The entry with controller: true, if any.
std::optional<OwnerReference> controller_of(const json::Value& obj);
bool is_controlled_by(const json::Value& obj, std::string_view owner_uid);
// A reference to `owner` (its apiVersion, kind, name, uid). With `controller`, controller and
// blockOwnerDeletion are true, as metav1.NewControllerRef sets them; otherwise both are unset.
OwnerReference make_owner_reference(const json::Value& owner, bool controller = true);
// Adds `ref` to metadata.ownerReferences, replacing an entry with the same uid. Fails when the
// object already has a different controller (an object has at most one).
Status set_owner_reference(json::Document& obj, const OwnerReference& ref);

// ---- metav1.Condition --------------------------------------------------------------------------
struct Condition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  int64_t observed_generation = 0;
  std::optional<TimePoint> last_transition_time;
  std::string reason;
  std::string message;

  static Result<Condition, FieldErrorList> from_json(const json::Value& v, const FieldPath& path);
  json::Value to_json(json::Allocator& a) const;
  friend bool operator==(const Condition&, const Condition&) = default;
};

// meta.SetStatusCondition: adds or updates the condition of that type; lastTransitionTime moves
// (to the given one, or `now` when unset) only when the status changes. Returns whether anything
// changed.
bool set_status_condition(std::vector<Condition>& conditions, Condition c, TimePoint now);
// The same on conditions kept as JSON (an object's status.conditions; made an array when it is
// none): only the entry of c's type is rewritten, and only when it changes; an entry of that type
// that does not read as a Condition is replaced by `c`.
bool set_status_condition(json::Value& conditions, Condition c, TimePoint now, json::Allocator& a);
const Condition* find_status_condition(const std::vector<Condition>& conditions, std::string_view type);

}  // namespace unitrain::api
