// What a fuzz body does when an invariant of the code under test breaks: trap, which libFuzzer
// reports as a crash (saving the input) and which fails the corpus replay test.
#pragma once

namespace unitrain::fuzz {

inline void require(bool invariant) {
  if (!invariant) __builtin_trap();
}

}  // namespace unitrain::fuzz
