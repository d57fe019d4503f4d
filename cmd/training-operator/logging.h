// The operator's logs: controller-runtime's zap flags (--zap-log-level, --zap-devel,
// --zap-encoder, --zap-stacktrace-level, --zap-time-encoding; --log-format is another name for the
// encoder) resolved into LogOptions, and a spdlog formatter that writes each record as one JSON
// object per line (zap's JSON encoder: level, ts, logger, msg, then the record's fields, then
// stacktrace) or as a text line (time, level, logger, message, then key=value per field). Fields
// come from core/log (job, framework, controller, reconcileID, resourceVersion, ...).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <spdlog/common.h>

#include "core/base/result.h"
#include "core/log/log.h"

namespace unitrain::operator_cmd {

struct LogOptions {
  std::string level = "info";        // a zap level name or a positive verbosity
  bool json = false;                 // the json encoder, else console (text)
  std::string stacktrace = "panic";  // records at or above get a stacktrace: info, warn, error or panic
  std::string time_encoding = "rfc3339";
};

// What the flags gave; unset ones take their defaults from --zap-devel as in controller-runtime
// (development: console, debug, stacktraces from warn; production, --zap-devel=false: json,
// info, from error). Without --zap-devel the defaults are text, info and stacktraces only for
// panics. Fails (the message names the flags) when --log-format and --zap-encoder disagree.
struct LogFlags {
  std::optional<bool> devel = {};
  std::optional<std::string> level = {};
  std::optional<std::string> log_format = {};
  std::optional<std::string> encoder = {};
  std::optional<std::string> stacktrace = {};
  std::optional<std::string> time_encoding = {};
};
Result<LogOptions> resolve_log_options(const LogFlags& flags);

// CLI11 checks: "" when the value is accepted, else why not.
std::string check_zap_level(const std::string& level);        // debug..fatal or an integer > 0
std::string check_zap_encoder(const std::string& encoder);    // json or console, any case
std::string check_stacktrace_level(const std::string& level); // info, error or panic, any case
std::string check_time_encoding(const std::string& encoding); // epoch, millis, nanos, iso8601, rfc3339, rfc3339nano
spdlog::level::level_enum spdlog_level(const std::string& zap_level);

// One record as the operator writes it (no trailing newline); `stacktrace` is empty or one frame
// per line. Pure, for tests.
std::string format_record(const LogOptions& options, spdlog::level::level_enum level,
                          std::chrono::system_clock::time_point time, std::string_view logger,
                          std::string_view payload, std::string_view stacktrace);
// "2024-01-02T03:04:05Z", 1704164645.123456, ... as the time encoding writes `time` (UTC).
std::string format_time(std::string_view encoding, std::chrono::system_clock::time_point time, bool json);

// Installs the default logger on stderr with `options`.
void setup_logging(const LogOptions& options);

}  // namespace unitrain::operator_cmd
