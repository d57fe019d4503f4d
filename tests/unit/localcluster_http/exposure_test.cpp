#include <catch2/catch.hpp>

#include "localcluster/local_cluster.h"

namespace lc = unitrain::localcluster;

namespace {

lc::Exposure exposure(std::string listen, bool tls, bool token, bool allow_remote) {
  lc::LocalClusterOptions o;
  o.listen = std::move(listen);
  o.tls = tls;
  if (token) o.token = "t";
  o.insecure_allow_remote = allow_remote;
  return lc::check_exposure(o);
}

}  // namespace

TEST_CASE("loopback addresses") {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]", "::ffff:127.0.0.1"}) {
    CHECK(lc::is_loopback_host(h));
  }
  for (const char* h : {"", "0.0.0.0", "::", "[::]", "10.0.0.1", "127.0.0", "127.0.0.256", "128.0.0.1", "example.com"}) {
    CHECK_FALSE(lc::is_loopback_host(h));
  }
}

TEST_CASE("a cluster reachable from other machines needs TLS unless the exposure is accepted") {
  CHECK_FALSE(exposure("127.0.0.1:0", false, false, false).refusal);
  CHECK(exposure("127.0.0.1:0", false, false, false).warnings.empty());
  auto open = exposure("0.0.0.0:6443", false, false, false);
  REQUIRE(open.refusal);
  CHECK(*open.refusal ==
        "--listen 0.0.0.0:6443: 0.0.0.0 is reachable from other machines, and without --tls every Secret would be "
        "served to anyone; add --tls (a bearer token is then required), listen on 127.0.0.1, or accept the "
        "exposure with --insecure-allow-remote");
  REQUIRE(exposure(":6443", false, true, false).refusal);
  CHECK(exposure(":6443", false, true, false).refusal->find("every interface") != std::string::npos);
  CHECK_FALSE(exposure("0.0.0.0:6443", true, false, false).refusal);
  CHECK(exposure("0.0.0.0:6443", true, false, false).warnings.empty());
  auto accepted = exposure("[::]:6443", false, false, true);
  CHECK_FALSE(accepted.refusal);
  REQUIRE(accepted.warnings.size() == 1);
  CHECK(accepted.warnings[0].starts_with("--insecure-allow-remote: serving plain HTTP on [::] without a token"));
}

TEST_CASE("a token over plain HTTP is a warning, on loopback too") {
  auto e = exposure("127.0.0.1:0", false, true, false);
  CHECK_FALSE(e.refusal);
  REQUIRE(e.warnings.size() == 1);
  CHECK(e.warnings[0] == "--token without --tls: the bearer token travels in clear over HTTP");
  CHECK(exposure("127.0.0.1:0", true, true, false).warnings.empty());
}
