#include <catch2/catch.hpp>

#include "core/api/labels.h"
#include "core/json/json.h"

using unitrain::api::LabelSelector;
using unitrain::api::Labels;
using unitrain::api::Requirement;
namespace api = unitrain::api;
namespace json = unitrain::json;

namespace {
LabelSelector must_parse_selector(std::string_view s) {
  auto r = LabelSelector::parse(s);
  INFO(s);
  if (!r) FAIL(r.error().message);
  return *r;
}
std::string selector_parse_error(std::string_view s) {
  auto r = LabelSelector::parse(s);
  INFO(s);
  REQUIRE_FALSE(r);
  return r.error().message;
}
}  // namespace

TEST_CASE("selector string parse and canonical print") {
  CHECK(must_parse_selector("").empty());
  CHECK(must_parse_selector("   ").empty());
  CHECK(must_parse_selector("a=b").to_string() == "a=b");
  CHECK(must_parse_selector("a==b").to_string() == "a=b");
  CHECK(must_parse_selector(" z != y , a=b").to_string() == "a=b,z!=y");
  CHECK(must_parse_selector("env in (prod, dev,qa)").to_string() == "env in (dev,prod,qa)");
  CHECK(must_parse_selector("env in(b,a,b)").to_string() == "env in (a,b)");
  CHECK(must_parse_selector("tier notin (x)").to_string() == "tier notin (x)");
  CHECK(must_parse_selector("app").to_string() == "app");
  CHECK(must_parse_selector("!app").to_string() == "!app");
  CHECK(must_parse_selector("! app").to_string() == "!app");
  CHECK(must_parse_selector("n>5,m<3").to_string() == "m<3,n>5");
  CHECK(must_parse_selector("example.com/role=worker").to_string() == "example.com/role=worker");
  CHECK(must_parse_selector("a=").to_string() == "a=");
  CHECK(must_parse_selector("a=,b=c").to_string() == "a=,b=c");
  // Keywords are plain words in value position.
  CHECK(must_parse_selector("a=in").to_string() == "a=in");
  CHECK(must_parse_selector("a in (in,notin)").to_string() == "a in (in,notin)");
}

TEST_CASE("selector requirements hold sorted unique values and ops") {
  auto s = must_parse_selector("b in (y,x,y),a!=1,!c,d");
  const auto& reqs = s.requirements();
  REQUIRE(reqs.size() == 4);
  CHECK(reqs[0] == Requirement{"a", Requirement::Op::NotEquals, {"1"}});
  CHECK(reqs[1] == Requirement{"b", Requirement::Op::In, {"x", "y"}});
  CHECK(reqs[2] == Requirement{"c", Requirement::Op::DoesNotExist, {}});
  CHECK(reqs[3] == Requirement{"d", Requirement::Op::Exists, {}});
}

TEST_CASE("selector empty set entries mean the empty value") {
  CHECK(must_parse_selector("a in ()").requirements()[0].values == std::vector<std::string>{""});
  CHECK(must_parse_selector("a in (x,)").requirements()[0].values == std::vector<std::string>{"", "x"});
  CHECK(must_parse_selector("a in (,x)").requirements()[0].values == std::vector<std::string>{"", "x"});
  CHECK(must_parse_selector("a in (x,,y)").requirements()[0].values == std::vector<std::string>{"", "x", "y"});
}

TEST_CASE("selector round trip through the canonical form") {
  for (std::string_view s : {"a=b", "a!=b,c in (d,e),!f,g", "k8s.io/x notin (a,b),n>10", "a=,b<2", "x in ()"}) {
    auto first = must_parse_selector(s);
    auto second = must_parse_selector(first.to_string());
    CHECK(first == second);
    CHECK(first.to_string() == second.to_string());
  }
}

