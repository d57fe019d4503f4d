// The text a cache keeps of each object it holds: compact JSON in which the strings its objects
// repeat most (member names, label keys and values, condition types) are one byte each.
//
// CodedText is only ever written here, from a document (or from a parse, straight from the
// events that build one), and read back here. That makes it a different thing from JSON that
// comes from elsewhere: Document::parse() must refuse an object with a repeated member name
// (lookups would see the first of them, Go decoders keep the last), which costs a second walk of
// every parsed document; text written from a document reads back as exactly that document, so
// reading it skips that walk. There is no way to make a CodedText out of other bytes.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <rapidjson/stringbuffer.h>

#include "core/base/result.h"
#include "core/json/json.h"

namespace unitrain::json {

// Up to kMaxCodes strings, each written as one byte below 0x20 that compact JSON never holds (a
// string must escape them, and there is no whitespace between tokens; tab, newline and carriage
// return are not used). Immutable once made, so threads share one.
class StringCodes {
 public:
  static constexpr size_t kMaxCodes = 28;

  StringCodes();  // none: the text is plain compact JSON
  // Codes for the first kMaxCodes of `strings` (each must be codable()).
  explicit StringCodes(std::vector<std::string> strings);
  // Its lookup holds views of its own strings.
  StringCodes(const StringCodes&) = delete;
  StringCodes& operator=(const StringCodes&) = delete;

  // Whether a code may stand for `s`: 3 to 64 bytes, nothing that would need escaping.
  static bool codable(std::string_view s);
  bool empty() const { return table_.empty(); }
  const std::vector<std::string>& strings() const { return table_; }

  // The code standing for s[0, n), or null.
  const char* find(const char* s, size_t n) const {
    if (n < shortest_ || n > longest_ || !first_byte_[static_cast<unsigned char>(s[0])]) return nullptr;
    auto it = codes_.find(std::string_view(s, n));
    return it == codes_.end() ? nullptr : &it->second;
  }
  // The plain JSON of coded text: the runs between codes copied whole.
  std::string expand(std::string_view text) const;

 private:
  std::vector<std::string> table_;              // code kCodes[i] stands for table_[i]
  std::array<int16_t, 0x20> index_of_{};        // code byte -> table index, -1 for none
  std::unordered_map<std::string_view, char> codes_;  // views of table_
  std::array<bool, 256> first_byte_{};          // what rules most strings out before a lookup
  size_t shortest_ = SIZE_MAX, longest_ = 0;
};

class CodedText {
 public:
  CodedText() = default;

  // `v` as compact JSON with `codes`' strings coded. `scratch` is the output buffer, kept by the
  // caller between calls (a writer per thread).
  static CodedText write(const Value& v, const StringCodes& codes, rapidjson::StringBuffer& scratch);

  // Document::parse(text, mask) (the same checks, the same errors: this is text from elsewhere),
  // and into `member_text` the coded text of what the mask keeps of the root's member `member`,
  // written from the parse's own events instead of walking the document afterwards: byte for
  // byte what write() gives of that member's value (empty when the root has no such member, or
  // the mask drops it). A document is returned as it is built: moving one costs an allocation.
  static Result<Document> parse_writing_member(std::string_view text, const FieldMask& mask, std::string_view member,
                                               const StringCodes& codes, rapidjson::StringBuffer& scratch,
                                               CodedText& member_text);

  // The document this text was written from, or what `fields` keeps of it (null: all), with the
  // codes it was written with (text written without codes reads with any: it holds no code).
  // Fails only when the writer could not write the document (a NaN or infinity).
  Result<Document> read(const StringCodes& codes, const FieldMask* fields = nullptr) const;

  std::string_view bytes() const { return text_; }
  size_t size() const { return text_.size(); }
  bool empty() const { return text_.empty(); }

 private:
  explicit CodedText(std::string text) : text_(std::move(text)) {}
  std::string text_;
};

// Coded text and the codes it was written with: a cache keeps it as it is when they are its own.
struct WrittenText {
  CodedText text;
  std::shared_ptr<const StringCodes> codes;  // null: nothing written
};

// The codes a cache writes its text with now, for the threads that decode what it will store (a
// watch stream) to write that text as they parse. They change once: from none to what the cache
// learnt from its first objects.
class CurrentCodes {
 public:
  explicit CurrentCodes(std::shared_ptr<const StringCodes> codes) : codes_(std::move(codes)) {}
  std::shared_ptr<const StringCodes> get() const {
    std::lock_guard g(mu_);
    return codes_;
  }
  void set(std::shared_ptr<const StringCodes> codes) {
    std::lock_guard g(mu_);
    codes_ = std::move(codes);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const StringCodes> codes_;
};

}  // namespace unitrain::json
