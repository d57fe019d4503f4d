#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/json/json.h"
#include "tests/support/json.h"
#include "tests/support/skip.h"

using unitrain::json::Document;
namespace json = unitrain::json;
namespace fs = std::filesystem;

namespace {

using unitrain::testing::doc;
using unitrain::testing::skip;

std::string yaml_to_json(std::string_view yaml) {
  auto docs = json::parse_yaml(yaml);
  INFO(yaml);
  if (!docs) FAIL(docs.error().message);
  REQUIRE(docs->size() == 1);
  return docs->front().dump();
}

std::string yaml_error(std::string_view yaml) {
  auto docs = json::parse_yaml(yaml);
  INFO(yaml);
  REQUIRE_FALSE(docs);
  return docs.error().message;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whitespace outside strings removed: what a compact writer must produce byte for byte.
std::string minify(std::string_view text) {
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\') out += text[++i];
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
      out += c;
    } else if (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
      out += c;
    }
  }
  return out;
}

// Same value and same JSON types (equal() treats 1 and 1.0 alike; canonical text does not).
void check_round_trip(const Document& d) {
  const std::string yaml = json::to_yaml(d.root());
  auto back = json::parse_yaml(yaml);
  INFO("json " << d.dump() << "\nyaml\n" << yaml);
  if (!back) FAIL(back.error().message);
  REQUIRE(back->size() == 1);
  CHECK(json::canonical(back->front().root()) == json::canonical(d.root()));
}

}  // namespace

TEST_CASE("yaml: plain scalars follow the YAML 1.2 core schema") {
  CHECK(yaml_to_json("a: ~\nb:\nc: null\nd: Null\ne: NULL") == R"({"a":null,"b":null,"c":null,"d":null,"e":null})");
  CHECK(yaml_to_json("a: true\nb: True\nc: TRUE\nd: false\ne: False\nf: FALSE") ==
        R"({"a":true,"b":true,"c":true,"d":false,"e":false,"f":false})");
  CHECK(yaml_to_json("a: yes\nb: no\nc: on\nd: off\ne: y") == R"({"a":"yes","b":"no","c":"on","d":"off","e":"y"})");
  CHECK(yaml_to_json("a: 1\nb: -17\nc: +3\nd: 0x1F\ne: 0o17\nf: 010\ng: 0") ==
        R"({"a":1,"b":-17,"c":3,"d":31,"e":15,"f":10,"g":0})");
  CHECK(yaml_to_json("a: 9223372036854775807\nb: -9223372036854775808\nc: 18446744073709551615") ==
        R"({"a":9223372036854775807,"b":-9223372036854775808,"c":18446744073709551615})");
  // Beyond 64 bits: a double, as Kubernetes' decoder does.
  CHECK(yaml_to_json("a: 123456789012345678901234567890") == R"({"a":1.2345678901234568e29})");
  CHECK(yaml_to_json("a: 1.5\nb: -0.25\nc: 1e3\nd: 1E3\ne: .5\nf: 2.\ng: 6.02e+23") ==
        R"({"a":1.5,"b":-0.25,"c":1000.0,"d":1000.0,"e":0.5,"f":2.0,"g":6.02e23})");
  CHECK(yaml_to_json("a: 1Gi\nb: 500m\nc: 0x\nd: 1e\ne: 1_000\nf: 1:20\ng: 2026-11-29\nh: .\ni: -x") ==
        R"({"a":"1Gi","b":"500m","c":"0x","d":"1e","e":"1_000","f":"1:20","g":"2026-11-29","h":".","i":"-x"})");
}

TEST_CASE("yaml: quoted, tagged and block scalars are strings") {
  CHECK(yaml_to_json("a: \"1\"\nb: 'true'\nc: \"\"\nd: !!str 5\ne: '~'\nf: |\n  line1\n  line2\ng: >-\n  folded\n  text\n") ==
        R"({"a":"1","b":"true","c":"","d":"5","e":"~","f":"line1\nline2\n","g":"folded text"})");
  CHECK(yaml_to_json("\"a: b\": \"c\\td\\u00e9\"") == "{\"a: b\":\"c\\td\xc3\xa9\"}");
  CHECK(yaml_to_json("1: one\ntrue: t\n~: n") == R"({"1":"one","true":"t","null":"n"})");
}

