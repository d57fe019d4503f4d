#include "localcluster/pod_logs.h"

#include <algorithm>
#include <cstdlib>

namespace unitrain::localcluster {

std::string PodLogs::key(std::string_view ns, std::string_view pod) {
  return std::string(ns) + "/" + std::string(pod);
}

void PodLogs::append(const std::string& key, std::string_view line) {
  std::vector<std::shared_ptr<std::function<void()>>> wake;
  {
    std::lock_guard lock(mu_);
    auto& log = logs_[key];
    log.lines.emplace_back(line);
    if (log.lines.size() > max_lines_) {
      log.lines.pop_front();
      ++log.first;
    }
    for (auto it = log.followers.begin(); it != log.followers.end();) {
      if (auto w = it->lock()) {
        wake.push_back(std::move(w));
        ++it;
      } else {
        it = log.followers.erase(it);
      }
    }
  }
  for (auto& w : wake) (*w)();
}

void PodLogs::clear(const std::string& key) {
  std::lock_guard lock(mu_);
  logs_.erase(key);
}

std::pair<std::vector<std::string>, uint64_t> PodLogs::read(const std::string& key, uint64_t from) {
  std::lock_guard lock(mu_);
  auto it = logs_.find(key);
  if (it == logs_.end()) return {{}, from};
  auto& log = it->second;
  uint64_t start = std::max(from, log.first);
  std::vector<std::string> out(log.lines.begin() + static_cast<std::ptrdiff_t>(start - log.first), log.lines.end());
  return {std::move(out), log.first + log.lines.size()};
}

void PodLogs::follow(const std::string& key, const std::shared_ptr<std::function<void()>>& wake) {
  std::lock_guard lock(mu_);
  logs_[key].followers.push_back(wake);
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) {
    out += l;
    out += '\n';
  }
  return out;
}

void keep_tail_lines(std::vector<std::string>& lines, const Query& q) {
  if (auto t = query_value(q, "tailLines"); !t.empty()) {
    long long n = std::max(0LL, std::strtoll(t.c_str(), nullptr, 10));
    if (static_cast<size_t>(n) < lines.size()) {
      lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
    }
  }
}

void limit_bytes(std::string& text, const Query& q) {
  if (auto lb = query_value(q, "limitBytes"); !lb.empty()) {
    auto n = static_cast<size_t>(std::max(0LL, std::strtoll(lb.c_str(), nullptr, 10)));
    if (text.size() > n) text.resize(n);
  }
}

}  // namespace unitrain::localcluster
