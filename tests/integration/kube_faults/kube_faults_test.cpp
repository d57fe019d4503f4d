#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "core/kube/informer.h"
#include "core/kube/rest_client.h"
#include "localcluster/local_cluster.h"
#include "localcluster/tls.h"
#include "tests/support/eventually.h"

namespace json = unitrain::json;
namespace kube = unitrain::kube;
namespace lc = unitrain::localcluster;
using Reason = kube::ApiError::Reason;
using namespace std::chrono_literals;

namespace {

const kube::GroupVersionResource kConfigMaps{"", "v1", "configmaps"};

using unitrain::testing::eventually;

lc::FaultConfig faults(const std::string& text) {
  auto c = lc::FaultConfig::parse(text);
  REQUIRE(c);
  return std::move(*c);
}

json::Document cm(const std::string& name, const std::string& value = "v") {
  auto d = json::Document::parse(fmt::format(
      R"({{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{}","namespace":"default"}},"data":{{"k":"{}"}}}})",
      name, value));
  REQUIRE(d);
  return std::move(*d);
}

// Every retry wait the client asked for, instead of sleeping it.
struct Sleeps {
  std::mutex mu;
  std::vector<std::chrono::milliseconds> waits;
  std::vector<std::chrono::milliseconds> take() {
    std::lock_guard g(mu);
    return std::exchange(waits, {});
  }
};

std::unique_ptr<kube::RestClient> client_for(const lc::LocalCluster& cluster, Sleeps* sleeps = nullptr,
                                             kube::RestConfig cfg = {}) {
  cfg.scheme = cluster.ca_pem().empty() ? "http" : "https";
  cfg.host = "127.0.0.1";
  cfg.port = cluster.port();
  cfg.qps = -1;
  cfg.timeout = 10s;
  kube::RestClientOptions o;
  if (sleeps != nullptr) {
    o.sleep = [sleeps](std::chrono::milliseconds d) {
      std::lock_guard g(sleeps->mu);
      sleeps->waits.push_back(d);
    };
  }
  auto c = kube::RestClient::create(cfg, std::move(o));
  REQUIRE(c);
  return std::move(*c);
}

// Handler calls per object key, to tell a genuinely new object from one delivered again.
struct Recorder {
  std::mutex mu;
  std::map<std::string, int> adds, updates, deletes, unknown_deletes;
  kube::EventHandlers handlers() {
    kube::EventHandlers h;
    h.on_add = [this](const json::Value& o) {
      std::lock_guard g(mu);
      ++adds[kube::object_key(o)];
    };
    h.on_update = [this](const json::Value&, const json::Value& o) {
      std::lock_guard g(mu);
      ++updates[kube::object_key(o)];
    };
    h.on_delete = [this](const json::Value& o, bool unknown) {
      std::lock_guard g(mu);
      ++deletes[kube::object_key(o)];
      if (unknown) ++unknown_deletes[kube::object_key(o)];
    };
    return h;
  }
  int count(std::map<std::string, int>& m, const std::string& key) {
    std::lock_guard g(mu);
    return m.count(key) ? m[key] : 0;
  }
  int max_adds() {
    std::lock_guard g(mu);
    int n = 0;
    for (const auto& [k, v] : adds) n = std::max(n, v);
    return n;
  }
};

kube::InformerOptions configmap_informer() {
  kube::InformerOptions o;
  o.resource = kConfigMaps;
  o.namespaces = {"default"};
  o.backoff_initial = 20ms;
  o.backoff_max = 200ms;
  o.seed = 7;
  return o;
}

// key -> resourceVersion
std::map<std::string, std::string> server_state(kube::Client& client) {
  auto list = client.list(kConfigMaps, "default", {});
  REQUIRE(list);
  std::map<std::string, std::string> out;
  for (const auto& item : json::find(list->root(), "/items")->GetArray())
    out[kube::object_key(item)] = std::string(json::get_string(item, "/metadata/resourceVersion").value_or(""));
  return out;
}

std::map<std::string, std::string> cache_state(const kube::Informer& inf) {
  std::map<std::string, std::string> out;
  for (const auto& o : inf.cache().list())
    out[kube::object_key(o->root())] = std::string(json::get_string(o->root(), "/metadata/resourceVersion").value_or(""));
  return out;
}

