#include "core/log/log.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace unitrain::log {

namespace {

spdlog::level::level_enum to_spdlog(Level level) {
  switch (level) {
    case Level::trace: return spdlog::level::trace;
    case Level::debug: return spdlog::level::debug;
    case Level::info: return spdlog::level::info;
    case Level::warn: return spdlog::level::warn;
    case Level::error: return spdlog::level::err;
    case Level::critical: return spdlog::level::critical;
  }
  return spdlog::level::info;
}

void append_clean(std::string& out, std::string_view s) {
  for (char c : s) out += c == kFieldSeparator ? ' ' : c;
}

}  // namespace

std::string encode(std::string_view message, const Fields& fields) {
  std::string out;
  size_t size = message.size();
  for (const auto& f : fields) size += f.key.size() + f.value.size() + 2;
  out.reserve(size);
  append_clean(out, message);
  for (const auto& f : fields) {
    out += kFieldSeparator;
    for (char c : f.key) out += (c == kFieldSeparator || c == '=') ? '_' : c;
    out += '=';
    append_clean(out, f.value);
  }
  return out;
}

Decoded decode(std::string_view payload) {
  Decoded d;
  size_t sep = payload.find(kFieldSeparator);
  d.message = payload.substr(0, sep);
  while (sep != std::string_view::npos) {
    const size_t start = sep + 1;
    sep = payload.find(kFieldSeparator, start);
    std::string_view field = payload.substr(start, sep == std::string_view::npos ? std::string_view::npos : sep - start);
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) d.fields.emplace_back(field, std::string_view{});
    else d.fields.emplace_back(field.substr(0, eq), field.substr(eq + 1));
  }
  return d;
}

bool enabled(Level level) { return spdlog::default_logger_raw()->should_log(to_spdlog(level)); }

void write(Level level, std::string_view message, const Fields& fields) {
  auto* logger = spdlog::default_logger_raw();
  const auto l = to_spdlog(level);
  if (!logger->should_log(l)) return;
  if (fields.empty()) {
    logger->log(l, spdlog::string_view_t(message.data(), message.size()));
    return;
  }
  const std::string payload = encode(message, fields);
  logger->log(l, spdlog::string_view_t(payload.data(), payload.size()));
}

Logger Logger::with(std::string key, std::string value) const {
  Logger copy = *this;
  auto it = std::find_if(copy.context_.begin(), copy.context_.end(), [&](const Field& f) { return f.key == key; });
  if (it != copy.context_.end()) it->value = std::move(value);
  else copy.context_.push_back({std::move(key), std::move(value)});
  return copy;
}

void Logger::log(Level level, std::string_view message, const Fields& extra) const {
  if (!enabled(level)) return;
  if (extra.empty()) return write(level, message, context_);
  Fields all = context_;
  all.insert(all.end(), extra.begin(), extra.end());
  write(level, message, all);
}

}  // namespace unitrain::log
