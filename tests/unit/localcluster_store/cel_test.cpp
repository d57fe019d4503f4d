#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "localcluster/cel.h"
#include "tests/support/json.h"

namespace cel = unitrain::localcluster::cel;

namespace {

using Vars = std::map<std::string, cel::Value, std::less<>>;

cel::Value run(std::string_view expr, const Vars& vars = {}) {
  auto p = cel::Program::parse(expr);
  INFO(expr << (p ? std::string() : "\n" + p.error().full));
  REQUIRE(p);
  return p->evaluate(vars);
}

cel::Value run_self(std::string_view expr, std::string_view self_json, std::string_view old_json = {}) {
  Vars vars;
  vars["self"] = cel::from_json(unitrain::testing::doc(self_json).root());
  if (!old_json.empty()) vars["oldSelf"] = cel::from_json(unitrain::testing::doc(old_json).root());
  return run(expr, vars);
}

bool truth(std::string_view expr, std::string_view self_json = "{}", std::string_view old_json = {}) {
  cel::Value v = run_self(expr, self_json, old_json);
  INFO(expr << " => " << v.debug());
  REQUIRE(std::holds_alternative<bool>(v.v));
  return std::get<bool>(v.v);
}

std::string error_of(std::string_view expr, std::string_view self_json = "{}") {
  cel::Value v = run_self(expr, self_json);
  INFO(expr << " => " << v.debug());
  REQUIRE(v.is_error());
  return v.error();
}

}  // namespace

TEST_CASE("cel literals and arithmetic") {
  CHECK(run("1 + 2 * 3").debug() == "7");
  CHECK(run("(1 + 2) * 3").debug() == "9");
  CHECK(run("7 / 2").debug() == "3");
  CHECK(run("-7 % 3").debug() == "-1");
  CHECK(run("1.5 + 2.0").debug() == "3.5");
  CHECK(run("3u + 4u").debug() == "7u");
  CHECK(run("0x10").debug() == "16");
  CHECK(run("-9223372036854775808").debug() == "-9223372036854775808");
  CHECK(run("'a' + \"b\"").debug() == "\"ab\"");
  CHECK(run("r'\\d+'").debug() == "\"\\\\d+\"");
  CHECK(run("'''x'y'''").debug() == "\"x'y\"");
  CHECK(run("'\\u00e9'").debug() == "\"\xc3\xa9\"");
  CHECK(run("[1, 2] + [3]").debug() == "[1, 2, 3]");
  CHECK(run("{'a': 1, 'b': [true, null]}").debug() == "{\"a\": 1, \"b\": [true, null]}");
  CHECK(run("1 / 0").error() == "division by zero");
  CHECK(run("1 % 0").error() == "modulus by zero");
  CHECK(run("9223372036854775807 + 1").error() == "integer overflow");
  CHECK(run("1 + 1.0").error() == "no such overload");
  CHECK(run("{'a': 1, 'a': 2}").is_error());
}

TEST_CASE("cel comparisons, logic and ternary") {
  CHECK(truth("1 < 2 && 2 <= 2 && 3 > 2 && 3 >= 3"));
  CHECK(truth("1 == 1.0 && 1u == 1 && 2.5 > 2"));  // numbers compare across types
  CHECK(truth("'abc' < 'abd'"));
  CHECK(truth("[1, [2]] == [1, [2]] && {'a': 1} == {'a': 1} && {'a': 1} != {'a': 2}"));
  CHECK(truth("!(1 == 2)"));
  CHECK(truth("2 in [1, 2] && 'k' in {'k': 1} && !(3 in [1])"));
  CHECK(run("true ? 'x' : 'y'").debug() == "\"x\"");
  CHECK(run("1 > 2 ? 'x' : 1 > 0 ? 'y' : 'z'").debug() == "\"y\"");
  CHECK(run("'a' < 1").error() == "no such overload");
}

TEST_CASE("cel && and || absorb errors from either side") {
  CHECK(truth("self.missing == 1 || true"));
  CHECK(truth("true || self.missing == 1"));
  CHECK_FALSE(truth("self.missing == 1 && false"));
  CHECK(error_of("self.missing == 1 && true") == "no such key: missing");
  CHECK(error_of("false || self.missing") == "no such key: missing");
}

