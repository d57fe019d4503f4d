// In-place edits of an object's top-level members and metadata, and the values the server
// assigns there (uid, timestamps, resourceVersion): what the store does to every object it
// writes, and what the admission and conversion front does to objects it relabels.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"
#include "localcluster/resource_info.h"

namespace unitrain::localcluster {

const json::Value& null_value();
// The member `name` of `v`, or null when `v` is not an object or has no such member.
const json::Value& member_or_null(const json::Value& v, const char* name);
// Replaces (or with a null `v`, removes) a top-level member.
void set_member(json::Document& d, const char* name, const json::Value& v);
// The same for a member of metadata (created when missing).
void meta_set(json::Document& d, const char* name, const json::Value& value);
void meta_set_string(json::Document& d, const char* name, std::string_view value);
void meta_remove(json::Document& d, const char* name);

std::vector<std::string> finalizers_of(const json::Value& obj);
void set_finalizers(json::Document& d, const std::vector<std::string>& finalizers);

// "<namespace>/<name>" for namespaced resources, "<name>" otherwise: how the store keys objects.
std::string object_key(const ResourceInfo& r, std::string_view ns, std::string_view name);

// metav1.Time of now (plus `later`), as creationTimestamp and deletionTimestamp are written.
std::string now_rfc3339(std::chrono::seconds later = std::chrono::seconds(0));

// A resourceVersion as the store hands them out (a decimal counter), or nullopt for anything else.
std::optional<uint64_t> parse_resource_version(std::string_view text);

// A random RFC 4122 version-4 UUID: metadata.uid, and the uid of admission and conversion reviews.
std::string random_uuid(std::mt19937_64& rng);

// random_uuid for callers on several threads.
class UuidSource {
 public:
  std::string next();

 private:
  std::mutex mu_;
  std::mt19937_64 rng_{std::random_device{}()};
};

}  // namespace unitrain::localcluster
