#include <catch2/catch.hpp>

#include <map>

#include "core/kube/discovery.h"
#include "core/kube/qps_limiter.h"

using namespace unitrain::kube;
namespace json = unitrain::json;
using namespace std::chrono_literals;

TEST_CASE("QPS limiter: burst, refill and queueing with an injected clock") {
  auto now = QpsLimiter::Clock::time_point{} + 1000s;
  QpsLimiter lim(5, 10, [&] { return now; });
  for (int i = 0; i < 10; ++i) CHECK(lim.reserve() == 0ns);  // the burst
  CHECK(lim.reserve() == 200ms);  // 11th waits one token at 5 qps
  CHECK(lim.reserve() == 400ms);  // reservations queue behind each other
  CHECK_FALSE(lim.try_take());
  now += 400ms;  // pays back both reservations
  CHECK(lim.tokens() == Approx(0.0).margin(1e-9));
  now += 1s;
  CHECK(lim.tokens() == Approx(5.0));
  now += 10s;
  CHECK(lim.tokens() == Approx(10.0));  // capped at burst
  CHECK(lim.try_take());
  CHECK(lim.tokens() == Approx(9.0));
}

TEST_CASE("QPS limiter: n tokens reserved at once wait as long as the last of them would alone") {
  auto now = QpsLimiter::Clock::time_point{} + 1000s;
  QpsLimiter lim(20, 2, [&] { return now; });
  CHECK(lim.reserve(2) == 0ns);     // the burst
  CHECK(lim.reserve(4) == 200ms);   // the 4th token after the burst comes 4 x 50 ms later
  CHECK(lim.reserve() == 250ms);    // and the next queues behind all of them
  QpsLimiter one_at_a_time(20, 2, [&] { return now; });
  CHECK(one_at_a_time.reserve() == 0ns);
  CHECK(one_at_a_time.reserve() == 0ns);
  for (int i = 1; i <= 4; ++i) CHECK(one_at_a_time.reserve() == i * 50ms);
  CHECK(one_at_a_time.tokens() == Approx(lim.tokens() + 1));  // the same debt, but for the one more
  QpsLimiter unlimited(0, 1, [&] { return now; });
  CHECK(unlimited.reserve(100) == 0ns);
}

TEST_CASE("QPS limiter: how long until it holds n tokens, without taking any") {
  auto now = QpsLimiter::Clock::time_point{} + 1000s;
  QpsLimiter lim(20, 8, [&] { return now; });
  CHECK(lim.time_until(8) == 0ns);
  for (int i = 0; i < 8; ++i) REQUIRE(lim.try_take());
  CHECK(lim.time_until(1) == 50ms);
  CHECK(lim.time_until(5) == 250ms);
  CHECK(lim.time_until(100) == 400ms);  // the bucket never holds more than its burst
  CHECK(lim.tokens() == Approx(0.0).margin(1e-9));  // asking took nothing
  now += 100ms;
  CHECK(lim.time_until(5) == 150ms);
  CHECK(lim.reserve() == 0ns);
  CHECK(lim.reserve() == 0ns);
  CHECK(lim.reserve() == 50ms);  // reservations beyond the level count as debt
  CHECK(lim.time_until(1) == 100ms);
  QpsLimiter unlimited(0, 1, [&] { return now; });
  CHECK(unlimited.time_until(1000) == 0ns);
}

TEST_CASE("QPS limiter: acquire gives the token back when the wait is too long") {
  auto now = QpsLimiter::Clock::time_point{} + 1000s;
  QpsLimiter lim(1, 1, [&] { return now; });
  CHECK(lim.acquire(0ns));
  CHECK_FALSE(lim.acquire(500ms));  // would need 1s
  CHECK(lim.tokens() == Approx(0.0).margin(1e-9));
  QpsLimiter unlimited(-1, 0, [&] { return now; });
  for (int i = 0; i < 1000; ++i) CHECK(unlimited.reserve() == 0ns);
}

TEST_CASE("QPS limiter: real clock rate over a short run") {
  QpsLimiter lim(200, 1);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 21; ++i) REQUIRE(lim.acquire());
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed >= 95ms);  // 20 tokens after the first at 200/s = 100 ms
  CHECK(elapsed < 2s);
}

