#include "helpers.h"
#include "core/base/base64.h"
#include "localcluster/continue_token.h"

TEST_CASE("continue tokens are kube-apiserver's unpadded base64url JSON and decode back") {
  const std::string token = lc::encode_continue_token({42, "default/pod-\"7\""});
  CHECK(token.find_first_of("+/=") == std::string::npos);
  auto decoded = lc::decode_continue_token(token);
  REQUIRE(decoded);
  CHECK(decoded->resource_version == 42);
  CHECK(decoded->start_after == "default/pod-\"7\"");
  // {"v":"meta.k8s.io/v1","rv":7,"start":"a/b"}, as kube-apiserver writes it.
  CHECK(lc::encode_continue_token({7, "a/b"}) == "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Nywic3RhcnQiOiJhL2IifQ");
  // Found by fuzz_continue_token: every resourceVersion the encoder writes decodes back.
  auto top = lc::decode_continue_token(lc::encode_continue_token({INT64_MAX, "x"}));
  REQUIRE(top);
  CHECK(top->resource_version == INT64_MAX);
}

TEST_CASE("continue tokens that do not decode name the cause") {
  auto cause = [](std::string_view token) {
    auto r = lc::decode_continue_token(token);
    REQUIRE_FALSE(r);
    return r.error().message;
  };
  const auto token = [](std::string_view json_text) {
    return unitrain::base64_encode(json_text, unitrain::Base64Alphabet::Url, unitrain::Base64Padding::Unpadded);
  };
  CHECK(cause("not*base64") == "continue key is not valid: invalid base64: '*' at offset 3");
  CHECK(cause(token("not json")).starts_with("continue key is not valid: "));
  CHECK(cause(token(R"({"v":"meta.k8s.io/v2","rv":1,"start":"a"})")) ==
        R"(continue key is not valid: server does not recognize this encoded version "meta.k8s.io/v2")");
  CHECK(cause(token(R"({"rv":1,"start":"a"})")) ==
        R"(continue key is not valid: server does not recognize this encoded version "")");
  CHECK(cause(token(R"({"v":"meta.k8s.io/v1","rv":0,"start":"a"})")) ==
        "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
  CHECK(cause(token(R"({"v":"meta.k8s.io/v1","rv":"7","start":"a"})")) == "continue key is not valid: rv is not an integer");
  CHECK(cause(token(R"({"v":"meta.k8s.io/v1","rv":7})")) == "continue key is not valid: encoded start key empty");
  // A start key that path cleaning changes could range outside the resource's keys.
  CHECK(cause(token(R"({"v":"meta.k8s.io/v1","rv":7,"start":"../secrets/x"})")) ==
        "continue key is not valid: ../secrets/x");
  CHECK(cause(token(R"({"v":"meta.k8s.io/v1","rv":7,"start":"a//b"})")) == "continue key is not valid: a//b");
  // rv -1 is what an expired list's 410 hands out: continue at the current state.
  auto latest = lc::decode_continue_token(token(R"({"v":"meta.k8s.io/v1","rv":-1,"start":"default/p1"})"));
  REQUIRE(latest);
  CHECK(latest->resource_version == -1);
}
