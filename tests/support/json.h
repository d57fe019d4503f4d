#pragma once
// JSON literals in tests.

#include <string_view>
#include <utility>

#include <catch2/catch.hpp>

#include "core/json/json.h"

namespace unitrain::testing {

// The document `text` holds; a test whose literal does not parse fails here, naming it.
inline json::Document doc(std::string_view text) {
  auto d = json::Document::parse(text);
  INFO(text);
  if (!d) FAIL(d.error().message);
  return std::move(d).value();
}

}  // namespace unitrain::testing
