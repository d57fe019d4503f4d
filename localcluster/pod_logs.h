// Container output as `kubectl logs` shows it: kept per pod (the newest lines), read whole or
// from a position, with followers woken when lines arrive (`?follow=true` streams).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "localcluster/http_message.h"

namespace unitrain::localcluster {

class PodLogs {
 public:
  explicit PodLogs(size_t max_lines) : max_lines_(max_lines) {}

  static std::string key(std::string_view ns, std::string_view pod);  // "ns/pod"

  // Appends a line and calls the wake-up of every live follower (outside the lock).
  void append(const std::string& key, std::string_view line);
  void clear(const std::string& key);
  // Lines from absolute index `from` on (all when from is 0), and the index after the last.
  std::pair<std::vector<std::string>, uint64_t> read(const std::string& key, uint64_t from);
  // `wake` is called for each appended line while the follower holds it.
  void follow(const std::string& key, const std::shared_ptr<std::function<void()>>& wake);

 private:
  struct Log {
    std::deque<std::string> lines;
    uint64_t first = 0;  // absolute index of lines.front()
    std::vector<std::weak_ptr<std::function<void()>>> followers;
  };
  size_t max_lines_;
  std::mutex mu_;
  std::map<std::string, Log> logs_;
};

// Each line with its newline.
std::string join_lines(const std::vector<std::string>& lines);
// Keeps the last `tailLines` lines when that parameter is given.
void keep_tail_lines(std::vector<std::string>& lines, const Query& q);
// Cuts the text to `limitBytes` when that parameter is given.
void limit_bytes(std::string& text, const Query& q);

}  // namespace unitrain::localcluster
