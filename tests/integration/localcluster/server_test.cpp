// The local cluster's HTTP layer, driven over real sockets with the project's own HTTP client
// (kube::Transport, so this file compiles without Beast): discovery, CRUD with Status errors,
// chunked watch framing, Tables, metrics, pod logs, TLS + bearer token.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#include "core/json/json.h"
#include "core/kube/transport.h"
#include "localcluster/local_cluster.h"
#include "localcluster/table.h"

using namespace unitrain;
using namespace unitrain::localcluster;

namespace {

struct Resp {
  int status = 0;
  std::string content_type;
  std::string body;
  bool chunked = false;
};

struct Client {
  explicit Client(uint16_t p, std::string ca = {}, std::string t = {})
      : port(p), ca_pem(std::move(ca)), token(std::move(t)) {}
  uint16_t port = 0;
  std::string ca_pem;  // non-empty: HTTPS, verifying the server with this CA
  std::string token;

  // Throws rather than using Catch2 assertions: the watch test also sends from another thread.
  Resp send(const std::string& method, const std::string& target, const std::string& body = {},
            const std::string& content_type = "application/json", const std::string& accept = "application/json") const {
    kube::RestConfig cfg;
    cfg.scheme = ca_pem.empty() ? "http" : "https";
    cfg.host = "127.0.0.1";
    cfg.port = port;
    cfg.ca_pem = ca_pem;
    cfg.bearer_token = token;
    auto transport = kube::Transport::create(cfg);
    if (!transport) throw std::runtime_error("transport: " + transport.error().message);
    kube::http::Request req;
    req.method = method;
    req.target = target;
    req.headers.push_back({"Accept", accept});
    if (!body.empty()) {
      req.headers.push_back({"Content-Type", content_type});
      req.body = body;
    }
    auto res = (*transport)->send(req);
    if (!res) throw std::runtime_error(method + " " + target + ": " + res.error().message);
    Resp out;
    out.status = res->status;
    out.content_type = std::string(res->header("Content-Type").value_or(""));
    out.body = std::move(res->body);
    auto te = res->header("Transfer-Encoding");
    out.chunked = te && te->find("chunked") != std::string_view::npos;
    return out;
  }
  Resp get(const std::string& target, const std::string& accept = "application/json") const {
    return send("GET", target, {}, {}, accept);
  }
};

json::Document parse(const std::string& s) {
  auto d = json::Document::parse(s);
  INFO(s);
  REQUIRE(d);
  return std::move(*d);
}

std::string str(const json::Value& v, std::string_view ptr) { return std::string(json::get_string(v, ptr).value_or("")); }

std::unique_ptr<LocalCluster> start_cluster(LocalClusterOptions o = {}) {
  auto c = std::make_unique<LocalCluster>(std::move(o));
  auto s = c->start();
  INFO((s ? std::string() : s.error().message));
  REQUIRE(s);
  return c;
}

std::string configmap(const std::string& name, const std::string& value = "1") {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"(","labels":{"app":"t"}},"data":{"k":")" +
         value + R"("}})";
}

