#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <chrono>
#include <ctime>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "core/kube/clock.h"
#include "core/kube/event_recorder.h"
#include "core/kube/rest_client.h"
#include "test_server.h"

using namespace unitrain::kube;
namespace json = unitrain::json;
using namespace unitrain::kube::testing;
using namespace std::chrono_literals;
using R = ApiError::Reason;
using SteadyClock = std::chrono::steady_clock;

namespace {

const GroupVersionResource kPods{"", "v1", "pods"};
const GroupVersionResource kJobs{"kubeflow.org", "v1", "pytorchjobs"};

RestConfig http_config(uint16_t port) {
  RestConfig c;
  c.scheme = "http";
  c.host = "127.0.0.1";
  c.port = port;
  c.qps = -1;
  c.timeout = 2s;
  return c;
}

struct Recorder {
  std::mutex mu;
  std::vector<RawRequest> requests;
  void add(const RawRequest& r) {
    std::lock_guard lock(mu);
    requests.push_back(r);
  }
  size_t size() {
    std::lock_guard lock(mu);
    return requests.size();
  }
  RawRequest at(size_t i) {
    std::lock_guard lock(mu);
    return requests.at(i);
  }
};

std::unique_ptr<RestClient> make_client(const RestConfig& c, std::vector<std::chrono::milliseconds>* sleeps = nullptr,
                                        int max_retries = 10) {
  RestClientOptions o;
  o.retry.max_retries = max_retries;
  o.sleep = [sleeps](std::chrono::milliseconds d) {
    if (sleeps) sleeps->push_back(d);
  };
  auto r = RestClient::create(c, o);
  REQUIRE(r);
  return std::move(*r);
}

// ---- certificates made in the test -----------------------------------------------------------
struct KeyCert {
  std::string key_pem;
  std::string cert_pem;
};

std::string bio_string(BIO* b) {
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  return std::string(data, static_cast<size_t>(n));
}

// A self-signed certificate (CA:TRUE, so it can be its own trust anchor) for `san`.
KeyCert self_signed(const std::string& cn, const std::string& san) {
  static int serial = 1;
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  REQUIRE(key);
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 24 * 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair{NID_subject_alt_name, san}, std::pair{NID_basic_constraints, std::string("critical,CA:TRUE")}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    REQUIRE(ext);
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
  }
  REQUIRE(X509_sign(x, key, EVP_sha256()) > 0);
  BIO* kb = BIO_new(BIO_s_mem());
  BIO* cb = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(kb, key, nullptr, nullptr, 0, nullptr, nullptr);
  PEM_write_bio_X509(cb, x);
  KeyCert out{bio_string(kb), bio_string(cb)};
  BIO_free(kb);
  BIO_free(cb);
  X509_free(x);
  EVP_PKEY_free(key);
  return out;
}

struct ServerTls {
  SSL_CTX* ctx = nullptr;
  ServerTls(const KeyCert& kc, const std::string& client_ca_pem = {}) {
    ctx = SSL_CTX_new(TLS_server_method());
    BIO* cb = BIO_new_mem_buf(kc.cert_pem.data(), static_cast<int>(kc.cert_pem.size()));
    X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
    BIO* kb = BIO_new_mem_buf(kc.key_pem.data(), static_cast<int>(kc.key_pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
    REQUIRE(SSL_CTX_use_certificate(ctx, cert) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey(ctx, key) == 1);
    if (!client_ca_pem.empty()) {
      BIO* ab = BIO_new_mem_buf(client_ca_pem.data(), static_cast<int>(client_ca_pem.size()));
      X509* ca = PEM_read_bio_X509(ab, nullptr, nullptr, nullptr);
      X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      X509_free(ca);
      BIO_free(ab);
    }
    X509_free(cert);
    EVP_PKEY_free(key);
    BIO_free(cb);
    BIO_free(kb);
  }
  ~ServerTls() { SSL_CTX_free(ctx); }
  ServerTls(const ServerTls&) = delete;
  ServerTls& operator=(const ServerTls&) = delete;
};

const char* kPodJson = R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns","resourceVersion":"7"},"x-unknown":{"kept":true}})";

// Serves every request on a connection with `respond` until the client closes it.
TestServer::Handler serve_all(Recorder& rec, std::function<void(Session&, const RawRequest&, size_t)> respond) {
  return [&rec, respond](Session& s) {
    while (auto r = s.read_request()) {
      rec.add(*r);
      respond(s, *r, rec.size());
    }
  };
}

// Times the calling thread went to sleep (blocked) since it started.
long thread_sleeps() {
  rusage u{};
  REQUIRE(getrusage(RUSAGE_THREAD, &u) == 0);
  return u.ru_nvcsw;
}

}  // namespace

TEST_CASE("REST: GET round trip over a reused keep-alive connection") {
  Recorder rec;
  TestServer server(serve_all(rec, [](Session& s, const RawRequest&, size_t) { s.respond(200, kPodJson); }));
  auto client = make_client(http_config(server.port()));
  auto pod = client->get(kPods, "ns", "p");
  REQUIRE(pod);
  CHECK(json::get_string(pod->root(), "/metadata/resourceVersion") == std::optional<std::string_view>("7"));
  CHECK(json::get_bool(pod->root(), "/x-unknown/kept") == std::optional<bool>(true));
  ListOptions paged;
  paged.label_selector = "app=a";
  paged.limit = 10;
  auto again = client->list(kPods, "ns", paged);
  REQUIRE(again);
  REQUIRE(rec.size() == 2);
  CHECK(rec.at(0).method == "GET");
  CHECK(rec.at(0).target == "/api/v1/namespaces/ns/pods/p");
  CHECK(rec.at(0).header("accept") == "application/json");
  CHECK(rec.at(0).header("host") == "127.0.0.1:" + std::to_string(server.port()));
  CHECK(rec.at(0).header("authorization").empty());
  CHECK(rec.at(1).target == "/api/v1/namespaces/ns/pods?labelSelector=app%3Da&limit=10");
  CHECK(server.connections() == 1);
  CHECK(client->transport().connections_opened() == 1);
}

TEST_CASE("REST: every attempt is reported, a stop ends a wait for the rate limit where asked to") {
  Recorder rec;
  TestServer server(serve_all(rec, [](Session& s, const RawRequest&, size_t) { s.respond(200, kPodJson); }));
  RestConfig cfg = http_config(server.port());
  cfg.qps = 0.001;  // one token, then one per 1000 s
  cfg.burst = 1;
  std::stop_source stop;
  std::vector<std::string> attempts;
  RestClientOptions o;
  o.stop = stop.get_token();
  o.stop_ends_rate_limit_wait = true;
  o.on_attempt = [&attempts](const AttemptReport& a) { attempts.push_back(fmt::format("{} {} {}", a.method, a.target, a.status)); };
  auto client = RestClient::create(cfg, o);
  REQUIRE(client);
  REQUIRE((*client)->get(kPods, "ns", "p"));
  CHECK(attempts == std::vector<std::string>{"GET /api/v1/namespaces/ns/pods/p 200"});
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.request_stop();
  });
  const auto started = std::chrono::steady_clock::now();
  auto waited = (*client)->get(kPods, "ns", "p");
  stopper.join();
  REQUIRE_FALSE(waited);
  CHECK(waited.error().reason == R::Cancelled);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
  CHECK(attempts.size() == 1);  // the cancelled request never went out
  CHECK(rec.size() == 1);
}

