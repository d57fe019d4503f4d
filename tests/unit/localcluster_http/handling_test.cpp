#include <catch2/catch.hpp>

#include "localcluster/admission.h"
#include "localcluster/builtin_resources.h"
#include "localcluster/memory_store.h"
#include "localcluster/pod_logs.h"
#include "localcluster/routing.h"
#include "localcluster/watch_framing.h"
#include "tests/support/json.h"

namespace lc = unitrain::localcluster;
namespace json = unitrain::json;
using unitrain::testing::doc;

TEST_CASE("routes: core and named groups, namespaces, names, subresources, the legacy watch prefix") {
  auto store = lc::make_memory_store({});
  REQUIRE(store);
  auto route = [&](std::string_view path) { return lc::resolve_route(**store, lc::split_path(path)); };

  auto pod = route("/api/v1/namespaces/ns1/pods/p1/status");
  REQUIRE(pod);
  CHECK(pod->info.resource == "pods");
  CHECK(pod->ns == "ns1");
  CHECK(pod->name == "p1");
  CHECK(pod->subresource == "status");

  auto jobs = route("/apis/batch/v1/jobs");
  REQUIRE(jobs);
  CHECK(jobs->info.group == "batch");
  CHECK(jobs->ns.empty());
  CHECK(jobs->name.empty());

  auto watch = route("/api/v1/watch/namespaces/ns1/pods");
  REQUIRE(watch);
  CHECK(watch->legacy_watch);
  CHECK(watch->ns == "ns1");

  // A namespace itself, its name, and a namespace's sub-path of a cluster-scoped resource.
  auto ns = route("/api/v1/namespaces/ns1");
  REQUIRE(ns);
  CHECK(ns->info.resource == "namespaces");
  CHECK(ns->name == "ns1");
  for (auto missing : {"/api/v1/widgets", "/api/v1/namespaces/ns1/nodes/n1", "/api/v1/pods/p/scale",
                       "/api/v1/namespaces/ns1/pods/p/status/extra", "/apis/batch", "/api"}) {
    INFO(missing);
    auto r = route(missing);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == 404);
  }
  CHECK(lc::is_resource_path(lc::split_path("/api/v1/pods")));
  CHECK_FALSE(lc::is_resource_path(lc::split_path("/apis/batch/v1")));
}

TEST_CASE("metrics verbs are kube-apiserver's") {
  lc::ResourceRoute collection, one;
  one.name = "x";
  CHECK(lc::metrics_verb("GET", collection, false, false) == "LIST");
  CHECK(lc::metrics_verb("GET", one, false, false) == "GET");
  CHECK(lc::metrics_verb("GET", collection, true, false) == "WATCH");
  CHECK(lc::metrics_verb("PATCH", one, false, true) == "APPLY");
  CHECK(lc::metrics_verb("PATCH", one, false, false) == "PATCH");
  CHECK(lc::metrics_verb("DELETE", collection, false, false) == "DELETECOLLECTION");
  CHECK(lc::metrics_verb("DELETE", one, false, false) == "DELETE");
  CHECK(lc::metrics_verb("POST", collection, false, false) == "POST");
  CHECK(lc::metrics_verb("OPTIONS", collection, false, false) == "OPTIONS");
}

TEST_CASE("watch lines: one JSON object per event, re-encoded for Table and metadata clients") {
  const lc::ResourceInfo* pods = nullptr;
  for (const auto& r : lc::builtin_resources()) {
    if (r.group.empty() && r.resource == "pods") pods = &r;
  }
  REQUIRE(pods != nullptr);
  lc::WatchEvent ev{"ADDED", std::make_shared<const std::string>(
                                 R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","labels":{"a":"b"}}})")};
  CHECK(lc::watch_event_line(ev, *pods, lc::Representation::Object, lc::IncludeObject::Metadata, std::nullopt) ==
        "{\"type\":\"ADDED\",\"object\":" + *ev.object + "}\n");
  auto meta = doc(lc::watch_event_line(ev, *pods, lc::Representation::Metadata, lc::IncludeObject::Metadata,
                                       std::nullopt));
  CHECK(json::string_at(meta.root(), "/object/kind") == "PartialObjectMetadata");
  CHECK(json::string_at(meta.root(), "/object/metadata/labels/a") == "b");
  auto table = doc(lc::watch_event_line(ev, *pods, lc::Representation::Table, lc::IncludeObject::None, std::nullopt));
  CHECK(json::string_at(table.root(), "/object/kind") == "Table");
  CHECK(json::string_at(table.root(), "/object/rows/0/cells/0") == "p");
  // Bookmarks and errors pass through whatever the client asked for.
  lc::WatchEvent bookmark{"BOOKMARK", std::make_shared<const std::string>(R"({"metadata":{}})")};
  CHECK(lc::watch_event_line(bookmark, *pods, lc::Representation::Table, lc::IncludeObject::None, std::nullopt) ==
        "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{}}}\n");
  auto error = doc(lc::watch_error_line(lc::errors::expired("too old resource version: 1 (5)")));
  CHECK(json::string_at(error.root(), "/type") == "ERROR");
  CHECK(json::get_int(error.root(), "/object/code") == 410);
  CHECK(json::string_at(error.root(), "/object/reason") == "Expired");
}

