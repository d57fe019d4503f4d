#include <catch2/catch.hpp>

#include "core/kube/rest_client.h"

using namespace unitrain::kube;
using namespace std::chrono_literals;
using R = ApiError::Reason;

TEST_CASE("URL building: core, grouped, cluster-scoped, subresources") {
  const GroupVersionResource pods{"", "v1", "pods"};
  const GroupVersionResource jobs{"kubeflow.org", "v1", "pytorchjobs"};
  const GroupVersionResource nodes{"", "v1", "nodes"};
  const GroupVersionResource namespaces{"", "v1", "namespaces"};
  const GroupVersionResource crds{"apiextensions.k8s.io", "v1", "customresourcedefinitions"};
  CHECK(resource_path(pods, "default") == "/api/v1/namespaces/default/pods");
  CHECK(resource_path(pods, "") == "/api/v1/pods");
  CHECK(resource_path(pods, "ns", "p-0") == "/api/v1/namespaces/ns/pods/p-0");
  CHECK(resource_path(pods, "ns", "p-0", "status") == "/api/v1/namespaces/ns/pods/p-0/status");
  CHECK(resource_path(jobs, "team", "j", "scale") == "/apis/kubeflow.org/v1/namespaces/team/pytorchjobs/j/scale");
  CHECK(resource_path(nodes, "", "n1") == "/api/v1/nodes/n1");
  CHECK(resource_path(namespaces, "", "kube-system") == "/api/v1/namespaces/kube-system");
  CHECK(resource_path(namespaces, "kube-system", "kube-system") == "/api/v1/namespaces/kube-system");
  CHECK(resource_path(crds, "", "pytorchjobs.kubeflow.org") ==
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/pytorchjobs.kubeflow.org");
  CHECK(resource_path(pods, "a b", "x/y") == "/api/v1/namespaces/a%20b/pods/x%2Fy");
}

TEST_CASE("URL building: list and watch query parameters") {
  ListOptions lo;
  CHECK(list_query(lo).empty());
  lo.label_selector = "training.kubeflow.org/job-name=j1,app in (a,b)";
  lo.field_selector = "status.phase!=Succeeded";
  lo.limit = 500;
  lo.continue_token = "eyJ2IjoxfQ==";
  lo.resource_version = "0";
  lo.resource_version_match = "NotOlderThan";
  CHECK(list_query(lo) ==
        "?labelSelector=training.kubeflow.org%2Fjob-name%3Dj1%2Capp%20in%20%28a%2Cb%29"
        "&fieldSelector=status.phase%21%3DSucceeded&limit=500&continue=eyJ2IjoxfQ%3D%3D"
        "&resourceVersion=0&resourceVersionMatch=NotOlderThan");
  WatchOptions wo;
  wo.resource_version = "12345";
  wo.timeout_seconds = 300;
  CHECK(watch_query(wo) == "?watch=true&resourceVersion=12345&allowWatchBookmarks=true&timeoutSeconds=300");
  wo.allow_bookmarks = false;
  wo.timeout_seconds.reset();
  wo.label_selector = "a=b";
  CHECK(watch_query(wo) == "?watch=true&labelSelector=a%3Db&resourceVersion=12345");
}

TEST_CASE("patch content types and DeleteOptions body") {
  CHECK(std::string(patch_content_type(PatchType::Merge)) == "application/merge-patch+json");
  CHECK(std::string(patch_content_type(PatchType::JSON)) == "application/json-patch+json");
  CHECK(std::string(patch_content_type(PatchType::Strategic)) == "application/strategic-merge-patch+json");
  CHECK(std::string(patch_content_type(PatchType::Apply)) == "application/apply-patch+yaml");
  CHECK(delete_options_body({}) == R"({"kind":"DeleteOptions","apiVersion":"v1"})");
  DeleteOptions d;
  d.propagation_policy = "Foreground";
  d.grace_period_seconds = 0;
  d.precondition_uid = "u-1";
  d.precondition_resource_version = "42";
  CHECK(delete_options_body(d) ==
        R"({"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0,)"
        R"("preconditions":{"uid":"u-1","resourceVersion":"42"},"propagationPolicy":"Foreground"})");
}