TEST_CASE("REST: rate_limit() is the bucket the client's requests take their tokens from") {
  Recorder rec;
  TestServer server(serve_all(rec, [](Session& s, const RawRequest&, size_t) { s.respond(200, kPodJson); }));
  RestConfig cfg = http_config(server.port());
  cfg.qps = 0.001;  // no refill within the test
  cfg.burst = 3;
  auto client = RestClient::create(cfg);
  REQUIRE(client);
  const QpsLimiter* budget = (*client)->rate_limit();
  REQUIRE(budget != nullptr);
  CHECK(budget->qps() == 0.001);
  CHECK(budget->burst() == 3);
  CHECK(budget->time_until(3) == std::chrono::nanoseconds::zero());
  REQUIRE((*client)->get(kPods, "ns", "p"));
  REQUIRE((*client)->get(kPods, "ns", "p"));
  CHECK(budget->time_until(1) == std::chrono::nanoseconds::zero());  // one token left
  CHECK(budget->time_until(2) > std::chrono::seconds(900));          // the second refills at 0.001/s
}

TEST_CASE("REST: verbs, bodies and content types reach the server") {
  Recorder rec;
  TestServer server(serve_all(rec, [](Session& s, const RawRequest&, size_t) { s.respond(200, kPodJson); }));
  auto client = make_client(http_config(server.port()));
  auto obj = json::Document::parse(kPodJson);
  REQUIRE(obj);
  REQUIRE(client->create(kPods, "", obj->root()));
  REQUIRE(client->update(kPods, "ns", obj->root()));
  REQUIRE(client->update_status(kPods, "ns", obj->root()));
  PatchOptions apply;
  apply.field_manager = "unitrain";
  apply.force = true;
  REQUIRE(client->patch(kJobs, "team", "j", PatchType::Apply, R"({"spec":{}})", apply));
  REQUIRE(client->patch(kPods, "ns", "p", PatchType::Strategic, R"({"status":{}})", {}, "status"));
  DeleteOptions d;
  d.propagation_policy = "Background";
  REQUIRE(client->remove(kPods, "ns", "p", d));
  ListOptions selected;
  selected.label_selector = "a=b";
  REQUIRE(client->delete_collection(kPods, "ns", selected));
  REQUIRE(rec.size() == 7);
  CHECK((rec.at(0).method == "POST" && rec.at(0).target == "/api/v1/namespaces/ns/pods"));
  CHECK(rec.at(0).header("content-type") == "application/json");
  CHECK(rec.at(0).body == json::Document::parse(kPodJson)->dump());
  CHECK((rec.at(1).method == "PUT" && rec.at(1).target == "/api/v1/namespaces/ns/pods/p"));
  CHECK(rec.at(2).target == "/api/v1/namespaces/ns/pods/p/status");
  CHECK((rec.at(3).method == "PATCH" &&
         rec.at(3).target == "/apis/kubeflow.org/v1/namespaces/team/pytorchjobs/j?fieldManager=unitrain&force=true"));
  CHECK(rec.at(3).header("content-type") == "application/apply-patch+yaml");
  CHECK(rec.at(4).target == "/api/v1/namespaces/ns/pods/p/status");
  CHECK(rec.at(4).header("content-type") == "application/strategic-merge-patch+json");
  CHECK((rec.at(5).method == "DELETE" && rec.at(5).body == R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"})"));
  CHECK(rec.at(6).target == "/api/v1/namespaces/ns/pods?labelSelector=a%3Db");
}

TEST_CASE("REST: a write's response is decoded through the caller's response_fields, a 409 stays whole") {
  Recorder rec;
  TestServer server(serve_all(rec, [](Session& s, const RawRequest& r, size_t) {
    if (r.method == "PUT")
      s.respond(409, R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the object has been modified","reason":"Conflict","code":409})");
    else
      s.respond(200, kPodJson);
  }));
  auto client = make_client(http_config(server.port()));
  auto obj = json::Document::parse(kPodJson);
  REQUIRE(obj);
  const WriteOptions written{written_fields()};
  auto created = client->create(kPods, "ns", obj->root(), written);
  REQUIRE(created);
  CHECK(json::get_string(created->root(), "/metadata/resourceVersion") == std::optional<std::string_view>("7"));
  CHECK(json::find(created->root(), "/x-unknown") == nullptr);
  PatchOptions patch;
  patch.response_fields = written_fields();
  auto patched = client->patch(kPods, "ns", "p", PatchType::Merge, "{}", patch);
  REQUIRE(patched);
  CHECK(json::find(patched->root(), "/x-unknown") == nullptr);
  DeleteOptions del;
  del.response_fields = written_fields();
  auto removed = client->remove(kPods, "ns", "p", del);
  REQUIRE(removed);
  CHECK(json::find(removed->root(), "/x-unknown") == nullptr);
  auto whole = client->create(kPods, "ns", obj->root());
  REQUIRE(whole);
  CHECK(json::get_bool(whole->root(), "/x-unknown/kept") == std::optional<bool>(true));
  auto upd = client->update_status(kPods, "ns", obj->root(), written);
  REQUIRE_FALSE(upd);
  CHECK(upd.error().reason == R::Conflict);
  CHECK_THAT(upd.error().message, Catch::Contains("the object has been modified"));
}

TEST_CASE("REST: a write that reads nothing back (nothing_read) gets an empty object, its body is not parsed") {
  Recorder rec;
  TestServer server(serve_all(rec, [](Session& s, const RawRequest& r, size_t) {
    if (r.method == "PUT")
      s.respond(409, R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the object has been modified","reason":"Conflict","code":409})");
    else
      s.respond(201, R"({"kind":"Pod","metadata":{"name":"p")");  // truncated: only a parse would notice
  }));
  auto client = make_client(http_config(server.port()));
  auto obj = json::Document::parse(kPodJson);
  REQUIRE(obj);
  const WriteOptions nothing{nothing_read()};
  CHECK(keeps_nothing(nothing.response_fields.get()));
  CHECK_FALSE(keeps_nothing(written_fields().get()));
  CHECK_FALSE(keeps_nothing(nullptr));
  auto created = client->create(kPods, "ns", obj->root(), nothing);
  REQUIRE(created);
  CHECK(created->root().IsObject());
  CHECK(created->root().MemberCount() == 0);
  PatchOptions patch;
  patch.response_fields = nothing_read();
  CHECK(client->patch(kPods, "ns", "p", PatchType::Merge, "{}", patch));
  // A caller that reads the identity still gets the parse, and its error.
  auto written = client->create(kPods, "ns", obj->root(), WriteOptions{written_fields()});
  REQUIRE_FALSE(written);
  CHECK(written.error().reason == R::BadResponse);
  // An error status is decoded whatever the caller reads of a success.
  auto upd = client->update_status(kPods, "ns", obj->root(), nothing);
  REQUIRE_FALSE(upd);
  CHECK(upd.error().reason == R::Conflict);
}

