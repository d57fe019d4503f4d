#include "localcluster/service_account_tokens.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "core/api/time.h"
#include "core/base/base64.h"

namespace unitrain::localcluster {
namespace {

constexpr int64_t kDefaultExpirationSeconds = 3600;
constexpr int64_t kMinExpirationSeconds = 600;
constexpr int64_t kMaxExpirationSeconds = int64_t{1} << 32;

std::string token_b64url(std::string_view bytes) {
  return base64_encode(bytes, Base64Alphabet::Url, Base64Padding::Unpadded);
}

int64_t token_unix_seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

std::string token_time(int64_t unix_seconds) {
  return api::format_time(api::TimePoint(std::chrono::seconds(unix_seconds)));
}

json::Value token_string_array(const std::vector<std::string>& items, json::Allocator& a) {
  json::Value out(rapidjson::kArrayType);
  for (const auto& s : items) out.PushBack(json::str(s, a), a);
  return out;
}

}  // namespace

ServiceAccountTokens::ServiceAccountTokens() {
  if (RAND_bytes(key_.data(), static_cast<int>(key_.size())) != 1) {
    throw std::runtime_error("service-account token key: OpenSSL has no randomness");
  }
}

std::string ServiceAccountTokens::sign(std::string_view signing_input) const {
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()), reinterpret_cast<const unsigned char*>(signing_input.data()),
       signing_input.size(), mac.data(), &length);
  return std::string(reinterpret_cast<const char*>(mac.data()), length);
}

std::string ServiceAccountTokens::issue(const TokenClaims& claims, std::chrono::system_clock::time_point now) const {
  json::Document payload = json::Document::object();
  auto& a = payload.alloc();
  json::Value& p = payload.root();
  p.AddMember("aud", token_string_array(claims.audiences, a), a);
  p.AddMember("exp", claims.expires_at, a);
  p.AddMember("iat", token_unix_seconds(now), a);
  p.AddMember("iss", json::str(kTokenIssuer, a), a);
  json::Value sa(rapidjson::kObjectType);
  sa.AddMember("name", json::str(claims.service_account, a), a);
  sa.AddMember("uid", json::str(claims.service_account_uid, a), a);
  json::Value k8s(rapidjson::kObjectType);
  k8s.AddMember("namespace", json::str(claims.namespace_name, a), a);
  k8s.AddMember("serviceaccount", std::move(sa), a);
  p.AddMember("kubernetes.io", std::move(k8s), a);
  p.AddMember("nbf", token_unix_seconds(now), a);
  p.AddMember("sub", json::str(fmt::format("system:serviceaccount:{}:{}", claims.namespace_name, claims.service_account), a), a);
  const std::string input = token_b64url(R"({"alg":"HS256","typ":"JWT"})") + "." + token_b64url(payload.dump());
  return input + "." + token_b64url(sign(input));
}

Result<TokenClaims> ServiceAccountTokens::verify(std::string_view token, std::chrono::system_clock::time_point now) const {
  const size_t first = token.find('.');
  const size_t second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos) {
    return fail("invalid bearer token, not a JWT");
  }
  auto signature = base64_decode(token.substr(second + 1), Base64Alphabet::Url);
  const std::string expected = sign(token.substr(0, second));
  if (!signature || signature->size() != expected.size() ||
      CRYPTO_memcmp(signature->data(), expected.data(), expected.size()) != 0) {
    return fail("invalid bearer token, signature is invalid");
  }
  auto payload_text = base64_decode(token.substr(first + 1, second - first - 1), Base64Alphabet::Url);
  if (!payload_text) return fail("invalid bearer token, the claims are not base64url");
  auto payload = json::Document::parse(*payload_text);
  if (!payload || !payload->root().IsObject()) return fail("invalid bearer token, the claims are not JSON");
  const json::Value& p = payload->root();
  if (json::string_at(p, "/iss") != kTokenIssuer) return fail("invalid bearer token, unknown issuer");
  TokenClaims c;
  c.namespace_name = json::string_at(p, "/kubernetes.io/namespace");
  c.service_account = json::string_at(p, "/kubernetes.io/serviceaccount/name");
  c.service_account_uid = json::string_at(p, "/kubernetes.io/serviceaccount/uid");
  c.audiences = json::strings_at(p, "/aud");
  c.expires_at = json::get_int(p, "/exp").value_or(0);
  const int64_t t = token_unix_seconds(now);
  if (t >= c.expires_at) return fail("invalid bearer token, Token has expired.");
  if (t < json::get_int(p, "/nbf").value_or(0)) return fail("invalid bearer token, token not valid yet");
  return c;
}