TEST_CASE("yaml: multi-document streams skip empty documents") {
  auto docs = json::parse_yaml("---\n---\na: 1\n---\n# only a comment\n---\n- x\n- y\n...\n---\nnull\n");
  REQUIRE(docs);
  REQUIRE(docs->size() == 2);
  CHECK((*docs)[0].dump() == R"({"a":1})");
  CHECK((*docs)[1].dump() == R"(["x","y"])");
  auto empty = json::parse_yaml("");
  REQUIRE(empty);
  CHECK(empty->empty());
}

TEST_CASE("yaml: anchors, aliases and merge keys are resolved") {
  CHECK(yaml_to_json("base: &b {cpu: 1, memory: 2Gi}\nlimits: *b\nlist: [&x 7, *x]") ==
        R"({"base":{"cpu":1,"memory":"2Gi"},"limits":{"cpu":1,"memory":"2Gi"},"list":[7,7]})");
  CHECK(yaml_to_json("d: &d {a: 1, b: 2}\ne: {<<: *d, b: 3, c: 4}") ==
        R"({"d":{"a":1,"b":2},"e":{"b":3,"c":4,"a":1}})");
  CHECK(yaml_to_json("x: &x {a: 1}\ny: &y {a: 2, b: 2}\nz:\n  <<: [*x, *y]\n") ==
        R"({"x":{"a":1},"y":{"a":2,"b":2},"z":{"a":1,"b":2}})");
}

TEST_CASE("yaml: errors name line and column, never crash") {
  CHECK(yaml_error("a: [1, 2") == "yaml: line 1, column 1: end of sequence flow not found");
  CHECK(yaml_error("a:\n\tb: 1") == "yaml: line 2, column 3: illegal map value");
  CHECK(yaml_error("a: 1\nb: 2\na: 3") == R"(yaml: line 3, column 1: duplicate key "a")");
  CHECK(yaml_error("a:\n  b: 1\n c: 2") == "yaml: line 3, column 2: end of map not found");
  CHECK(yaml_error("a: .inf") == "yaml: line 1, column 4: .inf has no JSON representation");
  CHECK(yaml_error("a: [x, -.Inf]").find(".Inf has no JSON representation") != std::string::npos);
  CHECK(yaml_error("a: .nan").find("line 1, column 4") != std::string::npos);
  CHECK(yaml_error("? [a, b]\n: c").find("mapping key must be a scalar") != std::string::npos);
  CHECK(yaml_error("a: *nope").find("line 1") != std::string::npos);
  CHECK(yaml_error("a: 'unterminated").find("yaml: line 1") == 0);
  // Every truncation of a realistic manifest either parses or fails cleanly.
  const std::string manifest =
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: \"mnist\"\n  labels: {a: b, c: 'd'}\n"
      "spec:\n  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n      template:\n        spec:\n"
      "          containers:\n            - name: pytorch\n              args: [\"--epochs\", '1']\n"
      "              command: |\n                python train.py\n---\nkind: X\n";
  size_t failures = 0;
  for (size_t n = 0; n <= manifest.size(); ++n) {
    auto r = json::parse_yaml(std::string_view(manifest).substr(0, n));
    if (!r) {
      ++failures;
      CHECK(r.error().message.rfind("yaml", 0) == 0);
    }
  }
  CHECK(failures > 0);
}