void set_value(kube::Client& client, const std::string& name, const std::string& value) {
  auto cur = client.get(kConfigMaps, "default", name);
  REQUIRE(cur);
  REQUIRE(json::set_string(*cur, "/data/k", value));
  REQUIRE(client.update(kConfigMaps, "default", cur->root()));
}

}  // namespace

TEST_CASE("informer relists on 410 with a correct delta: no lost and no phantom objects", "[informer][410]") {
  lc::LocalCluster cluster{{}};
  REQUIRE(cluster.start());
  auto client = client_for(cluster);
  for (int i = 0; i < 10; ++i) REQUIRE(client->create(kConfigMaps, "default", cm(fmt::format("cm-{}", i)).root()));

  kube::RealClock clock;
  kube::Informer inf(*client, clock, configmap_informer());
  Recorder rec;
  inf.add_handlers(rec.handlers());
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  REQUIRE(cache_state(inf) == server_state(*client));

  // The next event ends the watch, and the informer can neither watch nor list again until
  // the faults change: everything below happens while it is disconnected.
  cluster.faults().configure(faults(
      R"({"watchCutAfterEvents":1,"rules":[{"verbs":["WATCH","LIST"],"resources":"configmaps","error500":1}]})"));
  set_value(*client, "cm-0", "changed-while-watching");
  REQUIRE(eventually([&] { return cluster.faults().counts()["500"] >= 1; }));
  for (int i = 1; i <= 3; ++i) REQUIRE(client->remove(kConfigMaps, "default", fmt::format("cm-{}", i)));
  for (int i = 0; i < 3; ++i) REQUIRE(client->create(kConfigMaps, "default", cm(fmt::format("new-{}", i)).root()));
  set_value(*client, "cm-5", "changed-while-away");
  CHECK(inf.cache().get("default/cm-1") != nullptr);  // not seen yet

  // Reconnecting from the old resourceVersion gets 410 Expired: a relist.
  cluster.faults().configure(faults(R"({"watchExpireResumes":1})"));
  REQUIRE(eventually([&] { return cache_state(inf) == server_state(*client); }));
  CHECK(cluster.faults().counts()["watchExpired"] == 1);
  auto stats = inf.stats();
  CHECK(stats.relists == 1);
  CHECK(stats.synthesized_deletes == 3);
  for (int i = 1; i <= 3; ++i) {
    CHECK(rec.count(rec.deletes, fmt::format("default/cm-{}", i)) == 1);
    CHECK(rec.count(rec.unknown_deletes, fmt::format("default/cm-{}", i)) == 1);
  }
  for (int i = 0; i < 3; ++i) CHECK(rec.count(rec.adds, fmt::format("default/new-{}", i)) == 1);
  CHECK(rec.count(rec.updates, "default/cm-5") == 1);
  CHECK(rec.count(rec.updates, "default/cm-0") == 1);
  // Unchanged objects are not re-announced by the relist.
  CHECK(rec.count(rec.updates, "default/cm-9") == 0);
  CHECK(rec.max_adds() == 1);
  CHECK(json::get_string(inf.cache().get("default/cm-5")->root(), "/data/k") == "changed-while-away");
}

TEST_CASE("a cut watch resumes from the last resourceVersion: no relist, no ADDED twice", "[informer][watch]") {
  const bool abort = GENERATE(false, true);
  INFO("watchCutAbort " << abort);
  lc::LocalCluster cluster{{}};
  REQUIRE(cluster.start());
  cluster.faults().configure(faults(fmt::format(R"({{"watchCutAfterEvents":3,"watchCutAbort":{}}})", abort)));
  auto client = client_for(cluster);
  kube::RealClock clock;
  kube::Informer inf(*client, clock, configmap_informer());
  Recorder rec;
  inf.add_handlers(rec.handlers());
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  for (int i = 0; i < 30; ++i) {
    REQUIRE(client->create(kConfigMaps, "default", cm(fmt::format("cm-{}", i)).root()));
    if (i % 5 == 0) set_value(*client, fmt::format("cm-{}", i), "updated");
  }
  REQUIRE(client->remove(kConfigMaps, "default", "cm-7"));
  REQUIRE(eventually([&] { return cache_state(inf) == server_state(*client); }));
  CHECK(cluster.faults().counts()["watchCut"] >= 10);
  auto stats = inf.stats();
  CHECK(stats.relists == 0);
  CHECK(stats.watches >= 11);
  CHECK(rec.max_adds() == 1);
  {
    std::lock_guard g(rec.mu);
    CHECK(rec.adds.size() == 30);
    CHECK(rec.updates.size() == 6);
    CHECK(rec.deletes.size() == 1);
    CHECK(rec.unknown_deletes.empty());
  }
}

