// Continue tokens as clients send them back (any string): decoding never crashes, a token that
// decodes re-encodes to one that decodes to the same value, and every token the server writes
// (a resourceVersion other than 0, a start key that is a store key: segments neither empty nor
// "." or "..") decodes to what was encoded.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "localcluster/continue_token.h"
#include "tests/fuzz/invariant.h"

namespace lc = unitrain::localcluster;
using unitrain::fuzz::require;

namespace {

// Store keys are "<name>" or "<namespace>/<name>", and "." and ".." are not names.
bool is_store_key(std::string_view key) {
  if (key.empty()) return false;
  size_t pos = 0;
  for (;;) {
    const size_t slash = key.find('/', pos);
    const std::string_view seg = key.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    if (seg.empty() || seg == "." || seg == "..") return false;
    if (slash == std::string_view::npos) return true;
    pos = slash + 1;
  }
}

}  // namespace

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
    if (written.resource_version == 0 || !is_store_key(written.start_after)) return 0;
    auto read = lc::decode_continue_token(lc::encode_continue_token(written));
    require(read.has_value());
    require(read->resource_version == written.resource_version && read->start_after == written.start_after);
  }
  return 0;
}
