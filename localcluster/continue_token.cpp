#include "localcluster/continue_token.h"

#include "core/base/base64.h"
#include "core/json/json.h"

namespace unitrain::localcluster {

std::string encode_continue_token(const ContinueToken& token) {
  const auto& key = token.start_after;
  std::string text = "{\"v\":\"meta.k8s.io/v1\",\"rv\":" + std::to_string(token.resource_version) + ",\"start\":" +
                     json::dump(json::Value(key.c_str(), static_cast<rapidjson::SizeType>(key.size()))) + "}";
  return base64_encode(text, Base64Alphabet::Url, Base64Padding::Unpadded);
}

Result<ContinueToken> decode_continue_token(std::string_view token) {
  auto text = base64_decode(token, Base64Alphabet::Url);
  if (!text) return fail(std::move(text).error());
  auto doc = json::Document::parse(*text);
  if (!doc) return fail("continue token: " + doc.error().message);
  auto rv = json::get_int(doc->root(), "/rv");
  if (!rv || *rv < 0) return fail("continue token: rv is not a resourceVersion");
  auto start = json::get_string(doc->root(), "/start");
  if (!start) return fail("continue token: start is not a string");
  return ContinueToken{static_cast<uint64_t>(*rv), std::string(*start)};
}

}  // namespace unitrain::localcluster