TEST_CASE("admission rules: operations, groups, versions, resources with wildcards and subresources, scope") {
  CHECK(lc::resource_rule_matches("pods", "pods", ""));
  CHECK_FALSE(lc::resource_rule_matches("pods", "pods", "status"));
  CHECK(lc::resource_rule_matches("pods/status", "pods", "status"));
  CHECK(lc::resource_rule_matches("pods/*", "pods", "status"));
  CHECK(lc::resource_rule_matches("pods/*", "pods", ""));  // '*' also matches no subresource, as upstream's matcher
  CHECK_FALSE(lc::resource_rule_matches("pods/*", "jobs", "status"));
  CHECK(lc::resource_rule_matches("*", "jobs", ""));
  CHECK(lc::resource_rule_matches("*/status", "jobs", "status"));
  CHECK(lc::resource_rule_matches("*/*", "jobs", "scale"));

  auto rule = doc(R"({"operations":["CREATE"],"apiGroups":["batch"],"apiVersions":["*"],"resources":["jobs"],
                      "scope":"Namespaced"})");
  CHECK(lc::rule_matches(rule.root(), lc::Operation::Create, "batch", "v1", "jobs", "", true));
  CHECK_FALSE(lc::rule_matches(rule.root(), lc::Operation::Update, "batch", "v1", "jobs", "", true));
  CHECK_FALSE(lc::rule_matches(rule.root(), lc::Operation::Create, "apps", "v1", "jobs", "", true));
  CHECK_FALSE(lc::rule_matches(rule.root(), lc::Operation::Create, "batch", "v1", "jobs", "", false));
  auto any = doc(R"({"operations":["*"],"apiGroups":["*"],"apiVersions":["v2"],"resources":["*/*"]})");
  CHECK(lc::rule_matches(any.root(), lc::Operation::Delete, "x.io", "v2", "things", "status", false));
  CHECK_FALSE(lc::rule_matches(any.root(), lc::Operation::Delete, "x.io", "v1", "things", "status", false));
}

TEST_CASE("pod logs start over per container run and keep the one before a restart") {
  lc::PodLogs logs(10);
  const std::string key = lc::PodLogs::key("ns", "p", "c");
  logs.append(key, "run 0 a", "id-0", false);
  logs.append(key, "run 0 b", "id-0", false);
  CHECK_FALSE(logs.read_previous(key).has_value());
  logs.append(key, "run 1", "id-1", true);  // a restart in place
  CHECK(logs.read(key, 0).first == std::vector<std::string>{"run 1"});
  CHECK(logs.read_previous(key) == std::vector<std::string>{"run 0 a", "run 0 b"});
  logs.append(key, "new pod", "id-x", false);  // the same name, another pod
  CHECK(logs.read(key, 0).first == std::vector<std::string>{"new pod"});
  CHECK_FALSE(logs.read_previous(key).has_value());
}

TEST_CASE("log requests name a container of the pod, worded as kube-apiserver") {
  auto pod = doc(R"({"metadata":{"name":"p"},"spec":{"initContainers":[{"name":"init"}],
      "containers":[{"name":"a"},{"name":"b"}]},
      "status":{"containerStatuses":[{"name":"a","containerID":"c://1","state":{"running":{}}},
                                     {"name":"b","state":{"waiting":{"reason":"ContainerCreating"}}}]}})");
  auto none = lc::log_target(pod.root(), lc::parse_query(""));
  REQUIRE_FALSE(none);
  CHECK(none.error().code == 400);
  CHECK(none.error().message ==
        "a container name must be specified for pod p, choose one of: [a b] or one of the init containers: [init]");
  auto wrong = lc::log_target(pod.root(), lc::parse_query("container=c"));
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().message == "container c is not valid for pod p");
  auto waiting = lc::log_target(pod.root(), lc::parse_query("container=b"));
  REQUIRE_FALSE(waiting);
  CHECK(waiting.error().message == "container \"b\" in pod \"p\" is waiting to start: ContainerCreating");
  auto previous = lc::log_target(pod.root(), lc::parse_query("container=a&previous=true"));
  REQUIRE_FALSE(previous);
  CHECK(previous.error().message == "previous terminated container \"a\" in pod \"p\" not found");
  auto ok = lc::log_target(pod.root(), lc::parse_query("container=a"));
  REQUIRE(ok);
  CHECK(ok->running);
  CHECK(ok->container_id == "c://1");
}

TEST_CASE("pod logs keep the newest lines and wake their followers") {
  lc::PodLogs logs(3);
  const std::string key = lc::PodLogs::key("ns", "p", "c");
  CHECK(key == "ns/p/c");
  int wakes = 0;
  auto follower = std::make_shared<std::function<void()>>([&] { ++wakes; });
  logs.follow(key, follower);
  for (const char* line : {"1", "2", "3", "4"}) logs.append(key, line);
  CHECK(wakes == 4);
  auto [lines, next] = logs.read(key, 0);
  CHECK(lines == std::vector<std::string>{"2", "3", "4"});
  CHECK(next == 4);
  logs.append(key, "5");
  CHECK(logs.read(key, next).first == std::vector<std::string>{"5"});
  follower.reset();  // a follower that went away is not called
  logs.append(key, "6");
  CHECK(wakes == 5);

  std::vector<std::string> tail{"a", "b", "c"};
  lc::keep_tail_lines(tail, lc::parse_query("tailLines=2"));
  CHECK(tail == std::vector<std::string>{"b", "c"});
  std::string text = lc::join_lines(tail);
  CHECK(text == "b\nc\n");
  lc::limit_bytes(text, lc::parse_query("limitBytes=3"));
  CHECK(text == "b\nc");
}
