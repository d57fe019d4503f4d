#include <catch2/catch.hpp>

#include <cstdint>

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

TEST_CASE("boolean query parameters are true unless absent, 0 or false, as kube-apiserver's codec reads them") {
  lc::Query q = lc::parse_query("a=1&b=true&c=True&d=yes&e=&f=maybe&g=0&h=false&i=FALSE");
  for (const char* key : {"a", "b", "c", "d", "e", "f"}) CHECK(lc::query_flag(q, key));
  for (const char* key : {"g", "h", "i", "missing"}) CHECK_FALSE(lc::query_flag(q, key));
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
  CHECK(proto.error().code == 400);
  auto cbor = lc::decode_body("\xa0", lc::parse_media_type("application/cbor"));
  REQUIRE_FALSE(cbor);
  CHECK(cbor.error().code == 415);
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
  auto l = lc::list_request(lc::parse_query("labelSelector=a&fieldSelector=b&limit=7&resourceVersion=9"
                                            "&resourceVersionMatch=Exact"));
  REQUIRE(l);
  CHECK(l->label_selector == "a");
  CHECK(l->field_selector == "b");
  CHECK(l->limit == 7);
  CHECK(l->resource_version == "9");
  CHECK(l->resource_version_match == "Exact");
  auto paged = lc::list_request(lc::parse_query("limit=1&continue=c"));
  REQUIRE(paged);
  CHECK(paged->continue_token == "c");

  auto w = lc::watch_request(lc::parse_query("fieldSelector=status.phase%3DRunning&allowWatchBookmarks=true"), "p");
  REQUIRE(w);
  CHECK(w->field_selector == "status.phase=Running,metadata.name=p");
  CHECK(w->allow_bookmarks);
  CHECK_FALSE(w->send_initial_events);
  auto initial = lc::watch_request(lc::parse_query("sendInitialEvents=true&resourceVersionMatch=NotOlderThan"), "");
  REQUIRE(initial);
  CHECK(initial->send_initial_events);
  auto timeout = lc::watch_timeout(lc::parse_query("timeoutSeconds=-5"));
  REQUIRE(timeout);
  CHECK(*timeout == std::chrono::seconds(0));
  auto none = lc::watch_timeout(lc::parse_query(""));
  REQUIRE(none);
  CHECK_FALSE(*none);
  // Any int64: the server adds the timeout to now() (which overflowed).
  auto huge = lc::watch_timeout(lc::parse_query("timeoutSeconds=9223372036854775807"));
  REQUIRE(huge);
  REQUIRE(*huge);
  CHECK(**huge == lc::kMaxWatchTimeout);
  CHECK(std::chrono::steady_clock::now() + **huge > std::chrono::steady_clock::now());

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

namespace {

// The status code and message a parse of `query` fails with.
template <class F>
std::pair<int, std::string> refusal(F&& parse, std::string_view query) {
  auto r = parse(lc::parse_query(query));
  REQUIRE_FALSE(r);
  return {r.error().code, r.error().message};
}

}  // namespace

TEST_CASE("invalid list and watch parameters are refused with kube-apiserver's codes and words") {
  const auto list = [](const lc::Query& q) { return lc::list_request(q); };
  const auto watch = [](const lc::Query& q) { return lc::watch_request(q, ""); };
  CHECK(refusal(list, "limit=abc") == std::pair<int, std::string>{400, R"(strconv.ParseInt: parsing "abc": invalid syntax)"});
  CHECK(refusal(list, "limit=") == std::pair<int, std::string>{400, R"(strconv.ParseInt: parsing "": invalid syntax)"});
  CHECK(refusal(list, "limit=1.5") == std::pair<int, std::string>{400, R"(strconv.ParseInt: parsing "1.5": invalid syntax)"});
  // 2^63 and beyond do not fit an int64.
  CHECK(refusal(list, "limit=9223372036854775808") ==
        std::pair<int, std::string>{400, R"(strconv.ParseInt: parsing "9223372036854775808": value out of range)"});
  CHECK(refusal(list, "limit=99999999999999999999999") ==
        std::pair<int, std::string>{400, R"(strconv.ParseInt: parsing "99999999999999999999999": value out of range)"});
  auto max = lc::list_request(lc::parse_query("limit=9223372036854775807"));
  REQUIRE(max);
  CHECK(max->limit == INT64_MAX);
  auto min = lc::list_request(lc::parse_query("limit=-9223372036854775808"));
  REQUIRE(min);
  CHECK(min->limit == INT64_MIN);
  CHECK(refusal(list, "timeoutSeconds=abc") ==
        std::pair<int, std::string>{400, R"(strconv.ParseInt: parsing "abc": invalid syntax)"});
  CHECK(refusal(watch, "timeoutSeconds=abc").first == 400);
  CHECK(refusal([](const lc::Query& q) { return lc::watch_timeout(q); }, "timeoutSeconds=1e3").first == 400);

  CHECK(refusal(list, "resourceVersion=1&resourceVersionMatch=Bogus") ==
        std::pair<int, std::string>{422, R"(ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: )"
                                         R"(Unsupported value: "Bogus": supported values: "Exact", "NotOlderThan", "")"});
  CHECK(refusal(list, "resourceVersionMatch=Exact") ==
        std::pair<int, std::string>{422, R"(ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: )"
                                         R"(resourceVersionMatch is forbidden unless resourceVersion is provided)"});
  CHECK(refusal(list, "resourceVersion=0&resourceVersionMatch=Exact").second ==
        R"(ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is )"
        R"(forbidden for resourceVersion "0")");
  CHECK(refusal(list, "resourceVersion=1&resourceVersionMatch=Exact&continue=x").second ==
        R"(ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden )"
        R"(when continue is provided)");
  CHECK(refusal(list, "sendInitialEvents=true").second ==
        R"(ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list)");
  // Two errors are listed in brackets.
  CHECK(refusal(list, "resourceVersionMatch=Bogus").second ==
        R"(ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is )"
        R"(forbidden unless resourceVersion is provided, resourceVersionMatch: Unsupported value: "Bogus": )"
        R"(supported values: "Exact", "NotOlderThan", ""])");

  CHECK(refusal(watch, "sendInitialEvents=true").second ==
        R"(ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires )"
        R"(setting resourceVersionMatch to NotOlderThan)");
  CHECK(refusal(watch, "resourceVersionMatch=Exact").second ==
        R"(ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is )"
        R"(forbidden for watch unless sendInitialEvents is provided, resourceVersionMatch: Unsupported value: )"
        R"("Exact": supported values: "NotOlderThan"])");
}

TEST_CASE("dryRun, fieldValidation and gracePeriodSeconds are checked like kube-apiserver's options") {
  auto all = lc::dry_run(lc::parse_query("dryRun=All"), "CreateOptions");
  REQUIRE(all);
  CHECK(*all);
  auto absent = lc::dry_run(lc::parse_query(""), "CreateOptions");
  REQUIRE(absent);
  CHECK_FALSE(*absent);
  auto bogus = lc::dry_run(lc::parse_query("dryRun=Yes"), "PatchOptions");
  REQUIRE_FALSE(bogus);
  CHECK(bogus.error().code == 422);
  CHECK(bogus.error().message ==
        R"(PatchOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: "Yes": supported values: "All")");
  CHECK(lc::check_field_validation(lc::parse_query("fieldValidation=Strict"), "CreateOptions"));
  auto fv = lc::check_field_validation(lc::parse_query("fieldValidation=strict"), "UpdateOptions");
  REQUIRE_FALSE(fv);
  CHECK(fv.error().message == R"(UpdateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: )"
                              R"("strict": supported values: "Ignore", "Warn", "Strict")");
  auto grace = lc::delete_request(lc::parse_query("gracePeriodSeconds=soon"), "");
  REQUIRE_FALSE(grace);
  CHECK(grace.error().code == 400);
  CHECK(grace.error().message == R"(strconv.ParseInt: parsing "soon": invalid syntax)");
  auto body_dry = lc::delete_request({}, R"({"dryRun":["Some"]})");
  REQUIRE_FALSE(body_dry);
  CHECK(body_dry.error().code == 422);
}

TEST_CASE("a client that accepts only protobuf is told JSON is what the local cluster answers") {
  CHECK(lc::accepts_json(""));
  CHECK(lc::accepts_json("application/json"));
  CHECK(lc::accepts_json("application/vnd.kubernetes.protobuf, */*"));
  CHECK(lc::accepts_json("application/vnd.kubernetes.protobuf,application/json"));
  CHECK(lc::accepts_json("application/json;as=Table;v=v1;g=meta.k8s.io"));
  CHECK_FALSE(lc::accepts_json("application/vnd.kubernetes.protobuf"));
  CHECK_FALSE(lc::accepts_json("application/vnd.kubernetes.protobuf;stream=watch"));
}