TEST_CASE("selector errors name the position and token") {
  CHECK(selector_parse_error("a in (b") == "label selector 'a in (b': position 8: expected ',' or ')'");
  CHECK(selector_parse_error("a in b") == "label selector 'a in b': position 6: expected '(', found 'b'");
  CHECK(selector_parse_error("a=b c") == "label selector 'a=b c': position 5: expected ',' or end of selector, found 'c'");
  CHECK(selector_parse_error("a,") == "label selector 'a,': position 3: expected label key or '!' after ','");
  CHECK(selector_parse_error(",a") == "label selector ',a': position 1: expected label key or '!', found ','");
  CHECK(selector_parse_error("a=(b)").find("position 3: expected value, found '('") != std::string::npos);
  CHECK(selector_parse_error("!a=b").find("position 3: expected ',' or end of selector, found '='") != std::string::npos);
  CHECK(selector_parse_error("in=b").find("position 1: expected label key, found 'in'") != std::string::npos);
  CHECK(selector_parse_error("a b").find("position 3: expected one of '=', '==', '!=', 'in', 'notin', '>', '<', found 'b'") !=
        std::string::npos);
  CHECK(selector_parse_error("a>x").find("position 3: value \"x\" for '>' or '<' must be an integer") != std::string::npos);
  CHECK(selector_parse_error("a<1.5").find("must be an integer") != std::string::npos);
  // As upstream: a negative bound is an integer but not a valid label value.
  CHECK(selector_parse_error("a>+3").find("invalid label value \"+3\"") != std::string::npos);
  CHECK(selector_parse_error("a<-3").find("invalid label value \"-3\"") != std::string::npos);
  CHECK(selector_parse_error("a in (x y)").find("position 9: expected ',' or ')', found 'y'") != std::string::npos);
  CHECK(selector_parse_error("a in (x)(").find("position 9") != std::string::npos);
  CHECK(selector_parse_error("!").find("position 2: expected label key") != std::string::npos);
}

TEST_CASE("selector rejects invalid keys and values") {
  auto e = selector_parse_error("a/b/c=d");
  CHECK(e.find("position 1: invalid label key \"a/b/c\": a qualified name must consist of") != std::string::npos);
  CHECK(selector_parse_error("/a=b").find("prefix part must be non-empty") != std::string::npos);
  CHECK(selector_parse_error("Example.com/a=b").find("prefix part a lowercase RFC 1123 subdomain") != std::string::npos);
  CHECK(selector_parse_error("a/=b").find("name part must be non-empty") != std::string::npos);
  CHECK(selector_parse_error("-a=b").find("name part must consist of") != std::string::npos);
  CHECK(selector_parse_error(std::string(64, 'k') + "=v").find("name part must be no more than 63 characters") != std::string::npos);
  CHECK(must_parse_selector(std::string(63, 'k') + "=v").requirements().size() == 1);
  CHECK(must_parse_selector(std::string(253, 'p') + "/k=v").requirements().size() == 1);
  CHECK(selector_parse_error(std::string(254, 'p') + "/k=v").find("must be no more than 253 characters") != std::string::npos);
  CHECK(selector_parse_error("a=" + std::string(64, 'v')).find("position 3: invalid label value") != std::string::npos);
  CHECK(selector_parse_error("a=-v").find("a valid label must be an empty string or consist of") != std::string::npos);
  CHECK(selector_parse_error("a in (ok,b@d)").find("position 10: invalid label value \"b@d\"") != std::string::npos);
  CHECK(must_parse_selector("A_b.c-D=x_Y.z-9").requirements().size() == 1);
}

