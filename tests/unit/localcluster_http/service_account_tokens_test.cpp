// Service-account tokens: TokenRequest's answer and limits, TokenReview's checks (signature,
// expiry, audiences, the account still there with its uid).
#include <catch2/catch.hpp>

#include "core/base/base64.h"
#include "localcluster/service_account_tokens.h"
#include "tests/support/json.h"

namespace json = unitrain::json;
namespace lc = unitrain::localcluster;
using unitrain::testing::yaml;

namespace {

const auto kT0 = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));

json::Document review_of(std::string_view token, std::string_view audiences_yaml) {
  auto r = yaml(std::string("apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec: {audiences: ") +
                std::string(audiences_yaml) + "}");
  (void)json::set_string(r, "/spec/token", token);
  return r;
}

}  // namespace

TEST_CASE("TokenRequest: a JWT with kube-apiserver's claims, expirationSeconds bounds") {
  lc::ServiceAccountTokens tokens;
  auto account = yaml("metadata: {name: trainer, namespace: ns, uid: SA1}");
  auto answer = lc::answer_token_request(tokens, account.root(), yaml("spec: {audiences: [aud-a]}").root(), kT0);
  REQUIRE(answer);
  CHECK(json::string_at(answer->root(), "/kind") == "TokenRequest");
  CHECK(json::get_int(answer->root(), "/spec/expirationSeconds") == 3600);
  CHECK(json::string_at(answer->root(), "/status/expirationTimestamp") == "2027-01-15T09:00:00Z");
  const std::string token = json::string_at(answer->root(), "/status/token");
  const auto dot = token.find('.');
  auto claims_text = unitrain::base64_decode(token.substr(dot + 1, token.rfind('.') - dot - 1), unitrain::Base64Alphabet::Url);
  REQUIRE(claims_text);
  auto claims = json::Document::parse(*claims_text);
  REQUIRE(claims);
  CHECK(json::string_at(claims->root(), "/sub") == "system:serviceaccount:ns:trainer");
  CHECK(json::string_at(claims->root(), "/kubernetes.io/namespace") == "ns");
  CHECK(json::string_at(claims->root(), "/kubernetes.io/serviceaccount/uid") == "SA1");
  CHECK(json::strings_at(claims->root(), "/aud") == std::vector<std::string>{"aud-a"});
  CHECK(json::get_int(claims->root(), "/exp") == 1'800'003'600);

  auto too_short = lc::answer_token_request(tokens, account.root(), yaml("spec: {expirationSeconds: 599}").root(), kT0);
  REQUIRE_FALSE(too_short);
  CHECK(too_short.error().code == 422);
  CHECK(too_short.error().message ==
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a "
        "duration less than 10 minutes");
  // No audience: the API server's own.
  auto plain = lc::answer_token_request(tokens, account.root(), yaml("spec: {}").root(), kT0);
  REQUIRE(plain);
  CHECK(json::strings_at(plain->root(), "/spec/audiences") == std::vector<std::string>{std::string(lc::kTokenIssuer)});
}

TEST_CASE("TokenReview: authenticated for a granted audience and a live account, refused otherwise") {
  lc::ServiceAccountTokens tokens;
  auto account = yaml("metadata: {name: trainer, namespace: ns, uid: SA1}");
  auto issued = lc::answer_token_request(tokens, account.root(), yaml("spec: {audiences: [aud-a, aud-b]}").root(), kT0);
  REQUIRE(issued);
  const std::string token = json::string_at(issued->root(), "/status/token");
  std::string live_uid = "SA1";
  auto lookup = [&](std::string_view ns, std::string_view name) { return ns == "ns" && name == "trainer" ? live_uid : std::string(); };

  auto ok = lc::answer_token_review(tokens, review_of(token, "[aud-b, aud-c]"), lookup, kT0 + std::chrono::seconds(10));
  CHECK(json::get_bool(ok.root(), "/status/authenticated") == true);
  CHECK(json::string_at(ok.root(), "/status/user/username") == "system:serviceaccount:ns:trainer");
  CHECK(json::strings_at(ok.root(), "/status/audiences") == std::vector<std::string>{"aud-b"});
  CHECK(json::strings_at(ok.root(), "/status/user/groups") ==
        std::vector<std::string>{"system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"});

  auto refused = [&](const json::Document& r) {
    INFO(json::dump(r.root()));
    CHECK_FALSE(json::get_bool(r.root(), "/status/authenticated").value_or(false));
    return json::string_at(r.root(), "/status/error");
  };
  CHECK(refused(lc::answer_token_review(tokens, review_of(token, "[aud-c]"), lookup, kT0)) ==
        "[invalid bearer token, token audiences don't match the requested audiences]");
  CHECK(refused(lc::answer_token_review(tokens, review_of(token, "[aud-a]"), lookup, kT0 + std::chrono::seconds(3600))) ==
        "[invalid bearer token, Token has expired.]");
  std::string tampered = token;
  tampered[tampered.size() / 2] = tampered[tampered.size() / 2] == 'A' ? 'B' : 'A';
  CHECK(refused(lc::answer_token_review(tokens, review_of(tampered, "[aud-a]"), lookup, kT0)).rfind("[invalid bearer token", 0) == 0);
  lc::ServiceAccountTokens other_cluster;
  CHECK(refused(lc::answer_token_review(other_cluster, review_of(token, "[aud-a]"), lookup, kT0)) ==
        "[invalid bearer token, signature is invalid]");
  live_uid = "SA2";  // deleted and re-created under the same name
  CHECK(refused(lc::answer_token_review(tokens, review_of(token, "[aud-a]"), lookup, kT0)) ==
        "[invalid bearer token, service account UID (SA2) does not match claim (SA1)]");
  live_uid = "";
  CHECK(refused(lc::answer_token_review(tokens, review_of(token, "[aud-a]"), lookup, kT0)) ==
        "[invalid bearer token, service account ns/trainer has been deleted]");
}
