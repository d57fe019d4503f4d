#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "core/json/json.h"

using unitrain::json::Document;
namespace json = unitrain::json;

TEST_CASE("parse and dump keep member order and unknown fields") {
  const std::string text = R"({"z":1,"a":{"x-unknown":[1,2,{"k":"v"}],"b":null},"m":1.5,"t":true})";
  auto doc = Document::parse(text);
  REQUIRE(doc);
  CHECK(doc->dump() == text);
}

TEST_CASE("parse errors name the offset and reason") {
  auto doc = Document::parse(R"({"a":1,)");
  REQUIRE_FALSE(doc);
  CHECK(doc.error().message.find("offset 7") != std::string::npos);
  auto trailing = Document::parse(R"({"a":1} x)");
  REQUIRE_FALSE(trailing);
  CHECK(trailing.error().message.find("offset 8") != std::string::npos);
}

TEST_CASE("pointer get and set") {
  auto doc = Document::parse(R"({"metadata":{"name":"n","labels":{"a/b":"c"}},"items":[{"v":1}]})").value();
  CHECK(json::get_string(doc.root(), "/metadata/name") == "n");
  CHECK(json::get_string(doc.root(), "/metadata/labels/a~1b") == "c");
  CHECK(json::get_int(doc.root(), "/items/0/v") == 1);
  CHECK_FALSE(json::get_int(doc.root(), "/items/1/v"));
  CHECK_FALSE(json::get_string(doc.root(), "/metadata/name/x"));
  REQUIRE(json::set_string(doc, "/spec/template/metadata/name", "p"));
  CHECK(json::get_string(doc.root(), "/spec/template/metadata/name") == "p");
  auto bad = json::set_int(doc, "/metadata/name/x", 1);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "/metadata/name: is not an object or array");
  CHECK(json::remove(doc, "/metadata/labels/a~1b"));
  CHECK_FALSE(json::remove(doc, "/metadata/labels/a~1b"));
}

TEST_CASE("pointer escapes: ~1 and ~0 decode, in that order, any other tilde stays as it is") {
  auto doc = Document::parse(R"({"a/b":{"c~d":1},"m~n":2,"~1":3,"x~2y":4,"t~":5,"~":6,"a":{"b":7}})").value();
  const json::Value& r = doc.root();
  CHECK(json::get_int(r, "/a~1b/c~0d") == 1);  // two escaped tokens in a row
  CHECK(json::get_int(r, "/m~0n") == 2);
  CHECK(json::get_int(r, "/~01") == 3);  // "~0" then "1": the key "~1", not "/"
  CHECK(json::get_int(r, "/x~2y") == 4);
  CHECK(json::get_int(r, "/t~") == 5);
  CHECK(json::get_int(r, "/~") == 6);
  CHECK(json::get_int(r, "/a/b") == 7);
  CHECK_FALSE(json::get_int(r, "/a~1b"));  // an object, not a number
  CHECK_FALSE(json::find(r, "/a~1c"));
  CHECK(json::split_pointer("/a~1b/~01/x~2y/~/t~0~1") ==
        std::vector<std::string>{"a/b", "~1", "x~2y", "~", "t~/"});

  // Tokens longer than the walker's inline buffer, escaped or not, in one pointer.
  const std::string long_key = std::string(150, 'k') + "/" + std::string(150, 'v');
  const std::string long_plain(200, 'p');
  REQUIRE(json::set_int(doc, "/" + json::escape_pointer_token(long_key) + "/" + long_plain + "/~0", 9));
  CHECK(doc.root()[long_key.c_str()][long_plain.c_str()]["~"].GetInt() == 9);
  CHECK(json::get_int(doc.root(), "/" + json::escape_pointer_token(long_key) + "/" + long_plain + "/~0") == 9);
  CHECK(json::split_pointer("/" + json::escape_pointer_token(long_key) + "/x~1") ==
        std::vector<std::string>{long_key, "x/"});

  REQUIRE(json::set_int(doc, "/a~1b/e~1f~0", 8));
  CHECK(json::find(doc.root(), "/a~1b")->HasMember("e/f~"));
  CHECK(json::get_int(doc.root(), "/a~1b/e~1f~0") == 8);
  auto bad = json::set_int(doc, "/m~0n/x", 1);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "/m~0n: is not an object or array");
  CHECK(json::remove(doc, "/a~1b/c~0d"));
  CHECK_FALSE(json::find(doc.root(), "/a~1b/c~0d"));
  CHECK(json::get_int(doc.root(), "/a~1b/e~1f~0") == 8);
}

