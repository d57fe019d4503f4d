#include <catch2/catch.hpp>

#include <string>

#include "core/base/base64.h"

using unitrain::Base64Alphabet;
using unitrain::Base64Padding;
using unitrain::base64_decode;
using unitrain::base64_encode;

namespace {

std::string decoded(std::string_view text, Base64Alphabet alphabet = Base64Alphabet::Standard) {
  auto r = base64_decode(text, alphabet);
  INFO(text);
  REQUIRE(r);
  return *r;
}

}  // namespace

TEST_CASE("base64: RFC 4648 section 10 test vectors, padded") {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""},         {"f", "Zg=="},        {"fo", "Zm8="},         {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, encoded] : vectors) {
    INFO(plain);
    CHECK(base64_encode(plain) == encoded);
    CHECK(decoded(encoded) == plain);
  }
}

TEST_CASE("base64: unpadded output, and decoding with or without padding") {
  CHECK(base64_encode("f", Base64Alphabet::Standard, Base64Padding::Unpadded) == "Zg");
  CHECK(base64_encode("fo", Base64Alphabet::Standard, Base64Padding::Unpadded) == "Zm8");
  CHECK(base64_encode("foo", Base64Alphabet::Standard, Base64Padding::Unpadded) == "Zm9v");
  CHECK(decoded("Zg") == std::string("f"));
  CHECK(decoded("Zm8") == std::string("fo"));
  CHECK(decoded("Zm8=") == std::string("fo"));
}

TEST_CASE("base64: the URL-safe alphabet uses - and _ where the standard one uses + and /") {
  const std::string bytes = "\xfb\xff\xbf";
  CHECK(base64_encode(bytes) == "+/+/");
  CHECK(base64_encode(bytes, Base64Alphabet::Url) == "-_-_");
  CHECK(decoded("-_-_", Base64Alphabet::Url) == bytes);
  CHECK(decoded("+/+/") == bytes);
  auto mixed = base64_decode("+/+/", Base64Alphabet::Url);
  REQUIRE_FALSE(mixed);
  CHECK(mixed.error().message == "invalid base64: '+' at offset 0");
}

TEST_CASE("base64: every byte value round-trips") {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t len : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{255}, size_t{256}}) {
    const std::string bytes = all.substr(0, len);
    CHECK(decoded(base64_encode(bytes)) == bytes);
    CHECK(decoded(base64_encode(bytes, Base64Alphabet::Url, Base64Padding::Unpadded), Base64Alphabet::Url) ==
          bytes);
  }
}

TEST_CASE("base64: line breaks, spaces and tabs are skipped") {
  CHECK(decoded("Zm9v\nYmFy\n") == std::string("foobar"));
  CHECK(decoded(" Zm9v\r\n\tYg==") == std::string("foob"));
}

TEST_CASE("base64: invalid input is an error naming the offset") {
  auto message = [](std::string_view text) {
    auto r = base64_decode(text);
    REQUIRE_FALSE(r);
    return r.error().message;
  };
  CHECK(message("Zm9!") == "invalid base64: '!' at offset 3");
  CHECK(message(std::string("Zm\0v", 4)) == "invalid base64: byte 0x00 at offset 2");
  CHECK(message("Zm9vY") == "invalid base64: the last group ends after one character, at offset 4");
  CHECK(message("Zm9v=") == "invalid base64: '=' at offset 4 must follow two or three characters of a group of four");
  CHECK(message("Z===") == "invalid base64: '=' at offset 1 must follow two or three characters of a group of four");
  CHECK(message("Zg=") == "invalid base64: the padding at offset 2 does not complete the last group");
  CHECK(message("Zm8==") == "invalid base64: too much padding at offset 4");
  CHECK(message("Zg==Zg==") == "invalid base64: 'Z' at offset 4 follows the padding at offset 2");
  // "Zh" carries the bits 011001 100001: the last four must be zero in the canonical encoding.
  CHECK(message("Zh==") == "invalid base64: the character at offset 1 has non-zero unused bits (not the canonical "
                           "encoding)");
}
