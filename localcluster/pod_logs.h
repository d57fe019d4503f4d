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
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"
#include "localcluster/api_errors.h"
#include "localcluster/http_message.h"

namespace unitrain::localcluster {

class PodLogs {
 public:
  explicit PodLogs(size_t max_lines) : max_lines_(max_lines) {}

  static std::string key(std::string_view ns, std::string_view pod, std::string_view container);  // "ns/pod/container"

  // Appends a line of the container run `run_id` and wakes every live follower (outside the
  // lock). A new run_id starts a new log; the one before is kept for `previous=true` when
  // `restarted` (a restart in place), dropped otherwise (a new pod under the same name).
  // An empty run_id appends to the current run.
  void append(const std::string& key, std::string_view line, std::string_view run_id = {}, bool restarted = false);
  void clear(const std::string& key);
  // Lines from absolute index `from` on (all when from is 0), and the index after the last.
  std::pair<std::vector<std::string>, uint64_t> read(const std::string& key, uint64_t from);
  // The run before the current one, when there was one.
  std::optional<std::vector<std::string>> read_previous(const std::string& key);
  // `wake` is called for each appended line while the follower holds it.
  void follow(const std::string& key, const std::shared_ptr<std::function<void()>>& wake);

 private:
  struct Log {
    std::string run_id;
    std::deque<std::string> lines;
    uint64_t first = 0;  // absolute index of lines.front()
    std::optional<std::vector<std::string>> previous;
    std::vector<std::weak_ptr<std::function<void()>>> followers;
  };
  size_t max_lines_;
  std::mutex mu_;
  std::map<std::string, Log> logs_;
};

// Which container's log a request reads (`container=`, `previous=`), checked against the pod
// as the kubelet and kube-apiserver check it, worded as they word their 400s.
struct LogTarget {
  std::string container;
  bool previous = false;
  bool running = false;      // the container runs now (a follow streams until it stops)
  bool restarting = false;   // waiting after a run (CrashLoopBackOff): the last run is the previous one
  std::string container_id;  // of the current run, "" before the first
};
Result<LogTarget, StatusError> log_target(const json::Value& pod, const Query& q);

// Each line with its newline.
std::string join_lines(const std::vector<std::string>& lines);
// Keeps the last `tailLines` lines when that parameter is given.
void keep_tail_lines(std::vector<std::string>& lines, const Query& q);
// Cuts the text to `limitBytes` when that parameter is given.
void limit_bytes(std::string& text, const Query& q);

}  // namespace unitrain::localcluster
