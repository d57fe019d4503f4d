#include "localcluster/continue_token.h"


#include "core/base/base64.h"
#include "core/json/json.h"

namespace unitrain::localcluster {
namespace {

constexpr std::string_view kInvalid = "continue key is not valid";

// Whether "/" + key is already what Go's path.Clean makes of it: no empty, "." or ".."
// segment and no trailing slash.
bool is_clean_key(std::string_view key) {
  if (key.starts_with('/')) key.remove_prefix(1);
  if (key.empty()) return true;
  size_t pos = 0;
  for (;;) {
    size_t slash = key.find('/', pos);
    std::string_view seg = key.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    if (seg.empty() || seg == "." || seg == "..") return false;
    if (slash == std::string_view::npos) return true;
    pos = slash + 1;
  }
}

}  // namespace

std::string encode_continue_token(const ContinueToken& token) {
  const auto& key = token.start_after;
  std::string text = "{\"v\":\"meta.k8s.io/v1\",\"rv\":" + std::to_string(token.resource_version) + ",\"start\":" +
                     json::dump(json::Value(key.c_str(), static_cast<rapidjson::SizeType>(key.size()))) + "}";
  return base64_encode(text, Base64Alphabet::Url, Base64Padding::Unpadded);
}

Result<ContinueToken> decode_continue_token(std::string_view token) {
  const auto invalid = [](std::string_view why) {
    return fail(std::string(kInvalid) + (why.empty() ? "" : ": ") + std::string(why));
  };
  auto text = base64_decode(token, Base64Alphabet::Url);
  if (!text) return invalid(text.error().message);
  auto doc = json::Document::parse(*text);
  if (!doc) return invalid(doc.error().message);
  if (!doc->root().IsObject()) return invalid("not a JSON object");
  auto version = json::get_string(doc->root(), "/v").value_or("");
  if (version != "meta.k8s.io/v1") {
    return invalid("server does not recognize this encoded version \"" + std::string(version) + "\"");
  }
  const json::Value* rv = json::find(doc->root(), "/rv");
  if (rv != nullptr && !rv->IsInt64()) return invalid("rv is not an integer");
  const int64_t resource_version = rv == nullptr ? 0 : rv->GetInt64();
  if (resource_version == 0) return invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
  const json::Value* start = json::find(doc->root(), "/start");
  if (start != nullptr && !start->IsString()) return invalid("start is not a string");
  std::string start_key = start == nullptr ? std::string() : std::string(start->GetString(), start->GetStringLength());
  if (start_key.empty()) return invalid("encoded start key empty");
  if (!is_clean_key(start_key)) return invalid(start_key);
  return ContinueToken{resource_version, std::move(start_key)};
}

}  // namespace unitrain::localcluster