TEST_CASE("409 on update comes back as a Conflict value the caller retries", "[rest][409]") {
  lc::LocalCluster cluster{{}};
  REQUIRE(cluster.start());
  auto client = client_for(cluster);
  auto created = client->create(kConfigMaps, "default", cm("c").root());
  REQUIRE(created);

  SECTION("a stale resourceVersion") {
    set_value(*client, "c", "newer");
    json::Document stale = *created;
    REQUIRE(json::set_string(stale, "/data/k", "from-stale-copy"));
    auto r = client->update(kConfigMaps, "default", stale.root());
    REQUIRE_FALSE(r);
    CHECK(r.error().is(Reason::Conflict));
    CHECK(r.error().code == 409);
    CHECK(r.error().message ==
          "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your "
          "changes to the latest version and try again");
  }
  SECTION("an injected conflict, then the retry on a fresh read succeeds") {
    cluster.faults().configure(faults(R"({"rules":[{"verbs":"PUT","resources":"configmaps","error409":1,"times":1}]})"));
    json::Document mine = *created;
    REQUIRE(json::set_string(mine, "/data/k", "first-try"));
    auto r = client->update(kConfigMaps, "default", mine.root());
    REQUIRE_FALSE(r);
    CHECK(r.error().is(Reason::Conflict));
    CHECK(json::get_string(client->get(kConfigMaps, "default", "c")->root(), "/data/k") == "v");
    set_value(*client, "c", "second-try");
    CHECK(json::get_string(client->get(kConfigMaps, "default", "c")->root(), "/data/k") == "second-try");
  }
}

TEST_CASE("429 waits Retry-After for any verb, 500 backs off for reads only", "[rest][retry]") {
  lc::LocalCluster cluster{{}};
  REQUIRE(cluster.start());
  Sleeps sleeps;
  auto client = client_for(cluster, &sleeps);
  REQUIRE(client->create(kConfigMaps, "default", cm("r").root()));

  SECTION("429 on GET") {
    cluster.faults().configure(
        faults(R"({"rules":[{"verbs":"GET","resources":"configmaps","error429":1,"retryAfterSeconds":3,"times":2}]})"));
    REQUIRE(client->get(kConfigMaps, "default", "r"));
    CHECK(sleeps.take() == std::vector<std::chrono::milliseconds>{3000ms, 3000ms});
  }
  SECTION("429 on POST") {
    cluster.faults().configure(
        faults(R"({"rules":[{"verbs":"POST","resources":"configmaps","error429":1,"retryAfterSeconds":2,"times":1}]})"));
    REQUIRE(client->create(kConfigMaps, "default", cm("after-429").root()));
    CHECK(sleeps.take() == std::vector<std::chrono::milliseconds>{2000ms});
  }
  SECTION("500 on GET backs off exponentially") {
    cluster.faults().configure(faults(R"({"rules":[{"verbs":"GET","resources":"configmaps","error500":1,"times":3}]})"));
    REQUIRE(client->get(kConfigMaps, "default", "r"));
    CHECK(sleeps.take() == std::vector<std::chrono::milliseconds>{200ms, 400ms, 800ms});
  }
  SECTION("500 on POST is returned, not retried") {
    cluster.faults().configure(faults(R"({"rules":[{"verbs":"POST","resources":"configmaps","error500":1,"times":1}]})"));
    auto r = client->create(kConfigMaps, "default", cm("after-500").root());
    REQUIRE_FALSE(r);
    CHECK(r.error().is(Reason::InternalError));
    CHECK(r.error().message == "Internal error occurred: injected fault");
    CHECK(sleeps.take().empty());
    CHECK_FALSE(client->get(kConfigMaps, "default", "after-500"));
  }
  SECTION("a 429 that never ends gives up after max_retries with TooManyRequests") {
    cluster.faults().configure(faults(R"({"rules":[{"verbs":"GET","resources":"configmaps","error429":1}]})"));
    auto r = client->get(kConfigMaps, "default", "r");
    REQUIRE_FALSE(r);
    CHECK(r.error().is(Reason::TooManyRequests));
    CHECK(r.error().retry_after == std::chrono::seconds(1));
    CHECK(sleeps.take().size() == 10);
  }
}