namespace {

struct FakeServer {
  std::map<std::string, std::string> docs;
  std::map<std::string, int> hits;
  ApiResult<json::Document> get(std::string_view path) {
    ++hits[std::string(path)];
    auto it = docs.find(std::string(path));
    if (it == docs.end()) {
      ApiError e;
      e.reason = ApiError::Reason::NotFound;
      e.code = 404;
      return unitrain::fail(e);
    }
    auto d = json::Document::parse(it->second);
    REQUIRE(d);
    return std::move(*d);
  }
};

}  // namespace

TEST_CASE("discovery: kind to resource and scope, cache and refetch on miss") {
  FakeServer s;
  s.docs["/api"] = R"({"kind":"APIVersions","versions":["v1"]})";
  s.docs["/apis"] = R"({"kind":"APIGroupList","groups":[
    {"name":"batch","versions":[{"groupVersion":"batch/v1","version":"v1"}],"preferredVersion":{"groupVersion":"batch/v1","version":"v1"}},
    {"name":"kubeflow.org","versions":[{"groupVersion":"kubeflow.org/v1","version":"v1"}],"preferredVersion":{"groupVersion":"kubeflow.org/v1","version":"v1"}}]})";
  s.docs["/api/v1"] = R"({"kind":"APIResourceList","groupVersion":"v1","resources":[
    {"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["create","delete","get","list","watch"]},
    {"name":"pods/status","namespaced":true,"kind":"Pod","verbs":["get","patch","update"]},
    {"name":"nodes","namespaced":false,"kind":"Node","verbs":["get","list"]}]})";
  s.docs["/apis/kubeflow.org/v1"] = R"({"kind":"APIResourceList","groupVersion":"kubeflow.org/v1","resources":[
    {"name":"tfjobs","namespaced":true,"kind":"TFJob","verbs":["get"]}]})";
  Discovery d([&](std::string_view p) { return s.get(p); });

  auto pod = d.resource_for({"", "v1", "Pod"});
  REQUIRE(pod);
  CHECK(pod->gvr == GroupVersionResource{"", "v1", "pods"});
  CHECK(pod->namespaced);
  CHECK(pod->subresources == std::vector<std::string>{"status"});
  auto node = d.resource_for({"", "v1", "Node"});
  REQUIRE(node);
  CHECK_FALSE(node->namespaced);
  CHECK(s.hits["/api/v1"] == 1);  // cached

  auto info = d.info_for({"", "v1", "nodes"});
  REQUIRE(info);
  CHECK(info->kind == "Node");

  // A CRD installed later is found by refetching the group version once.
  auto missing = d.resource_for({"kubeflow.org", "v1", "PyTorchJob"});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().is(ApiError::Reason::NotFound));
  CHECK_THAT(missing.error().message, Catch::Contains("PyTorchJob in kubeflow.org/v1"));
  s.docs["/apis/kubeflow.org/v1"] = R"({"kind":"APIResourceList","groupVersion":"kubeflow.org/v1","resources":[
    {"name":"tfjobs","namespaced":true,"kind":"TFJob"},{"name":"pytorchjobs","namespaced":true,"kind":"PyTorchJob"}]})";
  auto found = d.resource_for({"kubeflow.org", "v1", "PyTorchJob"});
  REQUIRE(found);
  CHECK(found->gvr.resource == "pytorchjobs");

  auto unserved = d.resource_for({"volcano.sh", "v1beta1", "PodGroup"});
  REQUIRE_FALSE(unserved);
  CHECK_THAT(unserved.error().message, Catch::Contains("does not serve volcano.sh/v1beta1"));

  auto gvs = d.group_versions();
  REQUIRE(gvs);
  CHECK(*gvs == std::vector<std::string>{"v1", "batch/v1", "kubeflow.org/v1"});
  auto pv = d.preferred_version("batch");
  REQUIRE(pv);
  CHECK(*pv == "v1");
  CHECK_FALSE(d.preferred_version("nope"));

  const int before = s.hits["/api/v1"];
  d.invalidate();
  REQUIRE(d.resource_for({"", "v1", "Pod"}));
  CHECK(s.hits["/api/v1"] == before + 1);

  s.docs["/apis/bad/v1"] = R"({"kind":"APIResourceList","resources":{}})";
  auto bad = d.resource_for({"bad", "v1", "X"});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().is(ApiError::Reason::BadResponse));
}