Result<json::Document, TokenRequestError> answer_token_request(const ServiceAccountTokens& tokens,
                                                               const json::Value& service_account,
                                                               const json::Value& request,
                                                               std::chrono::system_clock::time_point now) {
  const int64_t seconds = json::get_int(request, "/spec/expirationSeconds").value_or(kDefaultExpirationSeconds);
  auto invalid = [](std::string detail) {
    return TokenRequestError{422, fmt::format("TokenRequest.authentication.k8s.io \"\" is invalid: {}", detail)};
  };
  if (seconds < kMinExpirationSeconds) {
    return fail(invalid(fmt::format("spec.expirationSeconds: Invalid value: {}: may not specify a duration less than 10 minutes", seconds)));
  }
  if (seconds > kMaxExpirationSeconds) {
    return fail(invalid(fmt::format("spec.expirationSeconds: Invalid value: {}: may not specify a duration larger than 2^32 seconds", seconds)));
  }
  TokenClaims claims;
  claims.namespace_name = json::string_at(service_account, "/metadata/namespace");
  claims.service_account = json::string_at(service_account, "/metadata/name");
  claims.service_account_uid = json::string_at(service_account, "/metadata/uid");
  claims.audiences = json::strings_at(request, "/spec/audiences");
  if (claims.audiences.empty()) claims.audiences = {std::string(kTokenIssuer)};
  claims.expires_at = token_unix_seconds(now) + seconds;

  json::Document out = json::Document::object();
  auto& a = out.alloc();
  out.root().AddMember("kind", "TokenRequest", a);
  out.root().AddMember("apiVersion", "authentication.k8s.io/v1", a);
  json::Value meta(rapidjson::kObjectType);
  meta.AddMember("name", json::str(claims.service_account, a), a);
  meta.AddMember("namespace", json::str(claims.namespace_name, a), a);
  meta.AddMember("creationTimestamp", json::str(token_time(token_unix_seconds(now)), a), a);
  out.root().AddMember("metadata", std::move(meta), a);
  json::Value spec(rapidjson::kObjectType);
  spec.AddMember("audiences", token_string_array(claims.audiences, a), a);
  spec.AddMember("expirationSeconds", seconds, a);
  if (const json::Value* bound = json::find(request, "/spec/boundObjectRef"); bound && bound->IsObject()) {
    spec.AddMember("boundObjectRef", json::clone(*bound, a), a);
  } else {
    spec.AddMember("boundObjectRef", json::Value(), a);
  }
  out.root().AddMember("spec", std::move(spec), a);
  json::Value status(rapidjson::kObjectType);
  status.AddMember("token", json::str(tokens.issue(claims, now), a), a);
  status.AddMember("expirationTimestamp", json::str(token_time(claims.expires_at), a), a);
  out.root().AddMember("status", std::move(status), a);
  return out;
}

json::Document answer_token_review(const ServiceAccountTokens& tokens, json::Document review,
                                   const std::function<std::string(std::string_view, std::string_view)>& lookup_uid,
                                   std::chrono::system_clock::time_point now) {
  json::Document out = std::move(review);
  auto& a = out.alloc();
  (void)json::set_string(out, "/apiVersion", "authentication.k8s.io/v1");
  (void)json::set_string(out, "/kind", "TokenReview");
  json::remove(out, "/status");
  if (!json::find(out.root(), "/metadata")) (void)json::set(out, "/metadata", json::Value(rapidjson::kObjectType));
  (void)json::set_string(out, "/metadata/creationTimestamp", token_time(token_unix_seconds(now)));

  std::vector<std::string> wanted = json::strings_at(out.root(), "/spec/audiences");
  if (wanted.empty()) wanted = {std::string(kTokenIssuer)};
  json::Value status(rapidjson::kObjectType);
  status.AddMember("user", json::Value(rapidjson::kObjectType), a);
  auto failed = [&](std::string_view why) {
    status.AddMember("error", json::str(fmt::format("[{}]", why), a), a);
    (void)json::set(out, "/status", std::move(status));
    return std::move(out);
  };
  auto claims = tokens.verify(json::string_at(out.root(), "/spec/token"), now);
  if (!claims) return failed(claims.error().message);
  std::vector<std::string> granted;
  for (const auto& w : wanted) {
    if (std::find(claims->audiences.begin(), claims->audiences.end(), w) != claims->audiences.end()) granted.push_back(w);
  }
  if (granted.empty()) return failed("invalid bearer token, token audiences don't match the requested audiences");
  const std::string uid = lookup_uid(claims->namespace_name, claims->service_account);
  if (uid.empty()) {
    return failed(fmt::format("invalid bearer token, service account {}/{} has been deleted", claims->namespace_name,
                              claims->service_account));
  }
  if (uid != claims->service_account_uid) {
    return failed(fmt::format("invalid bearer token, service account UID ({}) does not match claim ({})", uid,
                              claims->service_account_uid));
  }
  status.AddMember("authenticated", true, a);
  json::Value& user = status["user"];
  user.AddMember("username", json::str(fmt::format("system:serviceaccount:{}:{}", claims->namespace_name, claims->service_account), a), a);
  user.AddMember("uid", json::str(uid, a), a);
  user.AddMember("groups", token_string_array({"system:serviceaccounts", "system:serviceaccounts:" + claims->namespace_name,
                                         "system:authenticated"}, a), a);
  status.AddMember("audiences", token_string_array(granted, a), a);
  (void)json::set(out, "/status", std::move(status));
  return out;
}

}  // namespace unitrain::localcluster