TEST_CASE("yaml: to_yaml output re-parses to the same JSON") {
  const char* tricky[] = {"", " lead", "trail ", "yes", "No", "on", "true", "False", "1", "-1", "+1", "1.5", "1e3",
                          ".5", "0x10", "0o7", "null", "~", "a: b", "a:b", "ends:", "#c", "a #c", "- x", "-", "?",
                          "multi\nline\n", "tab\there", "quote\"s", "back\\slash", "déjà vu", "<<", "*alias",
                          "&anchor", "!tag", "%x", "@at", "`tick", "1:20", "1_000", "2026-11-29", ".inf", ".nan",
                          "{a}", "[a]", "a,b", "'", "ctl\x01\x7f", "---", "...", "app.kubernetes.io/name", "500m",
                          "1Gi", "https://example.com:8443/x?y=z&w", "a\r\nb"};
  for (const char* s : tricky) {
    Document d = Document::object();
    REQUIRE(json::set_string(d, "/v", s));
    REQUIRE(json::set_string(d, "/keys", "x"));
    d.root().AddMember(json::str(s, d.alloc()), json::Value(1), d.alloc());
    check_round_trip(d);
    Document arr = Document::array();
    arr.root().PushBack(json::str(s, arr.alloc()), arr.alloc());
    check_round_trip(arr);
  }
  check_round_trip(doc(R"({"a":[[1,[2,{}]],{"b":[],"c":{"d":[{"e":null,"f":[true,false]}]}}],"n":-0.5,
                         "big":18446744073709551615,"min":-9223372036854775808,"f":1e300,"tiny":5e-324,"one":1.0})"));
  check_round_trip(doc("[]"));
  check_round_trip(doc("{}"));
  check_round_trip(doc("42"));
  check_round_trip(doc(R"("yes")"));
  CHECK(json::to_yaml(doc(R"({"metadata":{"name":"a","labels":{"x":"1"}},"items":[{"k":"v","count":2},[1,2]],"e":[]})").root()) ==
        "metadata:\n  name: a\n  labels:\n    x: \"1\"\nitems:\n  - k: v\n    count: 2\n  - - 1\n    - 2\ne: []\n");
}

TEST_CASE("yaml: every reference example converts to JSON and back unchanged") {
  const fs::path root = UNITRAIN_REFERENCE_EXAMPLES;
  if (!fs::is_directory(root)) {
    return skip("upstream examples not found at " + root.string());
  }
  WARN("ran against the upstream example(s) in " << root);
  size_t files = 0, documents = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const auto ext = entry.path().extension();
    if (!entry.is_regular_file() || (ext != ".yaml" && ext != ".yml")) continue;
    ++files;
    INFO(entry.path());
    auto docs = json::parse_yaml(read_file(entry.path()));
    if (!docs) FAIL(docs.error().message);
    for (const Document& d : *docs) {
      ++documents;
      auto reparsed = Document::parse(d.dump());
      REQUIRE(reparsed);
      CHECK(reparsed->dump() == d.dump());
      check_round_trip(*reparsed);
      // Decode -> modify -> encode: changing one field in place disturbs no other byte.
      if (auto name = json::get_string(reparsed->root(), "/metadata/name")) {
        const std::string original(*name);
        REQUIRE(json::set_string(*reparsed, "/metadata/name", "changed-by-test"));
        CHECK(json::get_string(reparsed->root(), "/metadata/name") == "changed-by-test");
        REQUIRE(json::set_string(*reparsed, "/metadata/name", original));
        CHECK(reparsed->dump() == d.dump());
      }
    }
  }
  CHECK(files > 0);
  CHECK(documents >= files);
}

TEST_CASE("full-size pod: parse, set one field, dump changes only that field") {
  const std::string text = read_file(fs::path(UNITRAIN_SOURCE_DIR) / "tests/unit/json/testdata/pod-full.json");
  REQUIRE(text.size() > 4000);
  const std::string compact = minify(text);
  auto pod = Document::parse(text);
  REQUIRE(pod);
  CHECK(pod->dump() == compact);

  REQUIRE(json::set_string(*pod, "/spec/containers/0/image", "kubeflow/pytorch-dist-mnist:v2"));
  std::string expected = compact;
  const std::string from = R"("image":"kubeflow/pytorch-dist-mnist:latest")";
  expected.replace(expected.find(from), from.size(), R"("image":"kubeflow/pytorch-dist-mnist:v2")");
  CHECK(pod->dump() == expected);

  // The same through a patch, and through YAML and back.
  Document patched = Document::parse(text).value();
  REQUIRE(json::apply_json_patch(patched, doc(R"([{"op":"replace","path":"/spec/containers/0/image",
                                                "value":"kubeflow/pytorch-dist-mnist:v2"}])").root()));
  CHECK(patched.dump() == expected);
  auto via_yaml = json::parse_yaml(json::to_yaml(pod->root()));
  REQUIRE(via_yaml);
  CHECK(via_yaml->front().dump() == expected);

  // Every truncation of the pod is an error with an offset, never a crash or a partial value.
  for (size_t n = 0; n + 1 < compact.size(); n += 7) {
    auto r = Document::parse(std::string_view(compact).substr(0, n));
    REQUIRE_FALSE(r);
    REQUIRE(r.error().message.rfind("invalid JSON at offset ", 0) == 0);
  }
}
