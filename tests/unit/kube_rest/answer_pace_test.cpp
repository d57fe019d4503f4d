#include <catch2/catch.hpp>

#include <string>

#include "core/kube/answer_pace.h"

using unitrain::kube::AnswerPace;
using namespace std::chrono_literals;
using D = AnswerPace::Duration;

TEST_CASE("answer pace: an unknown target is not held, the first exchange sets a request's share of its time") {
  AnswerPace pace;
  CHECK(pace.per_request("/api/v1/namespaces/a/pods") == D::zero());
  CHECK(AnswerPace::hold(pace.per_request("/api/v1/namespaces/a/pods"), 4) == D::zero());
  pace.observe("/api/v1/namespaces/a/pods", 4, 2ms, true);
  CHECK(pace.per_request("/api/v1/namespaces/a/pods") == 500us);
  // The same resource in another namespace is paced alike.
  CHECK(pace.per_request("/api/v1/namespaces/b/pods") == 500us);
  // Targets are learned apart; a single request says nothing about pipelining.
  CHECK(pace.per_request("/api/v1/namespaces/a/services") == D::zero());
  pace.observe("/api/v1/namespaces/a/services", 1, 3ms, true);
  CHECK(pace.per_request("/api/v1/namespaces/a/services") == D::zero());
  // An outlier counts as at most kMaxPerRequest.
  pace.observe("/api/v1/namespaces/a/events", 2, 10s, true);
  CHECK(pace.per_request("/api/v1/namespaces/a/events") == AnswerPace::kMaxPerRequest);
}

TEST_CASE("answer pace: the hold covers the answers still to come, none for the last, at most kMaxHold") {
  CHECK(AnswerPace::hold(300us, 4) == 1200us);
  CHECK(AnswerPace::hold(300us, 2) == 600us);
  CHECK(AnswerPace::hold(300us, 1) == D::zero());  // the last answer is waited for on the socket
  CHECK(AnswerPace::hold(300us, 0) == D::zero());
  CHECK(AnswerPace::hold(2ms, 16) == AnswerPace::kMaxHold);
}

TEST_CASE("answer pace: a hold long enough shrinks by an eighth, one too short moves halfway to the measured time") {
  AnswerPace pace;
  const std::string t = "/api/v1/namespaces/a/events";
  pace.observe(t, 16, 16ms, true);
  REQUIRE(pace.per_request(t) == 1ms);
  // Every answer was there after the hold: maybe the server is faster now.
  pace.observe(t, 16, 16ms, false);
  CHECK(pace.per_request(t) == 875us);
  pace.observe(t, 16, 14ms, false);
  const D shrunk = 875us;
  CHECK(pace.per_request(t) == shrunk - shrunk / 8);
  // The hold was short: the exchange measured the server.
  const D before = pace.per_request(t);
  pace.observe(t, 16, 32ms, true);
  CHECK(pace.per_request(t) == (before + 2ms) / 2);
}

TEST_CASE("answer pace: the table of targets stays bounded") {
  AnswerPace pace;
  for (size_t i = 0; i < AnswerPace::kMaxTargets; ++i) pace.observe("/t" + std::to_string(i), 2, 2ms, true);
  CHECK(pace.per_request("/t0") == 1ms);
  pace.observe("/one-more", 2, 2ms, true);  // starts the table again
  CHECK(pace.per_request("/t0") == D::zero());
  CHECK(pace.per_request("/one-more") == 1ms);
}

TEST_CASE("answer pace: estimates are kept by target without the namespace's name and the query") {
  CHECK(AnswerPace::key_of("/api/v1/namespaces/team-a/pods") == "/api/v1/namespaces/*/pods");
  CHECK(AnswerPace::key_of("/apis/kubeflow.org/v1/namespaces/x/pytorchjobs/j/status?dryRun=All") ==
        "/apis/kubeflow.org/v1/namespaces/*/pytorchjobs/j/status");
  CHECK(AnswerPace::key_of("/api/v1/namespaces/team-a") == "/api/v1/namespaces/team-a");  // a namespace itself
  CHECK(AnswerPace::key_of("/api/v1/nodes") == "/api/v1/nodes");
}
