// Shared by the trainer's unit tests: the shipped runtimes and JSON lookups.
#pragma once

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "core/json/json.h"
#include "tests/support/json.h"

namespace unitrain::testing::trainer {

inline json::Document shipped_runtime(const std::string& file) {
  std::ifstream in(std::string(UNITRAIN_RUNTIMES_DIR) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  return yaml(text.str());
}

inline const json::Value& at(const json::Value& root, std::string_view pointer) {
  static const json::Value null_value;
  const json::Value* v = json::find(root, pointer);
  return v ? *v : null_value;
}

// The element of an array whose "name" is `name` (null when absent).
inline const json::Value& named(const json::Value& list, std::string_view name) {
  static const json::Value null_value;
  if (!list.IsArray()) return null_value;
  for (const auto& e : list.GetArray()) {
    if (json::string_at(e, "/name") == name) return e;
  }
  return null_value;
}

// Sets the value at `pointer` to the YAML `text`.
inline Status set_yaml(json::Document& doc, std::string_view pointer, std::string_view text) {
  json::Document v = yaml(text);
  return json::set(doc, pointer, json::clone(v.root(), doc.alloc()));
}

// CHECKs that `actual` equals the YAML `expected_yaml`, printing both when not.
inline bool same_as_yaml(const json::Value& actual, std::string_view expected_yaml) {
  json::Document expected = yaml(expected_yaml);
  INFO("actual:   " << json::dump(actual) << "\nexpected: " << expected.dump());
  CHECK(json::equal(actual, expected.root()));
  return json::equal(actual, expected.root());
}

inline std::string dumped(const json::Value& v) { return json::dump(v); }

}  // namespace unitrain::testing::trainer
