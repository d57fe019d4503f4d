#include <catch2/catch.hpp>

#include <limits>

#include "core/api/quantity.h"

using unitrain::api::Quantity;
namespace json = unitrain::json;

namespace {

Quantity Q(std::string_view text) {
  auto q = Quantity::parse(text);
  INFO(text);
  if (!q) FAIL(q.error().message);
  return *q;
}

std::string canonical(std::string_view text) { return Q(text).to_string(); }

}  // namespace

TEST_CASE("quantity: canonical form matches Kubernetes' String()") {
  const std::pair<const char*, const char*> cases[] = {
      {"0", "0"},         {"-0", "0"},          {"0Ki", "0"},           {"0.000", "0"},
      {"1", "1"},         {"+1", "1"},          {"-1", "-1"},           {"1.0", "1"},
      {"0.1", "100m"},    {"1.5", "1500m"},     {"100m", "100m"},       {"1000m", "1"},
      {"1500m", "1500m"}, {".5", "500m"},       {"5.", "5"},            {"0.5m", "500u"},
      {"1k", "1k"},       {"1000", "1k"},       {"1500", "1500"},       {"12000", "12k"},
      {"1M", "1M"},       {"1000k", "1M"},      {"1000M", "1G"},        {"1G", "1G"},
      {"1T", "1T"},       {"1P", "1P"},         {"1E", "1E"},           {"1Ki", "1Ki"},
      {"1024", "1024"},   {"1.5Ki", "1536"},    {"0.5Ki", "512"},       {"2048Ki", "2Mi"},
      {"1536Mi", "1536Mi"}, {"1Gi", "1Gi"},     {"1024Mi", "1Gi"},      {"100Ki", "100Ki"},
      {"1Ti", "1Ti"},     {"1Pi", "1Pi"},       {"1Ei", "1Ei"},         {"-1Ki", "-1Ki"},
      {"-1023", "-1023"}, {"1.1Gi", "1181116006400m"}, {"1e3", "1e3"},  {"1E3", "1e3"},
      {"1e+3", "1e3"},    {"1.5e3", "1500"},    {"12e6", "12e6"},       {"1e-3", "1e-3"},
      {"1e0", "1"},       {"100e-3", "100e-3"}, {"1n", "1n"},           {"1u", "1u"},
      {"100u", "100u"},   {"0.1n", "1n"},       {"1.5n", "2n"},         {"-1.5n", "-2n"},
      {"0.0000000001", "1n"}, {"1.000000001", "1000000001n"}, {"007", "7"}, {"10.50", "10500m"},
      {"300Mi", "300Mi"}, {"307200Ki", "300Mi"}, {"1025024Mi", "1001Gi"}, {"5000m", "5"}, {"0.001T", "1G"},
      {"1.08", "1080m"},  {"1080000000n", "1080m"}, {"80e-3", "80e-3"}, {"300e6", "300e6"}, {".001e12", "1e9"},
      {"0.001e0", "1e-3"}, {"1000e-12", "1e-9"}, {"00", "0"}, {"1234567M", "1234567M"}, {"1.", "1"},
      {"1.G", "1G"}, {"100.035k", "100035"}, {"1.3E+6", "1300e3"}, {"1025", "1025"},
  };
  for (const auto& [in, out] : cases) {
    INFO(in);
    CHECK(canonical(in) == out);
  }
}

TEST_CASE("quantity: formats follow the suffix") {
  CHECK(Q("1Ki").format() == Quantity::Format::BinarySI);
  CHECK(Q("1k").format() == Quantity::Format::DecimalSI);
  CHECK(Q("1e3").format() == Quantity::Format::DecimalExponent);
  CHECK(Q("1").format() == Quantity::Format::DecimalSI);
  // A binary amount below one unit becomes DecimalSI, as Kubernetes does.
  CHECK(Q("0.0001Ki").format() == Quantity::Format::DecimalSI);
  CHECK(canonical("0.0001Ki") == "102400u");
}

