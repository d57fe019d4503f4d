#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/json/json.h"
#include "tests/fuzz/json/fuzz_body.h"

namespace json = unitrain::json;
namespace fs = std::filesystem;

namespace {

void run(std::string_view input) { unitrain::fuzz::json_yaml_one_input(reinterpret_cast<const uint8_t*>(input.data()), input.size()); }

std::string repeat(std::string_view s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

std::string nested_arrays(size_t depth) { return repeat("[", depth) + repeat("]", depth); }

}  // namespace

TEST_CASE("replay: the seed corpus runs through every parser and patch") {
  const fs::path dir = fs::path(UNITRAIN_SOURCE_DIR) / "tests/fuzz/json/corpus";
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    INFO(entry.path());
    run(ss.str());
    ++files;
  }
  CHECK(files >= 5);
}

TEST_CASE("replay: JSON nesting is bounded at parse, so nothing recurses without limit") {
  auto ok = json::Document::parse(nested_arrays(json::kMaxDepth));
  REQUIRE(ok);
  CHECK(json::dump(ok->root()).size() == 2 * json::kMaxDepth);
  CHECK(json::canonical(ok->root()).size() == 2 * json::kMaxDepth);
  CHECK(json::equal(ok->root(), json::Document(*ok).root()));
  // yaml-cpp itself stops reading at roughly 500 levels: deeper YAML is an error, not a crash.
  auto deep_yaml = json::parse_yaml(json::to_yaml(ok->root()));
  if (!deep_yaml) CHECK(deep_yaml.error().message.rfind("yaml: line ", 0) == 0);
  auto moderate = json::Document::parse(nested_arrays(300));
  REQUIRE(moderate);
  auto moderate_yaml = json::parse_yaml(json::to_yaml(moderate->root()));
  REQUIRE(moderate_yaml);
  CHECK(moderate_yaml->front() == *moderate);

  auto too_deep = json::Document::parse(nested_arrays(json::kMaxDepth + 1));
  REQUIRE_FALSE(too_deep);
  CHECK(too_deep.error().message == "invalid JSON at offset 1000: nesting deeper than 1000 levels");

  for (const std::string& deep : {nested_arrays(10000), repeat("[", 10000), repeat(R"({"a":)", 10000),
                                  repeat(R"({"a":[)", 100000)}) {
    auto r = json::Document::parse(deep);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("nesting deeper than 1000 levels") != std::string::npos);
    run(deep);
  }
}

TEST_CASE("replay: YAML nesting, alias cycles and alias bombs are errors, not crashes") {
  for (const std::string& deep : {repeat("[", 10000) + repeat("]", 10000), repeat("{a: ", 10000),
                                  repeat("- ", 5000) + "x"}) {
    auto r = json::parse_yaml(deep);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.rfind("yaml", 0) == 0);
    run(deep);
  }
  std::string block;
  for (int i = 0; i < 3000; ++i) block += std::string(static_cast<size_t>(i), ' ') + "k:\n";
  CHECK_FALSE(json::parse_yaml(block));

  auto cycle = json::parse_yaml("a: &x [*x]");
  REQUIRE_FALSE(cycle);
  CHECK(cycle.error().message == "yaml: line 1, column 8: alias refers to an unfinished anchor (recursive alias)");

  // yaml-cpp's own LoadAll never returns on these; our event loop reports them.
  for (const char* stuck : {"{}, {}", "[], x", "\"x\", y", "{a: b},", "[]\n,"}) {
    auto r = json::parse_yaml(stuck);
    INFO(stuck);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("unexpected content after the document") != std::string::npos);
  }

  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    std::string prev(1, static_cast<char>(c - 1));
    bomb += std::string(1, c) + ": &" + std::string(1, c) + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev +
            ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n";
  }
  auto laughs = json::parse_yaml(bomb);
  REQUIRE_FALSE(laughs);
  CHECK(laughs.error().message.find("more than 1000000 values") != std::string::npos);
}

TEST_CASE("replay: hostile bytes give errors with positions") {
  using namespace std::string_literals;
  const std::string inputs[] = {
      "",  "\0"s, "{}\0junk"s, "[1,2", "{\"a\":", "\"\\ud800\"", "\"\\u12\"", "\xff\xfe{}", "\xef\xbb\xbf{}",
      "1e400", "-", "01", "[1,]", "{\"a\" 1}", "\"tab\there\"", "nul\0l"s, "a:\n\tb: 1", "a: [1, 2", "a: b: c",
      "'unterminated", "%YAML 9.9\n--- a", "!!binary x", "? a\n? a", "*unknown", "&a &b x", "a: !!int x",
      "{\"a\":1}\n[{\"op\":\"remove\",\"path\":\"/a/b/c\"}]", "{\"a\":1}\n{\"a\":{\"$patch\":\"delete\"}}",
      "{\"a\":[1]}\n[{\"op\":\"add\",\"path\":\"/a/99999999999999999999\",\"value\":1}]",
      "{\"spec\":{\"containers\":[1,{\"name\":\"x\"}]}}\n{\"spec\":{\"containers\":[{\"name\":\"x\",\"$patch\":\"delete\"}]}}",
      "{\"a\":1,\"a\":2}\n{\"a\":null}", "1e-999999999999", "9Ei", "-0.0000000000000000000001Ki", "1e2147483647",
      "1e-2147483648", "+.5E-3", "[1e-1293389641,0.5]", "1234567890123456789012e-1293389641",
      "0.000000000000000000000000001e+2147483600"};
  for (const std::string& in : inputs) {
    INFO(in);
    run(in);
  }
  auto embedded = json::Document::parse("{}\0junk"s);
  REQUIRE_FALSE(embedded);
  CHECK(embedded.error().message.rfind("invalid JSON at offset 2: ", 0) == 0);
  // Numbers are converted exactly (std::from_chars), underflow is zero, overflow is an error.
  auto tiny = json::Document::parse("[1e-1293389641,0.1,-1e-99999,1e-400,5e-324,-0]");
  REQUIRE(tiny);
  CHECK(tiny->dump() == "[0.0,0.1,-0.0,0.0,5e-324,0]");
  auto exact = json::Document::parse("[53559753755974936348,2.000000000000105e32,18446744073709551616,0.30000000000000004]");
  REQUIRE(exact);
  auto reread = json::Document::parse(exact->dump());
  REQUIRE(reread);
  CHECK(reread->dump() == exact->dump());
  CHECK(json::canonical(reread->root()) == json::canonical(exact->root()));
  auto huge = json::Document::parse(R"({"a":[1,1e99999]})");
  REQUIRE_FALSE(huge);
  CHECK(huge.error().message == "invalid JSON at offset 8: Number too big to be stored in double.");
  auto big = json::Document::parse("1e400");
  REQUIRE_FALSE(big);
  CHECK(big.error().message.rfind("invalid JSON at offset 0: ", 0) == 0);
}
