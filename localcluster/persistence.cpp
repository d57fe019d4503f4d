#include "localcluster/persistence.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "core/json/json.h"

namespace unitrain::localcluster {
namespace {

std::string escape(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string errno_text() { return std::strerror(errno); }

Status write_all(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write " + path + ": " + errno_text());
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

Status fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return fail("open " + dir + ": " + errno_text());
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return fail("fsync " + dir + ": " + errno_text());
  return {};
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::string();
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return fail("read " + path + ": " + errno_text());
  return ss.str();
}

// Applies one record; `lineno` and `path` only name the error.
Status apply_record(const json::Value& rec, PersistedState& state, const std::string& where) {
  auto op = json::get_string(rec, "/op");
  auto res = json::get_string(rec, "/res");
  auto key = json::get_string(rec, "/key");
  auto rv = json::get_int(rec, "/rv");
  if (!op || !res || !key || !rv) return fail(where + ": record needs op, res, key and rv");
  if (*op == "put") {
    const json::Value* obj = json::find(rec, "/obj");
    if (obj == nullptr || !obj->IsObject()) return fail(where + ": put record without obj");
    state.objects[std::string(*res)][std::string(*key)] = json::dump(*obj);
  } else if (*op == "delete") {
    auto it = state.objects.find(std::string(*res));
    if (it != state.objects.end()) it->second.erase(std::string(*key));
  } else {
    return fail(where + ": unknown op '" + std::string(*op) + "'");
  }
  if (static_cast<uint64_t>(*rv) > state.resource_version) state.resource_version = static_cast<uint64_t>(*rv);
  return {};
}

}  // namespace

Status make_private_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail("state dir " + dir + ": " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) return fail("chmod 0700 " + dir + ": " + errno_text());
  // Files left by an older version (or another umask) are tightened too.
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    if (::chmod(e.path().c_str(), 0600) != 0) return fail("chmod 0600 " + e.path().string() + ": " + errno_text());
  }
  if (ec) return fail("state dir " + dir + ": " + ec.message());
  return {};
}

Status write_private_file(const std::string& path, std::string_view data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return fail("open " + path + ": " + errno_text());
  Status st = ::fchmod(fd, 0600) == 0 ? Status{} : fail("chmod 0600 " + path + ": " + errno_text());
  if (st) st = write_all(fd, data, path);
  if (::close(fd) != 0 && st) st = fail("close " + path + ": " + errno_text());
  return st;
}

PersistentLog::PersistentLog(PassKey<PersistentLog>, std::string dir, uint64_t compact_bytes)
    : dir_(std::move(dir)), compact_bytes_(compact_bytes) {}

PersistentLog::~PersistentLog() {
  if (fd_ >= 0) ::close(fd_);
}

Status PersistentLog::open_log() {
  std::string path = dir_ + "/log.jsonl";
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) return fail("open " + path + ": " + errno_text());
  if (::fchmod(fd_, 0600) != 0) return fail("chmod 0600 " + path + ": " + errno_text());
  struct stat st {};
  if (::fstat(fd_, &st) == 0) log_bytes_ = static_cast<uint64_t>(st.st_size);
  return {};
}

