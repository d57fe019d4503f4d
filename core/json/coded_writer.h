// Internal to core/json: the writer of CodedText (coded_text.h), a compact JSON writer that
// writes each string StringCodes has a code for as that one byte.
#pragma once

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "core/json/coded_text.h"

namespace unitrain::json::detail {

class CodedWriter : public rapidjson::Writer<rapidjson::StringBuffer> {
 public:
  using Base = rapidjson::Writer<rapidjson::StringBuffer>;
  CodedWriter(rapidjson::StringBuffer& out, const StringCodes& codes) : Base(out), codes_(codes) {}

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
