#include "localcluster/protobuf_wire.h"

#include <cstring>

namespace unitrain::localcluster::proto {

Result<uint64_t> take_varint(std::string_view& data) {
  uint64_t v = 0;
  for (size_t i = 0; i < 10; ++i) {
    if (i >= data.size()) return fail("protobuf: truncated varint");
    const auto b = static_cast<unsigned char>(data[i]);
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      data.remove_prefix(i + 1);
      return v;
    }
  }
  return fail("protobuf: varint longer than 10 bytes");
}

Result<uint64_t> WireReader::varint() {
  std::string_view rest = data_.substr(pos_);
  auto v = take_varint(rest);
  if (!v) return fail(v.error().message + " at byte " + std::to_string(pos_));
  pos_ = data_.size() - rest.size();
  return v;
}

Result<std::optional<WireField>> WireReader::next() {
  if (pos_ >= data_.size()) return std::optional<WireField>();
  const size_t at = pos_;
  auto key = varint();
  if (!key) return fail(std::move(key).error());
  WireField f;
  f.number = static_cast<uint32_t>(*key >> 3);
  if (f.number == 0 || (*key >> 3) > 0x1fffffff) return fail("protobuf: invalid field number at byte " + std::to_string(at));
  const auto type = static_cast<unsigned>(*key & 7);
  const auto fixed = [&](size_t n) -> Status {
    if (data_.size() - pos_ < n) return fail("protobuf: truncated field " + std::to_string(f.number));
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
    f.value = v;
    pos_ += n;
    return {};
  };
  switch (type) {
    case 0: {
      f.type = WireType::Varint;
      auto v = varint();
      if (!v) return fail(std::move(v).error());
      f.value = *v;
      break;
    }
    case 1:
      f.type = WireType::Fixed64;
      if (auto s = fixed(8); !s) return fail(s.error());
      break;
    case 2: {
      f.type = WireType::Bytes;
      auto n = varint();
      if (!n) return fail(std::move(n).error());
      if (*n > data_.size() - pos_) {
        return fail("protobuf: field " + std::to_string(f.number) + " is longer than the data at byte " +
                    std::to_string(at));
      }
      f.bytes = data_.substr(pos_, static_cast<size_t>(*n));
      pos_ += static_cast<size_t>(*n);
      break;
    }
    case 5:
      f.type = WireType::Fixed32;
      if (auto s = fixed(4); !s) return fail(s.error());
      break;
    default:
      return fail("protobuf: unsupported wire type " + std::to_string(type) + " at byte " + std::to_string(at));
  }
  return std::optional<WireField>(f);
}

void WireWriter::raw_varint(uint64_t v) {
  while (v >= 0x80) {
    out_ += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out_ += static_cast<char>(v);
}

void WireWriter::tag(uint32_t number, WireType type) { raw_varint((uint64_t{number} << 3) | static_cast<uint64_t>(type)); }

void WireWriter::varint(uint32_t number, uint64_t value) {
  tag(number, WireType::Varint);
  raw_varint(value);
}

void WireWriter::bytes(uint32_t number, std::string_view value) {
  tag(number, WireType::Bytes);
  raw_varint(value.size());
  out_.append(value);
}

void WireWriter::fixed64(uint32_t number, uint64_t value) {
  tag(number, WireType::Fixed64);
  for (int i = 0; i < 8; ++i) out_ += static_cast<char>((value >> (8 * i)) & 0xff);
}

void WireWriter::double_value(uint32_t number, double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  fixed64(number, bits);
}

}  // namespace unitrain::localcluster::proto
