#include "core/api/time.h"

#include <fmt/format.h>

namespace unitrain::api {
namespace {

// Howard Hinnant's civil-date algorithms: exact for the proleptic Gregorian calendar.
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

struct Civil {
  int64_t y;
  unsigned m;
  unsigned d;
};

Civil civil_from_days(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {y + (m <= 2), m, d};
}

bool is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned days_in_month(int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : kDays[m - 1];
}

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  std::size_t pos() const { return i_ + 1; }
  bool done() const { return i_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[i_]; }
  bool digits(int n, int& out) {
    out = 0;
    for (int k = 0; k < n; ++k) {
      if (done() || s_[i_] < '0' || s_[i_] > '9') return false;
      out = out * 10 + (s_[i_] - '0');
      ++i_;
    }
    return true;
  }
  bool literal(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  bool literal_ci(char upper) {
    if (peek() != upper && peek() != upper - 'A' + 'a') return false;
    ++i_;
    return true;
  }
  void skip() { ++i_; }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
};

std::string utc_seconds_text(TimePoint t, int64_t& nanos_out) {
  using namespace std::chrono;
  const auto ns = duration_cast<nanoseconds>(t.time_since_epoch()).count();
  int64_t secs = ns / 1'000'000'000;
  int64_t rem = ns % 1'000'000'000;
  if (rem < 0) {
    rem += 1'000'000'000;
    --secs;
  }
  nanos_out = rem;
  int64_t days = secs / 86400;
  int64_t sod = secs % 86400;
  if (sod < 0) {
    sod += 86400;
    --days;
  }
  const Civil c = civil_from_days(days);
  // Every status write formats each condition's two times: the digits are placed directly, without
  // a format-string parse. A TimePoint (nanoseconds in 64 bits) spans the years 1677-2262: always
  // four digits.
  char text[] = "0000-00-00T00:00:00";
  auto put = [&text](size_t at, int64_t value, int width) {
    for (int i = width - 1; i >= 0; --i, value /= 10) text[at + i] = static_cast<char>('0' + value % 10);
  };
  put(0, c.y, 4);
  put(5, c.m, 2);
  put(8, c.d, 2);
  put(11, sod / 3600, 2);
  put(14, (sod / 60) % 60, 2);
  put(17, sod % 60, 2);
  return std::string(text, sizeof(text) - 1);
}

}  // namespace

Result<TimePoint> parse_time(std::string_view text) {
  Reader r(text);
  auto err = [&](std::string_view what) {
    return fail(fmt::format("time '{}': position {}: {}", text, r.pos(), what));
  };
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!r.digits(4, year)) return err("expected 4-digit year");
  if (!r.literal('-')) return err("expected '-'");
  if (!r.digits(2, month)) return err("expected 2-digit month");
  if (month < 1 || month > 12) return err("month out of range");
  if (!r.literal('-')) return err("expected '-'");
  if (!r.digits(2, day)) return err("expected 2-digit day");
  if (day < 1 || static_cast<unsigned>(day) > days_in_month(year, static_cast<unsigned>(month))) {
    return err("day out of range");
  }
  if (!r.literal_ci('T')) return err("expected 'T'");
  if (!r.digits(2, hour)) return err("expected 2-digit hour");
  if (hour > 23) return err("hour out of range");
  if (!r.literal(':')) return err("expected ':'");
  if (!r.digits(2, minute)) return err("expected 2-digit minute");
  if (minute > 59) return err("minute out of range");
  if (!r.literal(':')) return err("expected ':'");
  if (!r.digits(2, second)) return err("expected 2-digit second");
  if (second > 59) return err("second out of range");
  int64_t nanos = 0;
  if (r.literal('.')) {
    int digits = 0;
    while (!r.done() && r.peek() >= '0' && r.peek() <= '9') {
      if (digits < 9) nanos = nanos * 10 + (r.peek() - '0');
      ++digits;
      r.skip();
    }
    if (digits == 0) return err("expected fractional second digits");
    for (int k = digits; k < 9; ++k) nanos *= 10;
  }
  int64_t offset_seconds = 0;
  if (!r.literal_ci('Z')) {
    const char sign = r.peek();
    if (sign != '+' && sign != '-') return err("expected 'Z' or a numeric offset");
    r.skip();
    int oh = 0, om = 0;
    if (!r.digits(2, oh)) return err("expected 2-digit offset hours");
    if (oh > 23) return err("offset hours out of range");
    if (!r.literal(':')) return err("expected ':'");
    if (!r.digits(2, om)) return err("expected 2-digit offset minutes");
    if (om > 59) return err("offset minutes out of range");
    offset_seconds = (oh * 3600 + om * 60) * (sign == '-' ? -1 : 1);
  }
  if (!r.done()) return err("unexpected trailing characters");
  const int64_t days = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  const int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_seconds;
  using namespace std::chrono;
  constexpr int64_t kMaxSeconds = duration_cast<seconds>(Clock::duration::max()).count() - 1;
  if (secs > kMaxSeconds || secs < -kMaxSeconds) return err("time out of range");
  return TimePoint(duration_cast<Clock::duration>(seconds(secs) + nanoseconds(nanos)));
}

std::string format_time(TimePoint t) {
  int64_t nanos = 0;
  return utc_seconds_text(t, nanos) + "Z";
}

std::string format_micro_time(TimePoint t) {
  int64_t nanos = 0;
  std::string s = utc_seconds_text(t, nanos);
  return s + fmt::format(".{:06}Z", nanos / 1000);
}

TimePoint truncate_to_seconds(TimePoint t) {
  return std::chrono::floor<std::chrono::seconds>(t);
}

}  // namespace unitrain::api
