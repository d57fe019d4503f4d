// The completion indexes of an Indexed batch/v1 Job as intervals, in the compressed text form
// kube-controller-manager writes to status.completedIndexes and status.failedIndexes and users
// write in successPolicy.rules[].succeededIndexes: "1,3-5,7" (two neighbours are written "3,4").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace unitrain::localcluster {

class CompletionIndexes {
 public:
  struct Interval {
    int64_t first = 0;
    int64_t last = 0;
    friend bool operator==(const Interval&, const Interval&) = default;
  };

  CompletionIndexes() = default;
  // Reads the text as the Job controller does: fragments that do not parse are skipped, indexes
  // at or above `completions` dropped (a Job's status written by someone else never stops it).
  static CompletionIndexes parse_lenient(std::string_view text, int64_t completions);
  // kube-apiserver's check of the text (strictly increasing, below `completions`); the error is
  // its wording, e.g. `too large index: "5"`.
  static Result<CompletionIndexes> parse_strict(std::string_view text, int64_t completions);

  void add(int64_t index) { add_range(index, index); }
  void add_range(int64_t first, int64_t last);
  void add(const CompletionIndexes& other);
  bool has(int64_t index) const;
  int64_t total() const;
  bool empty() const { return intervals_.empty(); }
  const std::vector<Interval>& intervals() const { return intervals_; }
  std::string str() const;
  // How many of `required` are in this set.
  int64_t count_in(const CompletionIndexes& required) const;

 private:
  std::vector<Interval> intervals_;  // ordered, disjoint, not adjacent
};

}  // namespace unitrain::localcluster