TEST_CASE("Status decoding: 404, 409, 422 with causes, 429, 500, 410 Expired") {
  auto nf = decode_status(404, R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
    "message":"pods \"p\" not found","reason":"NotFound","details":{"name":"p","kind":"pods"},"code":404})");
  CHECK(nf.reason == R::NotFound);
  CHECK(nf.code == 404);
  CHECK(nf.message == "pods \"p\" not found");
  CHECK_FALSE(nf.retryable());
  CHECK(nf.to_string() == "NotFound (404): pods \"p\" not found");

  auto conflict = decode_status(409, R"({"kind":"Status","status":"Failure","message":"Operation cannot be fulfilled on pytorchjobs.kubeflow.org \"j\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","code":409})");
  CHECK(conflict.reason == R::Conflict);
  CHECK_THAT(conflict.to_string(), Catch::StartsWith("Conflict (409): Operation cannot be fulfilled"));

  auto exists = decode_status(409, R"({"kind":"Status","status":"Failure","message":"pods \"p\" already exists","reason":"AlreadyExists","code":409})");
  CHECK(exists.reason == R::AlreadyExists);

  auto invalid = decode_status(422, R"({"kind":"Status","apiVersion":"v1","status":"Failure",
    "message":"PyTorchJob.kubeflow.org \"j\" is invalid: spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
    "reason":"Invalid","details":{"name":"j","group":"kubeflow.org","kind":"PyTorchJob","causes":[
      {"reason":"FieldValueInvalid","message":"Invalid value: -1: must be greater than or equal to 0","field":"spec.runPolicy.backoffLimit"},
      {"reason":"FieldValueRequired","message":"Required value","field":"spec.pytorchReplicaSpecs"}]},"code":422})");
  CHECK(invalid.reason == R::Invalid);
  REQUIRE(invalid.causes.size() == 2);
  CHECK(invalid.causes[0].type == "FieldValueInvalid");
  CHECK(invalid.causes[0].field == "spec.runPolicy.backoffLimit");
  CHECK(invalid.causes[1].message == "Required value");
  CHECK_THAT(invalid.to_string(), Catch::Contains("spec.pytorchReplicaSpecs: Required value"));

  auto busy = decode_status(429, R"({"kind":"Status","status":"Failure","message":"too many requests","reason":"TooManyRequests","details":{"retryAfterSeconds":3},"code":429})");
  CHECK(busy.reason == R::TooManyRequests);
  REQUIRE(busy.retry_after);
  CHECK(*busy.retry_after == 3s);
  CHECK(busy.retryable());
  auto busy_header = decode_status(429, R"({"kind":"Status","reason":"TooManyRequests","details":{"retryAfterSeconds":3}})", "7");
  CHECK(*busy_header.retry_after == 7s);

  auto internal = decode_status(500, R"({"kind":"Status","status":"Failure","message":"etcdserver: request timed out","reason":"InternalError","details":{"causes":[{"message":"etcdserver: request timed out"}]},"code":500})");
  CHECK(internal.reason == R::InternalError);
  CHECK(internal.retryable());

  auto expired = decode_status(410, R"({"kind":"Status","status":"Failure","message":"The provided continue parameter is too old","reason":"Expired","code":410})");
  CHECK(expired.reason == R::Expired);
  auto gone = decode_status(410, R"j({"kind":"Status","status":"Failure","message":"too old resource version: 1 (2)","code":410})j");
  CHECK(gone.reason == R::Gone);  // no reason in the body: from the code, as client-go does

  CHECK_FALSE(decode_status(501, R"({"kind":"Status","code":501})").retryable());
  CHECK(decode_status(504, R"({"kind":"Status","reason":"Timeout"})").reason == R::Timeout);
  CHECK(decode_status(403, R"({"kind":"Status","reason":"Forbidden","message":"no"})").reason == R::Forbidden);
  CHECK(decode_status(401, R"({"kind":"Status","message":"Unauthorized","reason":"Unauthorized"})").reason == R::Unauthorized);
}

TEST_CASE("Status decoding: bodies that are not a Status never crash") {
  auto html = decode_status(503, "<html><body>Service Unavailable</body></html>");
  CHECK(html.reason == R::ServiceUnavailable);
  CHECK_THAT(html.message, Catch::Contains("body is not JSON"));
  CHECK_THAT(html.message, Catch::Contains("Service Unavailable"));
  CHECK(html.retryable());

  auto odd = decode_status(418, "{\"kind\":\"Stat");
  CHECK(odd.reason == R::BadResponse);
  CHECK_THAT(odd.message, Catch::Contains("HTTP 418"));
  CHECK_THAT(odd.message, Catch::Contains("not JSON"));

  auto empty = decode_status(404, "");
  CHECK(empty.reason == R::NotFound);
  CHECK_THAT(empty.message, Catch::Contains("empty body"));

  auto array = decode_status(400, "[1,2]");
  CHECK(array.reason == R::BadRequest);
  CHECK_THAT(array.message, Catch::Contains("not a metav1.Status"));

  auto wrong_types = decode_status(422, R"({"kind":"Status","reason":7,"message":[],"details":{"causes":[1,{"field":2}]}})");
  CHECK(wrong_types.reason == R::Invalid);
  CHECK(wrong_types.causes.size() == 1);

  std::string binary("\x00\xff\x01{", 4);
  CHECK(decode_status(500, binary).reason == R::InternalError);
}