TEST_CASE("REST: 409 is decoded into a Conflict value, malformed 200 is BadResponse") {
  Recorder rec;
  TestServer server(serve_all(rec, [](Session& s, const RawRequest& r, size_t) {
    if (r.method == "PUT")
      s.respond(409, R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on pods \"p\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","details":{"name":"p","kind":"pods"},"code":409})");
    else
      s.respond(200, R"({"kind":"Pod","metadata":{"name":"p")");  // truncated JSON
  }));
  auto client = make_client(http_config(server.port()));
  auto obj = json::Document::parse(kPodJson);
  auto upd = client->update(kPods, "ns", obj->root());
  REQUIRE_FALSE(upd);
  CHECK(upd.error().reason == R::Conflict);
  CHECK(upd.error().code == 409);
  CHECK_THAT(upd.error().message, Catch::Contains("the object has been modified"));
  CHECK(rec.size() == 1);  // a conflict is not retried

  auto get = client->get(kPods, "ns", "p");
  REQUIRE_FALSE(get);
  CHECK(get.error().reason == R::BadResponse);
  CHECK_THAT(get.error().message, Catch::Contains("GET /api/v1/namespaces/ns/pods/p: HTTP 200 response is not valid JSON"));
}

TEST_CASE("REST: 429 with Retry-After is retried after the server's delay, for any verb") {
  Recorder rec;
  TestServer server(serve_all(rec, [](Session& s, const RawRequest&, size_t n) {
    if (n % 2 == 1)
      s.respond(429, R"({"kind":"Status","reason":"TooManyRequests","message":"slow down","code":429})", {"Retry-After: 1"});
    else
      s.respond(201, kPodJson);
  }));
  std::vector<std::chrono::milliseconds> sleeps;
  auto client = make_client(http_config(server.port()), &sleeps);
  auto obj = json::Document::parse(kPodJson);
  auto created = client->create(kPods, "ns", obj->root());
  REQUIRE(created);
  CHECK(rec.size() == 2);
  CHECK(sleeps == std::vector<std::chrono::milliseconds>{1000ms});

  // When the retries run out, the caller gets the decoded 429 with its Retry-After.
  Recorder rec2;
  TestServer always(serve_all(rec2, [](Session& s, const RawRequest&, size_t) {
    s.respond(429, R"({"kind":"Status","reason":"TooManyRequests","message":"slow down","details":{"retryAfterSeconds":2},"code":429})",
              {"Retry-After: 2"});
  }));
  std::vector<std::chrono::milliseconds> sleeps2;
  auto limited = make_client(http_config(always.port()), &sleeps2, 3);
  auto r = limited->get(kPods, "ns", "p");
  REQUIRE_FALSE(r);
  CHECK(r.error().reason == R::TooManyRequests);
  CHECK(r.error().retry_after == std::optional<std::chrono::seconds>(2s));
  CHECK(rec2.size() == 4);
  CHECK(sleeps2.size() == 3);
}

TEST_CASE("REST: 500 without Retry-After is retried for GET only") {
  Recorder rec;
  TestServer server(serve_all(rec, [](Session& s, const RawRequest&, size_t n) {
    if (n == 1 || n == 3) s.respond(500, R"({"kind":"Status","reason":"InternalError","message":"boom","code":500})");
    else s.respond(200, kPodJson);
  }));
  std::vector<std::chrono::milliseconds> sleeps;
  auto client = make_client(http_config(server.port()), &sleeps);
  REQUIRE(client->get(kPods, "ns", "p"));  // 500 then 200
  auto obj = json::Document::parse(kPodJson);
  auto created = client->create(kPods, "ns", obj->root());  // 500: not retried
  REQUIRE_FALSE(created);
  CHECK(created.error().reason == R::InternalError);
  CHECK(rec.size() == 3);
}

TEST_CASE("transport: a server that accepts and never answers times out, no hang") {
  TestServer server([](Session& s) {
    s.read_request();
    s.read_request();  // blocks until the client gives up and closes
  });
  auto cfg = http_config(server.port());
  cfg.timeout = 300ms;
  auto client = make_client(cfg, nullptr, 1);
  const auto start = SteadyClock::now();
  auto r = client->get(kPods, "ns", "p");
  const auto elapsed = SteadyClock::now() - start;
  REQUIRE_FALSE(r);
  CHECK(r.error().reason == R::Transport);
  CHECK_THAT(r.error().message, Catch::Contains("no complete response within 300ms"));
  CHECK(elapsed < 3s);
  CHECK(elapsed >= 550ms);  // two attempts of 300 ms each (GET timeouts are retried once here)
}

TEST_CASE("transport: a stop cancels a request the server never answers, later requests are not sent") {
  std::atomic<int> received{0};
  TestServer server([&received](Session& s) {
    if (s.read_request()) ++received;
    s.read_request();  // never answers: blocks until the client closes
  });
  auto cfg = http_config(server.port());
  cfg.timeout = 20s;  // far longer than the wait below: a timeout is not what ends the request
  std::stop_source stop;
  RestClientOptions o;
  o.stop = stop.get_token();
  o.transport.cancel = stop.get_token();
  auto client = RestClient::create(cfg, o);
  REQUIRE(client);
  std::optional<ApiResult<json::Document>> hung;
  std::thread caller([&] { hung = (*client)->get(kPods, "ns", "hangs"); });
  for (int i = 0; i < 1000 && received == 0; ++i) std::this_thread::sleep_for(10ms);
  REQUIRE(received == 1);
  stop.request_stop();
  caller.join();
  REQUIRE(hung);
  REQUIRE_FALSE(*hung);
  CHECK(hung->error().reason == R::Cancelled);
  CHECK_THAT(hung->error().message, Catch::Contains("GET /api/v1/namespaces/ns/pods/hangs: cancelled"));

  auto later = (*client)->get(kPods, "ns", "later");
  REQUIRE_FALSE(later);
  CHECK(later.error().reason == R::Cancelled);
  CHECK(received == 1);
}

TEST_CASE("transport: waiting for a response that never comes is one sleep, not one per second") {
  TestServer server([](Session& s) {
    s.read_request();
    s.read_request();  // never answers: blocks until the client gives up and closes
  });
  auto cfg = http_config(server.port());
  cfg.timeout = 4s;
  auto client = make_client(cfg, nullptr, 0);
  const long before = thread_sleeps();
  auto r = client->get(kPods, "ns", "p");
  const long slept = thread_sleeps() - before;
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("no complete response within 4000ms"));
  // One sleep (connecting on loopback may add one); a wait cut into one-second slices sleeps 4 times.
  CHECK(slept <= 2);
}

