// training-operator's abnormal-pod events: which active pods they name and with what.
#include <catch2/catch.hpp>

#include "core/controller/abnormal_pods.h"

using namespace unitrain;
using unitrain::controller::abnormal_pods;

namespace {
json::Document pod(const char* text) {
  auto d = json::Document::parse(text);
  REQUIRE(d);
  return std::move(*d);
}
std::vector<std::string> lines(const std::vector<const json::Value*>& pods) {
  std::vector<std::string> out;
  for (const auto& a : abnormal_pods(pods)) out.push_back(a.reason + "|" + a.message);
  return out;
}
}  // namespace

TEST_CASE("abnormal pods: a crashed or waiting container of a running pod") {
  auto p = pod(R"({"metadata":{"name":"w-0"},"status":{"phase":"Running","containerStatuses":[
      {"name":"pytorch","state":{"terminated":{"exitCode":137,"reason":"OOMKilled","message":"killed"}}},
      {"name":"sidecar","state":{"waiting":{"reason":"CrashLoopBackOff","message":"back-off 10s"}}},
      {"name":"ok","state":{"running":{}}},
      {"name":"done","state":{"terminated":{"exitCode":0,"reason":"Completed"}}},
      {"name":"creating","state":{"waiting":{"reason":"ContainerCreating"}}}]}})");
  CHECK(lines({&p.root()}) == std::vector<std::string>{
                                  "OOMKilled|Error pod w-0 container pytorch exitCode: 137 terminated message: killed",
                                  "CrashLoopBackOff|Error pod w-0 container sidecar waiting message: back-off 10s"});
}

TEST_CASE("abnormal pods: before any container, the latest condition when it is not True") {
  auto unschedulable = pod(R"({"metadata":{"name":"w-1"},"status":{"phase":"Pending","conditions":[
      {"type":"Initialized","status":"True","lastTransitionTime":"2024-01-02T03:04:05Z"},
      {"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/3 nodes are available",
       "lastTransitionTime":"2024-01-02T03:04:06Z"}]}})");
  auto scheduled = pod(R"({"metadata":{"name":"w-2"},"status":{"phase":"Pending","conditions":[
      {"type":"PodScheduled","status":"True","lastTransitionTime":"2024-01-02T03:04:06Z"}]}})");
  auto init = pod(R"({"metadata":{"name":"w-3"},"status":{"phase":"Pending","conditions":[
      {"type":"PodScheduled","status":"False","reason":"x","lastTransitionTime":"2024-01-02T03:04:06Z"}],
      "initContainerStatuses":[{"name":"init","state":{"waiting":{"reason":"ErrImagePull","message":"denied"}}}]}})");
  CHECK(lines({&unschedulable.root(), &scheduled.root(), &init.root()}) ==
        std::vector<std::string>{"Unschedulable|Error pod w-1 condition message: 0/3 nodes are available",
                                 "ErrImagePull|Error pod w-3 container init waiting message: denied"});
}

TEST_CASE("abnormal pods: finished and terminating pods are not active") {
  auto failed = pod(R"({"metadata":{"name":"a"},"status":{"phase":"Failed","containerStatuses":[
      {"name":"c","state":{"terminated":{"exitCode":1,"reason":"Error"}}}]}})");
  auto deleting = pod(R"({"metadata":{"name":"b","deletionTimestamp":"2024-01-02T03:04:05Z"},"status":{"phase":"Running",
      "containerStatuses":[{"name":"c","state":{"terminated":{"exitCode":1,"reason":"Error"}}}]}})");
  CHECK(abnormal_pods({&failed.root(), &deleting.root()}).empty());
}