Result<std::unique_ptr<PersistentLog>> PersistentLog::open(const std::string& dir, uint64_t compact_bytes,
                                                           PersistedState& state) {
  if (auto st = make_private_dir(dir); !st) return fail(st.error());
  auto log = std::make_unique<PersistentLog>(PassKey<PersistentLog>{}, dir, compact_bytes);

  // Snapshot: first line {"rv":N}, then one {"res","key","obj"} per object. It is only ever
  // replaced by rename, so it is complete or absent.
  std::string snap_path = dir + "/snapshot.jsonl";
  auto snap = read_file(snap_path);
  if (!snap) return fail(snap.error().message);
  size_t lineno = 0;
  for (size_t pos = 0; pos < snap->size();) {
    size_t nl = snap->find('\n', pos);
    if (nl == std::string::npos) nl = snap->size();
    std::string_view line(snap->data() + pos, nl - pos);
    pos = nl + 1;
    ++lineno;
    if (line.empty()) continue;
    std::string where = snap_path + ": line " + std::to_string(lineno);
    auto doc = json::Document::parse(line);
    if (!doc) return fail(where + ": " + doc.error().message);
    if (lineno == 1) {
      auto rv = json::get_int(doc->root(), "/rv");
      if (!rv) return fail(where + ": header needs rv");
      state.resource_version = static_cast<uint64_t>(*rv);
      continue;
    }
    auto res = json::get_string(doc->root(), "/res");
    auto key = json::get_string(doc->root(), "/key");
    const json::Value* obj = json::find(doc->root(), "/obj");
    if (!res || !key || obj == nullptr) return fail(where + ": snapshot record needs res, key and obj");
    state.objects[std::string(*res)][std::string(*key)] = json::dump(*obj);
  }

  std::string log_path = dir + "/log.jsonl";
  auto text = read_file(log_path);
  if (!text) return fail(text.error().message);
  size_t good_end = 0;
  lineno = 0;
  for (size_t pos = 0; pos < text->size();) {
    size_t nl = text->find('\n', pos);
    ++lineno;
    std::string where = log_path + ": line " + std::to_string(lineno);
    if (nl == std::string::npos) {
      // A record is acknowledged only after its newline is on disk, so this one never was.
      spdlog::warn("{}: dropping torn last record ({} bytes) left by an interrupted write", where,
                   text->size() - pos);
      break;
    }
    std::string_view line(text->data() + pos, nl - pos);
    auto doc = json::Document::parse(line);
    if (!doc) {
      if (text->find_first_not_of(" \n", nl + 1) == std::string::npos) {
        spdlog::warn("{}: dropping torn last record: {}", where, doc.error().message);
        break;
      }
      return fail(where + ": " + doc.error().message);
    }
    auto st = apply_record(doc->root(), state, where);
    if (!st) return fail(st.error().message);
    pos = nl + 1;
    good_end = pos;
  }
  if (good_end != text->size()) {
    if (::truncate(log_path.c_str(), static_cast<off_t>(good_end)) != 0) {
      return fail("truncate " + log_path + ": " + errno_text());
    }
  }
  auto st = log->open_log();
  if (!st) return fail(st.error().message);
  return log;
}

Status PersistentLog::append(const std::string& line) {
  std::string path = dir_ + "/log.jsonl";
  auto st = write_all(fd_, line, path);
  if (!st) return st;
  if (::fdatasync(fd_) != 0) return fail("fdatasync " + path + ": " + errno_text());
  log_bytes_ += line.size();
  return {};
}

Status PersistentLog::append_put(std::string_view storage_key, std::string_view key, uint64_t rv,
                                 std::string_view object_json) {
  std::string line;
  line.reserve(object_json.size() + storage_key.size() + key.size() + 64);
  line += "{\"op\":\"put\",\"res\":" + escape(storage_key) + ",\"key\":" + escape(key) +
          ",\"rv\":" + std::to_string(rv) + ",\"obj\":";
  line += object_json;
  line += "}\n";
  return append(line);
}

Status PersistentLog::append_delete(std::string_view storage_key, std::string_view key, uint64_t rv) {
  return append("{\"op\":\"delete\",\"res\":" + escape(storage_key) + ",\"key\":" + escape(key) +
                ",\"rv\":" + std::to_string(rv) + "}\n");
}

Status PersistentLog::compact(uint64_t rv, const std::vector<SnapshotItem>& objects) {
  std::string tmp = dir_ + "/snapshot.jsonl.tmp";
  std::string final_path = dir_ + "/snapshot.jsonl";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return fail("open " + tmp + ": " + errno_text());
  std::string buf = "{\"rv\":" + std::to_string(rv) + "}\n";
  Status st;
  for (const SnapshotItem& item : objects) {
    buf += "{\"res\":" + escape(item.storage_key) + ",\"key\":" + escape(item.key) + ",\"obj\":";
    buf += item.object_json;
    buf += "}\n";
    if (buf.size() > (1u << 20)) {
      st = write_all(fd, buf, tmp);
      if (!st) break;
      buf.clear();
    }
  }
  if (st) st = write_all(fd, buf, tmp);
  if (st && ::fsync(fd) != 0) st = fail("fsync " + tmp + ": " + errno_text());
  ::close(fd);
  if (!st) return st;
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) return fail("rename " + tmp + ": " + errno_text());
  st = fsync_dir(dir_);
  if (!st) return st;
  // Replaying the old log over the new snapshot gives the same state (the snapshot is the state
  // after that log), so a crash between the rename and this truncation loses nothing.
  if (::ftruncate(fd_, 0) != 0) return fail("truncate " + dir_ + "/log.jsonl: " + errno_text());
  if (::fsync(fd_) != 0) return fail("fsync " + dir_ + "/log.jsonl: " + errno_text());
  log_bytes_ = 0;
  return {};
}

}  // namespace unitrain::localcluster