TEST_CASE("pointer array indices: digits without leading zeros, in range, no '-' outside JSON patch") {
  auto doc = Document::parse(R"({"items":[10,20,{"v":[1]}],"0":{"1":9}})").value();
  const json::Value& r = doc.root();
  CHECK(json::get_int(r, "/items/0") == 10);
  CHECK(json::get_int(r, "/items/2/v/0") == 1);
  CHECK(json::get_int(r, "/0/1") == 9);  // digits name members of an object
  for (const char* p : {"/items/01", "/items/-", "/items/3", "/items/+1", "/items/-1", "/items/1x", "/items/ 1",
                        "/items/", "/items/4294967296", "/items/99999999999999999999"}) {
    CAPTURE(p);
    CHECK_FALSE(json::find(r, p));
  }
  REQUIRE(json::set_int(doc, "/items/1", 21));
  CHECK(json::get_int(doc.root(), "/items/1") == 21);
  REQUIRE(json::set_int(doc, "/items/2/w", 5));
  CHECK(json::get_int(doc.root(), "/items/2/w") == 5);
  auto out = json::set_int(doc, "/items/3", 1);
  REQUIRE_FALSE(out);
  CHECK(out.error().message == "/items: array index '3' out of range");
  auto dash = json::set_int(doc, "/items/-", 1);
  REQUIRE_FALSE(dash);
  CHECK(dash.error().message == "/items: array index '-' out of range");
  auto nested = json::set_int(doc, "/items/2/v/1/x", 1);
  REQUIRE_FALSE(nested);
  CHECK(nested.error().message == "/items/2/v: array index '1' out of range");
  CHECK_FALSE(json::remove(doc, "/items/3"));
  CHECK_FALSE(json::remove(doc, "/items/00"));
  CHECK(json::remove(doc, "/items/0"));
  CHECK(json::get_int(doc.root(), "/items/0") == 21);
  CHECK(doc.root()["items"].Size() == 2);
}

TEST_CASE("pointer empty segments name the empty key, the empty pointer is the root") {
  auto doc = Document::parse(R"({"":{"":1},"a":{"":2}})").value();
  const json::Value& r = doc.root();
  CHECK(json::find(r, "") == &r);
  CHECK(json::find(r, "/") == &r[""]);
  CHECK(json::get_int(r, "//") == 1);
  CHECK(json::get_int(r, "/a/") == 2);
  CHECK_FALSE(json::find(r, "/a//"));
  CHECK(json::split_pointer("") == std::vector<std::string>{});
  CHECK(json::split_pointer("/") == std::vector<std::string>{""});
  CHECK(json::split_pointer("//x/") == std::vector<std::string>{"", "x", ""});
  REQUIRE(json::set_int(doc, "/b/", 3));
  CHECK(json::dump(doc.root()["b"]) == R"({"":3})");
  CHECK(json::remove(doc, "/a/"));
  CHECK(json::dump(doc.root()["a"]) == "{}");
  REQUIRE(json::set_int(doc, "", 4));
  CHECK(doc.root().GetInt() == 4);
}

TEST_CASE("pointers not starting with '/' find nothing and set nothing") {
  auto doc = Document::parse(R"({"a":{"b":1}})").value();
  for (const char* p : {"a", "a/b", "~1a", " /a"}) {
    CAPTURE(p);
    CHECK_FALSE(json::find(doc.root(), p));
    CHECK_FALSE(json::split_pointer(p));
    CHECK_FALSE(json::remove(doc, p));
  }
  auto bad = json::set_int(doc, "a/b", 2);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "invalid JSON pointer 'a/b': must start with '/'");
  CHECK(json::dump(doc.root()) == R"({"a":{"b":1}})");
}

