// Service-account tokens as kube-apiserver issues and checks them: the TokenRequest subresource
// (serviceaccounts/<name>/token, what `kubectl create token` and projected volumes ask for) and
// TokenReview (authentication.k8s.io/v1 tokenreviews, what a server that received a token asks).
// Tokens are JWTs with kube-apiserver's claims (iss, sub, aud, exp, iat, nbf, kubernetes.io
// namespace and serviceaccount); they are signed with HS256 under a key drawn when the cluster
// starts, where kube-apiserver signs with RS256/ES256 and publishes the keys by OIDC discovery:
// only this cluster can verify them, through TokenReview.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"

namespace unitrain::localcluster {

inline constexpr std::string_view kTokenIssuer = "https://kubernetes.default.svc.cluster.local";

struct TokenClaims {
  std::string namespace_name;
  std::string service_account;
  std::string service_account_uid;
  std::vector<std::string> audiences;
  int64_t expires_at = 0;  // Unix seconds
};

class ServiceAccountTokens {
 public:
  ServiceAccountTokens();  // draws the signing key; throws std::runtime_error when OpenSSL has no randomness

  // The signed token carrying `claims`, issued at `now`.
  std::string issue(const TokenClaims& claims, std::chrono::system_clock::time_point now) const;
  // The claims of a token this cluster signed that has not expired at `now`; the error is the
  // reason kube-apiserver's authenticator gives.
  Result<TokenClaims> verify(std::string_view token, std::chrono::system_clock::time_point now) const;

 private:
  std::string sign(std::string_view signing_input) const;
  std::array<uint8_t, 32> key_{};
};

// The TokenRequest answer for `request` (its spec: audiences, expirationSeconds) on the service
// account `service_account` (the stored object); 400/422 errors as kube-apiserver's.
struct TokenRequestError {
  int code;
  std::string message;
};
Result<json::Document, TokenRequestError> answer_token_request(const ServiceAccountTokens& tokens,
                                                               const json::Value& service_account,
                                                               const json::Value& request,
                                                               std::chrono::system_clock::time_point now);

// The TokenReview answer: `lookup_uid` returns the uid of the service account <ns>/<name> now
// ("" when it is gone), as kube-apiserver checks the token's account still exists.
json::Document answer_token_review(const ServiceAccountTokens& tokens, json::Document review,
                                   const std::function<std::string(std::string_view, std::string_view)>& lookup_uid,
                                   std::chrono::system_clock::time_point now);

}  // namespace unitrain::localcluster