TEST_CASE("once stop is requested, failures are returned without retry and a retry wait ends", "[rest][retry][stop]") {
  lc::LocalCluster cluster{{}};
  REQUIRE(cluster.start());
  std::stop_source stop;
  kube::RestConfig cfg;
  cfg.scheme = "http";
  cfg.host = "127.0.0.1";
  cfg.port = cluster.port();
  cfg.qps = -1;
  cfg.timeout = 10s;
  kube::RestClientOptions o;
  o.stop = stop.get_token();
  auto client = kube::RestClient::create(cfg, std::move(o));
  REQUIRE(client);
  REQUIRE((*client)->create(kConfigMaps, "default", cm("s").root()));
  cluster.faults().configure(
      faults(R"({"rules":[{"verbs":"GET","resources":"configmaps","error429":1,"retryAfterSeconds":60}]})"));

  SECTION("a stop requested before the call") {
    stop.request_stop();
    auto r = (*client)->get(kConfigMaps, "default", "s");
    REQUIRE_FALSE(r);
    CHECK(r.error().is(Reason::TooManyRequests));
    CHECK(cluster.faults().counts()["429"] == 1);  // one attempt, no retry
  }
  SECTION("a stop requested while the call waits out a 60 s Retry-After") {
    std::optional<kube::ApiResult<json::Document>> r;
    std::thread caller([&] { r = (*client)->get(kConfigMaps, "default", "s"); });
    REQUIRE(eventually([&] { return cluster.faults().counts()["429"] == 1; }));
    stop.request_stop();
    caller.join();  // without the stop: 60 s per retry
    REQUIRE(r);
    REQUIRE_FALSE(*r);
    CHECK(r->error().is(Reason::TooManyRequests));
    CHECK(cluster.faults().counts()["429"] == 1);
  }
}

TEST_CASE("a dropped connection is retried for GET only", "[rest][drop]") {
  lc::LocalCluster cluster{{}};
  REQUIRE(cluster.start());
  Sleeps sleeps;
  auto client = client_for(cluster, &sleeps);
  REQUIRE(client->create(kConfigMaps, "default", cm("d").root()));

  SECTION("GET") {
    cluster.faults().configure(faults(R"({"rules":[{"verbs":"GET","resources":"configmaps","drop":1,"times":2}]})"));
    auto r = client->get(kConfigMaps, "default", "d");
    REQUIRE(r);
    CHECK(cluster.faults().counts()["drop"] == 2);
  }
  SECTION("POST whose write happened: the error is returned, no second POST") {
    cluster.faults().configure(
        faults(R"({"rules":[{"verbs":"POST","resources":"configmaps","dropAfterCommit":1,"times":1}]})"));
    auto r = client->create(kConfigMaps, "default", cm("once").root());
    REQUIRE_FALSE(r);
    // A retried POST would have answered AlreadyExists.
    CHECK(r.error().is(Reason::Transport));
    CHECK(client->get(kConfigMaps, "default", "once"));
    CHECK(sleeps.take().empty());
  }
  SECTION("PUT and DELETE are not retried either") {
    cluster.faults().configure(faults(R"({"rules":[{"verbs":["PUT","DELETE"],"resources":"configmaps","drop":1}]})"));
    auto cur = client->get(kConfigMaps, "default", "d");
    REQUIRE(cur);
    auto u = client->update(kConfigMaps, "default", cur->root());
    REQUIRE_FALSE(u);
    CHECK(u.error().is(Reason::Transport));
    auto d = client->remove(kConfigMaps, "default", "d");
    REQUIRE_FALSE(d);
    CHECK(d.error().is(Reason::Transport));
    CHECK(cluster.faults().counts()["drop"] == 2);
    CHECK(sleeps.take().empty());
  }
}

