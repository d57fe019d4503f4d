// RFC 3339 times as the Kubernetes API writes them.
//
// metav1.Time travels as "2024-01-02T03:04:05Z" (UTC, whole seconds); metav1.MicroTime as
// "2024-01-02T03:04:05.123456Z". Parsing accepts what Go's time.RFC3339 accepts: fractional
// seconds of any length and numeric offsets.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/base/result.h"

namespace unitrain::api {

using Clock = std::chrono::system_clock;
using TimePoint = Clock::time_point;

// Errors name the byte position: "time '2024-13-01T00:00:00Z': position 6: month out of range".
Result<TimePoint> parse_time(std::string_view text);
// metav1.Time: UTC, truncated to seconds, 'Z'.
std::string format_time(TimePoint t);
// metav1.MicroTime: UTC, 6 fractional digits (truncated), 'Z'.
std::string format_micro_time(TimePoint t);
// Truncation to whole seconds (what a metav1.Time keeps after a round trip through the API).
TimePoint truncate_to_seconds(TimePoint t);

}  // namespace unitrain::api
