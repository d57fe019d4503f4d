// The operator's log records: controller-runtime's zap flags resolved as controller-runtime does,
// JSON and text layouts with the core/log fields, and zap's time encodings.
#include <catch2/catch.hpp>

#include "cmd/training-operator/logging.h"
#include "core/json/json.h"

namespace op = unitrain::operator_cmd;
using namespace std::chrono;

namespace {
const system_clock::time_point kTime = system_clock::time_point(seconds(1704164645)) + nanoseconds(123456000);
}

TEST_CASE("zap flags: unset ones follow --zap-devel, given ones win") {
  auto defaults = op::resolve_log_options({});
  REQUIRE(defaults);
  CHECK_FALSE(defaults->json);
  CHECK(defaults->level == "info");
  CHECK(defaults->stacktrace == "panic");
  CHECK(defaults->time_encoding == "rfc3339");

  auto devel = op::resolve_log_options({.devel = true});
  REQUIRE(devel);
  CHECK_FALSE(devel->json);
  CHECK(devel->level == "debug");
  CHECK(devel->stacktrace == "warn");

  auto production = op::resolve_log_options({.devel = false});
  REQUIRE(production);
  CHECK(production->json);
  CHECK(production->level == "info");
  CHECK(production->stacktrace == "error");

  auto explicit_flags = op::resolve_log_options(
      {.devel = true, .level = "error", .encoder = "JSON", .stacktrace = "Panic", .time_encoding = "EPOCH"});
  REQUIRE(explicit_flags);
  CHECK(explicit_flags->json);
  CHECK(explicit_flags->level == "error");
  CHECK(explicit_flags->stacktrace == "panic");
  CHECK(explicit_flags->time_encoding == "epoch");

  CHECK(op::resolve_log_options({.log_format = "json", .encoder = "json"}));
  auto clash = op::resolve_log_options({.log_format = "text", .encoder = "json"});
  REQUIRE_FALSE(clash);
  CHECK(clash.error().message == "--log-format text and --zap-encoder json disagree; give one of them");
}

TEST_CASE("zap flags: accepted values are controller-runtime's") {
  CHECK(op::check_zap_encoder("console").empty());
  CHECK(op::check_zap_encoder("Json").empty());
  CHECK_FALSE(op::check_zap_encoder("text").empty());
  for (const char* ok : {"info", "error", "panic", "ERROR"}) CHECK(op::check_stacktrace_level(ok).empty());
  CHECK_FALSE(op::check_stacktrace_level("warn").empty());
  for (const char* ok : {"epoch", "millis", "nanos", "iso8601", "rfc3339", "rfc3339nano"})
    CHECK(op::check_time_encoding(ok).empty());
  CHECK_FALSE(op::check_time_encoding("nano").empty());  // controller-runtime's help says "nano"; its code takes "nanos"
}

TEST_CASE("zap time encodings, in UTC") {
  CHECK(op::format_time("rfc3339", kTime, false) == "2024-01-02T03:04:05Z");
  CHECK(op::format_time("rfc3339nano", kTime, false) == "2024-01-02T03:04:05.123456Z");
  CHECK(op::format_time("rfc3339nano", system_clock::time_point(seconds(1704164645)), false) == "2024-01-02T03:04:05Z");
  CHECK(op::format_time("iso8601", kTime, false) == "2024-01-02T03:04:05.123Z");
  CHECK(op::format_time("epoch", kTime, false) == "1704164645.123456");
  CHECK(op::format_time("millis", kTime, false) == "1704164645123.456");
  CHECK(op::format_time("nanos", kTime, false) == "1704164645123456000");
  CHECK(op::format_time("rfc3339", kTime, true) == "\"2024-01-02T03:04:05Z\"");
  CHECK(op::format_time("epoch", kTime, true) == "1704164645.123456");
}

TEST_CASE("a JSON record: zap's keys, then the record's fields, then the stacktrace") {
  op::LogOptions o;
  o.json = true;
  const auto payload = unitrain::log::encode("reconciled \"pt\"\n", {{"job", "default/pt"}, {"reconcileID", "r-1"}});
  const auto line = op::format_record(o, spdlog::level::warn, kTime, "training-operator", payload, "frame 1\nframe 2");
  CHECK(line ==
        R"({"level":"warn","ts":"2024-01-02T03:04:05Z","logger":"training-operator","msg":"reconciled \"pt\"\n",)"
        R"("job":"default/pt","reconcileID":"r-1","stacktrace":"frame 1\nframe 2"})");
  auto doc = unitrain::json::Document::parse(line);
  REQUIRE(doc);
  CHECK(unitrain::json::get_string(doc->root(), "/job") == "default/pt");
}

TEST_CASE("a text record: time, level, logger, message, then key=value with values quoted when needed") {
  op::LogOptions o;
  const auto payload = unitrain::log::encode("reconciled", {{"job", "default/pt"}, {"why", "a b"}, {"empty", ""}});
  CHECK(op::format_record(o, spdlog::level::info, kTime, "training-operator", payload, "") ==
        R"(2024-01-02T03:04:05Z info training-operator reconciled job=default/pt why="a b" empty="")");
  CHECK(op::format_record(o, spdlog::level::err, kTime, "training-operator", "plain", "frame") ==
        "2024-01-02T03:04:05Z error training-operator plain\nframe");
}
