// The operator's spdlog setup: zap-compatible level names and `--log-format json|text`.
#pragma once

#include <string>

#include <spdlog/common.h>

namespace unitrain::operator_cmd {

// "" when `level` is a zap level name or a positive verbosity; else why not.
std::string check_zap_level(const std::string& level);
spdlog::level::level_enum spdlog_level(const std::string& zap_level);

// Installs the default logger on stderr. In json format every record is one JSON object per
// line whose "msg" is the message escaped as a JSON string, so messages quoting user input
// (paths, object names, API errors) cannot break the line.
void setup_logging(const std::string& format, const std::string& zap_level);

}  // namespace unitrain::operator_cmd
