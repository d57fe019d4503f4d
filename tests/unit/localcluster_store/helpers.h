#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "core/json/json.h"
#include "localcluster/builtin_resources.h"
#include "localcluster/memory_store.h"
#include "tests/support/json.h"

namespace lc = unitrain::localcluster;
namespace json = unitrain::json;

inline const lc::ResourceInfo& builtin(std::string_view group, std::string_view resource) {
  for (const auto& r : lc::builtin_resources()) {
    if (r.group == group && r.resource == resource) return r;
  }
  FAIL("no built-in resource " << group << "/" << resource);
  throw std::logic_error("unreachable");
}

inline const lc::ResourceInfo& pods() { return builtin("", "pods"); }

using unitrain::testing::doc;

inline std::unique_ptr<lc::Store> new_store(lc::StoreOptions o = {}) {
  auto s = lc::make_memory_store(o);
  REQUIRE(s);
  return std::move(*s);
}

inline std::string str(const json::Document& d, std::string_view pointer) {
  auto s = json::get_string(d.root(), pointer);
  return s ? std::string(*s) : std::string();
}

inline json::Document pod_doc(std::string_view name, std::string_view extra_meta = "", std::string_view spec = "") {
  std::string s = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" + std::string(name) + "\"";
  if (!extra_meta.empty()) s += "," + std::string(extra_meta);
  s += "},\"spec\":";
  s += spec.empty() ? std::string("{\"containers\":[{\"name\":\"main\",\"image\":\"busybox:1.36\"}]}") : std::string(spec);
  s += "}";
  return doc(s);
}

inline json::Document create_ok(lc::Store& s, const lc::ResourceInfo& r, std::string_view ns, json::Document d) {
  auto res = s.create(r, ns, std::move(d));
  INFO((res ? std::string() : res.error().message));
  REQUIRE(res);
  return std::move(*res);
}

// Names of the items of a List JSON, in order.
inline std::vector<std::string> item_names(const std::string& list) {
  auto d = json::Document::parse(list);
  REQUIRE(d);
  std::vector<std::string> out;
  for (const auto& item : d->root()["items"].GetArray()) {
    out.emplace_back(json::get_string(item, "/metadata/name").value_or(""));
  }
  return out;
}

struct Drained {
  std::vector<std::string> types;
  std::vector<json::Document> objects;
  bool closed = false;
};

inline Drained drain(lc::Watcher& w) {
  Drained d;
  for (auto& e : w.drain(d.closed)) {
    d.types.push_back(e.type);
    d.objects.push_back(doc(*e.object));
  }
  return d;
}
