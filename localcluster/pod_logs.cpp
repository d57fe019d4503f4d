#include "localcluster/pod_logs.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

namespace unitrain::localcluster {

std::string PodLogs::key(std::string_view ns, std::string_view pod, std::string_view container) {
  std::string k;
  k.reserve(ns.size() + pod.size() + container.size() + 2);
  k.append(ns).append("/").append(pod).append("/").append(container);
  return k;
}

void PodLogs::append(const std::string& key, std::string_view line, std::string_view run_id, bool restarted) {
  std::vector<std::shared_ptr<std::function<void()>>> wake;
  {
    std::lock_guard lock(mu_);
    auto& log = logs_[key];
    if (!run_id.empty() && run_id != log.run_id) {
      if (restarted && !log.run_id.empty())
        log.previous.emplace(log.lines.begin(), log.lines.end());
      else
        log.previous.reset();
      log.run_id = std::string(run_id);
      // Absolute positions keep growing, so a follower's position stays meaningful.
      log.first += log.lines.size();
      log.lines.clear();
    }
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

std::optional<std::vector<std::string>> PodLogs::read_previous(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = logs_.find(key);
  if (it == logs_.end()) return std::nullopt;
  return it->second.previous;
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

namespace unitrain::localcluster {

namespace {

std::vector<std::string> container_names(const json::Value& pod, const char* field) {
  std::vector<std::string> out;
  if (const json::Value* cs = json::find(pod, std::string("/spec/") + field); cs && cs->IsArray())
    for (const auto& c : cs->GetArray()) out.push_back(json::string_at(c, "/name"));
  return out;
}

std::string bracketed(const std::vector<std::string>& names) {
  std::string s = "[";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? " " : "") + names[i];
  return s + "]";
}

const json::Value* container_status(const json::Value& pod, std::string_view name) {
  for (const char* f : {"/status/containerStatuses", "/status/initContainerStatuses"})
    if (const json::Value* cs = json::find(pod, f); cs && cs->IsArray())
      for (const auto& c : cs->GetArray())
        if (json::string_at(c, "/name") == name) return &c;
  return nullptr;
}

}  // namespace

Result<LogTarget, StatusError> log_target(const json::Value& pod, const Query& q) {
  std::string name = json::string_at(pod, "/metadata/name");
  auto containers = container_names(pod, "containers");
  auto inits = container_names(pod, "initContainers");
  LogTarget t;
  t.container = query_value(q, "container");
  auto prev = query_value(q, "previous");
  t.previous = prev == "true" || prev == "1";
  if (t.container.empty()) {
    if (containers.size() == 1) {
      t.container = containers.front();
    } else {
      std::string msg = fmt::format("a container name must be specified for pod {}, choose one of: {}", name,
                                    bracketed(containers));
      if (!inits.empty()) msg += " or one of the init containers: " + bracketed(inits);
      return fail(errors::bad_request(std::move(msg)));
    }
  }
  if (std::find(containers.begin(), containers.end(), t.container) == containers.end() &&
      std::find(inits.begin(), inits.end(), t.container) == inits.end())
    return fail(errors::bad_request(fmt::format("container {} is not valid for pod {}", t.container, name)));
  const json::Value* st = container_status(pod, t.container);
  t.restarting = st && json::find(*st, "/state/waiting") && json::find(*st, "/lastState/terminated");
  if (t.previous) {
    if (!st || !json::find(*st, "/lastState/terminated"))
      return fail(errors::bad_request(
          fmt::format("previous terminated container \"{}\" in pod \"{}\" not found", t.container, name)));
    return t;
  }
  if (!st || (json::find(*st, "/state/waiting") && json::string_at(*st, "/containerID").empty())) {
    std::string reason = st ? json::string_at(*st, "/state/waiting/reason") : std::string("ContainerCreating");
    return fail(errors::bad_request(fmt::format("container \"{}\" in pod \"{}\" is waiting to start: {}", t.container,
                                                name, reason.empty() ? "ContainerCreating" : reason)));
  }
  t.running = json::find(*st, "/state/running") != nullptr;
  t.container_id = json::string_at(*st, "/containerID");
  return t;
}

}  // namespace unitrain::localcluster
