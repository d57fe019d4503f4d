// FaultLog: each failure says what failed and why (TLS, credentials, RBAC, connection, a missing
// CRD and how to install it), expected outcomes are not faults, a recurring cause is one line per
// interval with a repeat count, and the reads that fail now are kept per source for /readyz.
#include <catch2/catch.hpp>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include <fmt/format.h>

#include "core/kube/clock.h"
#include "core/kube/fake_client.h"
#include "core/kube/fault_log.h"
#include "tests/support/forwarding_client.h"

using namespace unitrain::kube;
using namespace std::chrono_literals;

namespace {

const GroupVersionResource kPodsResource{"", "v1", "pods"};
const GroupVersionResource kJobs{"kubeflow.org", "v1", "pytorchjobs"};
const ApiServerAccess kAccess{"https://10.0.0.1:6443", "the bearer token in /var/run/token"};

ApiError error(ApiError::Reason r, int code, std::string message) {
  ApiError e;
  e.reason = r;
  e.code = code;
  e.message = std::move(message);
  return e;
}

// Captures what the default logger writes while it lives.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_));
    logger->set_pattern("%l %v");
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::istringstream in(out_.str());
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace

TEST_CASE("calls are described by verb, resource, namespace and name") {
  CHECK(describe({"list", kPodsResource, ""}) == "list pods in all namespaces");
  CHECK(describe({"watch", kJobs, "team"}) == "watch pytorchjobs.kubeflow.org in namespace team");
  CHECK(describe({"create", kPodsResource, "team"}) == "create pods in namespace team");
  CHECK(describe({"update", kJobs, "team", "pt", "status"}) == "update pytorchjobs.kubeflow.org team/pt (status)");
}

TEST_CASE("a TLS failure names the server, and one cause whatever request met it") {
  const std::string tls =
      "TLS handshake with 10.0.0.1:6443: certificate verification failed: self-signed certificate in certificate chain "
      "(verifying as \"10.0.0.1\"); the server's certificate is \"CN=kube-apiserver\", issued by \"CN=other-ca\"; "
      "expected a certificate issued by the CA \"CN=cluster-ca\"";
  auto f = classify({"list", kPodsResource, ""}, error(ApiError::Reason::Transport, 0, tls), kAccess, nullptr);
  REQUIRE(f);
  CHECK_THAT(f->cause, Catch::StartsWith("request to the API server at https://10.0.0.1:6443 failed: TLS handshake"));
  CHECK_THAT(f->cause, Catch::Contains("\"CN=kube-apiserver\", issued by \"CN=other-ca\""));
  CHECK_THAT(f->cause, Catch::Contains("expected a certificate issued by the CA \"CN=cluster-ca\""));
  // A transport message naming its request has the same key as the bare one.
  auto timeout1 = classify_connection("GET /api/v1/pods: no complete response within 30000ms", kAccess);
  auto timeout2 = classify_connection("PUT /api/v1/namespaces/x/pods/y: no complete response within 30000ms", kAccess);
  CHECK(timeout1.key == timeout2.key);
  CHECK(classify_connection("connecting to 10.0.0.1:6443: Connection refused", kAccess).cause ==
        "request to the API server at https://10.0.0.1:6443 failed: connecting to 10.0.0.1:6443: Connection refused");
}

TEST_CASE("401 names the credentials, 403 the verb and resource") {
  auto unauthorized = classify({"watch", kJobs, ""}, error(ApiError::Reason::Unauthorized, 401, "Unauthorized"), kAccess, nullptr);
  REQUIRE(unauthorized);
  CHECK(unauthorized->cause ==
        "the API server at https://10.0.0.1:6443 rejected this client's credentials (the bearer token in "
        "/var/run/token): Unauthorized (401): Unauthorized");
  auto forbidden = classify({"create", kPodsResource, "team"},
                            error(ApiError::Reason::Forbidden, 403,
                                  "pods is forbidden: User \"x\" cannot create resource \"pods\" in the namespace \"team\""),
                            kAccess, nullptr);
  REQUIRE(forbidden);
  CHECK_THAT(forbidden->cause, Catch::StartsWith("create pods is forbidden for the bearer token in /var/run/token: Forbidden (403)"));
  auto other_verb = classify({"delete", kPodsResource, "team", "p"}, error(ApiError::Reason::Forbidden, 403, "no"), kAccess, nullptr);
  CHECK(other_verb->key != forbidden->key);
}

TEST_CASE("a 404 on a read means the resource is not served, a required one says how to install it") {
  const RequiredResource crd{"the CustomResourceDefinition pytorchjobs.kubeflow.org",
                             "install it with: kubectl apply --server-side -f manifests/crds/kubeflow.org_pytorchjobs.yaml"};
  auto required = classify({"list", kJobs, ""}, error(ApiError::Reason::NotFound, 404, "the server could not find the requested resource"),
                           kAccess, &crd);
  REQUIRE(required);
  CHECK(required->cause ==
        "the CustomResourceDefinition pytorchjobs.kubeflow.org is not installed (the API server does not serve "
        "pytorchjobs.kubeflow.org in kubeflow.org/v1); install it with: kubectl apply --server-side -f "
        "manifests/crds/kubeflow.org_pytorchjobs.yaml");
  auto unknown = classify({"watch", kJobs, ""}, error(ApiError::Reason::NotFound, 404, ""), kAccess, nullptr);
  REQUIRE(unknown);
  CHECK(unknown->cause ==
        "the API server does not serve pytorchjobs.kubeflow.org in kubeflow.org/v1 (is its CustomResourceDefinition installed?)");
}

TEST_CASE("outcomes callers handle are not faults") {
  CHECK_FALSE(classify({"update", kJobs, "ns", "pt", "status"}, error(ApiError::Reason::Conflict, 409, "stale"), kAccess, nullptr));
  CHECK_FALSE(classify({"create", kPodsResource, "ns"}, error(ApiError::Reason::AlreadyExists, 409, "exists"), kAccess, nullptr));
  CHECK_FALSE(classify({"delete", kPodsResource, "ns", "p"}, error(ApiError::Reason::NotFound, 404, "gone"), kAccess, nullptr));
  CHECK_FALSE(classify({"watch", kPodsResource, ""}, error(ApiError::Reason::Gone, 410, "too old"), kAccess, nullptr));
  CHECK_FALSE(classify({"list", kPodsResource, ""}, error(ApiError::Reason::Cancelled, 0, "stopping"), kAccess, nullptr));
  // A create that meets NotFound is a missing namespace: a fault.
  CHECK(classify({"create", kPodsResource, "ns"}, error(ApiError::Reason::NotFound, 404, "namespaces \"ns\" not found"), kAccess, nullptr));
}

TEST_CASE("a persistent fault is one line per interval with a repeat count, and /readyz sees its cause") {
  CapturedLog log;
  FakeClock clock;
  FaultLog faults(clock, kAccess, 30s);
  faults.require(kJobs, {"the CustomResourceDefinition pytorchjobs.kubeflow.org", "install it with: kubectl apply -k manifests/crds"});
  const auto not_found = error(ApiError::Reason::NotFound, 404, "the server could not find the requested resource");
  for (int i = 0; i < 10; ++i) {
    faults.failed("pytorchjob-controller", {{"controller", "pytorchjob-controller"}}, {"list", kJobs, ""}, not_found);
    clock.advance(2s);
  }
  REQUIRE(log.lines().size() == 1);
  CHECK_THAT(log.lines()[0], Catch::StartsWith("error list pytorchjobs.kubeflow.org in all namespaces failed: the "
                                               "CustomResourceDefinition pytorchjobs.kubeflow.org is not installed"));
  CHECK_THAT(log.lines()[0], Catch::Contains("controller=pytorchjob-controller"));
  clock.advance(12s);
  faults.failed("pytorchjob-controller", {}, {"list", kJobs, ""}, not_found);
  REQUIRE(log.lines().size() == 2);
  CHECK_THAT(log.lines()[1], Catch::Contains("(repeated 9 times in the last 32s)"));

  auto causes = faults.causes("pytorchjob-controller");
  REQUIRE(causes.size() == 1);
  CHECK_THAT(causes[0], Catch::Contains("install it with: kubectl apply -k manifests/crds"));
  CHECK(faults.causes("tfjob-controller").empty());

  // The CRD appears: the recovery is said once, /readyz has nothing more to say, and the next
  // failure is reported at once again.
  faults.succeeded("pytorchjob-controller", {}, {"list", kJobs, ""});
  CHECK(faults.causes("pytorchjob-controller").empty());
  REQUIRE(log.lines().size() == 3);
  CHECK(log.lines()[2] == "info list pytorchjobs.kubeflow.org in all namespaces works again");
  faults.failed("pytorchjob-controller", {}, {"list", kJobs, ""}, not_found);
  CHECK(log.lines().size() == 4);
}

TEST_CASE("an unreachable server is every source's cause until a response arrives") {
  CapturedLog log;
  FakeClock clock;
  FaultLog faults(clock, kAccess, 30s);
  faults.connection_failed("connecting to 10.0.0.1:6443: Connection refused");
  faults.connection_failed("connecting to 10.0.0.1:6443: Connection refused");
  REQUIRE(log.lines().size() == 1);
  CHECK(log.lines()[0] ==
        "error request to the API server at https://10.0.0.1:6443 failed: connecting to 10.0.0.1:6443: Connection refused");
  CHECK(faults.causes("anyone") == std::vector<std::string>{
                                       "request to the API server at https://10.0.0.1:6443 failed: connecting to "
                                       "10.0.0.1:6443: Connection refused"});
  faults.connection_ok();
  CHECK(faults.causes("anyone").empty());
  REQUIRE(log.lines().size() == 2);
  CHECK(log.lines()[1] == "info the API server at https://10.0.0.1:6443 answers again");
}

TEST_CASE("the reporting client reports every call and passes results through") {
  CapturedLog log;
  FakeClock clock;
  FakeClient inner;
  FaultLog faults(clock, kAccess, 30s);
  ReportingClient client(inner, faults, "tfjob-controller", {{"controller", "tfjob-controller"}});
  inner.fail_next(FakeClient::Verb::List, error(ApiError::Reason::Forbidden, 403, "pods is forbidden"));
  auto listed = client.list(kPodsResource, "", {});
  REQUIRE_FALSE(listed);
  CHECK(listed.error().code == 403);
  REQUIRE(log.lines().size() == 1);
  CHECK_THAT(log.lines()[0], Catch::StartsWith("error list pods in all namespaces failed: list pods is forbidden"));
  CHECK(faults.causes("tfjob-controller").size() == 1);
  CHECK(client.list(kPodsResource, "", {}));
  CHECK(faults.causes("tfjob-controller").empty());
}

namespace {
// Counts create_all calls: the reporting client must pass a batch on whole (a RestClient sends it
// as one pipelined exchange), not split it into creates.
class BatchCountingClient final : public unitrain::testing::ForwardingClient {
 public:
  using ForwardingClient::ForwardingClient;
  std::vector<CreateOutcome> create_all(const GroupVersionResource& r, std::span<const unitrain::json::Document> objects,
                                        const WriteOptions& o = {}) override {
    ++batches;
    return inner_.create_all(r, objects, o);
  }
  int batches = 0;
};
}  // namespace

TEST_CASE("the reporting client passes a batch of creates on whole and reports each create") {
  CapturedLog log;
  FakeClock clock;
  FakeClient fake;
  BatchCountingClient inner(fake);
  FaultLog faults(clock, kAccess, 30s);
  ReportingClient client(inner, faults, "tfjob-controller", {{"controller", "tfjob-controller"}});
  const GroupVersionResource events{"", "v1", "events"};
  std::vector<unitrain::json::Document> objects;
  for (const char* ns : {"a", "b"}) {
    auto d = unitrain::json::Document::parse(fmt::format(R"({{"metadata":{{"name":"e","namespace":"{}"}}}})", ns));
    REQUIRE(d);
    objects.push_back(std::move(*d));
  }
  fake.fail_next(FakeClient::Verb::Create, error(ApiError::Reason::Forbidden, 403, "events is forbidden"));
  auto out = client.create_all(events, objects);
  CHECK(inner.batches == 1);
  REQUIRE(out.size() == 2);
  REQUIRE_FALSE(out[0].result);
  CHECK(out[0].result.error().code == 403);
  CHECK(out[1].result);
  REQUIRE(log.lines().size() == 1);
  CHECK_THAT(log.lines()[0], Catch::StartsWith("error create events in namespace a failed: "));
}