TEST_CASE("transport: a body read on a silent stream sleeps once until its wait passes, and the stream stays usable") {
  std::mutex mu;
  std::condition_variable cv;
  bool send_more = false;
  TestServer server([&](Session& s) {
    if (!s.read_request()) return;
    s.start_chunked();
    s.chunk("first");
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return send_more; });
    }
    s.chunk("second");
    s.read_request();  // idle until the client goes away
  });
  auto release_server = [&] {
    std::lock_guard lock(mu);
    send_more = true;
    cv.notify_all();
  };
  struct Release {
    std::function<void()> f;
    ~Release() { f(); }
  } release_at_exit{release_server};

  auto transport = Transport::create(http_config(server.port()));
  REQUIRE(transport);
  http::Request req;
  req.target = "/api/v1/pods?watch=true";
  auto stream = (*transport)->open_stream(req);
  REQUIRE(stream);
  std::string body;
  while (body != "first") {
    auto r = (*stream)->read(200ms, body);  // the bytes are there: no wait, the timer stays armed
    REQUIRE(r);
    REQUIRE(*r == BodyStream::Read::Data);
  }
  // A wait longer than the one before: the timer fires first, re-arms, and the wait runs its course.
  auto start = SteadyClock::now();
  auto longer = (*stream)->read(1500ms, body);
  REQUIRE(longer);
  CHECK(*longer == BodyStream::Read::Timeout);
  CHECK(SteadyClock::now() - start >= 1500ms);

  const long before = thread_sleeps();
  start = SteadyClock::now();
  auto idle = (*stream)->read(4s, body);
  const long slept = thread_sleeps() - before;
  REQUIRE(idle);
  CHECK(*idle == BodyStream::Read::Timeout);
  CHECK(slept <= 2);  // once; a wait cut into one-second slices sleeps at least 4 times
  CHECK(SteadyClock::now() - start >= 4s);

  // The read left pending by the timeout gets the next bytes.
  release_server();
  body.clear();
  auto more = (*stream)->read(60s, body);
  REQUIRE(more);
  CHECK(*more == BodyStream::Read::Data);
  CHECK(body == "second");
}

TEST_CASE("transport: the chunks already received come in one read, those before a broken one before the error") {
  TestServer server([](Session& s) {
    if (!s.read_request()) return;
    s.start_chunked();
    // Two chunks and a malformed chunk header in one write.
    s.write("3\r\nab\n\r\n3\r\ncd\n\r\nzz\r\n");
    s.read_request();
  });
  auto transport = Transport::create(http_config(server.port()));
  REQUIRE(transport);
  http::Request req;
  req.target = "/api/v1/pods?watch=true";
  auto stream = (*transport)->open_stream(req);
  REQUIRE(stream);
  std::string body;
  int data_reads = 0;
  for (;;) {
    auto r = (*stream)->read(5s, body);
    if (!r) {
      CHECK(r.error().kind == http::TransportError::Kind::ConnectionLost);
      CHECK_THAT(r.error().message, Catch::Contains("stream broken before the end of the body"));
      break;
    }
    REQUIRE(*r == BodyStream::Read::Data);
    ++data_reads;
  }
  CHECK(body == "ab\ncd\n");
  CHECK(data_reads == 1);  // both chunks in one read (Beast alone hands out one per read)
}

TEST_CASE("transport: connection refused is a Transport error") {
  uint16_t port;
  {
    TestServer s([](Session&) {});
    port = s.port();
  }
  auto client = make_client(http_config(port), nullptr, 2);
  auto r = client->get(kPods, "ns", "p");
  REQUIRE_FALSE(r);
  CHECK(r.error().reason == R::Transport);
  CHECK_THAT(r.error().message, Catch::Contains("connecting to 127.0.0.1:"));
  CHECK(r.error().retryable());
}

TEST_CASE("transport: a keep-alive connection closed by the server is replaced transparently") {
  Recorder rec;
  TestServer server([&](Session& s) {
    auto r = s.read_request();
    if (!r) return;
    rec.add(*r);
    s.respond(200, kPodJson);  // keep-alive response, then the server closes the connection
  });
  auto client = make_client(http_config(server.port()), nullptr, 0);
  REQUIRE(client->get(kPods, "ns", "p"));
  std::this_thread::sleep_for(50ms);
  REQUIRE(client->get(kPods, "ns", "p"));
  auto obj = json::Document::parse(kPodJson);
  std::this_thread::sleep_for(50ms);
  REQUIRE(client->create(kPods, "ns", obj->root()));  // stale socket detected before writing
  CHECK(rec.size() == 3);
  CHECK(server.connections() == 3);
}

TEST_CASE("watch: chunked stream split at odd places, bookmarks, clean end") {
  Recorder rec;
  const std::string events =
      R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"10"}}})" "\n"
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"11"}}})" "\n"
      R"({"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"12"}}})" "\n";
  TestServer server([&](Session& s) {
    auto r = s.read_request();
    if (!r) return;
    rec.add(*r);
    s.start_chunked();
    for (size_t off = 0; off < events.size(); off += 37) {
      s.chunk(events.substr(off, 37));
      std::this_thread::sleep_for(2ms);
    }
    s.end_chunks();
    s.read_request();
  });
  auto client = make_client(http_config(server.port()));
  WatchOptions wo;
  wo.resource_version = "9";
  wo.timeout_seconds = 30;
  auto w = client->watch(kPods, "ns", wo);
  REQUIRE(w);
  std::vector<WatchEvent> got;
  for (;;) {
    auto ev = (*w)->next(2s);
    REQUIRE(ev);
    if (!*ev) break;
    got.push_back(std::move(**ev));
  }
  CHECK_FALSE((*w)->timed_out());
  REQUIRE(got.size() == 3);
  CHECK(got[0].type == WatchEvent::Type::Added);
  CHECK(got[1].type == WatchEvent::Type::Bookmark);
  CHECK(got[2].type == WatchEvent::Type::Deleted);
  CHECK(json::get_string(got[2].object.root(), "/metadata/resourceVersion") == std::optional<std::string_view>("12"));
  CHECK(rec.at(0).target ==
        "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=9&allowWatchBookmarks=true&timeoutSeconds=30");
}

TEST_CASE("watch: a connection dropped mid-stream is an error value") {
  TestServer server([](Session& s) {
    if (!s.read_request()) return;
    s.start_chunked();
    s.chunk(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})" "\n" R"({"type":"MODIFIED","obj)");
    std::this_thread::sleep_for(20ms);
    s.close();
  });
  auto client = make_client(http_config(server.port()));
  auto w = client->watch(kPods, "", {});
  REQUIRE(w);
  auto first = (*w)->next(2s);
  REQUIRE(first);
  REQUIRE(*first);
  auto second = (*w)->next(2s);
  REQUIRE_FALSE(second);
  CHECK(second.error().reason == R::Transport);
  CHECK_THAT(second.error().message, Catch::Contains("stream broken"));
}