TEST_CASE("cel field selection, has() and indexing on JSON objects") {
  const char* obj = R"({"spec": {"replicas": 3, "name": "job", "tags": ["a", "b"], "labels": {"x/y": "1"}}})";
  CHECK(truth("self.spec.replicas == 3", obj));
  CHECK(truth("has(self.spec.name) && !has(self.spec.image)", obj));
  CHECK(truth("self.spec.tags[1] == 'b'", obj));
  CHECK(truth("self.spec.labels['x/y'] == '1'", obj));
  CHECK(error_of("self.spec.image == ''", obj) == "no such key: image");
  CHECK(error_of("self.spec.tags[2] == ''", obj) == "index out of bounds: 2");
  CHECK(error_of("self.spec.replicas.x", obj) == "no such overload");
  CHECK(error_of("nope == 1", obj) == "undeclared reference to 'nope'");
}

TEST_CASE("cel macros all, exists, exists_one, map, filter") {
  const char* obj = R"({"items": [{"n": "a", "c": 1}, {"n": "b", "c": 2}, {"n": "c", "c": 3}], "m": {"k1": 1, "k2": 2}})";
  CHECK(truth("self.items.all(i, i.c > 0)", obj));
  CHECK_FALSE(truth("self.items.all(i, i.c > 1)", obj));
  CHECK(truth("self.items.exists(i, i.n == 'b')", obj));
  CHECK(truth("self.items.exists_one(i, i.c >= 3)", obj));
  CHECK_FALSE(truth("self.items.exists_one(i, i.c >= 2)", obj));
  CHECK(run_self("self.items.map(i, i.n)", obj).debug() == "[\"a\", \"b\", \"c\"]");
  CHECK(run_self("self.items.map(i, i.c > 1, i.c * 10)", obj).debug() == "[20, 30]");
  CHECK(run_self("self.items.filter(i, i.c != 2).map(i, i.n)", obj).debug() == "[\"a\", \"c\"]");
  CHECK(truth("self.m.all(k, k.startsWith('k'))", obj));  // map macros range over keys
  CHECK(truth("size(self.items.filter(i, has(i.missing))) == 0", obj));
  // An error in one element is absorbed when another element decides the answer.
  CHECK(truth("self.items.exists(i, i.missing == 1 || i.c == 3)", obj));
  CHECK(truth("self.items.all(i, i.n == 'a' ? i.c == 1 : true)", obj));
  CHECK(truth("[1, 2].all(x, [3, 4].exists(y, y > x))"));
  CHECK(truth("[[1], [2, 3]].map(x, size(x)).sum() == 3"));
}

TEST_CASE("cel size, string and list functions, conversions") {
  CHECK(truth("size('h\xc3\xa9llo') == 5 && 'abc'.size() == 3 && size([1, 2]) == 2 && size({'a': 1}) == 1"));
  CHECK(truth("'kubeflow'.startsWith('kube') && 'kubeflow'.endsWith('flow') && 'kubeflow'.contains('bef')"));
  CHECK(truth("'job-1'.matches('^[a-z]+-[0-9]+$') && !'Job'.matches('^[a-z]+$')"));
  CHECK(truth("matches('abc', 'b')"));
  CHECK(truth("'MiXed'.lowerAscii() == 'mixed' && 'MiXed'.upperAscii() == 'MIXED'"));
  CHECK(truth("' x '.trim() == 'x' && 'a,b'.split(',') == ['a', 'b'] && ['a', 'b'].join('-') == 'a-b'"));
  CHECK(truth("'abcabc'.indexOf('c') == 2 && 'abcabc'.lastIndexOf('c') == 5 && 'abc'.substring(1) == 'bc'"));
  CHECK(truth("'aXbX'.replace('X', '-') == 'a-b-'"));
  CHECK(truth("[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3 && [1, 2, 2].isSorted() && ![2, 1].isSorted()"));
  CHECK(truth("[1, 2, 3].sum() == 6 && [1.5, 2.5].sum() == 4.0 && ['a', 'b'].indexOf('b') == 1"));
  CHECK(truth("int('42') == 42 && int(3.9) == 3 && string(7) == '7' && double(2) == 2.0 && uint(3) == 3u"));
  CHECK(truth("bool('true') && string(true) == 'true' && int(5u) == 5"));
  CHECK(run("int('x')").error() == "cannot convert \"x\" to int");
  CHECK(run("'abc'.substring(5)").is_error());
  CHECK(run("[].min()").is_error());
}