TEST_CASE("validation helpers use upstream wording") {
  CHECK(api::validate_qualified_name("app.kubernetes.io/name").empty());
  CHECK(api::validate_qualified_name("a_b").empty());
  auto e = api::validate_qualified_name("_x");
  REQUIRE(e.size() == 1);
  CHECK(e[0] ==
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')");
  CHECK(api::validate_qualified_name("").size() == 2);
  CHECK(api::validate_label_value("").empty());
  CHECK(api::validate_dns1035_label("my-job").empty());
  REQUIRE(api::validate_dns1035_label("0-test").size() == 1);
  CHECK(api::validate_dns1035_label("0-test")[0] ==
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
        "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation "
        "is '[a-z]([-a-z0-9]*[a-z0-9])?')");
  CHECK(api::validate_dns1035_label(std::string(64, 'a')) == std::vector<std::string>{"must be no more than 63 characters"});
  CHECK_FALSE(api::validate_dns1035_label("").empty());
  CHECK(api::validate_dns1123_label("0-test").empty());
  CHECK_FALSE(api::validate_dns1123_label("a.b").empty());
  CHECK(api::validate_dns1123_subdomain("a.b-c.d").empty());
  CHECK_FALSE(api::validate_dns1123_subdomain("a..b").empty());
  CHECK_FALSE(api::validate_dns1123_subdomain("a.").empty());
  CHECK_FALSE(api::validate_dns1123_subdomain("").empty());
}

TEST_CASE("selector matching") {
  Labels l{{"app", "web"}, {"tier", "front"}, {"n", "7"}, {"empty", ""}};
  CHECK(LabelSelector().matches(l));
  CHECK(must_parse_selector("app=web").matches(l));
  CHECK_FALSE(must_parse_selector("app=db").matches(l));
  CHECK(must_parse_selector("app!=db").matches(l));
  CHECK(must_parse_selector("missing!=x").matches(l));
  CHECK(must_parse_selector("missing notin (x)").matches(l));
  CHECK_FALSE(must_parse_selector("missing in (x)").matches(l));
  CHECK(must_parse_selector("tier in (back,front)").matches(l));
  CHECK_FALSE(must_parse_selector("tier notin (back,front)").matches(l));
  CHECK(must_parse_selector("app,!missing").matches(l));
  CHECK_FALSE(must_parse_selector("!app").matches(l));
  CHECK(must_parse_selector("n>6,n<8").matches(l));
  CHECK_FALSE(must_parse_selector("n>7").matches(l));
  CHECK_FALSE(must_parse_selector("app>1").matches(l));      // not a number: no match
  CHECK_FALSE(must_parse_selector("missing<1").matches(l));  // missing: no match
  CHECK(must_parse_selector("empty=").matches(l));
  CHECK(must_parse_selector("empty in ()").matches(l));
  CHECK_FALSE(must_parse_selector("missing=").matches(l));
}

TEST_CASE("selector matches JSON label objects and labels_of") {
  auto pod = json::Document::parse(R"({"metadata":{"labels":{"app":"web","odd":5}}})").value();
  auto sel = must_parse_selector("app=web,!odd");
  CHECK(sel.matches(*json::find(pod.root(), "/metadata/labels")));
  CHECK_FALSE(must_parse_selector("app=db").matches(*json::find(pod.root(), "/metadata/labels")));
  json::Document null_doc;
  CHECK(LabelSelector().matches(null_doc.root()));
  CHECK_FALSE(sel.matches(null_doc.root()));
  CHECK(must_parse_selector("!app").matches(null_doc.root()));
  auto labels = api::labels_of(pod.root());
  CHECK(labels == Labels{{"app", "web"}});
  CHECK(api::labels_of(json::Document::parse(R"({"metadata":{}})").value().root()).empty());
}

TEST_CASE("selector from labels") {
  auto s = LabelSelector::from_labels({{"b", "2"}, {"a", "1"}});
  CHECK(s.to_string() == "a=1,b=2");
  CHECK(s.matches(Labels{{"a", "1"}, {"b", "2"}, {"c", "3"}}));
  CHECK_FALSE(s.matches(Labels{{"a", "1"}}));
  CHECK(LabelSelector::from_labels({}).empty());
}

TEST_CASE("selector from metav1.LabelSelector JSON") {
  auto doc = json::Document::parse(R"({
    "matchLabels": {"training.kubeflow.org/job-name": "j", "app": "x"},
    "matchExpressions": [
      {"key": "tier", "operator": "In", "values": ["b", "a"]},
      {"key": "gone", "operator": "DoesNotExist"},
      {"key": "zone", "operator": "NotIn", "values": ["z"]},
      {"key": "has", "operator": "Exists", "values": []}
    ]})").value();
  auto s = LabelSelector::from_json(doc.root());
  REQUIRE(s);
  CHECK(s->to_string() == "app=x,!gone,has,tier in (a,b),training.kubeflow.org/job-name=j,zone notin (z)");
  CHECK(s->matches(Labels{{"app", "x"}, {"training.kubeflow.org/job-name", "j"}, {"tier", "a"}, {"has", ""}}));
  CHECK_FALSE(s->matches(Labels{{"app", "x"}, {"training.kubeflow.org/job-name", "j"}, {"tier", "a"}}));
  auto empty = LabelSelector::from_json(json::Document::object().root());
  REQUIRE(empty);
  CHECK(empty->empty());
  auto nulls = json::Document::parse(R"({"matchLabels":null,"matchExpressions":null})").value();
  CHECK(LabelSelector::from_json(nulls.root())->empty());
}

