// The compressed index ranges of Indexed Jobs, as kube-controller-manager writes and reads them
// and kube-apiserver checks them.
#include <catch2/catch.hpp>

#include "localcluster/completion_indexes.h"

using unitrain::localcluster::CompletionIndexes;

TEST_CASE("completion indexes print as kube-controller-manager writes them") {
  CompletionIndexes s;
  CHECK(s.str().empty());
  for (int64_t i : {4, 0, 2, 1}) s.add(i);
  CHECK(s.str() == "0-2,4");
  CHECK(s.total() == 4);
  s.add(5);
  CHECK(s.str() == "0-2,4,5");  // two neighbours are written with a comma
  s.add(3);
  CHECK(s.str() == "0-5");
  CHECK(s.intervals().size() == 1);
  CHECK(s.has(0));
  CHECK(s.has(5));
  CHECK_FALSE(s.has(6));
  CompletionIndexes other;
  other.add_range(8, 10);
  s.add(other);
  CHECK(s.str() == "0-5,8-10");
  CHECK(s.total() == 9);
  CHECK_FALSE(s.has(7));
}

TEST_CASE("the controller reads status indexes leniently, within completions") {
  CHECK(CompletionIndexes::parse_lenient("0-2,4", 10).str() == "0-2,4");
  CHECK(CompletionIndexes::parse_lenient("1,2,3", 10).str() == "1-3");
  CHECK(CompletionIndexes::parse_lenient("x,3,5-y,7", 10).str() == "3,7");  // corrupt fragments skipped
  CHECK(CompletionIndexes::parse_lenient("2-9", 5).str() == "2-4");        // cut at completions
  CHECK(CompletionIndexes::parse_lenient("1,6,2", 5).str() == "1");        // stops at the first too large
  CHECK(CompletionIndexes::parse_lenient("", 5).empty());
}

TEST_CASE("kube-apiserver's index format check and its messages") {
  auto ok = CompletionIndexes::parse_strict("0,2-4,7", 8);
  REQUIRE(ok);
  CHECK(ok->total() == 5);
  CHECK(ok->str() == "0,2-4,7");
  auto error = [](std::string_view text, int64_t completions) {
    auto r = CompletionIndexes::parse_strict(text, completions);
    REQUIRE_FALSE(r);
    return r.error().message;
  };
  CHECK(error("1-2-3", 5) ==
        "the fragment \"1-2-3\" violates the requirement that an index interval can have at most two parts separated by '-'");
  CHECK(error("a", 5) == "cannot convert string to integer for index: \"a\"");
  CHECK(error("1-b", 5) == "cannot convert string to integer for index: \"b\"");
  CHECK(error("5", 5) == "too large index: \"5\"");
  CHECK(error("1-9", 5) == "too large index: \"9\"");
  CHECK(error("3-1", 5) == "non-increasing order, previous: 3, current: 1");
  CHECK(error("2,1", 5) == "non-increasing order, previous: 2, current: 1");
  CHECK(error("1-3,3", 5) == "non-increasing order, previous: 3, current: 3");
}

TEST_CASE("count_in counts how many required indexes succeeded") {
  auto required = CompletionIndexes::parse_lenient("0-3,8", 10);
  auto succeeded = CompletionIndexes::parse_lenient("1,3-5,8-9", 10);
  CHECK(succeeded.count_in(required) == 3);  // 1, 3, 8
  CHECK(required.count_in(required) == 5);
}
