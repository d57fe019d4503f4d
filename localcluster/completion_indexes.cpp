#include "localcluster/completion_indexes.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include <fmt/format.h>

namespace unitrain::localcluster {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) return out;
    start = pos + 1;
  }
}

// strconv.Atoi: an optional sign, then decimal digits only.
std::optional<int64_t> atoi(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

CompletionIndexes CompletionIndexes::parse_lenient(std::string_view text, int64_t completions) {
  CompletionIndexes out;
  if (text.empty()) return out;
  for (std::string_view fragment : split(text, ',')) {
    auto limits = split(fragment, '-');
    auto first = atoi(limits[0]);
    if (!first) continue;
    if (*first >= completions) break;
    int64_t last = *first;
    if (limits.size() > 1) {
      auto l = atoi(limits[1]);
      if (!l) continue;
      last = std::min(*l, completions - 1);
    }
    if (*first >= 0 && last >= *first) out.add_range(*first, last);
  }
  return out;
}

Result<CompletionIndexes> CompletionIndexes::parse_strict(std::string_view text, int64_t completions) {
  CompletionIndexes out;
  if (text.empty()) return out;
  std::optional<int64_t> previous;
  for (std::string_view fragment : split(text, ',')) {
    auto limits = split(fragment, '-');
    if (limits.size() > 2)
      return fail(fmt::format("the fragment \"{}\" violates the requirement that an index interval can have at most "
                              "two parts separated by '-'",
                              fragment));
    auto first = atoi(limits[0]);
    if (!first) return fail(fmt::format("cannot convert string to integer for index: \"{}\"", limits[0]));
    if (*first >= completions) return fail(fmt::format("too large index: \"{}\"", limits[0]));
    int64_t last = *first;
    if (limits.size() > 1) {
      auto l = atoi(limits[1]);
      if (!l) return fail(fmt::format("cannot convert string to integer for index: \"{}\"", limits[1]));
      if (*l >= completions) return fail(fmt::format("too large index: \"{}\"", limits[1]));
      if (*first >= *l) return fail(fmt::format("non-increasing order, previous: {}, current: {}", *first, *l));
      last = *l;
    }
    if (previous && *previous >= *first)
      return fail(fmt::format("non-increasing order, previous: {}, current: {}", *previous, *first));
    previous = last;
    out.intervals_.push_back({*first, last});
  }
  // Adjacent intervals ("1,2") are one interval in memory.
  CompletionIndexes merged;
  for (const auto& iv : out.intervals_) merged.add_range(iv.first, iv.last);
  return merged;
}

void CompletionIndexes::add_range(int64_t first, int64_t last) {
  CompletionIndexes one;
  one.intervals_.push_back({first, last});
  add(one);
}

void CompletionIndexes::add(const CompletionIndexes& other) {
  std::vector<Interval> all = intervals_;
  all.insert(all.end(), other.intervals_.begin(), other.intervals_.end());
  std::sort(all.begin(), all.end(), [](const Interval& a, const Interval& b) { return a.first < b.first; });
  std::vector<Interval> out;
  for (const auto& iv : all) {
    if (!out.empty() && iv.first <= out.back().last + 1)
      out.back().last = std::max(out.back().last, iv.last);
    else
      out.push_back(iv);
  }
  intervals_ = std::move(out);
}

bool CompletionIndexes::has(int64_t index) const {
  auto it = std::lower_bound(intervals_.begin(), intervals_.end(), index,
                             [](const Interval& iv, int64_t i) { return iv.last < i; });
  return it != intervals_.end() && it->first <= index;
}

int64_t CompletionIndexes::total() const {
  int64_t n = 0;
  for (const auto& iv : intervals_) n += iv.last - iv.first + 1;
  return n;
}

std::string CompletionIndexes::str() const {
  std::string out;
  for (const auto& iv : intervals_) {
    if (!out.empty()) out += ',';
    out += std::to_string(iv.first);
    if (iv.last > iv.first) {
      out += iv.last == iv.first + 1 ? ',' : '-';
      out += std::to_string(iv.last);
    }
  }
  return out;
}

int64_t CompletionIndexes::count_in(const CompletionIndexes& required) const {
  int64_t n = 0;
  for (const auto& r : required.intervals_)
    for (const auto& s : intervals_) n += std::max<int64_t>(0, std::min(r.last, s.last) - std::max(r.first, s.first) + 1);
  return n;
}

}  // namespace unitrain::localcluster