TEST_CASE("selector JSON errors carry the field path") {
  auto err = [](std::string_view text, std::string_view field = "spec.selector") {
    auto doc = json::Document::parse(text).value();
    auto r = LabelSelector::from_json(doc.root(), field);
    REQUIRE_FALSE(r);
    return r.error().message;
  };
  CHECK(err(R"({"matchExpressions":[{"key":"a","operator":"Foo"}]})") ==
        R"(spec.selector.matchExpressions[0].operator: Unsupported value: "Foo": supported values: "DoesNotExist", "Exists", "In", "NotIn")");
  CHECK(err(R"({"matchExpressions":[{"key":"a","operator":"In"}]})") ==
        "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'");
  CHECK(err(R"({"matchExpressions":[{"key":"a","operator":"Exists","values":["x"]}]})") ==
        "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or "
        "'DoesNotExist'");
  CHECK(err(R"({"matchLabels":{"a":1}})") == "spec.selector.matchLabels[a]: Invalid value: 1: must be a string");
  CHECK(err(R"({"matchLabels":[]})") == "spec.selector.matchLabels: Invalid value: []: must be an object");
  CHECK(err(R"({"matchLabels":{"-a":"b"}})").rfind("spec.selector.matchLabels: Invalid value: \"-a\": name part", 0) == 0);
  CHECK(err(R"({"matchExpressions":{}})") == "spec.selector.matchExpressions: Invalid value: {}: must be an array");
  CHECK(err(R"({"matchExpressions":[{"operator":"Exists"}]})") == "spec.selector.matchExpressions[0].key: Required value");
  CHECK(err(R"({"matchExpressions":[{"key":"a","operator":"In","values":["ok",3]}]})") ==
        "spec.selector.matchExpressions[0].values[1]: Invalid value: 3: must be a string");
  CHECK(err("[]", "selector") == "selector: Invalid value: []: must be an object");
  CHECK(err("null", "selector") == R"(selector: Invalid value: "null": must be an object)");
  // Several errors aggregate in brackets.
  CHECK(err(R"({"matchLabels":{"a":1},"matchExpressions":[{"key":"b","operator":"X"}]})").front() == '[');
}

TEST_CASE("selector parser on generated input: no crash, stable canonical form, both match paths agree") {
  // Deterministic generator: the same inputs on every run.
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&state](std::size_t n) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<std::size_t>(state % n);
  };
  const std::vector<std::string> pieces = {"a",  "b",    "k8s.io/c", "x-1", "=",  "==", "!=", "!",  " in ",
                                           " notin ", "(", ")",  ",",  ">",  "<",  "1",  "22", " ",
                                           "",   "v_2", "-",  "/",  "@",  "\t", "in", "9"};
  const std::vector<std::string> keys = {"a", "b", "k8s.io/c", "x-1"};
  const std::vector<std::string> vals = {"", "1", "22", "v_2", "9", "in"};
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    const std::size_t n = 1 + next(9);
    for (std::size_t j = 0; j < n; ++j) text += pieces[next(pieces.size())];
    auto sel = LabelSelector::parse(text);
    INFO(text);
    if (!sel) {
      CHECK(sel.error().message.find("position ") != std::string::npos);
      continue;
    }
    ++parsed;
    auto again = LabelSelector::parse(sel->to_string());
    REQUIRE(again);
    CHECK(*again == *sel);
    Labels labels;
    auto obj = json::Document::object();
    for (const auto& k : keys) {
      if (next(2) == 0) continue;
      const auto& v = vals[next(vals.size())];
      labels[k] = v;
      REQUIRE(json::set_string(obj, "/" + json::escape_pointer_token(k), v));
    }
    CHECK(sel->matches(labels) == sel->matches(obj.root()));
  }
  CHECK(parsed > 1000);  // the generator must exercise the success path too
}

TEST_CASE("selector to metav1.LabelSelector JSON and back") {
  auto s = must_parse_selector("b=2,a in (y,x),!c,d,e!=f,g notin (h)");
  auto j = s.to_json();
  REQUIRE(j);
  CHECK(j->dump() ==
        R"({"matchLabels":{"b":"2"},"matchExpressions":[{"key":"a","operator":"In","values":["x","y"]},)"
        R"({"key":"c","operator":"DoesNotExist"},{"key":"d","operator":"Exists"},)"
        R"({"key":"e","operator":"NotIn","values":["f"]},{"key":"g","operator":"NotIn","values":["h"]}]})");
  auto back = LabelSelector::from_json(j->root());
  REQUIRE(back);
  CHECK(back->to_string() == "a in (x,y),b=2,!c,d,e notin (f),g notin (h)");
  CHECK(LabelSelector().to_json()->dump() == "{}");
  CHECK(must_parse_selector("a=1,a=2").to_json()->dump() == R"({"matchLabels":{"a":"2"}})");
  auto gt = must_parse_selector("n>1").to_json();
  REQUIRE_FALSE(gt);
  CHECK(gt.error().message == "label selector 'n>1': n>1 has no metav1.LabelSelector form");
}