TEST_CASE("watch: next() times out, and cancel() from another thread unblocks it") {
  TestServer server([](Session& s) {
    if (!s.read_request()) return;
    s.start_chunked();
    s.chunk(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})" "\n");
    s.read_request();  // idle until the client goes away
  });
  auto client = make_client(http_config(server.port()));
  auto w = client->watch(kPods, "", {});
  REQUIRE(w);
  auto first = (*w)->next(2s);
  REQUIRE(first);
  REQUIRE(*first);
  auto idle = (*w)->next(100ms);
  REQUIRE(idle);
  CHECK_FALSE(*idle);
  CHECK((*w)->timed_out());

  WatchStream* raw = w->get();
  std::thread canceller([raw] {
    std::this_thread::sleep_for(100ms);
    raw->cancel();
  });
  const auto start = SteadyClock::now();
  auto cancelled = (*w)->next(10s);
  const auto elapsed = SteadyClock::now() - start;
  canceller.join();
  REQUIRE_FALSE(cancelled);
  CHECK(cancelled.error().reason == R::Cancelled);
  CHECK(elapsed < 2s);
}

TEST_CASE("watch: a failed watch request decodes the Status (410 Gone)") {
  TestServer server([](Session& s) {
    if (!s.read_request()) return;
    s.respond(410, R"j({"kind":"Status","status":"Failure","message":"too old resource version: 5 (100)","reason":"Expired","code":410})j");
    s.read_request();
  });
  auto client = make_client(http_config(server.port()));
  WatchOptions wo;
  wo.resource_version = "5";
  auto w = client->watch(kPods, "", wo);
  REQUIRE_FALSE(w);
  CHECK(w.error().reason == R::Expired);
  CHECK(w.error().code == 410);
}

TEST_CASE("TLS: verification against the configured CA, bearer token, rotated token file") {
  const KeyCert server_cert = self_signed("apiserver", "IP:127.0.0.1,DNS:kubernetes.default.svc");
  const KeyCert other_ca = self_signed("someone-else", "DNS:elsewhere");
  ServerTls tls(server_cert);
  Recorder rec;
  TestServer server(serve_all(rec, [](Session& s, const RawRequest&, size_t) { s.respond(200, kPodJson); }), tls.ctx);

  RestConfig cfg = http_config(server.port());
  cfg.scheme = "https";

  SECTION("wrong CA: a clear certificate verification error, not retried") {
    cfg.ca_pem = other_ca.cert_pem;
    auto client = make_client(cfg);
    auto r = client->get(kPods, "ns", "p");
    REQUIRE_FALSE(r);
    CHECK(r.error().reason == R::Transport);
    CHECK_THAT(r.error().message, Catch::Contains("certificate verification failed"));
    // What an administrator needs to see the mismatch: what the server presented, what was expected.
    CHECK_THAT(r.error().message, Catch::Contains("the server's certificate is \"CN=apiserver\", issued by \"CN=apiserver\""));
    CHECK_THAT(r.error().message, Catch::Contains("expected a certificate issued by the CA \"CN=someone-else\""));
    CHECK(rec.size() == 0);
    CHECK(server.connections() == 1);
  }
  SECTION("no CA configured: the system trust store is what was expected") {
    auto client = make_client(cfg);
    auto r = client->get(kPods, "ns", "p");
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("expected a certificate issued by a CA of the system trust store"));
  }
  SECTION("right CA but a name the certificate does not carry") {
    cfg.ca_pem = server_cert.cert_pem;
    cfg.tls_server_name = "wrong.example.com";
    auto client = make_client(cfg);
    auto r = client->get(kPods, "ns", "p");
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("certificate verification failed: hostname mismatch"));
  }
  SECTION("right CA via tls-server-name (SNI) and insecure mode") {
    cfg.ca_pem = server_cert.cert_pem;
    cfg.tls_server_name = "kubernetes.default.svc";
    REQUIRE(make_client(cfg)->get(kPods, "ns", "p"));
    RestConfig insecure = http_config(server.port());
    insecure.scheme = "https";
    insecure.insecure = true;
    REQUIRE(make_client(insecure)->get(kPods, "ns", "p"));
  }
  SECTION("right CA: OK with the static token, then the rotated token file") {
    cfg.ca_pem = server_cert.cert_pem;
    cfg.bearer_token = "static-token";
    REQUIRE(make_client(cfg)->get(kPods, "ns", "p"));
    REQUIRE(rec.size() == 1);
    CHECK(rec.at(0).header("authorization") == "Bearer static-token");

    const auto dir = std::filesystem::temp_directory_path() / ("unitrain-token-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string token_file = (dir / "token").string();
    std::ofstream(token_file, std::ios::trunc) << "token-one\n";
    cfg.bearer_token_file = token_file;
    auto client = make_client(cfg);
    REQUIRE(client->get(kPods, "ns", "p"));
    CHECK(rec.at(1).header("authorization") == "Bearer token-one");
    std::this_thread::sleep_for(20ms);
    std::ofstream(token_file, std::ios::trunc) << "token-two-rotated\n";
    REQUIRE(client->get(kPods, "ns", "p"));
    CHECK(rec.at(2).header("authorization") == "Bearer token-two-rotated");
    CHECK(client->transport().connections_opened() == 1);  // same TLS connection, new token
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("TLS: client certificate authentication") {
  const KeyCert server_cert = self_signed("apiserver", "IP:127.0.0.1");
  const KeyCert client_cert = self_signed("system:admin", "DNS:admin");
  ServerTls tls(server_cert, client_cert.cert_pem);
  Recorder rec;
  TestServer server(serve_all(rec, [](Session& s, const RawRequest&, size_t) { s.respond(200, kPodJson); }), tls.ctx);
  RestConfig cfg = http_config(server.port());
  cfg.scheme = "https";
  cfg.ca_pem = server_cert.cert_pem;

  auto without = make_client(cfg, nullptr, 0)->get(kPods, "ns", "p");
  REQUIRE_FALSE(without);
  CHECK(without.error().reason == R::Transport);

  cfg.client_cert_pem = client_cert.cert_pem;
  cfg.client_key_pem = client_cert.key_pem;
  REQUIRE(make_client(cfg)->get(kPods, "ns", "p"));
  CHECK(rec.size() == 1);

  cfg.client_key_pem = "not a key";
  auto bad = RestClient::create(cfg);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("client key PEM"));
}

TEST_CASE("transport: concurrent requests share a bounded keep-alive pool") {
  Recorder rec;
  TestServer server(serve_all(rec, [](Session& s, const RawRequest&, size_t) { s.respond(200, kPodJson); }));
  auto client = make_client(http_config(server.port()));
  constexpr int kThreads = 4, kEach = 20;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i)
        if (client->get(kPods, "ns", "p")) ++ok;
    });
  for (auto& t : threads) t.join();
  CHECK(ok == kThreads * kEach);
  CHECK(rec.size() == kThreads * kEach);
  // Each thread holds at most one connection at a time.
  CHECK(client->transport().connections_opened() <= kThreads);
  CHECK(client->transport().idle_connections() <= kThreads);
}

