#include <catch2/catch.hpp>

#include <map>

#include "core/kube/config.h"
#include "test_util.h"

using namespace unitrain::kube;
using unitrain::kube::testing::base64_encode;
using unitrain::kube::testing::TempDir;

namespace {

const std::string kCa = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";

std::string basic_config(const std::string& ca_data) {
  return R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c1
  cluster:
    server: https://10.1.2.3:6443/
    certificate-authority-data: )" + ca_data + R"(
    tls-server-name: api.internal
users:
- name: u1
  user:
    token: "abc.def"
contexts:
- name: dev
  context:
    cluster: c1
    user: u1
    namespace: team-a
)";
}

}  // namespace

TEST_CASE("kubeconfig: current context with inline CA and token") {
  TempDir dir;
  auto path = dir.write("config", basic_config(base64_encode(kCa)));
  auto cfg = load_kubeconfig({{path}, ""});
  REQUIRE(cfg);
  CHECK(cfg->scheme == "https");
  CHECK(cfg->host == "10.1.2.3");
  CHECK(cfg->port == 6443);
  CHECK(cfg->path_prefix.empty());
  CHECK(cfg->ca_pem == kCa);
  CHECK(cfg->bearer_token == "abc.def");
  CHECK(cfg->namespace_ == "team-a");
  CHECK(cfg->tls_server_name == "api.internal");
  CHECK_FALSE(cfg->insecure);
  CHECK(cfg->qps == 5);
  CHECK(cfg->burst == 10);
  CHECK(cfg->server_url() == "https://10.1.2.3:6443");
}

TEST_CASE("kubeconfig: relative certificate paths resolve against the kubeconfig's directory") {
  TempDir dir;
  dir.write("sub/ca.crt", kCa);
  dir.write("sub/certs/client.crt", "CERT");
  dir.write("sub/certs/client.key", "KEY");
  dir.write("sub/token", "  file-token\n");
  auto path = dir.write("sub/kubeconfig", R"(
current-context: x
clusters:
- name: c
  cluster: {server: "https://k8s.example.com", certificate-authority: ca.crt, insecure-skip-tls-verify: true}
users:
- name: u
  user:
    client-certificate: certs/client.crt
    client-key: ./certs/client.key
    tokenFile: token
contexts:
- name: x
  context: {cluster: c, user: u}
)");
  auto cfg = load_kubeconfig({{path}, ""});
  REQUIRE(cfg);
  CHECK(cfg->host == "k8s.example.com");
  CHECK(cfg->port == 443);
  CHECK(cfg->ca_pem == kCa);
  CHECK(cfg->client_cert_pem == "CERT");
  CHECK(cfg->client_key_pem == "KEY");
  CHECK(cfg->insecure);
  CHECK(cfg->bearer_token == "file-token");
  CHECK(cfg->bearer_token_file == dir.path() + "/sub/token");
  CHECK(cfg->namespace_ == "default");
}