TEST_CASE("quantity: binary amounts beyond 2^63-1 units are capped, large decimal ones stay exact") {
  CHECK(canonical("8Ei") == "9223372036854775807");
  CHECK(canonical("9Ei") == "9223372036854775807");
  CHECK(canonical("9223372036854775807Ki") == "9223372036854775807");
  CHECK(canonical("-9Ei") == "-9223372036854775807");
  CHECK(canonical("12E") == "12E");
  CHECK(canonical("1000E") == "1e21");  // DecimalSI has no suffix beyond E
  CHECK(canonical("9223372036854775808") == "9223372036854775808");
  CHECK(canonical("-100E") == "-100E");
  CHECK(canonical("1e27") == "1e27");
  CHECK(canonical("0.00000000000000000000000000000000000000000000000000000000000000000000000001") == "1n");
  CHECK(canonical("0.00000012345") == "124n");
  CHECK(canonical("3.001n") == "4n");
  CHECK(canonical(".000000000001Ki") == "2n");
  CHECK(canonical(".001Ki") == "1024m");
  CHECK(canonical("1e-100") == "1e-9");  // DecimalExponent keeps its style
  CHECK(canonical("1.1E-9") == "2e-9");
  for (const char* s : {"1e28", "1e100", "1001000000E", "123456789012345678901234567890123456789"}) {
    auto q = Quantity::parse(s);
    INFO(s);
    REQUIRE_FALSE(q);
    CHECK(q.error().message == std::string("quantity \"") + s + "\": magnitude beyond 10^27 units is not supported");
  }
}

TEST_CASE("quantity: malformed input is an error naming the input") {
  const char* bad[] = {"", "x", "1x", "1.2.3", "Ki", "1 Gi", "1Gi ", " 1", "e3", "1e", "1e3.5", "--1", "+-1",
                       "1i", "1KI", "1ki", "1Gi5", "1e+", ".", "+", "-", "m", "1mm", "1e9999999999999999999",
                       "0x10", "1,5", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "-3.01i", "-3.01e-",
                       "1 "};
  for (const char* s : bad) {
    auto q = Quantity::parse(s);
    INFO(s);
    REQUIRE_FALSE(q);
    CHECK(q.error().message.rfind(std::string("quantity \"") + s + "\": ", 0) == 0);
  }
  CHECK(Quantity::parse("1mm").error().message == "quantity \"1mm\": unable to parse quantity's suffix");
  CHECK(Quantity::parse("1.2.3").error().message.find("must match the regular expression") != std::string::npos);
}

TEST_CASE("quantity: value() and milli_value() round away from zero like Value()/MilliValue()") {
  CHECK(Q("1.5").value() == 2);
  CHECK(Q("-1.5").value() == -2);
  CHECK(Q("100m").value() == 1);
  CHECK(Q("1Gi").value() == 1073741824);
  CHECK(Q("1k").value() == 1000);
  CHECK(Q("1n").milli_value() == 1);
  CHECK(Q("1.5").milli_value() == 1500);
  CHECK(Q("-1n").milli_value() == -1);
  CHECK(Q("500m").milli_value() == 500);
  CHECK(Q("10E").milli_value() == std::numeric_limits<int64_t>::max());
  CHECK(Q("-10E").milli_value() == std::numeric_limits<int64_t>::min());
  CHECK(Q("10E").value() == std::numeric_limits<int64_t>::max());
  CHECK(Q("9E").value() == 9'000'000'000'000'000'000);
}

TEST_CASE("quantity: exact arithmetic keeps the left operand's format") {
  CHECK((Q("1Gi") + Q("1Gi")).to_string() == "2Gi");
  CHECK((Q("1") + Q("500m")).to_string() == "1500m");
  CHECK((Q("1k") + Q("1Ki")).to_string() == "2024");
  CHECK((Q("1Ki") + Q("1Ki")).to_string() == "2Ki");
  CHECK((Quantity() + Q("1Ki")).to_string() == "1Ki");
  CHECK((Quantity() + Q("1Ki")).format() == Quantity::Format::BinarySI);
  CHECK((Q("2") - Q("3")).to_string() == "-1");
  CHECK((Q("1Gi") - Q("512Mi")).to_string() == "512Mi");
  CHECK((Q("500m") * 3).to_string() == "1500m");
  CHECK((Q("1Gi") * 4).to_string() == "4Gi");
  CHECK((Q("1e3") * 2).to_string() == "2e3");
  CHECK((Q("0.1") + Q("0.2")) == Q("300m"));  // exact, unlike floating point
  Quantity sum;
  for (int i = 0; i < 1000; ++i) sum += Q("1n");
  CHECK(sum.to_string() == "1u");
  // PodGroup minResources-style sum: 3 workers x (2 cpu, 4Gi) + launcher (500m, 512Mi).
  Quantity cpu = Q("2") * 3 + Q("500m");
  Quantity mem = Q("4Gi") * 3 + Q("512Mi");
  CHECK(cpu.to_string() == "6500m");
  CHECK(mem.to_string() == "12800Mi");
  // Sums beyond the parse cap stay exact.
  CHECK((Q("8E") + Q("8E")).to_string() == "16E");
  CHECK((Q("8E") * 1000).to_string() == "8e21");
}

