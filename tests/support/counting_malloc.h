// Counts the heap allocations of the program that includes this header: every malloc, calloc
// and realloc (glibc's own allocator still does the work; operator new and RapidJSON's
// CrtAllocator both end in these). Include it from exactly one translation unit of a benchmark
// or of a test executable of its own: it defines those functions for the whole program. Never
// linked into the product.
//
// Under AddressSanitizer (the dev preset) the sanitizer owns malloc: nothing is defined, and
// kCountingAllocations says the counts are not available (a test then skips).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace unitrain::bench {
inline std::atomic<uint64_t> malloc_calls{0};   // malloc and calloc
inline std::atomic<uint64_t> realloc_calls{0};  // realloc (a stack or buffer that grows, or a first block)
// Every call that may allocate.
inline uint64_t allocation_calls() { return malloc_calls.load() + realloc_calls.load(); }
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kCountingAllocations = false;
#else
inline constexpr bool kCountingAllocations = true;
#endif
}  // namespace unitrain::bench

#if !defined(__SANITIZE_ADDRESS__)
extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void* malloc(size_t n) {
  unitrain::bench::malloc_calls.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t n, size_t size) {
  unitrain::bench::malloc_calls.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(n, size);
}
extern "C" void* realloc(void* p, size_t n) {
  unitrain::bench::realloc_calls.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, n);
}
#endif