TEST_CASE("kubeconfig: errors name the file and the key") {
  TempDir dir;
  SECTION("invalid base64") {
    auto path = dir.write("config", R"(
current-context: x
clusters: [{name: c, cluster: {server: "https://h:1"}}]
users: [{name: u, user: {client-certificate-data: "!!notbase64", client-key-data: "QUJD"}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
)");
    auto cfg = load_kubeconfig({{path}, ""});
    REQUIRE_FALSE(cfg);
    CHECK(cfg.error().message == "kubeconfig " + path + ": users[0].user.client-certificate-data: invalid base64");
  }
  SECTION("context override not found") {
    auto path = dir.write("config", basic_config(base64_encode(kCa)));
    auto cfg = load_kubeconfig({{path}, "foo"});
    REQUIRE_FALSE(cfg);
    CHECK_THAT(cfg.error().message, Catch::Contains("context \"foo\" not found"));
    CHECK_THAT(cfg.error().message, Catch::Contains(path));
  }
  SECTION("missing CA file") {
    auto path = dir.write("config", R"(
current-context: x
clusters: [{name: c, cluster: {server: "https://h:1", certificate-authority: nope.crt}}]
contexts: [{name: x, context: {cluster: c}}]
)");
    auto cfg = load_kubeconfig({{path}, ""});
    REQUIRE_FALSE(cfg);
    CHECK_THAT(cfg.error().message, Catch::StartsWith("kubeconfig " + path + ": clusters[0].cluster.certificate-authority: cannot read " +
                                                      dir.path() + "/nope.crt"));
  }
  SECTION("missing server") {
    auto path = dir.write("config", "current-context: x\nclusters: [{name: c, cluster: {}}]\ncontexts: [{name: x, context: {cluster: c}}]\n");
    auto cfg = load_kubeconfig({{path}, ""});
    REQUIRE_FALSE(cfg);
    CHECK(cfg.error().message == "kubeconfig " + path + ": clusters[0].cluster.server: missing");
  }
  SECTION("bad server URL") {
    auto path = dir.write("config", "current-context: x\nclusters: [{name: c, cluster: {server: 'ftp://h'}}]\ncontexts: [{name: x, context: {cluster: c}}]\n");
    auto cfg = load_kubeconfig({{path}, ""});
    REQUIRE_FALSE(cfg);
    CHECK_THAT(cfg.error().message, Catch::Contains("clusters[0].cluster.server: server URL \"ftp://h\": scheme must be http or https"));
  }
  SECTION("unknown cluster in context") {
    auto path = dir.write("config", "current-context: x\ncontexts: [{name: x, context: {cluster: zz}}]\n");
    auto cfg = load_kubeconfig({{path}, ""});
    REQUIRE_FALSE(cfg);
    CHECK(cfg.error().message == "kubeconfig " + path + ": contexts[0].context.cluster: cluster \"zz\" not found");
  }
  SECTION("insecure flag of the wrong type") {
    auto path = dir.write("config", "current-context: x\nclusters: [{name: c, cluster: {server: 'https://h', insecure-skip-tls-verify: [1]}}]\ncontexts: [{name: x, context: {cluster: c}}]\n");
    auto cfg = load_kubeconfig({{path}, ""});
    REQUIRE_FALSE(cfg);
    CHECK(cfg.error().message == "kubeconfig " + path + ": clusters[0].cluster.insecure-skip-tls-verify: must be true or false");
  }
  SECTION("YAML syntax error") {
    auto path = dir.write("config", "clusters: [\n  - {name: c\n");
    auto cfg = load_kubeconfig({{path}, ""});
    REQUIRE_FALSE(cfg);
    CHECK_THAT(cfg.error().message, Catch::StartsWith("kubeconfig " + path + ": "));
  }
  SECTION("no current context") {
    auto path = dir.write("config", "clusters: []\n");
    auto cfg = load_kubeconfig({{path}, ""});
    REQUIRE_FALSE(cfg);
    CHECK_THAT(cfg.error().message, Catch::Contains("current-context is not set"));
  }
  SECTION("certificate without key") {
    auto path = dir.write("config", R"(
current-context: x
clusters: [{name: c, cluster: {server: "https://h:1"}}]
users: [{name: u, user: {client-certificate-data: "QUJD"}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
)");
    auto cfg = load_kubeconfig({{path}, ""});
    REQUIRE_FALSE(cfg);
    CHECK_THAT(cfg.error().message, Catch::Contains("users[0].user: client certificate and client key must be given together"));
  }
  SECTION("exec plugin without other credentials") {
    auto path = dir.write("config", R"(
current-context: x
clusters: [{name: c, cluster: {server: "https://h:1"}}]
users: [{name: u, user: {exec: {command: aws}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
)");
    auto cfg = load_kubeconfig({{path}, ""});
    REQUIRE_FALSE(cfg);
    CHECK_THAT(cfg.error().message, Catch::Contains("users[0].user.exec: credential plugins are not supported"));
  }
}

TEST_CASE("kubeconfig: several files merge with first-wins, like kubectl") {
  TempDir dir;
  auto a = dir.write("a", R"(
current-context: ctx-a
clusters:
- {name: shared, cluster: {server: "https://first:6443"}}
users:
- {name: ua, user: {token: ta}}
contexts:
- {name: ctx-a, context: {cluster: shared, user: ua, namespace: na}}
)");
  auto b = dir.write("b", R"(
current-context: ctx-b
clusters:
- {name: shared, cluster: {server: "https://second:6443"}}
- {name: only-b, cluster: {server: "http://b-only:8080/prefix/"}}
users:
- {name: ua, user: {token: ignored}}
- {name: ub, user: {token: tb}}
contexts:
- {name: ctx-a, context: {cluster: only-b}}
- {name: ctx-b, context: {cluster: shared, user: ub}}
- {name: ctx-b2, context: {cluster: only-b, user: ua}}
)");
  const std::string missing = dir.path() + "/missing";
  auto env = split_kubeconfig_env(a + "::" + missing + ":" + b + ":" + a);
  REQUIRE(env == std::vector<std::string>{a, missing, b});

  SECTION("current-context from the first file; its entries win") {
    auto cfg = load_kubeconfig({env, ""});
    REQUIRE(cfg);
    CHECK(cfg->host == "first");
    CHECK(cfg->bearer_token == "ta");
    CHECK(cfg->namespace_ == "na");
  }
  SECTION("--context picks a context of the second file; names resolve across files") {
    auto cfg = load_kubeconfig({env, "ctx-b"});
    REQUIRE(cfg);
    CHECK(cfg->host == "first");  // cluster "shared" from the first file
    CHECK(cfg->bearer_token == "tb");
    auto cfg2 = load_kubeconfig({env, "ctx-b2"});
    REQUIRE(cfg2);
    CHECK(cfg2->scheme == "http");
    CHECK(cfg2->host == "b-only");
    CHECK(cfg2->port == 8080);
    CHECK(cfg2->path_prefix == "/prefix");
    CHECK(cfg2->bearer_token == "ta");  // user "ua" from the first file
  }
  SECTION("reversed order flips the winners") {
    auto cfg = load_kubeconfig({{b, a}, ""});
    REQUIRE(cfg);
    CHECK(cfg->host == "second");
    CHECK(cfg->bearer_token == "tb");
  }
  SECTION("no file exists") {
    auto cfg = load_kubeconfig({{missing}, ""});
    REQUIRE_FALSE(cfg);
    CHECK_THAT(cfg.error().message, Catch::Contains("none of these files exists"));
  }
}

TEST_CASE("server URL parsing") {
  RestConfig c;
  REQUIRE(parse_server_url("https://[fd00::1]:6443", c));
  CHECK(c.host == "fd00::1");
  CHECK(c.port == 6443);
  CHECK(c.server_url() == "https://[fd00::1]:6443");
  REQUIRE(parse_server_url("http://localhost", c));
  CHECK(c.port == 80);
  REQUIRE(parse_server_url("example.com:8443", c));
  CHECK(c.scheme == "https");
  CHECK(c.port == 8443);
  CHECK_FALSE(parse_server_url("https://h:99999", c));
  CHECK_FALSE(parse_server_url("https://:80", c));
  CHECK_FALSE(parse_server_url("https://h:8x", c));
  // Found by fuzz_kubeconfig: hosts that cannot be written back into a URL were accepted.
  auto refused = [&](std::string_view url) {
    auto s = parse_server_url(url, c);
    REQUIRE_FALSE(s);
    return s.error().message;
  };
  CHECK(refused("http://h\xc5:1]:8080") == "server URL \"http://h\xc5:1]:8080\": invalid character 0xc5 in host");
  CHECK(refused("https://a b:1") == "server URL \"https://a b:1\": invalid character ' ' in host");
  CHECK(refused("https://a:b:1") == "server URL \"https://a:b:1\": invalid character ':' in host");
  CHECK(refused("https://[fd00::1]]:1") == "server URL \"https://[fd00::1]]:1\": junk after ']'");
  REQUIRE(parse_server_url("https://[fe80::1%25eth0]:6443", c));
  RestConfig again;
  REQUIRE(parse_server_url(c.server_url(), again));
  CHECK(again.host == c.host);
}

TEST_CASE("in-cluster config from the service-account directory") {
  TempDir dir;
  dir.write("token", "sa-token\n");
  dir.write("ca.crt", kCa);
  dir.write("namespace", "kubeflow\n");
  std::map<std::string, std::string> env{{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}};
  auto lookup = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto cfg = in_cluster_config(dir.path(), lookup);
  REQUIRE(cfg);
  CHECK(cfg->server_url() == "https://10.96.0.1:443");
  CHECK(cfg->bearer_token == "sa-token");
  CHECK(cfg->bearer_token_file == dir.path() + "/token");
  CHECK(cfg->ca_pem == kCa);
  CHECK(cfg->namespace_ == "kubeflow");

  env["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  cfg = in_cluster_config(dir.path(), lookup);
  REQUIRE(cfg);
  CHECK(cfg->host == "fd00::1");

  env.erase("KUBERNETES_SERVICE_PORT");
  cfg = in_cluster_config(dir.path(), lookup);
  REQUIRE_FALSE(cfg);
  CHECK_THAT(cfg.error().message, Catch::Contains("KUBERNETES_SERVICE_PORT"));

  env["KUBERNETES_SERVICE_PORT"] = "443";
  std::filesystem::remove(dir.path() + "/token");
  cfg = in_cluster_config(dir.path(), lookup);
  REQUIRE_FALSE(cfg);
  CHECK_THAT(cfg.error().message, Catch::Contains(dir.path() + "/token"));
}

TEST_CASE("default config: flag, then KUBECONFIG, then in-cluster, then HOME") {
  TempDir dir;
  auto path = dir.write("home/.kube/config", basic_config(base64_encode(kCa)));
  auto other = dir.write("other", R"(
current-context: o
clusters: [{name: c, cluster: {server: "https://other:1"}}]
contexts: [{name: o, context: {cluster: c}}]
)");
  std::map<std::string, std::string> env{{"HOME", dir.path() + "/home"}};
  auto lookup = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto cfg = load_default_config("", "", lookup);
  REQUIRE(cfg);
  CHECK(cfg->host == "10.1.2.3");
  env["KUBECONFIG"] = other;
  cfg = load_default_config("", "", lookup);
  REQUIRE(cfg);
  CHECK(cfg->host == "other");
  cfg = load_default_config(path, "", lookup);
  REQUIRE(cfg);
  CHECK(cfg->host == "10.1.2.3");
  cfg = load_default_config(dir.path() + "/absent", "", lookup);
  REQUIRE_FALSE(cfg);
  CHECK_THAT(cfg.error().message, Catch::Contains("absent: file does not exist"));
}