TEST_CASE("REST: a large list through HTTP and the JSON parser (measurement)") {
#ifdef NDEBUG
  constexpr int kCount = 20000;
#else
  constexpr int kCount = 2000;  // sanitizer builds: the figure is meaningless there, keep it quick
#endif
  std::string body = R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"99"},"items":[)";
  for (int i = 0; i < kCount; ++i) {
    if (i) body += ',';
    body += R"({"metadata":{"name":"job-worker-)" + std::to_string(i) +
            R"(","namespace":"default","uid":"0b5c9a3e-8f1d-4d8e-9f8a-)" + std::to_string(100000000 + i) +
            R"(","resourceVersion":")" + std::to_string(i) +
            R"(","labels":{"training.kubeflow.org/job-name":"job","training.kubeflow.org/replica-type":"worker","training.kubeflow.org/replica-index":")" +
            std::to_string(i) +
            R"("},"ownerReferences":[{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","name":"job","uid":"1c2d","controller":true}]},"spec":{"containers":[{"name":"pytorch","image":"docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727","command":["python3","/opt/mnist.py"],"env":[{"name":"MASTER_PORT","value":"23456"},{"name":"MASTER_ADDR","value":"job-master-0"},{"name":"WORLD_SIZE","value":"100"},{"name":"RANK","value":"1"}],"ports":[{"name":"pytorchjob-port","containerPort":23456,"protocol":"TCP"}],"resources":{"limits":{"cpu":"1","memory":"2Gi"}}}],"restartPolicy":"OnFailure"},"status":{"phase":"Running","containerStatuses":[{"name":"pytorch","ready":true,"restartCount":0,"state":{"running":{"startedAt":"2024-01-01T00:00:00Z"}}}]}})";
  }
  body += "]}";
  Recorder rec;
  TestServer server(serve_all(rec, [&body](Session& s, const RawRequest&, size_t) { s.respond(200, body); }));
  auto cfg = http_config(server.port());
  cfg.timeout = 60s;
  auto client = make_client(cfg);
  const auto start = SteadyClock::now();
  const std::clock_t cpu_start = std::clock();
  auto list = client->list(kPods, "", {});
  const double secs = std::chrono::duration<double>(SteadyClock::now() - start).count();
  const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  REQUIRE(list);
  const json::Value* items = json::find(list->root(), "/items");
  REQUIRE(items);
  CHECK(items->Size() == kCount);
  // CPU time (client and server threads of this process) is the stable figure on a shared machine.
  WARN("list of " << kCount << " pods, " << body.size() / 1e6 << " MB over HTTP + parse: wall " << secs
                  << " s, cpu " << cpu << " s = " << kCount / cpu << " objects/cpu-s");
}

// ---- pipelined creates (RestClient::create_all over Transport::send_pipelined) ---------------

namespace {

const GroupVersionResource kEventsResource{"", "v1", "events"};

std::vector<json::Document> named_events(size_t n) {
  std::vector<json::Document> out;
  for (size_t i = 0; i < n; ++i) {
    auto d = json::Document::parse(fmt::format(
        R"({{"apiVersion":"v1","kind":"Event","metadata":{{"name":"job-{}.00000000000000{:02}","namespace":"ns"}},"reason":"R"}})",
        i, i));
    REQUIRE(d);
    out.push_back(std::move(*d));
  }
  return out;
}

std::string name_in(const std::string& body) {
  auto d = json::Document::parse(body);
  return d ? std::string(json::get_string(d->root(), "/metadata/name").value_or("")) : std::string();
}

// Reads `n` requests off the session before it answers any of them (a client that waited for
// each response before sending the next request would wait here until its timeout).
std::vector<RawRequest> read_burst(Session& s, Recorder& rec, size_t n) {
  std::vector<RawRequest> burst;
  while (burst.size() < n) {
    auto r = s.read_request();
    if (!r) break;
    rec.add(*r);
    burst.push_back(std::move(*r));
  }
  return burst;
}

}  // namespace

TEST_CASE("transport: a pipelined burst is sent before any response is read, the responses come back in order") {
  constexpr size_t kBurst = 5;
  Recorder rec;
  TestServer server([&](Session& s) {
    auto burst = read_burst(s, rec, kBurst);
    if (burst.size() < kBurst) return;
    // Echoes each object as it was created, in the order the requests came.
    for (const auto& r : burst) s.respond(201, r.body);
    while (auto r = s.read_request()) {
      rec.add(*r);
      s.respond(201, r->body);
    }
  });
  RestConfig cfg = http_config(server.port());
  auto client = make_client(cfg, nullptr, 0);
  auto objects = named_events(kBurst);
  auto outcomes = client->create_all(kEventsResource, objects);
  REQUIRE(outcomes.size() == kBurst);
  for (size_t i = 0; i < kBurst; ++i) {
    INFO("create " << i);
    REQUIRE(outcomes[i].result);
    CHECK_FALSE(outcomes[i].resent);
    CHECK(json::get_string(outcomes[i].result->root(), "/metadata/name") ==
          json::get_string(objects[i].root(), "/metadata/name"));
    CHECK(rec.at(i).method == "POST");
    CHECK(rec.at(i).target == "/api/v1/namespaces/ns/events");
    CHECK(name_in(rec.at(i).body) == json::get_string(objects[i].root(), "/metadata/name"));
  }
  // The connection stays in the pool for what comes next.
  REQUIRE(client->create(kEventsResource, "ns", objects[0].root()));
  CHECK(server.connections() == 1);

  // The transport alone: a pipelined exchange of other verbs, answered in order as well.
  std::vector<http::Request> reqs(3);
  for (size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].method = i == 1 ? "PUT" : "POST";
    reqs[i].target = fmt::format("/api/v1/namespaces/ns/events/e{}", i);
    reqs[i].body = fmt::format(R"({{"metadata":{{"name":"e{}"}}}})", i);
  }
  auto raw = client->transport().send_pipelined(reqs);
  REQUIRE(raw.size() == 3);
  for (size_t i = 0; i < raw.size(); ++i) {
    INFO("request " << i);
    REQUIRE(raw[i]);
    CHECK(raw[i]->body == reqs[i].body);
  }
  CHECK(rec.at(kBurst + 2).method == "PUT");
  CHECK(server.connections() == 1);
}

TEST_CASE("transport: answers that come one by one are slept for once per exchange, not waited for one each") {
  constexpr size_t kBurst = 8;
  constexpr int kExchanges = 6;
  Recorder rec;
  // Like an API server: each answer written as soon as its request is handled, 1 ms apart.
  TestServer server(serve_all(rec, [](Session& s, const RawRequest& r, size_t) {
    std::this_thread::sleep_for(1ms);
    s.respond(201, r.body);
  }));
  auto client = make_client(http_config(server.port()), nullptr, 0);
  std::vector<long> sleeps;
  for (int x = 0; x < kExchanges; ++x) {
    auto objects = named_events(kBurst);
    const long before = thread_sleeps();
    auto outcomes = client->create_all(kEventsResource, objects);
    sleeps.push_back(thread_sleeps() - before);
    REQUIRE(outcomes.size() == kBurst);
    for (size_t i = 0; i < kBurst; ++i) {
      INFO("exchange " << x << ", create " << i);
      REQUIRE(outcomes[i].result);
      CHECK(json::get_string(outcomes[i].result->root(), "/metadata/name") ==
            json::get_string(objects[i].root(), "/metadata/name"));
    }
  }
  CHECK(server.connections() == 1);
  // The first exchange learns the server's pace, waiting for each answer on the socket (one sleep
  // per answer); the later ones sleep through it and read the answers together. A reader that
  // waited on the socket for each would sleep about kBurst times in every exchange.
  long later = 0;
  for (int x = 1; x < kExchanges; ++x) later += sleeps[x];
  INFO("sleeps per exchange: " << fmt::format("{}", fmt::join(sleeps, ", ")));
  CHECK(sleeps[0] >= static_cast<long>(kBurst) / 2);
  CHECK(later <= static_cast<long>(kBurst) * (kExchanges - 1) / 2);
}

