#include <catch2/catch.hpp>

#include "localcluster/content_negotiation.h"
#include "localcluster/http_message.h"
#include "localcluster/request_options.h"

namespace lc = unitrain::localcluster;

TEST_CASE("request targets: path, decoded query, decoded path segments") {
  auto [path, query] = lc::parse_target("/api/v1/namespaces/a%2Db/pods?labelSelector=app%3Dx+y&watch&limit=5&limit=6");
  CHECK(path == "/api/v1/namespaces/a%2Db/pods");
  CHECK(query.at("labelSelector") == "app=x y");
  CHECK(query.at("watch").empty());
  CHECK(query.at("limit") == "5");  // the first of repeated parameters
  CHECK(lc::split_path(path) == std::vector<std::string>{"api", "v1", "namespaces", "a-b", "pods"});
  CHECK(lc::split_path("//apis///batch/") == std::vector<std::string>{"apis", "batch"});
  CHECK(lc::parse_target("/healthz").second.empty());
  // A malformed escape is kept as is; '+' is a space only in queries.
  CHECK(lc::percent_decode("100%zz+%4", true) == "100%zz %4");
  CHECK(lc::percent_decode("a+b", false) == "a+b");
}

TEST_CASE("query flags follow Go's strconv.ParseBool for true") {
  lc::Query q = lc::parse_query("a=1&b=true&c=True&d=yes&e=");
  CHECK(lc::query_flag(q, "a"));
  CHECK(lc::query_flag(q, "b"));
  CHECK(lc::query_flag(q, "c"));
  CHECK_FALSE(lc::query_flag(q, "d"));
  CHECK_FALSE(lc::query_flag(q, "e"));
  CHECK_FALSE(lc::query_flag(q, "missing"));
}

TEST_CASE("media types and Accept negotiation") {
  auto m = lc::parse_media_type(" Application/JSON ; as=Table;g = meta.k8s.io; v=v1;broken");
  CHECK(m.type == "application/json");
  CHECK(m.param("as") == "Table");
  CHECK(m.param("g") == "meta.k8s.io");
  CHECK(m.param("broken").empty());

  CHECK(lc::negotiate("").representation == lc::Representation::Object);
  auto table = lc::negotiate("application/json;as=Table;v=v1;g=meta.k8s.io,application/json");
  CHECK(table.representation == lc::Representation::Table);
  CHECK(table.content_type == "application/json;as=Table;v=v1;g=meta.k8s.io");
  auto meta = lc::negotiate("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, "
                            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1");
  CHECK(meta.representation == lc::Representation::Metadata);
  CHECK(lc::negotiate("application/json;as=Table;v=v1beta1;g=meta.k8s.io").representation ==
        lc::Representation::Object);

  CHECK(lc::aggregated_discovery_version("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList") ==
        std::optional<std::string>("v2"));
  CHECK_FALSE(lc::aggregated_discovery_version("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList"));
}

TEST_CASE("request bodies decode by Content-Type") {
  auto json = lc::decode_body(R"({"a":1})", lc::parse_media_type("application/json"));
  REQUIRE(json);
  CHECK(unitrain::json::get_int(json->root(), "/a") == 1);
  auto yaml = lc::decode_body("a: 2\n", lc::parse_media_type("application/yaml"));
  REQUIRE(yaml);
  CHECK(unitrain::json::get_int(yaml->root(), "/a") == 2);
  auto proto = lc::decode_body("\x6b\x38\x73", lc::parse_media_type("application/vnd.kubernetes.protobuf"));
  REQUIRE_FALSE(proto);
  CHECK(proto.error().code == 415);
  auto bad = lc::decode_body("{", lc::parse_media_type(""));
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == 400);
  CHECK(bad.error().message.starts_with("the object provided is unrecognized: "));

  CHECK(lc::patch_kind(lc::parse_media_type("application/merge-patch+json")) == lc::PatchKind::Merge);
  CHECK(lc::patch_kind(lc::parse_media_type("application/json-patch+json")) == lc::PatchKind::JSON);
  CHECK(lc::patch_kind(lc::parse_media_type("application/strategic-merge-patch+json")) == lc::PatchKind::Strategic);
  CHECK(lc::patch_kind(lc::parse_media_type("application/apply-patch+yaml")) == lc::PatchKind::Apply);
  CHECK_FALSE(lc::patch_kind(lc::parse_media_type("application/json")));
}

TEST_CASE("list, watch and delete options from query parameters and DeleteOptions bodies") {
  auto l = lc::list_request(lc::parse_query("labelSelector=a&fieldSelector=b&limit=7&continue=c&resourceVersion=9"
                                            "&resourceVersionMatch=Exact"));
  CHECK(l.label_selector == "a");
  CHECK(l.field_selector == "b");
  CHECK(l.limit == 7);
  CHECK(l.continue_token == "c");
  CHECK(l.resource_version == "9");
  CHECK(l.resource_version_match == "Exact");

  auto w = lc::watch_request(lc::parse_query("fieldSelector=status.phase%3DRunning&allowWatchBookmarks=true"), "p");
  CHECK(w.field_selector == "status.phase=Running,metadata.name=p");
  CHECK(w.allow_bookmarks);
  CHECK_FALSE(w.send_initial_events);
  CHECK(lc::watch_timeout(lc::parse_query("timeoutSeconds=-5")) == std::chrono::seconds(0));
  CHECK_FALSE(lc::watch_timeout(lc::parse_query("")));

  auto d = lc::delete_request(lc::parse_query("propagationPolicy=Orphan&gracePeriodSeconds=3"),
                              R"({"propagationPolicy":"Foreground","preconditions":{"uid":"u","resourceVersion":"5"},
                                  "dryRun":["All"]})");
  REQUIRE(d);
  CHECK(d->propagation_policy == std::optional<std::string>("Foreground"));
  CHECK(d->grace_period_seconds == std::optional<int64_t>(3));
  CHECK(d->precondition_uid == std::optional<std::string>("u"));
  CHECK(d->precondition_resource_version == std::optional<std::string>("5"));
  CHECK(d->dry_run);
  auto orphan = lc::delete_request({}, R"({"orphanDependents":true})");
  REQUIRE(orphan);
  CHECK(orphan->propagation_policy == std::optional<std::string>("Orphan"));
  auto bad = lc::delete_request({}, "{");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == 400);
  CHECK(bad.error().message.starts_with("DeleteOptions body: "));

  CHECK(lc::include_object(lc::parse_query("")) == lc::IncludeObject::Metadata);
  CHECK(lc::include_object(lc::parse_query("includeObject=None")) == lc::IncludeObject::None);
  CHECK(lc::include_object(lc::parse_query("includeObject=Object")) == lc::IncludeObject::Object);
}