TEST_CASE("retry policy follows client-go") {
  RetryPolicy p;
  p.base_backoff = 100ms;
  p.max_backoff = 1s;
  p.max_retries = 5;
  AttemptOutcome tmr{429, std::nullopt, nullptr};
  CHECK(retry_delay(p, "POST", 0, tmr) == 100ms);
  CHECK(retry_delay(p, "POST", 3, tmr) == 800ms);
  CHECK(retry_delay(p, "POST", 4, tmr) == 1000ms);
  CHECK_FALSE(retry_delay(p, "POST", 5, tmr));
  AttemptOutcome tmr_after{429, 2s, nullptr};
  CHECK(retry_delay(p, "PATCH", 0, tmr_after) == 2000ms);
  AttemptOutcome long_after{429, 3600s, nullptr};
  CHECK(retry_delay(p, "GET", 0, long_after) == 60000ms);  // clamped

  AttemptOutcome s500{500, std::nullopt, nullptr};
  CHECK(retry_delay(p, "GET", 0, s500) == 100ms);
  CHECK_FALSE(retry_delay(p, "POST", 0, s500));
  CHECK_FALSE(retry_delay(p, "PUT", 0, s500));
  AttemptOutcome s503_after{503, 1s, nullptr};
  CHECK(retry_delay(p, "POST", 0, s503_after) == 1000ms);
  CHECK_FALSE(retry_delay(p, "GET", 0, AttemptOutcome{501, std::nullopt, nullptr}));
  CHECK_FALSE(retry_delay(p, "GET", 0, AttemptOutcome{409, std::nullopt, nullptr}));
  CHECK_FALSE(retry_delay(p, "GET", 0, AttemptOutcome{404, 1s, nullptr}));

  using K = http::TransportError::Kind;
  http::TransportError refused{K::Connect, "connection refused", false};
  http::TransportError lost{K::ConnectionLost, "reset", true};
  http::TransportError timeout{K::Timeout, "timed out", true};
  http::TransportError tls{K::TlsVerify, "certificate verify failed", false};
  CHECK(retry_delay(p, "POST", 0, AttemptOutcome{0, std::nullopt, &refused}) == 100ms);
  CHECK(retry_delay(p, "GET", 1, AttemptOutcome{0, std::nullopt, &lost}) == 200ms);
  CHECK_FALSE(retry_delay(p, "POST", 0, AttemptOutcome{0, std::nullopt, &lost}));
  CHECK_FALSE(retry_delay(p, "DELETE", 0, AttemptOutcome{0, std::nullopt, &timeout}));
  CHECK(retry_delay(p, "GET", 0, AttemptOutcome{0, std::nullopt, &timeout}));
  CHECK_FALSE(retry_delay(p, "GET", 0, AttemptOutcome{0, std::nullopt, &tls}));
}

TEST_CASE("Retry-After header parsing") {
  CHECK(http::parse_retry_after("5") == std::optional<std::chrono::seconds>(5s));
  CHECK(http::parse_retry_after(" 12 ") == std::optional<std::chrono::seconds>(12s));
  CHECK_FALSE(http::parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"));
  CHECK_FALSE(http::parse_retry_after("-1"));
  CHECK_FALSE(http::parse_retry_after(""));
}

TEST_CASE("ApiError retryable and to_string") {
  ApiError t;
  t.reason = R::Transport;
  t.message = "connecting to 1.2.3.4:443: Connection refused";
  CHECK(t.retryable());
  CHECK(t.to_string() == "Transport: connecting to 1.2.3.4:443: Connection refused");
  ApiError c;
  c.reason = R::Cancelled;
  CHECK_FALSE(c.retryable());
  ApiError forbidden;
  forbidden.reason = R::Forbidden;
  forbidden.code = 403;
  CHECK_FALSE(forbidden.retryable());
}
