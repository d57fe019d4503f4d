// Field masks: the text form, merging, and building only what a mask keeps, from text in one
// streaming pass (Document::parse(text, mask)) and from a document (Document::project).
#include <catch2/catch.hpp>

#include "core/json/field_mask.h"
#include "core/json/json.h"

using namespace unitrain::json;

namespace {

FieldMask mask(std::string_view text) {
  auto m = FieldMask::parse(text);
  REQUIRE(m);
  return std::move(*m);
}

// What `m` keeps of `text`, both ways, which must agree.
std::string kept(std::string_view text, std::string_view m) {
  auto parsed = Document::parse(text, mask(m));
  REQUIRE(parsed);
  auto whole = Document::parse(text);
  REQUIRE(whole);
  CHECK(Document::project(whole->root(), mask(m)).dump() == parsed->dump());
  return parsed->dump();
}

}  // namespace

TEST_CASE("field mask: the text form round-trips, members sorted, names escaped") {
  CHECK(mask("kind, metadata { name ,labels}").to_string() == "kind,metadata{labels,name}");
  CHECK(mask("*,metadata{*,!managedFields}").to_string() == "*,metadata{*,!managedFields}");
  CHECK(mask(R"(a\,b,c\{d)").to_string() == R"(a\,b,c\{d)");
  CHECK(mask(R"(a\,b)").root().find("a,b") != nullptr);
  CHECK(mask("annotations{kubectl.kubernetes.io/last-applied-configuration}").root().find("annotations")->inner->find(
            "kubectl.kubernetes.io/last-applied-configuration"));
  for (auto text : {"a,b{c,d{e}}", "*,!x,y{*,!z}", "a"}) CHECK(mask(mask(text).to_string()) == mask(text));
}

TEST_CASE("field mask: errors name the position") {
  auto e = FieldMask::parse("a{b");
  REQUIRE(!e);
  CHECK(e.error().message == "field mask 'a{b': position 3: '}' expected");
  CHECK(FieldMask::parse("a,,b").error().message == "field mask 'a,,b': position 2: member name expected");
  CHECK(FieldMask::parse("a}").error().message == "field mask 'a}': position 1: unexpected '}'");
  CHECK(FieldMask::parse("a,a").error().message == "field mask 'a,a': position 3: 'a' named twice");
  CHECK(!FieldMask::parse(""));
}

TEST_CASE("field mask: merged keeps what either keeps") {
  CHECK(mask("a{x},b").merged(mask("a{y},c")).to_string() == "a{x,y},b,c");
  CHECK(mask("a{x}").merged(mask("a")).to_string() == "a");  // whole wins
  CHECK(mask("*,!a").merged(mask("b")).to_string() == "*,!a,b");
  CHECK(mask("*,!a").merged(mask("a{x}")).to_string() == "*,a{x}");
  CHECK(mask("*,!a").merged(mask("*,!b")).to_string() == "*,a,b");
  CHECK(mask("x").under("object").merged(mask("type")).to_string() == "object{x},type");
}

TEST_CASE("field mask: named members are kept whole, braces narrow objects and each object of an array") {
  const std::string pod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1","b":"2"},
      "ownerReferences":[{"kind":"J","uid":"u","blockOwnerDeletion":true},{"kind":"K","uid":"v"}],"managedFields":[{}]},
      "spec":{"containers":[{"name":"c","image":"i"}]},"status":{"phase":"Running","conditions":[{"type":"Ready",
      "status":"True","lastProbeTime":null}]}})";
  CHECK(kept(pod, "kind,metadata{name,labels,ownerReferences{uid}},status{conditions{type}}") ==
        R"({"kind":"Pod","metadata":{"name":"p","labels":{"a":"1","b":"2"},"ownerReferences":[{"uid":"u"},{"uid":"v"}]},)"
        R"("status":{"conditions":[{"type":"Ready"}]}})");
  CHECK(kept(pod, "*,metadata{*,!managedFields,!ownerReferences},!spec,!status") ==
        R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1","b":"2"}}})");
  // A mask on a member that is not an object keeps the value as it is.
  CHECK(kept(R"({"status":"Failure","code":410})", "status{phase},code") == R"({"status":"Failure","code":410})");
}

TEST_CASE("field mask: nulls and what the mask empties are left out inside braces, kept in whole values") {
  CHECK(kept(R"({"a":null,"b":{"x":null,"y":1},"c":{"z":{}},"d":[{"q":1},{"r":2}],"e":[]})", "a,b{x},c{z{w}},d{r},e{f}") ==
        R"({"d":[{"r":2}]})");
  CHECK(kept(R"({"a":{"x":null,"y":[]},"b":[null,1]})", "a,b{c}") == R"({"a":{"x":null,"y":[]},"b":[null,1]})");
  CHECK(kept(R"({"x":1})", "y") == "{}");
}

TEST_CASE("field mask: numbers keep their exact value and strings their bytes") {
  CHECK(kept(R"({"a":{"i":-9223372036854775808,"u":18446744073709551615,"d":0.1,"s":"\u00e9\n\"","t":true}})", "a") ==
        R"({"a":{"i":-9223372036854775808,"u":18446744073709551615,"d":0.1,"s":"é\n\"","t":true}})");
}

TEST_CASE("field mask: the text is checked whole, kept or not") {
  auto bad = Document::parse(R"({"keep":1,"skip":{"x":[1,2}})", mask("keep"));
  REQUIRE(!bad);
  CHECK(bad.error().message.rfind("invalid JSON at offset 26:", 0) == 0);
  CHECK(!Document::parse(R"({"keep":1} trailing)", mask("keep")));
  // A repeated key in what is kept is refused as parse() refuses it; in what is skipped it is
  // never built, so it cannot be read the wrong way.
  auto dup = Document::parse(R"({"m":{"a":1,"a":2}})", mask("m"));
  REQUIRE(!dup);
  CHECK(dup.error().message == "invalid JSON: duplicate key \"a\" in /m");
  CHECK(Document::parse(R"({"m":1,"s":{"a":1,"a":2}})", mask("m")));
  std::string deep(2000, '[');
  deep += std::string(2000, ']');
  CHECK(!Document::parse(R"({"skip":)" + deep + "}", mask("keep")));
}

TEST_CASE("field mask: a projection copies its strings (the source may go away)") {
  Document copy;
  {
    auto source = Document::parse(R"({"name":"a-name-longer-than-the-inline-buffer","other":1})");
    REQUIRE(source);
    copy = Document::project(source->root(), mask("name"));
  }
  CHECK(copy.dump() == R"({"name":"a-name-longer-than-the-inline-buffer"})");
}
