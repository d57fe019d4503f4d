// Counts every malloc of the benchmark program that includes this header (glibc's own allocator
// still does the work). Include it from exactly one translation unit of a benchmark executable:
// it defines `malloc`. On demand only, never linked into the product or the test suite.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace unitrain::bench {
inline std::atomic<uint64_t> malloc_calls{0};
}  // namespace unitrain::bench

extern "C" void* __libc_malloc(size_t);
extern "C" void* malloc(size_t n) {
  unitrain::bench::malloc_calls.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(n);
}