bool has_resource(const json::Value& list, std::string_view name) {
  for (const auto& r : list["resources"].GetArray()) {
    if (std::string_view(r["name"].GetString()) == name) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("discovery documents: /api, /apis, group versions and the aggregated form") {
  auto c = start_cluster();
  Client cl{c->port()};
  auto api = parse(cl.get("/api").body);
  CHECK(str(api.root(), "/kind") == "APIVersions");
  CHECK(str(api.root(), "/versions/0") == "v1");

  auto v1 = parse(cl.get("/api/v1").body);
  CHECK(str(v1.root(), "/kind") == "APIResourceList");
  CHECK(has_resource(v1.root(), "pods"));
  CHECK(has_resource(v1.root(), "pods/status"));
  CHECK(has_resource(v1.root(), "pods/log"));
  CHECK(has_resource(v1.root(), "namespaces"));

  auto apis = parse(cl.get("/apis").body);
  CHECK(str(apis.root(), "/kind") == "APIGroupList");
  bool batch = false;
  for (const auto& g : apis.root()["groups"].GetArray()) batch |= std::string_view(g["name"].GetString()) == "batch";
  CHECK(batch);
  auto batch_v1 = parse(cl.get("/apis/batch/v1").body);
  CHECK(has_resource(batch_v1.root(), "jobs/status"));

  auto agg = cl.get("/apis",
                    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json");
  CHECK(agg.status == 200);
  CHECK(agg.content_type == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
  auto ad = parse(agg.body);
  CHECK(str(ad.root(), "/kind") == "APIGroupDiscoveryList");
  CHECK(str(ad.root(), "/apiVersion") == "apidiscovery.k8s.io/v2");
  CHECK(ad.root()["items"].Size() > 3);

  auto core = parse(cl.get("/api", "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList").body);
  CHECK(str(core.root(), "/apiVersion") == "apidiscovery.k8s.io/v2beta1");
  REQUIRE(core.root()["items"].Size() == 1);
  bool pods_with_log = false;
  for (const auto& r : core.root()["items"][0]["versions"][0]["resources"].GetArray()) {
    if (std::string_view(r["resource"].GetString()) != "pods") continue;
    for (const auto& s : r["subresources"].GetArray()) pods_with_log |= std::string_view(s["subresource"].GetString()) == "log";
  }
  CHECK(pods_with_log);

  CHECK(cl.get("/healthz").body == "ok");
  CHECK(cl.get("/readyz").status == 200);
  CHECK(str(parse(cl.get("/version").body).root(), "/gitVersion") == "v1.32.0");
  // OpenAPI v2 is served (kubectl reads it for kinds missing from v3).
  auto v2 = cl.get("/openapi/v2");
  CHECK(v2.status == 200);
  CHECK(str(parse(v2.body).root(), "/swagger") == "2.0");
}

TEST_CASE("create, get, list and errors as metav1.Status") {
  auto c = start_cluster();
  Client cl{c->port()};
  auto created = cl.send("POST", "/api/v1/namespaces/default/configmaps", configmap("a"));
  REQUIRE(created.status == 201);
  CHECK(str(parse(created.body).root(), "/metadata/name") == "a");

  auto again = cl.send("POST", "/api/v1/namespaces/default/configmaps", configmap("a"));
  CHECK(again.status == 409);
  auto st = parse(again.body);
  CHECK(str(st.root(), "/kind") == "Status");
  CHECK(str(st.root(), "/reason") == "AlreadyExists");
  CHECK(json::get_int(st.root(), "/code") == 409);

  auto got = cl.get("/api/v1/namespaces/default/configmaps/a");
  CHECK(got.status == 200);
  CHECK(str(parse(got.body).root(), "/data/k") == "1");

  auto missing = cl.get("/api/v1/namespaces/default/configmaps/nope");
  CHECK(missing.status == 404);
  CHECK(str(parse(missing.body).root(), "/reason") == "NotFound");

  auto list = parse(cl.get("/api/v1/configmaps?labelSelector=app%3Dt").body);
  CHECK(str(list.root(), "/kind") == "ConfigMapList");
  CHECK(list.root()["items"].Size() == 1);

  auto unknown = cl.get("/apis/nothing.example.com/v1/things");
  CHECK(unknown.status == 404);
  CHECK(str(parse(unknown.body).root(), "/kind") == "Status");

  auto head = cl.send("HEAD", "/api/v1/namespaces/default/configmaps");
  CHECK(head.status == 405);

  auto bad = cl.send("POST", "/api/v1/namespaces/default/configmaps", "{not json");
  CHECK(bad.status == 400);
  CHECK(str(parse(bad.body).root(), "/reason") == "BadRequest");

  auto merged = cl.send("PATCH", "/api/v1/namespaces/default/configmaps/a", R"({"data":{"k":"2"}})",
                        "application/merge-patch+json");
  CHECK(merged.status == 200);
  CHECK(str(parse(merged.body).root(), "/data/k") == "2");

  auto applied = cl.send("PATCH", "/api/v1/namespaces/default/configmaps/b?fieldManager=test",
                         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  k: from-yaml\n",
                         "application/apply-patch+yaml");
  CHECK(applied.status / 100 == 2);
  CHECK(str(parse(c->store().get(*c->store().find_resource("", "v1", "configmaps"), "default", "b")
                      .value()
                      .dump())
                .root(),
            "/data/k") == "from-yaml");

  auto deleted = cl.send("DELETE", "/api/v1/namespaces/default/configmaps/a",
                         R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"})");
  CHECK(deleted.status == 200);
  CHECK(cl.get("/api/v1/namespaces/default/configmaps/a").status == 404);

  auto metrics = cl.get("/metrics").body;
  CHECK(metrics.find("apiserver_request_total{code=\"201\",component=\"apiserver\",group=\"\",resource=\"configmaps\","
                     "subresource=\"\",verb=\"POST\",version=\"v1\"} 1") != std::string::npos);
  CHECK(metrics.find("verb=\"APPLY\"") != std::string::npos);
  CHECK(c->metrics().count("DELETE") == 1);
}

TEST_CASE("watch streams one JSON line per event over chunked encoding") {
  auto c = start_cluster();
  Client cl{c->port()};
  auto list = parse(cl.get("/api/v1/namespaces/default/configmaps").body);
  std::string rv = str(list.root(), "/metadata/resourceVersion");
  REQUIRE(!rv.empty());
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Client w{c->port()};
    w.send("POST", "/api/v1/namespaces/default/configmaps", configmap("w1"));
    w.send("PATCH", "/api/v1/namespaces/default/configmaps/w1", R"({"data":{"k":"2"}})",
           "application/merge-patch+json");
    w.send("DELETE", "/api/v1/namespaces/default/configmaps/w1");
  });
  auto res = cl.get("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=2&resourceVersion=" + rv);
  writer.join();
  CHECK(res.status == 200);
  CHECK(res.chunked);
  std::istringstream lines(res.body);
  std::vector<std::string> types;
  for (std::string line; std::getline(lines, line);) {
    auto ev = parse(line);
    types.push_back(str(ev.root(), "/type"));
    CHECK(str(ev.root(), "/object/metadata/name") == "w1");
  }
  CHECK(types == std::vector<std::string>{"ADDED", "MODIFIED", "DELETED"});
}

TEST_CASE("kubectl's Table and metadata-only representations") {
  auto c = start_cluster();
  Client cl{c->port()};
  REQUIRE(cl.send("POST", "/api/v1/namespaces/default/pods",
                  R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1"},"spec":{"containers":[{"name":"c","image":"busybox"}]}})")
              .status == 201);
  const std::string table_accept =
      "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
  auto t = parse(cl.get("/api/v1/namespaces/default/pods", table_accept).body);
  CHECK(str(t.root(), "/kind") == "Table");
  REQUIRE(t.root()["columnDefinitions"].Size() >= 5);
  CHECK(str(t.root(), "/columnDefinitions/1/name") == "Ready");
  CHECK(str(t.root(), "/rows/0/cells/0") == "p1");
  CHECK(str(t.root(), "/rows/0/cells/1") == "0/1");
  CHECK(str(t.root(), "/rows/0/object/kind") == "PartialObjectMetadata");

  auto full = parse(cl.get("/api/v1/namespaces/default/pods/p1?includeObject=Object", table_accept).body);
  CHECK(str(full.root(), "/rows/0/object/kind") == "Pod");

  auto meta = parse(cl.get("/api/v1/namespaces/default/pods",
                           "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io")
                        .body);
  CHECK(str(meta.root(), "/kind") == "PartialObjectMetadataList");
  CHECK(str(meta.root(), "/items/0/metadata/name") == "p1");

  // Before its container started, a pod has no log to show.
  auto waiting = cl.get("/api/v1/namespaces/default/pods/p1/log");
  CHECK(waiting.status == 400);
  CHECK(waiting.body.find(R"(container \"c\" in pod \"p1\" is waiting to start: ContainerCreating)") != std::string::npos);
  REQUIRE(cl.send("PATCH", "/api/v1/namespaces/default/pods/p1/status",
                  R"({"status":{"phase":"Running","containerStatuses":[{"name":"c","image":"busybox","imageID":"",
                      "containerID":"containerd://1","ready":true,"restartCount":0,"state":{"running":{}}}]}})",
                  "application/merge-patch+json")
              .status == 200);
  c->append_pod_log({"default", "p1", "c", "containerd://1", false, "hello"});
  c->append_pod_log({"default", "p1", "c", "containerd://1", false, "world"});
  auto log = cl.get("/api/v1/namespaces/default/pods/p1/log");
  CHECK(log.status == 200);
  CHECK(log.body == "hello\nworld\n");
  CHECK(cl.get("/api/v1/namespaces/default/pods/p1/log?tailLines=1").body == "world\n");
  CHECK(cl.get("/api/v1/namespaces/default/pods/p1/log?container=c").body == "hello\nworld\n");
  auto wrong = cl.get("/api/v1/namespaces/default/pods/p1/log?container=nope");
  CHECK(wrong.status == 400);
  CHECK(wrong.body.find("container nope is not valid for pod p1") != std::string::npos);
  auto previous = cl.get("/api/v1/namespaces/default/pods/p1/log?previous=true");
  CHECK(previous.status == 400);
  CHECK(previous.body.find(R"(previous terminated container \"c\" in pod \"p1\" not found)") != std::string::npos);
  CHECK(cl.get("/api/v1/namespaces/default/pods/nope/log").status == 404);
}

