// Reading and editing the members of JSON objects in place, for hooks that decorate pods and
// build objects. A member set to JSON null counts as absent, as Go's decoder reads a null into a
// pointer or omitempty field; the editing helpers replace a member of the wrong type instead of
// adding a second member of the same name.
#pragma once

#include <string_view>

#include "core/json/json.h"

namespace unitrain::framework::json_members {

// obj[key], or nullptr when `obj` is null or not an object, or the member is missing or null.
const json::Value* member(const json::Value* obj, std::string_view key);
json::Value* member(json::Value* obj, std::string_view key);

// obj[key] as an array / object, created empty (replacing a member of another type) when needed.
json::Value& ensure_array(json::Value& obj, std::string_view key, json::Allocator& a);
json::Value& ensure_object(json::Value& obj, std::string_view key, json::Allocator& a);

// Sets obj[key], replacing an existing member in place (its position kept).
void put(json::Value& obj, std::string_view key, json::Value value, json::Allocator& a);
void put(json::Value& obj, std::string_view key, std::string_view value, json::Allocator& a);

}  // namespace unitrain::framework::json_members
