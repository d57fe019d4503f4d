#include <catch2/catch.hpp>

#include "core/json/json.h"
#include "tests/support/json.h"

using unitrain::json::Document;
namespace json = unitrain::json;

namespace {

using unitrain::testing::doc;

// RFC 7386 MergePatch, checked exactly: member order of the result is part of our contract.
void check_merge(std::string_view target, std::string_view patch, std::string_view expected) {
  Document t = doc(target);
  json::apply_merge_patch(t, doc(patch).root());
  INFO("target " << target << " patch " << patch);
  CHECK(t.dump() == expected);
}

}  // namespace

TEST_CASE("merge patch: RFC 7386 appendix A test vectors") {
  check_merge(R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})");
  check_merge(R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})");
  check_merge(R"({"a":"b"})", R"({"a":null})", R"({})");
  check_merge(R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})");
  check_merge(R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})");
  check_merge(R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})");
  check_merge(R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})", R"({"a":{"b":"d"}})");
  check_merge(R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})");
  check_merge(R"(["a","b"])", R"(["c","d"])", R"(["c","d"])");
  check_merge(R"({"a":"b"})", R"(["c"])", R"(["c"])");
  check_merge(R"({"a":"foo"})", R"(null)", R"(null)");
  check_merge(R"({"a":"foo"})", R"("bar")", R"("bar")");
  check_merge(R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})");
  check_merge(R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})");
  check_merge(R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})");
}

TEST_CASE("merge patch: deleting a member keeps the order of the others") {
  check_merge(R"({"a":1,"b":2,"c":3,"d":4})", R"({"b":null})", R"({"a":1,"c":3,"d":4})");
}

TEST_CASE("create_merge_patch produces a patch that reproduces the target") {
  const char* pairs[][2] = {
      {R"({"a":"b"})", R"({"a":"c"})"},
      {R"({"a":"b","b":"c"})", R"({"b":"c"})"},
      {R"({"a":{"b":"c","d":[1,2]},"x":1})", R"({"a":{"b":"c","d":[1]},"x":1,"y":{"z":true}})"},
      {R"({"metadata":{"labels":{"a":"1","b":"2"}},"spec":{"replicas":1}})",
       R"({"metadata":{"labels":{"a":"1","c":"3"}},"spec":{"replicas":3}})"},
      {R"({"a":1})", R"([1,2])"},
      {R"([1])", R"({"a":1})"},
  };
  for (const auto& [o, m] : pairs) {
    Document original = doc(o), modified = doc(m);
    Document patch = json::create_merge_patch(original.root(), modified.root());
    Document applied = original;
    json::apply_merge_patch(applied, patch.root());
    INFO(o << " -> " << m << " via " << patch.dump());
    CHECK(applied == modified);
  }
  Document same = doc(R"({"a":{"b":[1,{"c":2}]}})");
  CHECK(json::create_merge_patch(same.root(), same.root()).dump() == "{}");
  Document labels = json::create_merge_patch(doc(R"({"m":{"a":"1","b":"2"},"s":1})").root(),
                                             doc(R"({"m":{"a":"1","c":"3"},"s":1})").root());
  CHECK(labels.dump() == R"({"m":{"b":null,"c":"3"}})");
}

namespace {

void check_json_patch(std::string_view target, std::string_view ops, std::string_view expected) {
  Document t = doc(target);
  auto r = json::apply_json_patch(t, doc(ops).root());
  INFO("target " << target << " ops " << ops);
  REQUIRE(r);
  CHECK(t == doc(expected));
}

std::string json_patch_error(std::string_view target, std::string_view ops) {
  Document t = doc(target);
  const std::string before = t.dump();
  auto r = json::apply_json_patch(t, doc(ops).root());
  INFO("target " << target << " ops " << ops);
  REQUIRE_FALSE(r);
  CHECK(t.dump() == before);  // atomic
  return r.error().message;
}

}  // namespace

