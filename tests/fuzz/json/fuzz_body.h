// One fuzz iteration over the JSON/YAML/patch/quantity parsers, shared by the libFuzzer target
// and the Catch2 replay test. It aborts (via __builtin_trap) only when an invariant breaks;
// malformed input must simply produce errors.
#pragma once

#include <cstddef>
#include <cstdint>

namespace unitrain::fuzz {

void json_yaml_one_input(const uint8_t* data, size_t size);

}  // namespace unitrain::fuzz
