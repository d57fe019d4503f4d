#include "cmd/training-operator/logging.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <vector>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "core/json/json.h"

namespace unitrain::operator_cmd {

namespace {

// %j: the message as a quoted JSON string (quotes, backslashes and control characters escaped).
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const json::Value text(rapidjson::StringRef(msg.payload.data(), msg.payload.size()));
    const std::string quoted = json::dump(text);
    dest.append(quoted.data(), quoted.data() + quoted.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonMessageFlag>(); }
};

}  // namespace

// zap accepts level names and positive integers (verbosity: debug and beyond).
std::string check_zap_level(const std::string& v) {
  static const std::vector<std::string> names{"debug", "info", "warn", "error", "dpanic", "panic", "fatal"};
  if (std::find(names.begin(), names.end(), v) != names.end()) return {};
  if (!v.empty() && std::all_of(v.begin(), v.end(), ::isdigit) && std::stoi(v.substr(0, 4)) > 0) return {};
  return "must be one of debug, info, warn, error, dpanic, panic, fatal or a positive integer, not \"" + v + "\"";
}

spdlog::level::level_enum spdlog_level(const std::string& zap) {
  if (zap == "debug") return spdlog::level::debug;
  if (zap == "info") return spdlog::level::info;
  if (zap == "warn") return spdlog::level::warn;
  if (zap == "error") return spdlog::level::err;
  if (zap == "dpanic" || zap == "panic" || zap == "fatal") return spdlog::level::critical;
  return std::stoi(zap.substr(0, 4)) >= 2 ? spdlog::level::trace : spdlog::level::debug;
}

void setup_logging(const std::string& format, const std::string& zap_level) {
  auto logger = spdlog::stderr_color_mt("training-operator");
  if (format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonMessageFlag>('j').set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","logger":"%n","msg":%j})");
    // No %^...%$ colour range: a terminal gets the same bytes as a log collector.
    logger->set_formatter(std::move(formatter));
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %^%-5l%$ %n %v", spdlog::pattern_time_type::utc);
  }
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog_level(zap_level));
}

}  // namespace unitrain::operator_cmd
