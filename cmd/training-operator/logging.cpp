#include "cmd/training-operator/logging.h"

#include <cxxabi.h>
#include <execinfo.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <spdlog/formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "core/json/json.h"

namespace unitrain::operator_cmd {

namespace {

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool one_of(const std::string& v, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return v == n; });
}

// zap's lower-case level names (trace is a verbosity beyond debug).
const char* level_name(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace:
    case spdlog::level::debug: return "debug";
    case spdlog::level::info: return "info";
    case spdlog::level::warn: return "warn";
    case spdlog::level::err: return "error";
    case spdlog::level::critical: return "fatal";
    default: return "info";
  }
}

spdlog::level::level_enum stacktrace_threshold(const std::string& level) {
  if (level == "info") return spdlog::level::info;
  if (level == "warn") return spdlog::level::warn;
  if (level == "error") return spdlog::level::err;
  return spdlog::level::critical;
}

std::string json_string(std::string_view s) {
  const json::Value text(rapidjson::StringRef(s.data(), s.size()));
  return json::dump(text);
}

// logfmt: bare when it needs no quoting, else a JSON-style quoted string.
void append_text_value(std::string& out, std::string_view v) {
  const bool bare = !v.empty() && std::none_of(v.begin(), v.end(), [](char c) {
    return c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
  });
  if (bare) out += v;
  else out += json_string(v);
}

// One frame per line, demangled where the symbol is known ("training-operator(_ZN...+0x1f) [0x..]").
std::string capture_stacktrace() {
  void* frames[64];
  const int n = backtrace(frames, 64);
  std::unique_ptr<char*, decltype(&std::free)> symbols(backtrace_symbols(frames, n), &std::free);
  if (!symbols) return {};
  std::string out;
  for (int i = 0; i < n; ++i) {
    std::string line = symbols.get()[i];
    const auto open = line.find('('), plus = line.find('+', open == std::string::npos ? 0 : open);
    if (open != std::string::npos && plus != std::string::npos && plus > open + 1) {
      const std::string mangled = line.substr(open + 1, plus - open - 1);
      int status = 0;
      std::unique_ptr<char, decltype(&std::free)> name(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                                       &std::free);
      if (status == 0 && name) line = line.substr(0, open + 1) + name.get() + line.substr(plus);
    }
    if (!out.empty()) out += '\n';
    out += line;
  }
  return out;
}

class RecordFormatter final : public spdlog::formatter {
 public:
  explicit RecordFormatter(LogOptions options)
      : options_(std::move(options)), stacktrace_from_(stacktrace_threshold(options_.stacktrace)) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string stack = msg.level >= stacktrace_from_ ? capture_stacktrace() : std::string();
    const std::string line = format_record(options_, msg.level, msg.time,
                                           std::string_view(msg.logger_name.data(), msg.logger_name.size()),
                                           std::string_view(msg.payload.data(), msg.payload.size()), stack);
    dest.append(line.data(), line.data() + line.size());
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<RecordFormatter>(options_); }

 private:
  LogOptions options_;
  spdlog::level::level_enum stacktrace_from_;
};

}  // namespace

std::string check_zap_level(const std::string& v) {
  if (one_of(v, {"debug", "info", "warn", "error", "dpanic", "panic", "fatal"})) return {};
  if (!v.empty() && std::all_of(v.begin(), v.end(), ::isdigit) && std::stoi(v.substr(0, 4)) > 0) return {};
  return "must be one of debug, info, warn, error, dpanic, panic, fatal or a positive integer, not \"" + v + "\"";
}

std::string check_zap_encoder(const std::string& v) {
  return one_of(lowercase(v), {"json", "console"}) ? std::string() : "must be json or console, not \"" + v + "\"";
}

std::string check_stacktrace_level(const std::string& v) {
  return one_of(lowercase(v), {"info", "error", "panic"}) ? std::string()
                                                       : "must be one of info, error or panic, not \"" + v + "\"";
}

std::string check_time_encoding(const std::string& v) {
  return one_of(lowercase(v), {"epoch", "millis", "nanos", "iso8601", "rfc3339", "rfc3339nano"})
             ? std::string()
             : "must be one of epoch, millis, nanos, iso8601, rfc3339 or rfc3339nano, not \"" + v + "\"";
}