TEST_CASE("transport: a pipelined burst waits once for all its tokens: a stop during that wait cancels the whole burst") {
  Recorder rec;
  TestServer server(serve_all(rec, [](Session& s, const RawRequest& r, size_t) { s.respond(201, r.body); }));
  RestConfig cfg = http_config(server.port());
  cfg.qps = 0.001;  // one token, then one per 1000 s
  cfg.burst = 1;
  std::stop_source stop;
  RestClientOptions o;
  o.stop = stop.get_token();
  o.stop_ends_rate_limit_wait = true;
  auto client = RestClient::create(cfg, o);
  REQUIRE(client);
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.request_stop();
  });
  // Token by token, the first create had its token at once and would have gone out with the burst.
  auto outcomes = (*client)->create_all(kEventsResource, named_events(3));
  stopper.join();
  REQUIRE(outcomes.size() == 3);
  for (const auto& o : outcomes) {
    REQUIRE_FALSE(o.result);
    CHECK(o.result.error().reason == R::Cancelled);
  }
  CHECK(rec.size() == 0);
}

TEST_CASE("transport: a pipelined burst the server ends after k responses: the rest are sent again and all succeed") {
  constexpr size_t kBurst = 5;
  constexpr size_t kAnswered = 2;
  const bool says_close = GENERATE(true, false);  // Connection: close, or the connection just breaks
  INFO((says_close ? "Connection: close" : "connection broken"));
  Recorder rec;
  std::atomic<int> connection{0};
  TestServer server([&](Session& s) {
    if (connection++ == 0) {
      auto burst = read_burst(s, rec, kBurst);
      for (size_t i = 0; i < kAnswered && i < burst.size(); ++i) {
        std::vector<std::string> headers;
        if (says_close && i + 1 == kAnswered) headers.push_back("Connection: close");
        s.respond(201, burst[i].body, headers);
      }
      return;  // closed without answering the rest
    }
    while (auto r = s.read_request()) {
      rec.add(*r);
      s.respond(201, r->body);
    }
  });
  auto client = make_client(http_config(server.port()), nullptr, 0);
  auto objects = named_events(kBurst);
  auto outcomes = client->create_all(kEventsResource, objects);
  REQUIRE(outcomes.size() == kBurst);
  for (size_t i = 0; i < kBurst; ++i) {
    INFO("create " << i);
    CHECK(outcomes[i].result);
    CHECK(outcomes[i].resent == (i >= kAnswered));
  }
  // The burst once, then each unanswered create alone, in order, on a fresh connection.
  REQUIRE(rec.size() == kBurst + (kBurst - kAnswered));
  for (size_t i = kAnswered; i < kBurst; ++i)
    CHECK(name_in(rec.at(kBurst + i - kAnswered).body) == json::get_string(objects[i].root(), "/metadata/name"));
  CHECK(server.connections() == 2);
}

TEST_CASE("events: a create sent again after its exchange broke, answered 409 AlreadyExists, counts as written once") {
  constexpr size_t kBurst = 4;
  constexpr size_t kAnswered = 1;
  Recorder rec;
  std::mutex stored_mu;
  std::set<std::string> stored;  // Event names the "API server" holds
  auto store = [&](const RawRequest& r) {
    std::lock_guard lock(stored_mu);
    return stored.insert(name_in(r.body)).second;
  };
  std::atomic<int> connection{0};
  TestServer server([&](Session& s) {
    if (connection++ == 0) {
      // Stores the whole burst, answers the first create only and breaks the connection.
      auto burst = read_burst(s, rec, kBurst);
      for (const auto& r : burst) store(r);
      for (size_t i = 0; i < kAnswered && i < burst.size(); ++i) s.respond(201, "{}");
      return;
    }
    while (auto r = s.read_request()) {
      rec.add(*r);
      if (r->method == "PATCH") s.respond(200, "{}");
      else if (store(*r)) s.respond(201, "{}");
      else
        s.respond(409, R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"AlreadyExists","code":409,)"
                       R"("message":"events \")" + name_in(r->body) + R"(\" already exists"})");
    }
  });
  RestConfig cfg = http_config(server.port());
  cfg.qps = 1000;  // a budget that holds the burst: the recorder writes it at once
  cfg.burst = 30;
  auto client = make_client(cfg, nullptr, 0);
  RealClock clock;
  EventRecorderOptions o;
  o.component = "pytorchjob-controller";
  EventRecorder recorder(*client, clock, o);
  auto job = [](size_t i) {
    auto d = json::Document::parse(fmt::format(
        R"({{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{{"name":"j{}","namespace":"ns","uid":"u{}"}}}})", i, i));
    REQUIRE(d);
    return std::move(*d);
  };
  for (size_t i = 0; i < kBurst; ++i) recorder.event(job(i).root(), "Normal", "SuccessfulCreatePod", "m");
  recorder.start();
  REQUIRE(recorder.flush(10s));
  auto stats = recorder.stats();
  CHECK(stats.created == kBurst);
  CHECK(stats.failed == 0);
  CHECK(stats.lost() == 0);
  {
    std::lock_guard lock(stored_mu);
    CHECK(stored.size() == kBurst);
  }
  // The burst, then the unanswered creates again, each answered 409.
  REQUIRE(rec.size() == kBurst + (kBurst - kAnswered));
  // Written means known: the same event again updates that Event.
  recorder.event(job(kBurst - 1).root(), "Normal", "SuccessfulCreatePod", "m");
  REQUIRE(recorder.flush(10s));
  REQUIRE(rec.size() == kBurst + (kBurst - kAnswered) + 1);
  const RawRequest last = rec.at(rec.size() - 1);
  CHECK(last.method == "PATCH");
  CHECK(last.target == "/api/v1/namespaces/ns/events/" + name_in(rec.at(kBurst - 1).body));
  CHECK(recorder.stats().patched == 1);
  recorder.stop();
}

// ---- what reading an answer costs --------------------------------------------------------------

namespace {

// `n` requests for the transport alone, each with a body of about `size` bytes.
std::vector<http::Request> post_requests(size_t n, size_t size) {
  std::vector<http::Request> reqs(n);
  for (size_t i = 0; i < n; ++i) {
    reqs[i].method = "POST";
    reqs[i].target = "/api/v1/namespaces/ns/pods";
    reqs[i].body = fmt::format(R"({{"metadata":{{"name":"p{}"}},"spec":"{}"}})", i, std::string(size, 'x'));
  }
  return reqs;
}

// The answer to `r` as the test server writes it, for answers written together.
std::string answer_to(const RawRequest& r) {
  return fmt::format("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}", r.body.size(),
                     r.body);
}

}  // namespace