TEST_CASE("quantity: overflow is an error from checked_* and saturates in operators") {
  const Quantity big = Quantity::from_int(std::numeric_limits<int64_t>::max());
  auto product = Quantity::checked_mul(big, std::numeric_limits<int64_t>::max());
  REQUIRE_FALSE(product);
  CHECK(product.error().message.find("out of range") != std::string::npos);
  CHECK((big * std::numeric_limits<int64_t>::max()).to_string() == "1e27");
  CHECK((big * std::numeric_limits<int64_t>::min()).to_string() == "-1e27");
  const Quantity huge = big * 10'000'000;  // ~9.2e25 units
  REQUIRE(Quantity::checked_add(huge * 5, huge * 5));
  CHECK_FALSE(Quantity::checked_add(huge * 6, huge * 6));
  CHECK_FALSE(Quantity::checked_sub(huge * -6, huge * 6));
  CHECK((huge * 6 + huge * 6).to_string() == "1e27");
  CHECK((huge * -6 - huge * 6).to_string() == "-1e27");
}

TEST_CASE("quantity: comparison is by value, independent of format") {
  CHECK(Q("1k") == Q("1000"));
  CHECK(Q("1Ki") == Q("1024"));
  CHECK(Q("1Ki") > Q("1k"));
  CHECK(Q("100m") < Q("1"));
  CHECK(Q("1Gi") == Q("1073741824"));
  CHECK(Q("-1") < Q("0"));
  CHECK(Q("1e3") == Q("1k"));
  CHECK((Q("1n") <=> Q("2n")) == std::strong_ordering::less);
  CHECK(Q("0") == Quantity());
  CHECK(Q("0").is_zero());
  CHECK(Q("-5m").sign() == -1);
}

TEST_CASE("quantity: from JSON strings and numbers, and the int constructors") {
  auto doc = json::Document::parse(R"({"a":"2Gi","b":1,"c":0.5,"d":true,"e":1e3,"f":" 1 "})").value();
  CHECK(Quantity::from_json(doc.root()["f"]).value().to_string() == "1");
  CHECK(Quantity::from_json(doc.root()["a"]).value().to_string() == "2Gi");
  CHECK(Quantity::from_json(doc.root()["b"]).value().to_string() == "1");
  CHECK(Quantity::from_json(doc.root()["c"]).value().to_string() == "500m");
  CHECK(Quantity::from_json(doc.root()["e"]).value().to_string() == "1k");
  CHECK_FALSE(Quantity::from_json(doc.root()["d"]));
  CHECK(Quantity::from_int(1024, Quantity::Format::BinarySI).to_string() == "1Ki");
  CHECK(Quantity::from_int(1000).to_string() == "1k");
  CHECK(Quantity::from_milli(1500).to_string() == "1500m");
  CHECK(Quantity::from_milli(2000).to_string() == "2");
  CHECK(Quantity::from_milli(1024, Quantity::Format::BinarySI).to_string() == "1024m");
  CHECK(Quantity::from_milli(1024 * 1024, Quantity::Format::BinarySI).to_string() == "1048576m");
  CHECK(Quantity::from_int(1234000).to_string() == "1234k");
  CHECK(Quantity::from_int(1024 * 1024, Quantity::Format::BinarySI).to_string() == "1Mi");
  CHECK(Quantity::from_int(1'000'000, Quantity::Format::DecimalExponent).to_string() == "1e6");
}
