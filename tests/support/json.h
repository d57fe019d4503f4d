#pragma once
// JSON literals in tests.

#include <string_view>
#include <utility>

#include <catch2/catch.hpp>

#include "core/json/json.h"

namespace unitrain::testing {

// The document `text` holds; a test whose literal does not parse fails here, naming it.
// Catch2 is touched only on failure: tests build documents on writer threads too, and Catch2's
// message stack (INFO) and assertion counters are not thread-safe.
inline json::Document doc(std::string_view text) {
  auto d = json::Document::parse(text);
  if (!d) FAIL("not JSON: " << d.error().message << "\n" << text);
  return std::move(d).value();
}

// The one document of the YAML `text` (a job manifest as a user writes it).
inline json::Document yaml(std::string_view text) {
  auto docs = json::parse_yaml(text);
  if (!docs) FAIL("not YAML: " << docs.error().message << "\n" << text);
  if (docs->size() != 1) FAIL(docs->size() << " YAML documents where one was expected:\n" << text);
  return std::move((*docs)[0]);
}

}  // namespace unitrain::testing