TEST_CASE("TLS with a bearer token: 401 without it, kubeconfig written") {
  auto dir = std::filesystem::temp_directory_path() / ("lcserver-test-" + std::to_string(::getpid()));
  LocalClusterOptions o;
  o.tls = true;
  o.kubeconfig_out = (dir / "kubeconfig").string();
  auto c = start_cluster(o);
  REQUIRE(c->token());
  REQUIRE(!c->ca_pem().empty());
  CHECK(c->url().starts_with("https://127.0.0.1:"));

  Client anonymous{c->port(), c->ca_pem(), ""};
  auto denied = anonymous.get("/api/v1/namespaces");
  CHECK(denied.status == 401);
  auto st = parse(denied.body);
  CHECK(str(st.root(), "/reason") == "Unauthorized");
  CHECK(anonymous.get("/healthz").status == 200);

  Client wrong{c->port(), c->ca_pem(), "wrong"};
  CHECK(wrong.get("/api").status == 401);

  Client ok{c->port(), c->ca_pem(), *c->token()};
  auto ns = ok.get("/api/v1/namespaces");
  CHECK(ns.status == 200);
  CHECK(ns.body.find("kube-system") != std::string::npos);

  std::ifstream in(c->kubeconfig_path());
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str().find(c->url()) != std::string::npos);
  CHECK(text.str().find("certificate-authority-data:") != std::string::npos);
  CHECK(text.str().find(*c->token()) != std::string::npos);
  c.reset();
  std::filesystem::remove_all(dir);
}