TEST_CASE("transport: an answer costs one wait for the socket, a burst's answers received together cost one wait and one read") {
  constexpr size_t kBurst = 8;
  Recorder rec;
  // Single requests answered one by one; a burst of kBurst answered in one write, as an API
  // server's answers often arrive together.
  TestServer server([&](Session& s) {
    while (auto r = s.read_request()) {
      rec.add(*r);
      if (r->method != "PUT") {
        std::this_thread::sleep_for(2ms);  // the answer comes after the client started waiting
        s.respond(200, r->body);
        continue;
      }
      std::string answers = answer_to(*r);
      for (size_t i = 1; i < kBurst; ++i) {
        auto next = s.read_request();
        if (!next) return;
        rec.add(*next);
        answers += answer_to(*next);
      }
      s.write(answers);
    }
  });
  auto client = make_client(http_config(server.port()), nullptr, 0);
  Transport& t = client->transport();

  // Single requests on the pooled connection: the write goes out at once, the answer costs the
  // one wait for it (each run of the io_context is an epoll_wait, even for a completion that is
  // ready).
  auto single = post_requests(1, 100);
  REQUIRE(t.send(single[0]));
  constexpr int kSingles = 20;
  const auto before = t.io_counts();
  for (int i = 0; i < kSingles; ++i) {
    auto r = t.send(single[0]);
    REQUIRE(r);
    CHECK(r->body == single[0].body);
  }
  const auto singles = t.io_counts();
  INFO("io runs for " << kSingles << " single requests: " << singles.io_runs - before.io_runs);
  // One per request (two each before). A client preempted between its write and its read finds
  // the answer already there, and the socket's leftover readiness costs the next request one
  // empty run more: a loaded machine sees a few of those.
  CHECK(singles.io_runs - before.io_runs <= kSingles * 3 / 2);

  // A burst of answers of ~2.5 kB (a pod's create answer) written together: one wait, then one
  // read takes all of them (the connection has room for them) and they are parsed from there.
  auto burst = post_requests(kBurst, 2500);
  for (auto& r : burst) r.method = "PUT";
  auto fresh = make_client(http_config(server.port()), nullptr, 0);
  Transport& ft = fresh->transport();
  const auto start = ft.io_counts();
  auto answers = ft.send_pipelined(burst);
  const auto after = ft.io_counts();
  REQUIRE(answers.size() == kBurst);
  for (size_t i = 0; i < kBurst; ++i) {
    INFO("answer " << i);
    REQUIRE(answers[i]);
    CHECK(answers[i]->body == burst[i].body);
  }
  INFO("io runs " << after.io_runs - start.io_runs << ", socket reads " << after.socket_reads - start.socket_reads
                  << " for a burst of " << kBurst << " answers");
  // The connect's own runs, the wait for the answers (twice if they came in two segments, or
  // three times on a loaded machine); 10 to 16 before.
  CHECK(after.io_runs - start.io_runs <= 4);
  // A read that finds nothing before the wait, then the answers (in at most three reads); 42
  // without the connection's read room.
  CHECK(after.socket_reads - start.socket_reads <= 4);
}

TEST_CASE("transport: answers split anywhere, chunked, ended by the connection's close, or over TLS read whole") {
  const std::string body = std::string(3000, 'a') + "end";
  // Odd places for the answers to be cut: in the status line, a header, the body.
  auto write_split = [](Session& s, const std::string& data) {
    for (size_t at = 0; at < data.size();) {
      const size_t n = std::min<size_t>(data.size() - at, at % 3 == 0 ? 7 : 1300);
      s.write(data.substr(at, n));
      std::this_thread::sleep_for(1ms);
      at += n;
    }
  };
  Recorder rec;
  TestServer server([&](Session& s) {
    while (auto r = s.read_request()) {
      rec.add(*r);
      if (r->target.ends_with("/split")) {
        write_split(s, answer_to(*r));
      } else if (r->target.ends_with("/chunked")) {
        s.start_chunked();
        s.chunk(r->body.substr(0, 10));
        std::this_thread::sleep_for(1ms);
        s.chunk(r->body.substr(10));
        s.end_chunks();
      } else if (r->method == "HEAD") {
        s.write(fmt::format("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", r->body.size()));
      } else if (r->target.ends_with("/until-close")) {
        s.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + r->body.substr(0, 100));
        std::this_thread::sleep_for(1ms);
        s.write(r->body.substr(100));
        return;  // the server closes the connection: the end of the body
      } else {
        s.respond(201, r->body);
      }
    }
  });
  auto client = make_client(http_config(server.port()), nullptr, 0);
  Transport& t = client->transport();
  for (const char* kind : {"split", "chunked", "until-close", "split"}) {
    INFO(kind);
    http::Request req{"POST", fmt::format("/api/v1/namespaces/ns/pods/{}", kind), {}, body};
    auto r = t.send(req);
    REQUIRE(r);
    CHECK(r->body == body);
  }
  // A burst whose answers are cut at odd places, and one that ends with a HEAD's (no body).
  auto reqs = post_requests(3, 2000);
  reqs[1].target += "/split";
  reqs[2].method = "HEAD";
  // Both answers with bodies whole, the HEAD's empty.
  auto check_burst = [&](const auto& got, std::string_view over) {
    REQUIRE(got.size() == 3);
    for (size_t i = 0; i < 2; ++i) {
      INFO(over << " answer " << i);
      REQUIRE(got[i]);
      CHECK(got[i]->body == reqs[i].body);
    }
    REQUIRE(got[2]);
    CHECK(got[2]->body.empty());
  };
  check_burst(t.send_pipelined(reqs), "HTTP");

  // The same over TLS.
  const KeyCert cert = self_signed("apiserver", "IP:127.0.0.1");
  ServerTls tls(cert);
  Recorder tls_rec;
  TestServer tls_server(serve_all(tls_rec, [&](Session& s, const RawRequest& r, size_t) {
    if (r.target.ends_with("/split")) write_split(s, answer_to(r));
    else if (r.method == "HEAD") s.write(fmt::format("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", r.body.size()));
    else s.respond(201, r.body);
  }), tls.ctx);
  RestConfig cfg = http_config(tls_server.port());
  cfg.scheme = "https";
  cfg.ca_pem = cert.cert_pem;
  auto tls_client = make_client(cfg, nullptr, 0);
  for (int round = 0; round < 2; ++round) {
    http::Request req{"POST", "/api/v1/namespaces/ns/pods/split", {}, body};
    auto r = tls_client->transport().send(req);
    REQUIRE(r);
    CHECK(r->body == body);
    check_burst(tls_client->transport().send_pipelined(reqs), "TLS");
  }
  CHECK(tls_server.connections() == 1);
}