TEST_CASE("JSON patch: RFC 6902 appendix A examples") {
  // A.1 - A.8, A.10, A.11, A.14, A.16
  check_json_patch(R"({"foo":"bar"})", R"([{"op":"add","path":"/baz","value":"qux"}])",
                   R"({"baz":"qux","foo":"bar"})");
  check_json_patch(R"({"foo":["bar","baz"]})", R"([{"op":"add","path":"/foo/1","value":"qux"}])",
                   R"({"foo":["bar","qux","baz"]})");
  check_json_patch(R"({"baz":"qux","foo":"bar"})", R"([{"op":"remove","path":"/baz"}])", R"({"foo":"bar"})");
  check_json_patch(R"({"foo":["bar","qux","baz"]})", R"([{"op":"remove","path":"/foo/1"}])",
                   R"({"foo":["bar","baz"]})");
  check_json_patch(R"({"baz":"qux","foo":"bar"})", R"([{"op":"replace","path":"/baz","value":"boo"}])",
                   R"({"baz":"boo","foo":"bar"})");
  check_json_patch(R"({"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}})",
                   R"([{"op":"move","from":"/foo/waldo","path":"/qux/thud"}])",
                   R"({"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}})");
  check_json_patch(R"({"foo":["all","grass","cows","eat"]})", R"([{"op":"move","from":"/foo/1","path":"/foo/3"}])",
                   R"({"foo":["all","cows","eat","grass"]})");
  check_json_patch(R"({"baz":"qux","foo":["a",2,"c"]})",
                   R"([{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}])",
                   R"({"baz":"qux","foo":["a",2,"c"]})");
  check_json_patch(R"({"foo":"bar"})", R"([{"op":"add","path":"/child","value":{"grandchild":{}}}])",
                   R"({"foo":"bar","child":{"grandchild":{}}})");
  check_json_patch(R"({"foo":"bar"})", R"([{"op":"add","path":"/baz","value":"qux","xyz":123}])",
                   R"({"foo":"bar","baz":"qux"})");
  check_json_patch(R"({"/":9,"~1":10})", R"([{"op":"test","path":"/~01","value":10}])", R"({"/":9,"~1":10})");
  check_json_patch(R"({"foo":["bar"]})", R"([{"op":"add","path":"/foo/-","value":["abc","def"]}])",
                   R"({"foo":["bar",["abc","def"]]})");
}

TEST_CASE("JSON patch: RFC 6902 appendix A error cases leave the target unchanged") {
  // A.9 test failure
  CHECK(json_patch_error(R"({"baz":"qux"})", R"([{"op":"test","path":"/baz","value":"bar"}])") ==
        R"(operation 0 (test /baz): test failed: value is "qux", expected "bar")");
  // A.12 adding to a nonexistent target
  CHECK(json_patch_error(R"({"foo":"bar"})", R"([{"op":"add","path":"/baz/bat","value":"qux"}])") ==
        "operation 0 (add /baz/bat): path not found");
  // A.13 invalid patch document (duplicate "op"): rejected as soon as the patch text is parsed,
  // and by apply_json_patch when such a document is built in code.
  auto a13 = Document::parse(R"([{"op":"add","path":"/baz","value":"qux","op":"remove"}])");
  REQUIRE_FALSE(a13);
  CHECK(a13.error().message == R"(invalid JSON: duplicate key "op" in /0)");
  Document ops = Document::array();
  json::Value op(rapidjson::kObjectType);
  op.AddMember("op", "add", ops.alloc()).AddMember("path", "/baz", ops.alloc());
  op.AddMember("value", "qux", ops.alloc()).AddMember("op", "remove", ops.alloc());
  ops.root().PushBack(op, ops.alloc());
  Document target = doc(R"({"foo":"bar"})");
  auto r = json::apply_json_patch(target, ops.root());
  REQUIRE_FALSE(r);
  CHECK(r.error().message == R"(operation 0 (add /baz): member "op" appears more than once)");
  CHECK(target.dump() == R"({"foo":"bar"})");
  // A.15 comparing strings and numbers
  CHECK(json_patch_error(R"({"/":9,"~1":10})", R"([{"op":"test","path":"/~01","value":"10"}])") ==
        R"(operation 0 (test /~01): test failed: value is 10, expected "10")");
}

