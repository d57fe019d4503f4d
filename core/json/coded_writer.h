// Internal to core/json: the writer of CodedText (coded_text.h), a compact JSON writer that
// writes each string StringCodes has a code for as that one byte.
#pragma once

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "core/json/coded_text.h"
#include "core/json/scratch_stack.h"

namespace unitrain::json::detail {

// The writer's stack of open containers (32 levels of 16 bytes at first), inside the writer.
struct WriterLevels {
  static constexpr std::size_t kBytes = 512;
  ScratchStack<kBytes> levels;
};

class CodedWriter : private WriterLevels,
                    public rapidjson::Writer<rapidjson::StringBuffer, rapidjson::UTF8<>, rapidjson::UTF8<>,
                                             ScratchStack<WriterLevels::kBytes>> {
 public:
  using Base = rapidjson::Writer<rapidjson::StringBuffer, rapidjson::UTF8<>, rapidjson::UTF8<>,
                                 ScratchStack<WriterLevels::kBytes>>;
  CodedWriter(rapidjson::StringBuffer& out, const StringCodes& codes) : Base(out, &levels), codes_(codes) {}

  bool String(const char* s, rapidjson::SizeType n, bool copy = false) {
    const char* code = codes_.find(s, n);
    if (!code) return Base::String(s, n, copy);
    Prefix(rapidjson::kStringType);
    os_->Put(*code);
    return EndValue(true);
  }
  bool Key(const char* s, rapidjson::SizeType n, bool copy = false) { return String(s, n, copy); }

 private:
  const StringCodes& codes_;
};

}  // namespace unitrain::json::detail
