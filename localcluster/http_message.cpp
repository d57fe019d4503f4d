#include "localcluster/http_message.h"

#include <algorithm>
#include <cctype>

namespace unitrain::localcluster {

HttpReply error_reply(const StatusError& e) {
  return HttpReply{static_cast<unsigned>(e.code), "application/json", e.to_status().dump(), {}};
}

std::string percent_decode(std::string_view s, bool plus_is_space) {
  auto hex = [](char h) -> int {
    if (h >= '0' && h <= '9') return h - '0';
    if (h >= 'a' && h <= 'f') return h - 'a' + 10;
    if (h >= 'A' && h <= 'F') return h - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%' && i + 2 < s.size()) {
      int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += (plus_is_space && c == '+') ? ' ' : c;
  }
  return out;
}

Query parse_query(std::string_view q) {
  Query out;
  while (!q.empty()) {
    size_t amp = q.find('&');
    std::string_view kv = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view{} : q.substr(amp + 1);
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    std::string key = percent_decode(kv.substr(0, eq), true);
    std::string value = eq == std::string_view::npos ? std::string() : percent_decode(kv.substr(eq + 1), true);
    out.emplace(std::move(key), std::move(value));
  }
  return out;
}

std::pair<std::string, Query> parse_target(std::string_view target) {
  size_t qpos = target.find('?');
  std::string path(target.substr(0, qpos));
  if (qpos == std::string_view::npos) return {std::move(path), Query{}};
  return {std::move(path), parse_query(target.substr(qpos + 1))};
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.push_back(percent_decode(path.substr(i, j - i), false));
    i = j + 1;
  }
  return out;
}

std::string query_value(const Query& q, std::string_view key) {
  auto it = q.find(key);
  return it == q.end() ? std::string() : it->second;
}

bool query_flag(const Query& q, std::string_view key) {
  auto it = q.find(key);
  if (it == q.end()) return false;
  std::string v = it->second;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v != "0" && v != "false";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace unitrain::localcluster
