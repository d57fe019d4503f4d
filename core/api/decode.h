// Typed reads of JSON members for the decoders in core/api, with field-path errors worded like
// the rest of the API layer ("spec.runPolicy.backoffLimit: Invalid value: "x": must be an
// integer"). A missing member or a JSON null reads as "unset", as Go's decoder treats them for
// pointer and omitempty fields.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/api/field_errors.h"
#include "core/api/time.h"
#include "core/json/json.h"

namespace unitrain::api {

// The member readers take the path of the object they read from (`in`): the member's own path,
// in.child(key), is built only for an error. Decoding a valid object (every job, every pass)
// so builds no path strings.
class Decoder {
 public:
  // The member `key` of `obj`, or nullptr when missing or null.
  static const json::Value* member(const json::Value& obj, std::string_view key);

  std::optional<std::string> string(const json::Value& obj, std::string_view key, const FieldPath& in);
  std::optional<int32_t> int32(const json::Value& obj, std::string_view key, const FieldPath& in);
  std::optional<int64_t> int64(const json::Value& obj, std::string_view key, const FieldPath& in);
  std::optional<bool> boolean(const json::Value& obj, std::string_view key, const FieldPath& in);
  std::optional<TimePoint> time(const json::Value& obj, std::string_view key, const FieldPath& in);
  // The member when it is an object / array; an error when it is something else.
  const json::Value* object(const json::Value& obj, std::string_view key, const FieldPath& in);
  const json::Value* array(const json::Value& obj, std::string_view key, const FieldPath& in);
  // `v` itself must be an object; records an error naming `p` otherwise.
  bool expect_object(const json::Value& v, const FieldPath& p);

  void add(FieldError e) { errors_.push_back(std::move(e)); }
  bool ok() const { return errors_.empty(); }
  FieldErrorList& errors() { return errors_; }

 private:
  FieldErrorList errors_;
};

// Encoding helpers that keep member order as written.
void put_string(json::Value& obj, std::string_view key, std::string_view value, json::Allocator& a);
void put_int(json::Value& obj, std::string_view key, int64_t value, json::Allocator& a);
void put_bool(json::Value& obj, std::string_view key, bool value, json::Allocator& a);
// metav1.Time: RFC 3339 in seconds, or null for the zero time (as Go encodes a non-pointer Time).
void put_time(json::Value& obj, std::string_view key, const std::optional<TimePoint>& t, json::Allocator& a);

}  // namespace unitrain::api