spdlog::level::level_enum spdlog_level(const std::string& zap) {
  if (zap == "debug") return spdlog::level::debug;
  if (zap == "info") return spdlog::level::info;
  if (zap == "warn") return spdlog::level::warn;
  if (zap == "error") return spdlog::level::err;
  if (zap == "dpanic" || zap == "panic" || zap == "fatal") return spdlog::level::critical;
  return std::stoi(zap.substr(0, 4)) >= 2 ? spdlog::level::trace : spdlog::level::debug;
}

Result<LogOptions> resolve_log_options(const LogFlags& f) {
  LogOptions o;
  std::optional<bool> json;
  if (f.log_format) json = *f.log_format == "json";
  if (f.encoder) {
    const bool encoder_json = lowercase(*f.encoder) == "json";
    if (json && *json != encoder_json)
      return fail(fmt::format("--log-format {} and --zap-encoder {} disagree; give one of them", *f.log_format, *f.encoder));
    json = encoder_json;
  }
  const bool development = f.devel.value_or(false);
  const bool production = f.devel.has_value() && !*f.devel;
  o.json = json.value_or(production);
  o.level = f.level.value_or(development ? "debug" : "info");
  o.stacktrace = f.stacktrace ? lowercase(*f.stacktrace) : development ? "warn" : production ? "error" : "panic";
  o.time_encoding = f.time_encoding ? lowercase(*f.time_encoding) : "rfc3339";
  return o;
}

std::string format_time(std::string_view encoding, std::chrono::system_clock::time_point time, bool json) {
  using namespace std::chrono;
  const auto nanos = duration_cast<nanoseconds>(time.time_since_epoch()).count();
  if (encoding == "epoch") return fmt::format("{}", static_cast<double>(nanos) / 1e9);
  if (encoding == "millis") return fmt::format("{}", static_cast<double>(nanos) / 1e6);
  if (encoding == "nanos") return fmt::format("{}", nanos);
  const std::time_t seconds = static_cast<std::time_t>(nanos / 1000000000);
  const int64_t fraction = nanos % 1000000000;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  std::string out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                                tm.tm_hour, tm.tm_min, tm.tm_sec);
  if (encoding == "iso8601") {
    out += fmt::format(".{:03}Z", fraction / 1000000);
  } else if (encoding == "rfc3339nano") {
    if (fraction != 0) {
      std::string digits = fmt::format("{:09}", fraction);
      digits.erase(digits.find_last_not_of('0') + 1);
      out += "." + digits;
    }
    out += "Z";
  } else {
    out += "Z";
  }
  return json ? json_string(out) : out;
}

std::string format_record(const LogOptions& o, spdlog::level::level_enum level, std::chrono::system_clock::time_point time,
                          std::string_view logger, std::string_view payload, std::string_view stacktrace) {
  const log::Decoded record = log::decode(payload);
  std::string out;
  if (o.json) {
    out = fmt::format(R"({{"level":"{}","ts":{},"logger":{},"msg":{})", level_name(level),
                      format_time(o.time_encoding, time, true), json_string(logger), json_string(record.message));
    for (const auto& [key, value] : record.fields) out += fmt::format(",{}:{}", json_string(key), json_string(value));
    if (!stacktrace.empty()) out += fmt::format(R"(,"stacktrace":{})", json_string(stacktrace));
    out += '}';
    return out;
  }
  out = fmt::format("{} {} {} {}", format_time(o.time_encoding, time, false), level_name(level), logger, record.message);
  for (const auto& [key, value] : record.fields) {
    out += ' ';
    out += key;
    out += '=';
    append_text_value(out, value);
  }
  if (!stacktrace.empty()) {
    out += '\n';
    out += stacktrace;
  }
  return out;
}

void setup_logging(const LogOptions& options) {
  auto logger = spdlog::stderr_logger_mt("training-operator");
  logger->set_formatter(std::make_unique<RecordFormatter>(options));
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog_level(options.level));
}

}  // namespace unitrain::operator_cmd
