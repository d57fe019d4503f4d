// Continue tokens as clients send them back (any string): decoding never crashes, a token that
// decodes re-encodes to one that decodes to the same value, and every token the server writes
// (any resourceVersion, any start key) decodes to what was encoded.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "localcluster/continue_token.h"
#include "tests/fuzz/invariant.h"

namespace lc = unitrain::localcluster;
using unitrain::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto token = lc::decode_continue_token(text)) {
    auto again = lc::decode_continue_token(lc::encode_continue_token(*token));
    require(again.has_value());
    require(again->resource_version == token->resource_version && again->start_after == token->start_after);
  } else {
    require(!token.error().message.empty());
  }
  if (size >= 8) {
    lc::ContinueToken written;
    std::memcpy(&written.resource_version, data, 8);
    written.start_after = std::string(text.substr(8));
    auto read = lc::decode_continue_token(lc::encode_continue_token(written));
    require(read.has_value());
    require(read->resource_version == written.resource_version && read->start_after == written.start_after);
  }
  return 0;
}
