// The protobuf wire format (varints, length-delimited fields, fixed 32/64-bit values): reading the
// fields of a message in order, and writing them. What the fields mean is up to the caller
// (protobuf_body.cpp decodes request bodies by generated field tables; openapi.cpp encodes the
// OpenAPI v2 document kubectl asks for).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/result.h"

namespace unitrain::localcluster::proto {

enum class WireType : uint8_t { Varint = 0, Fixed64 = 1, Bytes = 2, Fixed32 = 5 };

struct WireField {
  uint32_t number = 0;
  WireType type = WireType::Varint;
  uint64_t value = 0;      // Varint, Fixed64, Fixed32
  std::string_view bytes;  // Bytes (into the reader's input)
};

// A varint taken from the front of `data` (packed repeated fields are varints one after another).
Result<uint64_t> take_varint(std::string_view& data);

class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}
  // The next field, nullopt at the end of the message. Truncated data, an overlong varint,
  // field number 0 and group wire types are errors naming the byte offset.
  Result<std::optional<WireField>> next();

 private:
  Result<uint64_t> varint();
  std::string_view data_;
  size_t pos_ = 0;
};

class WireWriter {
 public:
  void varint(uint32_t number, uint64_t value);
  void boolean(uint32_t number, bool value) { varint(number, value ? 1 : 0); }
  void bytes(uint32_t number, std::string_view value);  // strings and embedded messages too
  void fixed64(uint32_t number, uint64_t value);
  void double_value(uint32_t number, double value);
  const std::string& data() const { return out_; }

 private:
  void tag(uint32_t number, WireType type);
  void raw_varint(uint64_t value);
  std::string out_;
};

}  // namespace unitrain::localcluster::proto
