// ASCII case helpers for the names Kubernetes compares without case: replica types ("worker" is
// the label value of "Worker"), kinds and scheme names. Not Unicode case folding: every name
// involved is ASCII.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

namespace unitrain::framework::ascii {

inline char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

inline bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

}  // namespace unitrain::framework::ascii
