#include <regex>
#include <thread>

#include <catch2/catch.hpp>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "core/kube/event_recorder.h"
#include "core/kube/fake_client.h"
#include "tests/unit/kube_cache/test_objects.h"

using namespace unitrain;
using namespace unitrain::kube;
using namespace unitrain::kube::testing;
using namespace std::chrono_literals;

namespace {

EventRecorderOptions options() {
  EventRecorderOptions o;
  o.component = "pytorchjob-controller";
  o.host = "node-1";
  return o;
}

json::Document job(const std::string& name = "mnist") {
  auto d = json::Document::parse(fmt::format(
      R"({{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{{"name":"{}","namespace":"team","uid":"u-{}","resourceVersion":"9"}}}})",
      name, name));
  return d ? std::move(*d) : json::Document();
}

std::vector<json::Document> events(FakeClient& c) {
  auto l = c.list(kEvents, "", ListOptions{});
  REQUIRE(l);
  std::vector<json::Document> out;
  for (const auto& i : json::find(l->root(), "/items")->GetArray()) out.push_back(json::Document::copy_of(i));
  return out;
}

size_t writes_of(FakeClient& c, FakeClient::Verb v) {
  size_t n = 0;
  for (const auto& w : c.writes()) n += w.verb == v && w.resource == "events" ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("events: an event is created with client-go's name and fields", "[events]") {
  FakeClient c;
  FakeClock clock;
  EventRecorder r(c, clock, options());
  r.start();
  r.event(job().root(), "Normal", "SuccessfulCreatePod", "Created pod: mnist-worker-0");
  REQUIRE(r.flush(10s));
  auto evs = events(c);
  REQUIRE(evs.size() == 1);
  const auto& e = evs[0].root();
  CHECK(std::regex_match(std::string(json::get_string(e, "/metadata/name").value_or("")),
                         std::regex(R"(mnist\.[0-9a-f]{16})")));
  CHECK(json::get_string(e, "/metadata/namespace") == "team");
  CHECK(json::get_string(e, "/involvedObject/kind") == "PyTorchJob");
  CHECK(json::get_string(e, "/involvedObject/uid") == "u-mnist");
  CHECK(json::get_string(e, "/involvedObject/apiVersion") == "kubeflow.org/v1");
  CHECK(json::get_string(e, "/reason") == "SuccessfulCreatePod");
  CHECK(json::get_string(e, "/message") == "Created pod: mnist-worker-0");
  CHECK(json::get_string(e, "/type") == "Normal");
  CHECK(json::get_string(e, "/source/component") == "pytorchjob-controller");
  CHECK(json::get_string(e, "/firstTimestamp") == "2024-01-02T03:04:05Z");
  CHECK(json::get_int(e, "/count") == 1);
}

TEST_CASE("events: a repeated event patches count and lastTimestamp", "[events]") {
  FakeClient c;
  FakeClock clock;
  EventRecorder r(c, clock, options());
  r.start();
  r.event(job().root(), "Warning", "Restarting", "worker-0 exited with 137");
  REQUIRE(r.flush(10s));
  clock.advance(30s);
  r.event(job().root(), "Warning", "Restarting", "worker-0 exited with 137");
  r.event(job().root(), "Warning", "Restarting", "worker-0 exited with 137");
  REQUIRE(r.flush(10s));
  auto evs = events(c);
  REQUIRE(evs.size() == 1);
  CHECK(json::get_int(evs[0].root(), "/count") == 3);
  CHECK(json::get_string(evs[0].root(), "/lastTimestamp") == "2024-01-02T03:04:35Z");
  CHECK(json::get_string(evs[0].root(), "/firstTimestamp") == "2024-01-02T03:04:05Z");
  CHECK(writes_of(c, FakeClient::Verb::Create) == 1);
  CHECK(writes_of(c, FakeClient::Verb::Patch) == 2);
  CHECK(r.stats().patched == 2);
}

TEST_CASE("events: similar events are aggregated after 10 within 10 minutes", "[events]") {
  FakeClient c;
  FakeClock clock;
  EventRecorder r(c, clock, options());
  r.start();
  for (int i = 0; i < 12; ++i) r.event(job().root(), "Normal", "SuccessfulCreatePod", fmt::format("Created pod: w-{}", i));
  REQUIRE(r.flush(10s));
  auto evs = events(c);
  // 9 individual events, then one combined event counted 3 times.
  REQUIRE(evs.size() == 10);
  int combined = 0;
  for (const auto& e : evs) {
    auto msg = std::string(json::get_string(e.root(), "/message").value_or(""));
    if (msg.rfind("(combined from similar events): ", 0) == 0) {
      ++combined;
      CHECK(msg == "(combined from similar events): Created pod: w-11");
      CHECK(json::get_int(e.root(), "/count") == 3);
    }
  }
  CHECK(combined == 1);
  CHECK(r.stats().aggregated == 3);
  // Outside the window the messages count afresh.
  clock.advance(11min);
  r.event(job().root(), "Normal", "SuccessfulCreatePod", "Created pod: w-99");
  REQUIRE(r.flush(10s));
  CHECK(events(c).size() == 11);
  CHECK(r.stats().aggregated == 3);
}

TEST_CASE("events: the spam filter allows a burst of 25 per object then one per 5 minutes", "[events]") {
  FakeClient c;
  FakeClock clock;
  auto o = options();
  o.queue_capacity = 100;
  EventRecorder r(c, clock, o);
  r.start();
  for (int i = 0; i < 30; ++i) r.event(job().root(), "Normal", fmt::format("Reason{}", i), "m");
  r.event(job("other").root(), "Normal", "Reason", "m");  // another object has its own bucket
  REQUIRE(r.flush(10s));
  CHECK(r.stats().spam_filtered == 5);
  CHECK(events(c).size() == 26);
  clock.advance(5min);
  r.event(job().root(), "Normal", "Late1", "m");
  r.event(job().root(), "Normal", "Late2", "m");
  REQUIRE(r.flush(10s));
  CHECK(r.stats().spam_filtered == 6);
  CHECK(events(c).size() == 27);
}

TEST_CASE("events: a full queue drops events instead of blocking", "[events]") {
  FakeClient c;
  FakeClock clock;
  auto o = options();
  o.queue_capacity = 3;
  EventRecorder r(c, clock, o);
  // Not started: nothing drains the queue.
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) r.event(job().root(), "Normal", "R", fmt::format("m{}", i));
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  CHECK(r.stats().dropped == 7);
  CHECK(r.stats().recorded == 3);
  r.start();
  REQUIRE(r.flush(10s));
  CHECK(events(c).size() == 3);
}

TEST_CASE("events: an expired event is created again; failures are counted", "[events]") {
  FakeClient c;
  FakeClock clock;
  EventRecorder r(c, clock, options());
  r.start();
  r.event(job().root(), "Normal", "R", "m");
  REQUIRE(r.flush(10s));
  auto first = events(c);
  REQUIRE(first.size() == 1);
  REQUIRE(c.remove(kEvents, "team", std::string(json::get_string(first[0].root(), "/metadata/name").value_or(""))));
  r.event(job().root(), "Normal", "R", "m");
  REQUIRE(r.flush(10s));
  CHECK(events(c).size() == 1);
  CHECK(r.stats().created == 2);

  ApiError forbidden;
  forbidden.reason = ApiError::Reason::Forbidden;
  forbidden.code = 403;
  c.fail_next(FakeClient::Verb::Create, forbidden);
  r.event(job("x").root(), "Normal", "R", "m");
  REQUIRE(r.flush(10s));
  CHECK(r.stats().failed == 1);
}

TEST_CASE("events: stop writes what is queued", "[events]") {
  FakeClient c;
  FakeClock clock;
  {
    EventRecorder r(c, clock, options());
    r.start();
    for (int i = 0; i < 5; ++i) r.event(job(fmt::format("j{}", i)).root(), "Normal", "R", "m");
    r.stop();
    r.event(job().root(), "Normal", "R", "late");
    CHECK(r.stats().dropped == 1);
  }
  CHECK(events(c).size() == 5);
}

TEST_CASE("events: every event not written is counted and said once per cause and interval", "[events]") {
  std::ostringstream out;
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger->set_pattern("%l %v");
  spdlog::set_default_logger(logger);
  FakeClient c;
  FakeClock clock;
  auto o = options();
  o.queue_capacity = 2;
  EventRecorder r(c, clock, o);
  for (int i = 0; i < 6; ++i) r.event(job().root(), "Normal", "SuccessfulCreatePod", fmt::format("Created pod: p{}", i));
  clock.advance(31s);
  r.event(job().root(), "Normal", "SuccessfulCreatePod", "Created pod: late");
  spdlog::set_default_logger(previous);
  CHECK(r.stats().dropped == 5);
  CHECK(r.stats().lost() == 5);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[0], Catch::StartsWith("warning event Normal SuccessfulCreatePod on PyTorchJob team/mnist dropped: 2 events "
                                         "are waiting to be written (the queue is full)"));
  CHECK_THAT(lines[0], Catch::EndsWith("\x1f" "controller=pytorchjob-controller"));
  CHECK_THAT(lines[1], Catch::EndsWith("(repeated 3 times in the last 31s)" "\x1f" "controller=pytorchjob-controller"));
}