TEST_CASE("malformed JSON from the server is an error naming the cause, the informer cache stays intact",
          "[rest][informer][malformed]") {
  lc::LocalCluster cluster{{}};
  REQUIRE(cluster.start());
  auto client = client_for(cluster);
  for (int i = 0; i < 5; ++i) REQUIRE(client->create(kConfigMaps, "default", cm(fmt::format("m-{}", i)).root()));

  SECTION("a GET") {
    cluster.faults().configure(faults(R"({"rules":[{"verbs":"GET","resources":"configmaps","malformed":1,"times":1}]})"));
    auto r = client->get(kConfigMaps, "default", "m-0");
    REQUIRE_FALSE(r);
    CHECK(r.error().is(Reason::BadResponse));
    CHECK_THAT(r.error().message, Catch::Contains("GET /api/v1/namespaces/default/configmaps/m-0: HTTP 200 response "
                                                  "is not valid JSON: invalid JSON at offset"));
  }
  SECTION("the informer's relist and watch") {
    kube::RealClock clock;
    kube::Informer inf(*client, clock, configmap_informer());
    Recorder rec;
    inf.add_handlers(rec.handlers());
    // The server decides a watch's faults when it opens, and the informer opens its watch right
    // after its list: configured only after the sync, the rule would miss a watch opened first.
    cluster.faults().configure(faults(R"({"rules":[{"verbs":"WATCH","resources":"configmaps","malformed":1}]})"));
    inf.start();
    REQUIRE(inf.wait_for_sync(10s));
    const auto before = cache_state(inf);
    // Every watch event is invalid JSON, and so is every list of the relist a forced 410 starts.
    cluster.faults().configure(faults(R"({"watchExpireResumes":1,"rules":[
        {"verbs":"WATCH","resources":"configmaps","malformed":1},
        {"verbs":"LIST","resources":"configmaps","malformed":1}]})"));
    set_value(*client, "m-0", "x");
    REQUIRE(eventually([&] { return cluster.faults().counts()["malformed"] >= 3; }));
    CHECK(cluster.faults().counts()["watchExpired"] == 1);
    // Nothing decoded from a broken body reached the cache.
    CHECK(cache_state(inf) == before);
    CHECK(rec.count(rec.updates, "default/m-0") == 0);
    cluster.faults().configure(faults("{}"));
    REQUIRE(eventually([&] { return cache_state(inf) == server_state(*client); }));
    CHECK(rec.count(rec.updates, "default/m-0") == 1);
    CHECK(rec.max_adds() == 1);
    CHECK(inf.stats().errors >= 2);
  }
}

TEST_CASE("a bearer token file rotated on disk keeps working", "[transport][token]") {
  lc::LocalClusterOptions o;
  o.token = "first-token";
  lc::LocalCluster cluster{o};
  REQUIRE(cluster.start());
  auto dir = std::filesystem::temp_directory_path() / fmt::format("unitrain-token-{}", ::getpid());
  std::filesystem::create_directories(dir);
  auto file = (dir / "token").string();
  auto write = [&](const std::string& t) {
    // As the kubelet does it: a new file renamed over the old one.
    std::ofstream(file + ".tmp") << t << "\n";
    std::filesystem::rename(file + ".tmp", file);
  };
  write("first-token");
  kube::RestConfig cfg;
  cfg.bearer_token_file = file;
  auto client = client_for(cluster, nullptr, cfg);
  REQUIRE(client->list(kConfigMaps, "default", {}));

  cluster.rotate_token("second-token-after-rotation");
  auto denied = client->list(kConfigMaps, "default", {});
  REQUIRE_FALSE(denied);
  CHECK(denied.error().is(Reason::Unauthorized));
  write("second-token-after-rotation");
  CHECK(client->list(kConfigMaps, "default", {}));
  CHECK(client->transport().current_token() == "second-token-after-rotation");
  std::filesystem::remove_all(dir);
}

TEST_CASE("TLS with the wrong CA fails with an error naming the cause", "[transport][tls]") {
  lc::LocalClusterOptions o;
  o.tls = true;
  lc::LocalCluster cluster{o};
  REQUIRE(cluster.start());
  kube::RestConfig right;
  right.ca_pem = cluster.ca_pem();
  right.bearer_token = *cluster.token();
  CHECK(client_for(cluster, nullptr, right)->list(kConfigMaps, "default", {}));

  auto other = lc::make_self_signed_tls();
  REQUIRE(other);
  kube::RestConfig wrong = right;
  wrong.ca_pem = other->ca_cert_pem;
  Sleeps sleeps;
  auto r = client_for(cluster, &sleeps, wrong)->list(kConfigMaps, "default", {});
  REQUIRE_FALSE(r);
  CHECK(r.error().is(Reason::Transport));
  CHECK_THAT(r.error().message, Catch::Contains("certificate verification failed"));
  CHECK_THAT(r.error().message, Catch::Contains(fmt::format("127.0.0.1:{}", cluster.port())));
  CHECK(sleeps.take().empty());  // a TLS failure is never retried
}

