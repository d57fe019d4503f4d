#include "core/json/coded_text.h"

#include <algorithm>

#include "core/json/coded_writer.h"

namespace unitrain::json {

namespace {
// The bytes below 0x20 but tab, newline and carriage return: compact JSON holds none of them.
constexpr unsigned char kCodeBytes[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x0b, 0x0c,
                                        0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
                                        0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f};
static_assert(sizeof(kCodeBytes) == StringCodes::kMaxCodes);
}  // namespace

StringCodes::StringCodes() { index_of_.fill(-1); }

StringCodes::StringCodes(std::vector<std::string> strings) : StringCodes() {
  if (strings.size() > kMaxCodes) strings.resize(kMaxCodes);
  table_ = std::move(strings);
  for (size_t i = 0; i < table_.size(); ++i) {
    const std::string& s = table_[i];
    index_of_[kCodeBytes[i]] = static_cast<int16_t>(i);
    codes_.emplace(s, static_cast<char>(kCodeBytes[i]));
    first_byte_[static_cast<unsigned char>(s.front())] = true;
    shortest_ = std::min(shortest_, s.size());
    longest_ = std::max(longest_, s.size());
  }
}

bool StringCodes::codable(std::string_view s) {
  if (s.size() < 3 || s.size() > 64) return false;
  return std::none_of(s.begin(), s.end(), [](char c) { return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20; });
}

std::string StringCodes::expand(std::string_view text) const {
  std::string out;
  out.reserve(text.size() * 2);
  size_t run = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b >= 0x20 || index_of_[b] < 0) continue;
    out.append(text, run, i - run);
    out += '"';
    out += table_[static_cast<size_t>(index_of_[b])];
    out += '"';
    run = i + 1;
  }
  out.append(text, run, text.size() - run);
  return out;
}

CodedText CodedText::write(const Value& v, const StringCodes& codes, rapidjson::StringBuffer& scratch) {
  scratch.Clear();
  detail::CodedWriter w(scratch, codes);
  v.Accept(w);
  return CodedText(std::string(scratch.GetString(), scratch.GetSize()));
}

}  // namespace unitrain::json
