// The local cluster's Store: in memory, optionally persisted to a write-ahead log, serving the
// built-in resources and the resources of established CRDs. How it works: README.md ("Store").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/base/result.h"
#include "localcluster/store.h"

namespace unitrain::localcluster {

struct StoreOptions {
  // With a directory, every acknowledged write is in an append-only log there before the call
  // returns, and a new store over the same directory starts from it.
  std::optional<std::string> state_dir;
  // Events kept per resource for watches that resume from an older resourceVersion; older ones
  // get 410 Gone.
  size_t watch_window = 10000;
  // Events a single watcher may have queued and not drained; past it the store ends that watch
  // (the client re-watches from its last resourceVersion, as with kube-apiserver).
  size_t watcher_queue_limit = 100000;
  // The log is compacted into a snapshot once it grows past this size.
  uint64_t compact_log_bytes = 64ull << 20;
};

Result<std::unique_ptr<Store>> make_memory_store(const StoreOptions& options);

}  // namespace unitrain::localcluster