TEST_CASE("the informer survives a full restart of the cluster with its state kept", "[informer][restart]") {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("unitrain-restart-{}", ::getpid());
  std::filesystem::remove_all(dir);
  lc::LocalClusterOptions o;
  o.state_dir = dir.string();
  lc::LocalCluster cluster{o};
  REQUIRE(cluster.start());
  const auto port = cluster.port();
  auto client = client_for(cluster);
  for (int i = 0; i < 5; ++i) REQUIRE(client->create(kConfigMaps, "default", cm(fmt::format("s-{}", i)).root()));
  kube::RealClock clock;
  kube::Informer inf(*client, clock, configmap_informer());
  Recorder rec;
  inf.add_handlers(rec.handlers());
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));

  REQUIRE(cluster.restart());
  CHECK(cluster.port() == port);
  REQUIRE(client->remove(kConfigMaps, "default", "s-0"));
  REQUIRE(client->create(kConfigMaps, "default", cm("after-restart").root()));
  REQUIRE(eventually([&] { return cache_state(inf) == server_state(*client); }));
  CHECK(server_state(*client).count("default/s-4") == 1);  // state kept
  CHECK(rec.count(rec.deletes, "default/s-0") == 1);
  CHECK(rec.count(rec.adds, "default/after-restart") == 1);
  CHECK(rec.max_adds() == 1);
  inf.stop();
  cluster.stop();
  std::filesystem::remove_all(dir);
}

TEST_CASE("fault configuration: JSON round trip, errors name the key, seeded decisions repeat", "[faults]") {
  auto c = lc::FaultConfig::parse(
      R"({"seed":9,"rules":[{"verbs":"write","resources":["pods","pods/status"],"error500":0.1,"error429":0.05,
          "error409":0.05,"retryAfterSeconds":2,"latencyMs":3,"times":4}],"watchCutAfterEvents":5,"watchExpireResumes":1})");
  REQUIRE(c);
  auto again = lc::FaultConfig::parse(c->to_json());
  REQUIRE(again);
  CHECK(again->to_json() == c->to_json());
  CHECK(lc::FaultConfig::parse(R"({"rules":[{"eror500":1}]})").error().message == "faults.rules[0].eror500: unknown key");
  CHECK(lc::FaultConfig::parse(R"({"rules":[{"error500":2}]})").error().message ==
        "faults.rules[0].error500: must be a number between 0 and 1");
  CHECK(lc::FaultConfig::parse(R"({"rules":[{"verbs":"GETT"}]})").error().message ==
        "faults.rules[0].verbs: unknown verb \"GETT\"");

  lc::ResourceInfo pods;
  pods.resource = "pods";
  pods.kind = "Pod";
  pods.version = "v1";
  auto run = [&] {
    lc::FaultInjector f(faults(R"({"seed":42,"rules":[{"verbs":"write","error500":0.3,"error429":0.2,"error409":0.1}]})"));
    std::string seq;
    for (int i = 0; i < 200; ++i) {
      auto d = f.decide(i % 2 ? "POST" : "GET", pods, "", "p");
      seq += d.error ? std::to_string(d.error->code) + " " : "- ";
    }
    return seq;
  };
  const auto first = run();
  CHECK(first == run());
  CHECK(first.find("500") != std::string::npos);
  CHECK(first.find("429") != std::string::npos);
  CHECK(first.find("409") != std::string::npos);
  // Reads never match a "write" rule.
  lc::FaultInjector f(faults(R"({"rules":[{"verbs":"write","resources":"pods/status","error500":1}]})"));
  CHECK_FALSE(f.decide("GET", pods, "status", "p").error);
  CHECK_FALSE(f.decide("PUT", pods, "", "p").error);
  CHECK(f.decide("PUT", pods, "status", "p").error->code == 500);
}
