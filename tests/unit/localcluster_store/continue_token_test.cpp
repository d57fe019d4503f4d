#include "helpers.h"
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
}

TEST_CASE("continue tokens that do not decode name the cause") {
  auto cause = [](std::string_view token) {
    auto r = lc::decode_continue_token(token);
    REQUIRE_FALSE(r);
    return r.error().message;
  };
  CHECK(cause("not*base64") == "invalid base64: '*' at offset 3");
  CHECK(cause("bm90IGpzb24").starts_with("continue token: "));                       // "not json"
  CHECK(cause("eyJydiI6LTEsInN0YXJ0IjoiIn0") == "continue token: rv is not a resourceVersion");  // rv -1
  CHECK(cause("eyJydiI6MX0") == "continue token: start is not a string");           // {"rv":1}
}