// net::AnyStream hands a stream at most 16 buffers per write_some and leaves the rest to the
// next call; Beast serialises one buffer per header field, so a request with dozens of fields
// crosses that cut. It must arrive whole over both streams, client and server side.
TEST_CASE("a request with more header fields than one write takes arrives whole over HTTP and HTTPS") {
  for (bool tls : {false, true}) {
    LocalClusterOptions o;
    o.tls = tls;
    auto c = start_cluster(o);
    kube::RestConfig cfg;
    cfg.scheme = tls ? "https" : "http";
    cfg.host = "127.0.0.1";
    cfg.port = c->port();
    cfg.ca_pem = c->ca_pem();
    cfg.bearer_token = c->token().value_or("");
    auto transport = kube::Transport::create(cfg);
    REQUIRE(transport);
    kube::http::Request req;
    req.method = "POST";
    req.target = "/api/v1/namespaces/default/configmaps";
    req.headers.push_back({"Content-Type", "application/json"});
    for (int i = 0; i < 40; ++i) req.headers.push_back({"X-Pad-" + std::to_string(i), std::string(100, 'a' + i % 26)});
    req.body = configmap(tls ? "padded-tls" : "padded", std::string(200000, 'x'));
    INFO((tls ? "https" : "http"));
    auto res = (*transport)->send(req);
    REQUIRE(res);
    CHECK(res->status == 201);
    auto created = parse(res->body);
    CHECK(json::get_string(created.root(), "/data/k").value_or("").size() == 200000);
  }
}

