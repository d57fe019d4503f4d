// The process_* families of Prometheus' process collector (controller-runtime registers it):
// CPU seconds, resident and virtual memory, open and maximum file descriptors, start time, read
// from /proc/self at scrape time.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/base/result.h"
#include "core/metrics/metrics.h"

namespace unitrain::metrics {

struct ProcessStats {
  double cpu_seconds = 0;            // user + system
  double resident_memory_bytes = 0;
  double virtual_memory_bytes = 0;
  double virtual_memory_max_bytes = 0;  // "Max address space"; unlimited as 2^64-1, as procfs reports it
  double open_fds = 0;
  double max_fds = 0;                   // the soft limit, "Max open files"
  double start_time_seconds = 0;        // since the Unix epoch
};

// Pure parsers, for tests: /proc/self/stat's line (the command name may hold spaces and
// parentheses) given clock ticks per second, the page size and the boot time (/proc/stat
// "btime"); the soft limit of one row of /proc/self/limits ("Max open files").
Status parse_proc_stat(std::string_view stat, double ticks_per_second, double page_size, double boot_time,
                       ProcessStats& out);
std::optional<double> parse_limit(std::string_view limits, std::string_view row);

// This process, now.
Result<ProcessStats> read_process_stats();

// Registers the process_* families in `registry` and a collector filling them at scrape time.
Status register_process_metrics(Registry& registry);

}  // namespace unitrain::metrics
