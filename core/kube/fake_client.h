// An in-memory Client for unit tests of informers, leader election, the event recorder and the
// controllers. It keeps API-server semantics that those components depend on: one
// resourceVersion counter for all writes, 409 on a stale update, list paging with continue
// tokens, label/field selectors, watches from a resourceVersion (replayed from a bounded event
// history, 410 Gone when older), bookmarks. Tests steer it with error injection, forced 410s,
// closed watch streams and a log of every write.
//
// Label selectors are core/api's LabelSelector (equality and set-based). Field selectors compare
// dotted paths (`metadata.name=x`, `status.phase!=Running`) as strings.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/kube/client.h"

namespace unitrain::kube {

class FakeClient final : public Client {
 public:
  enum class Verb { Get, List, Create, Update, UpdateStatus, Patch, Delete, DeleteCollection, Watch };

  struct WriteRecord {
    Verb verb;
    std::string resource;  // group_resource(): "pods", "leases.coordination.k8s.io"
    std::string ns;
    std::string name;
  };

  FakeClient();
  ~FakeClient() override;

  ApiResult<json::Document> get(const GroupVersionResource& r, std::string_view ns, std::string_view name) override;
  ApiResult<json::Document> list(const GroupVersionResource& r, std::string_view ns, const ListOptions& opts) override;
  ApiResult<json::Document> create(const GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                   const WriteOptions& opts = {}) override;
  ApiResult<json::Document> update(const GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                   const WriteOptions& opts = {}) override;
  ApiResult<json::Document> update_status(const GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                          const WriteOptions& opts = {}) override;
  ApiResult<json::Document> patch(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                                  PatchType type, std::string_view body, const PatchOptions& opts = {},
                                  std::string_view subresource = {}) override;
  ApiResult<json::Document> remove(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                                   const DeleteOptions& opts = {}) override;
  ApiResult<json::Document> delete_collection(const GroupVersionResource& r, std::string_view ns,
                                              const ListOptions& selector, const DeleteOptions& opts = {}) override;
  ApiResult<std::unique_ptr<WatchStream>> watch(const GroupVersionResource& r, std::string_view ns,
                                                const WatchOptions& opts) override;

  // ---- test controls ------------------------------------------------------------------------
  // The next call of `verb` (on any resource) fails with `error`; several queue up in order.
  void fail_next(Verb verb, ApiError error);
  // Watches asking for a resourceVersion older than `rv` get 410 Gone, as after an etcd
  // compaction. The history also compacts itself beyond kHistory events.
  void compact(int64_t rv);
  static constexpr size_t kHistory = 10000;
  // Sends an ERROR event carrying a 410 Status to every open watch of `r`, then ends them.
  void expire_watches(const GroupVersionResource& r);
  // Ends every open watch of `r` (next() returns nullopt), like a dropped connection.
  void close_watches(const GroupVersionResource& r);
  // Sends a BOOKMARK with the current resourceVersion to watches of `r` that asked for them.
  void send_bookmark(const GroupVersionResource& r);
  // Events of `r` stop reaching open watches until resumed (a partitioned stream); the history
  // still records them, so a reconnecting watch sees them.
  void pause_watch_delivery(bool paused);
  int open_watches(const GroupVersionResource& r) const;
  int watch_calls() const;
  int list_calls() const;

  std::vector<WriteRecord> writes() const;
  size_t write_count() const;
  void clear_writes();
  int64_t resource_version() const;

  // Creates an object without a write record (test setup); assigns uid/resourceVersion like
  // create. Returns the stored object.
  json::Document seed(const GroupVersionResource& r, const json::Value& obj);

  struct Watcher;  // shared with the stream objects

 private:
  // Objects are kept as compact JSON text: a parsed document per object would cost a whole
  // allocator chunk each, and tests load 100k pods. Reads parse, like a client decoding a response.
  struct Resource {
    std::map<std::string, std::string> objects;  // "ns/name" (or "name") -> object JSON
    struct Event {
      int64_t rv;
      WatchEvent::Type type;
      std::string obj;
      std::string old_obj;  // previous state for Modified/Deleted (selector transitions)
    };
    std::deque<Event> history;
  };

  std::optional<ApiError> take_failure(Verb verb);
  void record(Verb verb, const GroupVersionResource& r, std::string_view ns, std::string_view name);
  ApiResult<json::Document> create_locked(const GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                          bool record_write);
  ApiResult<json::Document> store_update_locked(const GroupVersionResource& r, std::string_view ns,
                                                std::string_view name, json::Document updated, Verb verb);
  ApiResult<json::Document> remove_locked(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                                          const DeleteOptions& opts);
  void emit_locked(const GroupVersionResource& r, WatchEvent::Type type, std::string obj, std::string old_obj,
                   int64_t rv);

  mutable std::mutex mu_;
  std::map<std::string, Resource> resources_;  // by group_resource()
  int64_t rv_ = 1;
  int64_t compacted_ = 0;
  int64_t uid_counter_ = 0;
  std::map<Verb, std::deque<ApiError>> failures_;
  std::vector<WriteRecord> writes_;
  std::vector<std::shared_ptr<Watcher>> watchers_;
  bool paused_ = false;
  int watch_calls_ = 0;
  int list_calls_ = 0;
};

const char* to_string(FakeClient::Verb v);

}  // namespace unitrain::kube