TEST_CASE("string_at and strings_at give Kubernetes' zero values for missing or mistyped fields") {
  auto doc = Document::parse(R"({"spec":{"name":"n","count":3,"verbs":["get",1,"list"],"empty":[]}})");
  REQUIRE(doc);
  CHECK(json::string_at(doc->root(), "/spec/name") == "n");
  CHECK(json::string_at(doc->root(), "/spec/count").empty());    // not a string
  CHECK(json::string_at(doc->root(), "/spec/missing").empty());  // absent
  CHECK(json::strings_at(doc->root(), "/spec/verbs") == std::vector<std::string>{"get", "list"});
  CHECK(json::strings_at(doc->root(), "/spec/empty").empty());
  CHECK(json::strings_at(doc->root(), "/spec/name").empty());  // not an array
  CHECK(json::strings_at(doc->root(), "/nothing").empty());
}

TEST_CASE("str copies a view, and an empty view with no data becomes the empty string") {
  Document doc = Document::object();
  json::Value empty = json::str(std::string_view{}, doc.alloc());  // data() is null: RapidJSON asserts on it
  REQUIRE(empty.IsString());
  CHECK(json::view(empty).empty());
  std::string text = "abc";
  json::Value copy = json::str(text, doc.alloc());
  text[0] = 'x';
  CHECK(json::view(copy) == "abc");
}

TEST_CASE("equality ignores member order, canonical sorts keys") {
  auto a = Document::parse(R"({"a":1,"b":[1,{"x":2,"y":3}]})").value();
  auto b = Document::parse(R"({"b":[1,{"y":3,"x":2}],"a":1.0})").value();
  CHECK(a == b);
  CHECK(json::canonical(b.root()) == R"({"a":1.0,"b":[1,{"x":2,"y":3}]})");
  auto c = Document::parse(R"({"b":[{"y":3,"x":2},1],"a":1})").value();
  CHECK_FALSE(a == c);
}

TEST_CASE("copies are deep and moved-from documents stay usable") {
  auto a = Document::parse(R"({"a":{"b":1}})").value();
  Document b = a;
  REQUIRE(json::set_int(b, "/a/b", 2));
  CHECK(json::get_int(a.root(), "/a/b") == 1);
  Document c = std::move(a);
  CHECK(a.root().IsNull());
  CHECK(json::get_int(c.root(), "/a/b") == 1);
}

TEST_CASE("parse rejects duplicate keys, naming the key and the object") {
  auto root = Document::parse(R"({"a":1,"b":2,"a":3})");
  REQUIRE_FALSE(root);
  CHECK(root.error().message == R"(invalid JSON: duplicate key "a" in /)");
  auto nested = Document::parse(R"({"spec":{"containers":[{"name":"x"},{"name":"y","env":[{"name":"A","name":"B"}]}]}})");
  REQUIRE_FALSE(nested);
  CHECK(nested.error().message == R"(invalid JSON: duplicate key "name" in /spec/containers/1/env/0)");
  std::string wide = "{";
  for (int i = 0; i < 100; ++i) wide += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  wide += R"("k~/7":0,"k~/7":1})";
  auto large = Document::parse(wide);
  REQUIRE_FALSE(large);
  CHECK(large.error().message == R"(invalid JSON: duplicate key "k~/7" in /)");
  CHECK(Document::parse(R"({"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]})"));
}

TEST_CASE("a document's pool is sized to its content and not RapidJSON's 64 KiB chunk") {
  std::string text = R"({"metadata":{"name":"job-worker-0","labels":{"training.kubeflow.org/job-name":"job"}},"items":[)";
  for (int i = 0; i < 40; ++i) text += fmt::format(R"({}{{"name":"container-number-{}","image":"registry/image:tag"}})", i ? "," : "", i);
  text += "]}";
  auto parsed = Document::parse(text);
  REQUIRE(parsed);
  // Values take 16 bytes and members 32, so a document of short strings holds about twice its
  // text; RapidJSON's own pool would start at 64 KiB.
  CHECK(parsed->allocated_bytes() <= 4 * text.size());
  auto copy = Document::copy_of(parsed->root());
  CHECK(copy.allocated_bytes() <= parsed->allocated_bytes());
  CHECK(copy == *parsed);
  Document built = Document::object();
  REQUIRE(json::set_string(built, "/a", "b"));
  CHECK(built.allocated_bytes() <= 1024);
  Document assigned;
  assigned = copy;
  CHECK(assigned.allocated_bytes() == copy.allocated_bytes());
  CHECK(assigned == copy);
}
