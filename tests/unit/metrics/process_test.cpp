// The process_* families: /proc parsing (a command name with spaces and parentheses, limits
// rows) and the families a scrape of this very process shows.
#include <catch2/catch.hpp>

#include <unistd.h>

#include "core/metrics/process.h"

using namespace unitrain::metrics;

TEST_CASE("process: /proc/self/stat fields after a command name with spaces and parentheses") {
  // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
  // cutime cstime priority nice threads itrealvalue starttime vsize rss ...
  const std::string stat =
      "4242 (my (odd) proc) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 8 0 1000 123456789 300 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  ProcessStats s;
  REQUIRE(parse_proc_stat(stat, 100, 4096, 1700000000, s));
  CHECK(s.cpu_seconds == Approx(4.0));
  CHECK(s.start_time_seconds == Approx(1700000010.0));
  CHECK(s.virtual_memory_bytes == 123456789.0);
  CHECK(s.resident_memory_bytes == 300.0 * 4096);
  ProcessStats bad;
  CHECK_FALSE(parse_proc_stat("4242 (truncated) S 1 2", 100, 4096, 0, bad));
  CHECK_FALSE(parse_proc_stat("no command name", 100, 4096, 0, bad));
}

TEST_CASE("process: soft limits from /proc/self/limits, unlimited as 2^64-1") {
  const std::string limits =
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max open files            1024                 1048576              files     \n"
      "Max address space         unlimited            unlimited            bytes     \n";
  CHECK(parse_limit(limits, "Max open files") == 1024.0);
  CHECK(parse_limit(limits, "Max address space") == 18446744073709551615.0);
  CHECK_FALSE(parse_limit(limits, "Max processes"));
}

TEST_CASE("process: a scrape shows this process") {
  Registry r;
  REQUIRE(register_process_metrics(r));
  const std::string text = r.expose();
  for (const char* family : {"process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
                             "process_virtual_memory_max_bytes", "process_open_fds", "process_max_fds",
                             "process_start_time_seconds"}) {
    INFO(family);
    CHECK(text.find(fmt::format("\n{} ", family)) != std::string::npos);
  }
  auto s = read_process_stats();
  REQUIRE(s);
  CHECK(s->resident_memory_bytes > 0);
  CHECK(s->open_fds >= 3);  // stdin, stdout, stderr
  CHECK(s->max_fds >= s->open_fds);
  CHECK(s->start_time_seconds > 1.6e9);
  CHECK(s->start_time_seconds <= static_cast<double>(::time(nullptr)) + 1);
}