TEST_CASE("cel optionals") {
  const char* obj = R"({"spec": {"queue": "q1", "policy": {"name": "p"}}})";
  CHECK(truth("self.?spec.?queue.orValue('') == 'q1'", obj));
  CHECK(truth("self.?spec.?missing.orValue('none') == 'none'", obj));
  CHECK(truth("!self.?spec.?missing.hasValue()", obj));
  CHECK(truth("self.?spec.policy.name.value() == 'p'", obj));
  CHECK(truth("self.?nothing.policy.name.orValue('d') == 'd'", obj));
  CHECK(truth("self.spec[?'queue'].hasValue() && !self.spec[?'x'].hasValue()", obj));
  CHECK(truth("optional.of(1).value() == 1 && !optional.none().hasValue()"));
  CHECK(truth("optional.none().or(optional.of(2)).value() == 2"));
  CHECK(truth("!optional.ofNonZeroValue('').hasValue() && optional.ofNonZeroValue('a').hasValue()"));
  CHECK(run("optional.none().value()").error() == "optional.none() dereference");
}

TEST_CASE("cel transition rules see oldSelf, references() finds it outside macro scopes") {
  CHECK(truth("self == oldSelf", R"("q1")", R"("q1")"));
  CHECK_FALSE(truth("self == oldSelf", R"("q2")", R"("q1")"));
  CHECK(truth("self >= oldSelf", "5", "3"));
  CHECK(truth("self.all(x, x in oldSelf)", R"(["a"])", R"(["a", "b"])"));
  auto p = cel::Program::parse("self == oldSelf");
  REQUIRE(p);
  CHECK(p->references("oldSelf"));
  auto q = cel::Program::parse("self.items.all(oldSelf, oldSelf > 0)");
  REQUIRE(q);
  CHECK_FALSE(q->references("oldSelf"));  // bound by the macro, not the transition variable
  auto r = cel::Program::parse("!has(self.x) || self.x.all(i, i != oldSelf.y)");
  REQUIRE(r);
  CHECK(r->references("oldSelf"));
}

TEST_CASE("cel from_json follows the schema's number type") {
  auto d = unitrain::testing::doc(R"({"ratio": 1, "count": 2})");
  auto schema = unitrain::testing::doc(
      R"({"type": "object", "properties": {"ratio": {"type": "number"}, "count": {"type": "integer"}}})");
  Vars vars;
  vars["self"] = cel::from_json(d.root(), schema.root());
  CHECK(run("self.ratio + 0.5 == 1.5", vars).debug() == "true");
  CHECK(run("self.count + 1 == 3", vars).debug() == "true");
}

TEST_CASE("cel parse errors name the line and column") {
  auto check = [](std::string_view src, int line, int col, std::string_view fragment) {
    auto p = cel::Program::parse(src);
    INFO(src);
    REQUIRE_FALSE(p);
    CHECK(p.error().line == line);
    CHECK(p.error().column == col);
    INFO(p.error().full);
    CHECK(p.error().full.find(fragment) != std::string::npos);
    CHECK(p.error().full.rfind("ERROR: <input>:" + std::to_string(line) + ":" + std::to_string(col) +
                                   ": Syntax error: ",
                               0) == 0);
  };
  check("self ==", 1, 8, "mismatched input '<EOF>'");
  check("self.x == 'abc", 1, 11, "unterminated string literal");
  check("self.x # 1", 1, 8, "token recognition error at: '#'");
  check("self.all(1, true)", 1, 6, "argument must be a simple name");
  check("has(self)", 1, 1, "invalid argument to has() macro");
  check("self.x &&\n  (1 + )", 2, 8, "mismatched input ')'");
  check("self.a b", 1, 8, "mismatched input 'b' expecting <EOF>");
  check("var == 1", 1, 1, "reserved identifier: var");
  auto p = cel::Program::parse("1 +");
  REQUIRE_FALSE(p);
  CHECK(p.error().full == "ERROR: <input>:1:4: Syntax error: mismatched input '<EOF>' expecting an expression\n | 1 +\n | ...^");
}

TEST_CASE("cel matches() reads RE2: flag groups, start and end of text anchors, named groups, RE2's refusals are errors") {
  CHECK(truth("'JOB'.matches('(?i)^job$') && !'JOB'.matches('^job$')"));
  CHECK(truth(R"('abc'.matches('\\Aab') && 'abc'.matches('bc\\z') && !'abc'.matches('\\Abc'))"));
  CHECK(truth("'v1.2'.matches('^v(?P<major>[0-9]+)[.](?<minor>[0-9]+)$')"));
  CHECK(truth("'a\\nb'.matches('(?m)^b$') && !'a\\nb'.matches('^b$')"));
  // Backreferences and lookarounds are not RE2: an evaluation error, as the rule cannot run there.
  CHECK(run("'aa'.matches('(a)\\\\1')").error() == "invalid regular expression: (a)\\1");
  CHECK(run("'ab'.matches('a(?=b)')").is_error());
  CHECK(run("'ab'.matches('(?<=a)b')").is_error());
  CHECK(run("'ab'.matches('\\\\pL')").is_error());
}
