#pragma once
// A test case that cannot run here (an input that lives outside the repository is absent, a tool
// is not installed) must be reported as Skipped by ctest, never as Passed: unitrain_test() in
// tests/CMakeLists.txt registers every Catch2 case with a SKIP_REGULAR_EXPRESSION that matches
// kSkippedMarker, and skip() prints it.
//
//   if (!std::filesystem::exists(file)) return skip("upstream example " + file.string() + " not found");

#include <string_view>

#include <catch2/catch.hpp>

namespace unitrain::testing {

// Keep equal to the SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt.
inline constexpr std::string_view kSkippedMarker = "UNITRAIN_TEST_SKIPPED";

// Says why the running case did not run; the caller returns right after, asserting nothing (an
// assertion after the marker would be hidden: ctest reports the case as Skipped either way).
inline void skip(std::string_view reason) { WARN(kSkippedMarker << ": " << reason); }

}  // namespace unitrain::testing
