// Durable state for the local cluster: an append-only log of writes plus a snapshot that the log
// is compacted into. See localcluster/README.md ("Persistence") for the format and fsync policy.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/passkey.h"
#include "core/base/result.h"

namespace unitrain::localcluster {

// What a replay yields: the last resourceVersion and every live object's compact JSON, per
// storage key ("<group>/<plural>") and object key ("<namespace>/<name>" or "<name>").
struct PersistedState {
  uint64_t resource_version = 0;
  std::map<std::string, std::map<std::string, std::string>> objects;
};

// The state directory holds Secret data, webhook CA keys, SSH keys and the bearer token: it is
// mode 0700 and every file in it 0600 whatever the umask; an existing directory or file is
// tightened to those modes by make_private_dir.
Status make_private_dir(const std::string& dir);
// Writes `data` to `path` (created or truncated) with mode 0600.
Status write_private_file(const std::string& path, std::string_view data);

class PersistentLog {
 public:
  // Opens (creating) `dir`, replays snapshot + log into `state`. A torn last log line (a write
  // that was never acknowledged, e.g. after kill -9) is dropped with a warning and cut from the
  // file; any other unreadable line is an error naming the file and line.
  static Result<std::unique_ptr<PersistentLog>> open(const std::string& dir, uint64_t compact_bytes,
                                                     PersistedState& state);
  ~PersistentLog();
  PersistentLog(const PersistentLog&) = delete;
  PersistentLog& operator=(const PersistentLog&) = delete;

  // Each call returns after the record is written and fdatasync'ed.
  Status append_put(std::string_view storage_key, std::string_view key, uint64_t rv, std::string_view object_json);
  Status append_delete(std::string_view storage_key, std::string_view key, uint64_t rv);

  bool wants_compaction() const { return log_bytes_ >= compact_bytes_; }
  // Writes a snapshot of `objects` at `rv` (temp file, fsync, rename, fsync dir), then empties
  // the log.
  struct SnapshotItem {
    std::string_view storage_key;
    std::string_view key;
    std::string_view object_json;
  };
  Status compact(uint64_t rv, const std::vector<SnapshotItem>& objects);

  uint64_t log_bytes() const { return log_bytes_; }

  // Only open() can make the key; public so std::make_unique can call it.
  PersistentLog(PassKey<PersistentLog>, std::string dir, uint64_t compact_bytes);

 private:
  Status append(const std::string& line);
  Status open_log();

  std::string dir_;
  uint64_t compact_bytes_;
  uint64_t log_bytes_ = 0;
  int fd_ = -1;
};

}  // namespace unitrain::localcluster