TEST_CASE("pipelined requests on one connection are answered in order over HTTP and HTTPS") {
  for (bool tls : {false, true}) {
    INFO((tls ? "https" : "http"));
    LocalClusterOptions o;
    o.tls = tls;
    auto c = start_cluster(o);
    kube::RestConfig cfg;
    cfg.scheme = tls ? "https" : "http";
    cfg.host = "127.0.0.1";
    cfg.port = c->port();
    cfg.ca_pem = c->ca_pem();
    cfg.bearer_token = c->token().value_or("");
    auto transport = kube::Transport::create(cfg);
    REQUIRE(transport);
    auto request = [](std::string method, std::string target, std::string body = {}) {
      kube::http::Request r;
      r.method = std::move(method);
      r.target = std::move(target);
      r.headers.push_back({"Accept", "application/json"});
      if (!body.empty()) r.headers.push_back({"Content-Type", "application/json"});
      r.body = std::move(body);
      return r;
    };
    const std::string cms = "/api/v1/namespaces/default/configmaps";
    // Written at once, so each request after the first is (partly) in the server's buffer when
    // it reads the one before it; the large body makes one request span many reads.
    const std::vector<kube::http::Request> reqs{
        request("POST", cms, configmap("p1")),
        request("GET", cms + "/p1"),
        request("POST", cms, configmap("p1")),
        request("GET", cms + "/missing"),
        request("POST", cms, configmap("p2", std::string(100000, 'y'))),
        request("GET", cms + "?labelSelector=app%3Dt"),
        request("DELETE", cms + "/p1"),
        request("GET", cms + "/p2"),
    };
    auto res = (*transport)->send_pipelined(reqs);
    REQUIRE(res.size() == reqs.size());
    const std::vector<int> statuses{201, 200, 409, 404, 201, 200, 200, 200};
    for (size_t i = 0; i < res.size(); ++i) {
      INFO("request " << i << ": " << reqs[i].method << " " << reqs[i].target);
      REQUIRE(res[i]);
      CHECK(res[i]->status == statuses[i]);
    }
    CHECK(str(parse(res[1]->body).root(), "/metadata/name") == "p1");
    CHECK(str(parse(res[2]->body).root(), "/reason") == "AlreadyExists");
    CHECK(str(parse(res[3]->body).root(), "/reason") == "NotFound");
    CHECK(parse(res[5]->body).root()["items"].Size() == 2);
    CHECK(str(parse(res[7]->body).root(), "/data/k").size() == 100000);
    CHECK((*transport)->connections_opened() == 1);
    CHECK((*transport)->idle_connections() == 1);  // kept alive after the exchange
  }
}

TEST_CASE("printer helpers: simple JSONPath, human durations, CRD columns") {
  auto obj = parse(R"({"spec":{"replicas":3},"metadata":{"labels":{"a.b/c":"x"}},
                       "status":{"conditions":[{"type":"Created"},{"type":"Running"}]}})");
  const auto* last = eval_simple_jsonpath(obj.root(), ".status.conditions[-1:].type");
  REQUIRE(last);
  CHECK(std::string_view(last->GetString()) == "Running");
  const auto* first = eval_simple_jsonpath(obj.root(), ".status.conditions[0].type");
  REQUIRE(first);
  CHECK(std::string_view(first->GetString()) == "Created");
  REQUIRE(eval_simple_jsonpath(obj.root(), "{.spec.replicas}"));
  CHECK(eval_simple_jsonpath(obj.root(), ".spec.replicas")->GetInt() == 3);
  REQUIRE(eval_simple_jsonpath(obj.root(), ".metadata.labels.a\\.b/c"));
  CHECK(eval_simple_jsonpath(obj.root(), ".spec.missing") == nullptr);

  CHECK(human_duration(std::chrono::seconds(42)) == "42s");
  CHECK(human_duration(std::chrono::seconds(303)) == "5m3s");
  CHECK(human_duration(std::chrono::seconds(3 * 3600)) == "3h");
  CHECK(human_duration(std::chrono::seconds(50 * 3600)) == "2d2h");

  auto crd = parse(R"({"spec":{"versions":[{"name":"v1","additionalPrinterColumns":[
      {"name":"Replicas","type":"integer","jsonPath":".spec.replicas"},
      {"name":"State","type":"string","jsonPath":".status.conditions[-1:].type","priority":1}]}]}})");
  auto cols = crd_printer_columns(crd.root(), "v1");
  REQUIRE(cols.size() == 2);
  CHECK(cols[1].priority == 1);
  ResourceInfo r;
  r.group = "e2e.unitrain.io";
  r.version = "v1";
  r.resource = "widgets";
  auto named = parse(R"({"metadata":{"name":"w"},"spec":{"replicas":3},"status":{"conditions":[{"type":"Running"}]}})");
  auto table = make_table(r, named.root(), cols, IncludeObject::None, std::chrono::system_clock::now());
  CHECK(str(table.root(), "/columnDefinitions/1/name") == "Replicas");
  CHECK(json::get_int(table.root(), "/rows/0/cells/1") == 3);
  CHECK(str(table.root(), "/rows/0/cells/2") == "Running");
  CHECK(json::find(table.root(), "/rows/0/object") == nullptr);
}
