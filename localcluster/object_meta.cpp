#include "localcluster/object_meta.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/api/time.h"

namespace unitrain::localcluster {
namespace {

using json::Document;
using json::Value;

Value& metadata_of(Document& d) {
  Value& root = d.root();
  auto& a = d.alloc();
  auto it = root.FindMember("metadata");
  if (it == root.MemberEnd() || !it->value.IsObject()) {
    if (it != root.MemberEnd()) root.EraseMember(it);
    root.AddMember("metadata", Value(rapidjson::kObjectType), a);
    it = root.FindMember("metadata");
  }
  return it->value;
}

}  // namespace

const Value& null_value() {
  static const Value v;
  return v;
}

const Value& member_or_null(const Value& v, const char* name) {
  if (!v.IsObject()) return null_value();
  auto it = v.FindMember(name);
  return it == v.MemberEnd() ? null_value() : it->value;
}

void set_member(Document& d, const char* name, const Value& v) {
  auto& a = d.alloc();
  Value& root = d.root();
  auto it = root.FindMember(name);
  if (v.IsNull()) {
    if (it != root.MemberEnd()) root.EraseMember(it);
    return;
  }
  if (it != root.MemberEnd()) {
    it->value.CopyFrom(v, a);
  } else {
    root.AddMember(Value(name, a), Value(v, a), a);
  }
}

void meta_set_string(Document& d, const char* name, std::string_view value) {
  Value& m = metadata_of(d);
  auto& a = d.alloc();
  auto it = m.FindMember(name);
  if (it != m.MemberEnd()) {
    it->value.SetString(value.data(), static_cast<rapidjson::SizeType>(value.size()), a);
  } else {
    m.AddMember(Value(name, a), json::str(value, a), a);
  }
}

void meta_set(Document& d, const char* name, const Value& value) {
  Value& m = metadata_of(d);
  auto& a = d.alloc();
  auto it = m.FindMember(name);
  if (value.IsNull()) {
    if (it != m.MemberEnd()) m.EraseMember(it);
  } else if (it != m.MemberEnd()) {
    it->value.CopyFrom(value, a);
  } else {
    m.AddMember(Value(name, a), Value(value, a), a);
  }
}

void meta_remove(Document& d, const char* name) { meta_set(d, name, null_value()); }

std::vector<std::string> finalizers_of(const Value& obj) {
  std::vector<std::string> out;
  const Value* f = json::find(obj, "/metadata/finalizers");
  if (f == nullptr || !f->IsArray()) return out;
  for (const Value& s : f->GetArray()) {
    if (s.IsString()) out.emplace_back(s.GetString(), s.GetStringLength());
  }
  return out;
}

void set_finalizers(Document& d, const std::vector<std::string>& finalizers) {
  if (finalizers.empty()) {
    meta_remove(d, "finalizers");
    return;
  }
  Value arr(rapidjson::kArrayType);
  for (const auto& f : finalizers) arr.PushBack(json::str(f, d.alloc()), d.alloc());
  meta_set(d, "finalizers", arr);
}

std::string object_key(const ResourceInfo& r, std::string_view ns, std::string_view name) {
  return r.namespaced ? std::string(ns) + "/" + std::string(name) : std::string(name);
}

std::string now_rfc3339(std::chrono::seconds later) {
  // A grace period is any int64 a client or a pod spec gives: kept within a century, which no
  // real grace period reaches, so that adding it to now cannot overflow the clock's range.
  constexpr std::chrono::seconds kFurthest = std::chrono::hours(24 * 365 * 100);
  return api::format_time(api::Clock::now() + std::clamp(later, -kFurthest, kFurthest));
}

std::optional<uint64_t> parse_resource_version(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::string random_uuid(std::mt19937_64& rng) {
  uint64_t hi = rng(), lo = rng();
  hi = (hi & 0xFFFFFFFFFFFF0FFFull) | 0x0000000000004000ull;  // version 4
  lo = (lo & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;  // RFC 4122 variant
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xFFFF, hi & 0xFFFF, lo >> 48,
                     lo & 0xFFFFFFFFFFFFull);
}

std::string UuidSource::next() {
  std::lock_guard lock(mu_);
  return random_uuid(rng_);
}

}  // namespace unitrain::localcluster
