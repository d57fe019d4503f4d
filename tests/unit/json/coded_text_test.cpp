#include <catch2/catch.hpp>

#include <string>

#include "core/json/coded_text.h"
#include "core/json/field_mask.h"
#include "core/json/json.h"

namespace json = unitrain::json;
using json::CodedText;
using json::Document;
using json::StringCodes;

namespace {

const char* const kCodedPod =
    R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"job-worker-0","namespace":"default",)"
    R"("labels":{"training.kubeflow.org/job-name":"job","odd":"a\"b\\c\u0001\u001f\tn\u00e9"},)"
    R"("annotations":{"\u0002key":"training.kubeflow.org/job-name"}},)"
    R"("spec":{"nodeName":"n1"},"status":{"phase":"Running","restarts":3,"ratio":0.25,"big":18446744073709551615,)"
    R"("neg":-12,"ready":true,"none":null,"conditions":[{"type":"Ready","status":"True"}]}})";

StringCodes coded_pod_codes() {
  return StringCodes({"training.kubeflow.org/job-name", "metadata", "namespace", "status", "Ready", "True", "Running"});
}

}  // namespace

TEST_CASE("coded text: reads back as the document it was written from, with codes or without") {
  const auto doc = Document::parse(kCodedPod).value();
  rapidjson::StringBuffer scratch;
  const StringCodes plain;
  const CodedText plain_text = CodedText::write(doc.root(), plain, scratch);
  CHECK(plain_text.bytes() == doc.dump());

  const StringCodes codes = coded_pod_codes();
  const CodedText coded = CodedText::write(doc.root(), codes, scratch);
  CHECK(coded.size() < plain_text.size());
  CHECK(codes.expand(coded.bytes()) == doc.dump());
  CHECK(coded.read(codes).value().dump() == doc.dump());
  // Text written before the codes were known holds none: it reads with them too.
  CHECK(plain_text.read(codes).value().dump() == doc.dump());

  const auto fields = json::FieldMask::parse("metadata{name},status{phase}").value();
  CHECK(coded.read(codes, &fields).value().dump() == R"({"metadata":{"name":"job-worker-0"},"status":{"phase":"Running"}})");
}

TEST_CASE("coded text: a document's own text is read without the duplicate-key check text from elsewhere gets") {
  // A document built in code may repeat a member (RapidJSON's AddMember does not look); its own
  // text reads back as that document, while the same bytes from elsewhere are refused. So the
  // reader of own text skips the walk for repeated names that every other parse makes.
  Document doc = Document::object();
  doc.root().AddMember("a", 1, doc.alloc());
  doc.root().AddMember("a", 2, doc.alloc());
  rapidjson::StringBuffer scratch;
  const StringCodes codes;
  const CodedText text = CodedText::write(doc.root(), codes, scratch);
  REQUIRE(text.bytes() == R"({"a":1,"a":2})");
  auto own = text.read(codes);
  REQUIRE(own);
  CHECK(own->root().MemberCount() == 2);

  auto wire = Document::parse(text.bytes());
  REQUIRE_FALSE(wire);
  CHECK(wire.error().message == R"(invalid JSON: duplicate key "a" in /)");
}

TEST_CASE("coded text: a parse writes one member's text in the same pass, byte for byte what write() gives") {
  const std::string frame = std::string(R"({"type":"MODIFIED","object":)") + kCodedPod + "}";
  const auto mask = json::FieldMask::parse("type,object{apiVersion,kind,metadata{name,labels},status}").value();
  const StringCodes codes = coded_pod_codes();
  rapidjson::StringBuffer scratch;
  CodedText text;
  auto parsed = CodedText::parse_writing_member(frame, mask, "object", codes, scratch, text);
  REQUIRE(parsed);
  const auto alone = Document::parse(frame, mask).value();
  CHECK(parsed->dump() == alone.dump());
  const json::Value& object = alone.root()["object"];
  rapidjson::StringBuffer other;
  CHECK(text.bytes() == CodedText::write(object, codes, other).bytes());
  CHECK(text.read(codes).value().dump() == json::dump(object));

  // A scalar member is written too; a member the mask drops, or none, leaves the text empty.
  REQUIRE(CodedText::parse_writing_member(frame, mask, "type", codes, scratch, text));
  CHECK(text.bytes() == R"("MODIFIED")");
  REQUIRE(CodedText::parse_writing_member(frame, json::FieldMask::parse("type").value(), "object", codes, scratch, text));
  CHECK(text.empty());
}

TEST_CASE("coded text: a parse that writes a member still refuses what Document::parse refuses") {
  const auto mask = json::FieldMask::parse("type,object{metadata}").value();
  const StringCodes codes = coded_pod_codes();
  rapidjson::StringBuffer scratch;
  CodedText text;
  auto nested = CodedText::parse_writing_member(R"({"type":"ADDED","object":{"metadata":{"name":"a","name":"b"}}})", mask,
                                                "object", codes, scratch, text);
  REQUIRE_FALSE(nested);
  CHECK(nested.error().message == R"(invalid JSON: duplicate key "name" in /object/metadata)");
  // The member itself repeated: written once, then refused.
  auto twice = CodedText::parse_writing_member(R"({"type":"ADDED","object":{"metadata":{}},"object":{"metadata":{"x":1}}})",
                                               mask, "object", codes, scratch, text);
  REQUIRE_FALSE(twice);
  CHECK(twice.error().message == R"(invalid JSON: duplicate key "object" in /)");
  auto broken =
      CodedText::parse_writing_member(R"({"type":"ADDED","object":{"metadata":)", mask, "object", codes, scratch, text);
  REQUIRE_FALSE(broken);
  CHECK(broken.error().message.find("invalid JSON at offset") == 0);
}
