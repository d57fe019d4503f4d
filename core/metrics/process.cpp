#include "core/metrics/process.h"

#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace unitrain::metrics {

namespace {

std::optional<std::string> read_file(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<double> number(std::string_view s) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

double open_fd_count() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  double n = 0;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n - 1;  // the descriptor opendir itself holds
}

}  // namespace

Status parse_proc_stat(std::string_view stat, double ticks, double page_size, double boot_time, ProcessStats& out) {
  // "pid (comm) state ppid ...": comm may contain anything, so fields start after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string_view::npos) return fail("/proc/self/stat: no command name");
  std::vector<std::string_view> fields;
  std::string_view rest = stat.substr(close + 1);
  while (!rest.empty()) {
    const size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    const size_t end = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, end));
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  }
  // After ')': field 3 (state) is index 0; utime 14, stime 15, starttime 22, vsize 23, rss 24.
  auto at = [&](size_t field) -> std::optional<double> {
    const size_t i = field - 3;
    return i < fields.size() ? number(fields[i]) : std::nullopt;
  };
  const auto utime = at(14), stime = at(15), start = at(22), vsize = at(23), rss = at(24);
  if (!utime || !stime || !start || !vsize || !rss) return fail("/proc/self/stat: too few or malformed fields");
  out.cpu_seconds = (*utime + *stime) / ticks;
  out.start_time_seconds = boot_time + *start / ticks;
  out.virtual_memory_bytes = *vsize;
  out.resident_memory_bytes = *rss * page_size;
  return {};
}

std::optional<double> parse_limit(std::string_view limits, std::string_view row) {
  size_t pos = 0;
  while (pos < limits.size()) {
    size_t end = limits.find('\n', pos);
    if (end == std::string_view::npos) end = limits.size();
    std::string_view line = limits.substr(pos, end - pos);
    pos = end + 1;
    if (!line.starts_with(row)) continue;
    line.remove_prefix(row.size());
    const size_t start = line.find_first_not_of(' ');
    if (start == std::string_view::npos) return std::nullopt;
    line.remove_prefix(start);
    const std::string_view soft = line.substr(0, line.find(' '));
    if (soft == "unlimited") return 18446744073709551615.0;
    return number(soft);
  }
  return std::nullopt;
}

Result<ProcessStats> read_process_stats() {
  ProcessStats s;
  auto stat = read_file("/proc/self/stat");
  if (!stat) return fail("/proc/self/stat cannot be read");
  double boot_time = 0;
  if (auto proc_stat = read_file("/proc/stat")) {
    const size_t at = proc_stat->find("\nbtime ");
    if (at != std::string::npos) {
      const size_t start = at + 7, end = proc_stat->find('\n', start);
      boot_time = number(std::string_view(*proc_stat).substr(start, end - start)).value_or(0);
    }
  }
  if (auto st = parse_proc_stat(*stat, static_cast<double>(sysconf(_SC_CLK_TCK)),
                                static_cast<double>(sysconf(_SC_PAGESIZE)), boot_time, s);
      !st)
    return fail(st.error());
  if (auto limits = read_file("/proc/self/limits")) {
    s.max_fds = parse_limit(*limits, "Max open files").value_or(0);
    s.virtual_memory_max_bytes = parse_limit(*limits, "Max address space").value_or(0);
  }
  s.open_fds = open_fd_count();
  return s;
}

Status register_process_metrics(Registry& r) {
  struct Families {
    Family *cpu, *resident, *virtual_bytes, *virtual_max, *open_fds, *max_fds, *start;
  };
  Families f{};
  std::pair<Family**, Result<Family*>> all[] = {
      {&f.cpu, r.counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.")},
      {&f.resident, r.gauge("process_resident_memory_bytes", "Resident memory size in bytes.")},
      {&f.virtual_bytes, r.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.")},
      {&f.virtual_max, r.gauge("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.")},
      {&f.open_fds, r.gauge("process_open_fds", "Number of open file descriptors.")},
      {&f.max_fds, r.gauge("process_max_fds", "Maximum number of open file descriptors.")},
      {&f.start, r.gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.")},
  };
  for (auto& [slot, family] : all) {
    if (!family) return fail(family.error());
    *slot = *family;
  }
  r.add_collector([f] {
    auto s = read_process_stats();
    if (!s) return;  // /proc unreadable: the families stay at their last values
    f.cpu->set({}, s->cpu_seconds);
    f.resident->set({}, s->resident_memory_bytes);
    f.virtual_bytes->set({}, s->virtual_memory_bytes);
    f.virtual_max->set({}, s->virtual_memory_max_bytes);
    f.open_fds->set({}, s->open_fds);
    f.max_fds->set({}, s->max_fds);
    f.start->set({}, s->start_time_seconds);
  });
  return {};
}

}  // namespace unitrain::metrics
