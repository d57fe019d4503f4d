#include <catch2/catch.hpp>

#include "core/api/time.h"

namespace api = unitrain::api;
using namespace std::chrono;

namespace {
api::TimePoint must_parse_time(std::string_view s) {
  auto r = api::parse_time(s);
  INFO(s);
  REQUIRE(r);
  return *r;
}
std::string time_parse_error(std::string_view s) {
  auto r = api::parse_time(s);
  INFO(s);
  REQUIRE_FALSE(r);
  return r.error().message;
}
}  // namespace

TEST_CASE("rfc3339 parse of whole seconds in UTC") {
  CHECK(must_parse_time("1970-01-01T00:00:00Z").time_since_epoch() == api::Clock::duration::zero());
  CHECK(duration_cast<seconds>(must_parse_time("2024-01-02T03:04:05Z").time_since_epoch()).count() == 1704164645);
  CHECK(duration_cast<seconds>(must_parse_time("2000-02-29T23:59:59Z").time_since_epoch()).count() == 951868799);
  CHECK(duration_cast<seconds>(must_parse_time("1969-12-31T23:59:59Z").time_since_epoch()).count() == -1);
  CHECK(must_parse_time("2024-01-02t03:04:05z") == must_parse_time("2024-01-02T03:04:05Z"));
}

TEST_CASE("rfc3339 parse of fractions and offsets") {
  auto base = must_parse_time("2024-01-02T03:04:05Z");
  CHECK(must_parse_time("2024-01-02T03:04:05.5Z") - base == milliseconds(500));
  CHECK(must_parse_time("2024-01-02T03:04:05.123456Z") - base == microseconds(123456));
  CHECK(must_parse_time("2024-01-02T03:04:05.123456789Z") - base == nanoseconds(123456789));
  CHECK(must_parse_time("2024-01-02T03:04:05.1234567891234Z") - base == nanoseconds(123456789));
  CHECK(must_parse_time("2024-01-02T05:04:05+02:00") == base);
  CHECK(must_parse_time("2024-01-01T22:34:05-04:30") == base);
  CHECK(must_parse_time("2024-01-02T03:04:05+00:00") == base);
}

TEST_CASE("rfc3339 format like metav1.Time and MicroTime") {
  auto t = must_parse_time("2024-01-02T03:04:05.987654321Z");
  CHECK(api::format_time(t) == "2024-01-02T03:04:05Z");
  CHECK(api::format_micro_time(t) == "2024-01-02T03:04:05.987654Z");
  CHECK(api::format_micro_time(must_parse_time("2024-01-02T03:04:05Z")) == "2024-01-02T03:04:05.000000Z");
  CHECK(api::format_time(must_parse_time("2024-01-02T05:04:05+02:00")) == "2024-01-02T03:04:05Z");
  CHECK(api::format_time(must_parse_time("1969-12-31T23:59:59.5Z")) == "1969-12-31T23:59:59Z");
  CHECK(api::format_time(api::TimePoint{}) == "1970-01-01T00:00:00Z");
  // The ends of the clock's range (64-bit nanoseconds).
  CHECK(api::format_time(api::TimePoint::min()) == "1677-09-21T00:12:43Z");
  CHECK(api::format_time(api::TimePoint::max()) == "2262-04-11T23:47:16Z");
  CHECK(api::format_micro_time(api::TimePoint::max()) == "2262-04-11T23:47:16.854775Z");
  CHECK(api::truncate_to_seconds(t) == must_parse_time("2024-01-02T03:04:05Z"));
}

TEST_CASE("rfc3339 round trip over many dates") {
  for (int64_t s = -9'000'000'000; s < 9'000'000'000; s += 86'399'917) {
    api::TimePoint t{duration_cast<api::Clock::duration>(seconds(s))};
    auto text = api::format_time(t);
    INFO(text);
    CHECK(must_parse_time(text) == t);
    CHECK(must_parse_time(api::format_micro_time(t + microseconds(42))) == t + microseconds(42));
  }
}

TEST_CASE("rfc3339 malformed input names the position") {
  CHECK(time_parse_error("2024-13-01T00:00:00Z") == "time '2024-13-01T00:00:00Z': position 8: month out of range");
  CHECK(time_parse_error("2023-02-29T00:00:00Z").find("position 11: day out of range") != std::string::npos);
  CHECK(time_parse_error("2024-01-02 03:04:05Z").find("position 11: expected 'T'") != std::string::npos);
  CHECK(time_parse_error("2024-01-02T24:00:00Z").find("hour out of range") != std::string::npos);
  CHECK(time_parse_error("2024-01-02T03:60:00Z").find("minute out of range") != std::string::npos);
  CHECK(time_parse_error("2024-01-02T03:04:60Z").find("second out of range") != std::string::npos);
  CHECK(time_parse_error("2024-01-02T03:04:05").find("position 20: expected 'Z' or a numeric offset") != std::string::npos);
  CHECK(time_parse_error("2024-01-02T03:04:05.Z").find("expected fractional second digits") != std::string::npos);
  CHECK(time_parse_error("2024-01-02T03:04:05+0200").find("expected ':'") != std::string::npos);
  CHECK(time_parse_error("2024-01-02T03:04:05Zjunk").find("position 21: unexpected trailing characters") != std::string::npos);
  // Outside what a nanosecond time_point holds (years 1678..2262).
  CHECK(time_parse_error("9999-12-31T23:59:59Z").find("time out of range") != std::string::npos);
  CHECK(time_parse_error("1600-01-01T00:00:00Z").find("time out of range") != std::string::npos);
  CHECK(time_parse_error("").find("position 1: expected 4-digit year") != std::string::npos);
  CHECK(time_parse_error("24-01-02T03:04:05Z").find("expected 4-digit year") != std::string::npos);
}