TEST_CASE("JSON patch: errors name the operation index and path, earlier operations roll back") {
  CHECK(json_patch_error(R"({"a":{"c":1},"x":0})",
                         R"([{"op":"add","path":"/x","value":1},{"op":"remove","path":"/a/c"},
                             {"op":"replace","path":"/a/b","value":2}])") ==
        "operation 2 (replace /a/b): path not found");
  CHECK(json_patch_error(R"({"a":[1,2]})", R"([{"op":"add","path":"/a/3","value":1}])") ==
        "operation 0 (add /a/3): array index '3' out of range");
  CHECK(json_patch_error(R"({"a":[1,2]})", R"([{"op":"add","path":"/a/01","value":1}])") ==
        "operation 0 (add /a/01): array index '01' out of range");
  CHECK(json_patch_error(R"({"a":[1,2]})", R"([{"op":"remove","path":"/a/2"}])") ==
        "operation 0 (remove /a/2): path not found");
  CHECK(json_patch_error(R"({"a":1})", R"([{"op":"frob","path":"/a"}])") == R"(operation 0 (frob /a): unknown op "frob")");
  CHECK(json_patch_error(R"({"a":1})", R"([{"op":"add","path":"/b"}])") == R"(operation 0 (add /b): missing "value")");
  CHECK(json_patch_error(R"({"a":1})", R"([{"path":"/b"}])") == R"(operation 0: missing or non-string "op")");
  CHECK(json_patch_error(R"({"a":1})", R"([{"op":"add","value":1}])") ==
        R"(operation 0 (add): missing or non-string "path")");
  CHECK(json_patch_error(R"({"a":1})", R"([{"op":"move","from":"/x","path":"/b"}])") ==
        "operation 0 (move /b): from '/x': path not found");
  CHECK(json_patch_error(R"({"a":{"b":1}})", R"([{"op":"move","from":"/a","path":"/a/b/c"}])") ==
        "operation 0 (move /a/b/c): cannot move '/a' into one of its own children");
  CHECK(json_patch_error(R"({"a":1})", R"([{"op":"remove","path":""}])") ==
        "operation 0 (remove ): cannot remove the whole document");
  CHECK(json_patch_error(R"({"a":1})", R"([{"op":"add","path":"a","value":1}])") ==
        "operation 0 (add a): invalid JSON pointer (must start with '/')");
  CHECK(json_patch_error(R"({"a":1})", R"([7])") == "operation 0: must be an object");
  Document t = doc("{}");
  CHECK_FALSE(json::apply_json_patch(t, doc(R"({"op":"add"})").root()));
}

TEST_CASE("JSON patch: copy, root replacement, move within and across arrays, member order") {
  check_json_patch(R"({"a":{"b":[1,2]}})", R"([{"op":"copy","from":"/a/b","path":"/c"},{"op":"add","path":"/c/0","value":0}])",
                   R"({"a":{"b":[1,2]},"c":[0,1,2]})");
  check_json_patch(R"({"a":1})", R"([{"op":"replace","path":"","value":[1]}])", R"([1])");
  check_json_patch(R"({"a":1})", R"([{"op":"add","path":"","value":{"b":2}}])", R"({"b":2})");
  check_json_patch(R"({"a":[1,2,3],"b":[]})", R"([{"op":"move","from":"/a/0","path":"/b/-"}])",
                   R"({"a":[2,3],"b":[1]})");
  check_json_patch(R"({"a":1})", R"([{"op":"move","from":"/a","path":"/a"}])", R"({"a":1})");
  check_json_patch(R"({"a":[1,2]})", R"([{"op":"add","path":"/a/2","value":3}])", R"({"a":[1,2,3]})");
  Document t = doc(R"({"a":1,"b":2,"c":3})");
  REQUIRE(json::apply_json_patch(t, doc(R"([{"op":"remove","path":"/a"},{"op":"replace","path":"/c","value":4}])").root()));
  CHECK(t.dump() == R"({"b":2,"c":4})");
  // Numbers compare by value and objects regardless of member order in "test".
  check_json_patch(R"({"a":{"x":1.0,"y":[true,null]}})", R"([{"op":"test","path":"/a","value":{"y":[true,null],"x":1}}])",
                   R"({"a":{"x":1,"y":[true,null]}})");
  // Keys with "~" and "/" through escapes.
  check_json_patch(R"({"metadata":{"labels":{}}})",
                   R"([{"op":"add","path":"/metadata/labels/app.kubernetes.io~1name","value":"x"}])",
                   R"({"metadata":{"labels":{"app.kubernetes.io/name":"x"}}})");
}
