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

TEST_CASE("equality ignores member order; canonical sorts keys") {
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
