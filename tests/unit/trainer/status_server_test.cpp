// The status server's pure parts: its route, the request body as it is decoded, the TokenReview
// answer's checks (audience, namespace), the metav1 Status of its errors.
#include <catch2/catch.hpp>

#include <string>

#include <fmt/format.h>

#include "frameworks/trainer/status_server.h"
#include "tests/unit/trainer/fixtures.h"

namespace json = unitrain::json;
namespace tr = unitrain::frameworks::trainer;
using unitrain::testing::yaml;

TEST_CASE("status server: the one route, anything else is not found") {
  auto route = tr::status_route("/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/demo/status");
  REQUIRE(route);
  CHECK(route->namespace_name == "ns");
  CHECK(route->name == "demo");
  for (const char* path : {"/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/demo",
                           "/apis/trainer.kubeflow.org/v1alpha1/namespaces//trainjobs/demo/status",
                           "/apis/trainer.kubeflow.org/v1/namespaces/ns/trainjobs/demo/status",
                           "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/demo/status/x", "/", ""}) {
    INFO(path);
    CHECK_FALSE(tr::status_route(path));
  }
}

TEST_CASE("status server: the body keeps upstream's fields of upstream's types, at most 64 KiB") {
  auto ok = tr::parse_status_request(
      R"({"trainerStatus":{"progressPercentage":5,"estimatedRemainingSeconds":7,"metrics":[{"name":"loss","value":"1.5","extra":1}],)"
      R"("lastUpdatedTime":"2026-12-01T10:00:00Z","unknown":true},"other":1})");
  REQUIRE(ok);
  CHECK(json::dump(ok->root()) ==
        R"({"trainerStatus":{"progressPercentage":5,"estimatedRemainingSeconds":7,"metrics":[{"name":"loss","value":"1.5"}],"lastUpdatedTime":"2026-12-01T10:00:00Z"}})");
  auto none = tr::parse_status_request(R"({"trainerStatus":null})");
  REQUIRE(none);
  CHECK(json::dump(none->root()) == "{}");
  for (const char* bad : {R"({"trainerStatus":{"progressPercentage":"5"}})", R"({"trainerStatus":{"progressPercentage":5000000000}})",
                          R"({"trainerStatus":{"metrics":{}}})", R"({"trainerStatus":{"metrics":[{"name":1}]}})",
                          R"({"trainerStatus":{"lastUpdatedTime":"yesterday"}})", R"({"trainerStatus":[]})", "[]", "{",
                          ""}) {
    INFO(bad);
    CHECK_FALSE(tr::parse_status_request(bad));
  }
  const std::string filler(tr::kStatusBodyLimit, ' ');
  CHECK(tr::parse_status_request("{}" + filler.substr(2)));  // exactly the limit
  auto over = tr::parse_status_request("{}" + filler);
  REQUIRE_FALSE(over);
  CHECK(over.error().message == "the body is over 65536 bytes");
}

TEST_CASE("status server: a TokenReview allows the TrainJob's audience and namespace only") {
  const tr::StatusRoute route{"ns", "demo"};
  auto review = [](std::string_view authenticated, std::string_view audience, std::string_view user) {
    return yaml(fmt::format("status: {{authenticated: {}, audiences: [{}], user: {{username: '{}'}}}}", authenticated, audience, user));
  };
  const std::string audience = "trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/demo/status";
  CHECK(tr::token_review_allows(review("true", audience, "system:serviceaccount:ns:default").root(), route));
  CHECK_FALSE(tr::token_review_allows(review("false", audience, "system:serviceaccount:ns:default").root(), route));
  CHECK_FALSE(tr::token_review_allows(review("true", "trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/other/status",
                                             "system:serviceaccount:ns:default").root(), route));
  CHECK_FALSE(tr::token_review_allows(review("true", audience, "system:serviceaccount:other:default").root(), route));
  CHECK_FALSE(tr::token_review_allows(review("true", audience, "system:serviceaccount:nsx:default").root(), route));
  CHECK_FALSE(tr::token_review_allows(review("true", audience, "alice").root(), route));
  CHECK_FALSE(tr::token_review_allows(yaml("status: {}").root(), route));
}

TEST_CASE("status server: errors are metav1 Status bodies") {
  CHECK(tr::status_error_body(404, "NotFound", "Train job not found") ==
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Train job not found","reason":"NotFound","code":404})");
}
