#include "core/base/base64.h"

#include <cstdint>

#include <fmt/format.h>

namespace unitrain {
namespace {

constexpr std::string_view kStandard = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kUrl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string_view characters(Base64Alphabet alphabet) {
  return alphabet == Base64Alphabet::Url ? kUrl : kStandard;
}

// The 6-bit value of `c`, or -1 when `c` is not in the alphabet.
int sextet(char c, Base64Alphabet alphabet) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  const std::string_view chars = characters(alphabet);
  if (c == chars[62]) return 62;
  if (c == chars[63]) return 63;
  return -1;
}

bool skipped(char c) { return c == '\n' || c == '\r' || c == ' ' || c == '\t'; }

std::string shown(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x21 && u < 0x7f ? fmt::format("'{}'", c) : fmt::format("byte 0x{:02x}", u);
}

}  // namespace

std::string base64_encode(std::string_view bytes, Base64Alphabet alphabet, Base64Padding padding) {
  const std::string_view chars = characters(alphabet);
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    out += chars[(n >> 18) & 63];
    out += chars[(n >> 12) & 63];
    out += chars[(n >> 6) & 63];
    out += chars[n & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest == 0) return out;
  const uint32_t n = (byte(i) << 16) | (rest == 2 ? byte(i + 1) << 8 : 0);
  out += chars[(n >> 18) & 63];
  out += chars[(n >> 12) & 63];
  if (rest == 2) out += chars[(n >> 6) & 63];
  if (padding == Base64Padding::Padded) out.append(3 - rest, '=');
  return out;
}

Result<std::string> base64_decode(std::string_view text, Base64Alphabet alphabet) {
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  uint32_t bits = 0;      // undecoded bits, in the low `bit_count` bits
  int bit_count = 0;
  size_t in_group = 0;    // characters of the current group of four seen so far
  size_t last = 0;        // offset of the last alphabet character
  size_t padding_at = std::string_view::npos;
  size_t padding = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (skipped(c)) continue;
    if (c == '=') {
      if (padding_at == std::string_view::npos) {
        if (in_group < 2) {
          return fail(fmt::format("invalid base64: '=' at offset {} must follow two or three characters of a group "
                                  "of four",
                                  i));
        }
        padding_at = i;
      }
      if (in_group + ++padding > 4) return fail(fmt::format("invalid base64: too much padding at offset {}", i));
      continue;
    }
    if (padding_at != std::string_view::npos) {
      return fail(fmt::format("invalid base64: {} at offset {} follows the padding at offset {}", shown(c), i,
                              padding_at));
    }
    const int v = sextet(c, alphabet);
    if (v < 0) return fail(fmt::format("invalid base64: {} at offset {}", shown(c), i));
    bits = ((bits << 6) | static_cast<uint32_t>(v)) & 0xFFFFF;  // at most 14 bits are ever pending
    bit_count += 6;
    if (bit_count >= 8) {
      bit_count -= 8;
      out += static_cast<char>((bits >> bit_count) & 0xFF);
    }
    in_group = (in_group + 1) % 4;
    last = i;
  }
  if (in_group == 1) {
    return fail(fmt::format("invalid base64: the last group ends after one character, at offset {}", last));
  }
  if (padding > 0 && in_group + padding != 4) {
    return fail(fmt::format("invalid base64: the padding at offset {} does not complete the last group", padding_at));
  }
  if ((bits & ((1u << bit_count) - 1)) != 0) {
    return fail(fmt::format("invalid base64: the character at offset {} has non-zero unused bits "
                            "(not the canonical encoding)",
                            last));
  }
  return out;
}

}  // namespace unitrain
