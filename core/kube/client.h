// The Kubernetes API as the operator sees it: an abstract client over resources, with errors as
// values decoded from metav1.Status. The HTTP implementation (rest_client.h) and the in-memory
// fake for unit tests (fake_client.h) both implement it; informers, leader election, the event
// recorder and the controllers depend only on this header, never on Boost.Beast.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/json/coded_text.h"
#include "core/json/field_mask.h"
#include "core/json/json.h"
#include "core/kube/resource.h"

namespace unitrain::kube {

// A decoded API failure. `reason` follows metav1.StatusReason; transport failures (no HTTP
// response at all) use Reason::Transport, undecodable bodies Reason::BadResponse.
struct ApiError {
  enum class Reason {
    Unknown, NotFound, AlreadyExists, Conflict, Invalid, Forbidden, Unauthorized, Gone,
    TooManyRequests, Timeout, ServerTimeout, InternalError, BadRequest, MethodNotAllowed,
    NotAcceptable, UnsupportedMediaType, RequestEntityTooLarge, ServiceUnavailable, Expired,
    Transport, BadResponse, Cancelled,
  };
  struct Cause {
    std::string type;     // "FieldValueInvalid"
    std::string message;  // "Invalid value: -1: must be greater than or equal to 0"
    std::string field;    // "spec.runPolicy.backoffLimit"
  };

  Reason reason = Reason::Unknown;
  int code = 0;          // HTTP status, 0 when none was received
  std::string message;   // Status.message or the transport error text
  std::vector<Cause> causes;
  std::optional<std::chrono::seconds> retry_after;  // Retry-After / details.retryAfterSeconds

  bool is(Reason r) const { return reason == r; }
  // Transport errors, 429, 5xx except 501: worth a retry with backoff.
  bool retryable() const;
  std::string to_string() const;  // "Conflict (409): Operation cannot be fulfilled on ..."
};

template <class T>
using ApiResult = Result<T, ApiError>;

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;                // 0: no paging
  std::string continue_token;
  std::string resource_version;     // "" = most recent (quorum read)
  std::string resource_version_match;
  // Only these members of each item are wanted: a client may decode nothing else (RestClient
  // builds only them, in one streaming pass over the response). Null: whole objects.
  std::shared_ptr<const json::FieldMask> fields;
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;
  bool allow_bookmarks = true;
  std::optional<int64_t> timeout_seconds;
  // Only these members of each event's object are wanted (see ListOptions::fields).
  std::shared_ptr<const json::FieldMask> fields;
  // The codes of a cache that keeps each object as coded text (json::CodedText): a client that
  // decodes through `fields` may write that text in the same pass (WatchEvent::text), so the
  // cache need not write it from the document again. Null: not wanted.
  std::shared_ptr<const json::CurrentCodes> text_codes;
};

// What the caller of a write reads of the response (the object as written): most read nothing
// but its new resourceVersion (written_fields()). A client may decode nothing else, as for
// ListOptions::fields. Null: the whole object.
struct WriteOptions {
  std::shared_ptr<const json::FieldMask> response_fields;
};

enum class PatchType { Merge, JSON, Strategic, Apply };

struct PatchOptions {
  std::string field_manager;
  bool force = false;  // server-side apply only
  std::shared_ptr<const json::FieldMask> response_fields;  // see WriteOptions
};

struct DeleteOptions {
  std::optional<std::string> propagation_policy;  // Background | Foreground | Orphan
  std::optional<int64_t> grace_period_seconds;
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  std::shared_ptr<const json::FieldMask> response_fields;  // see WriteOptions
};

// The identity and version of an object: what most writers read back.
std::shared_ptr<const json::FieldMask> written_fields();
// A mask that keeps nothing, for a writer that reads nothing of the response (a pod or Service
// create, an Event): a client need not decode the response at all, and returns an empty object
// for a success (RestClient does not parse the body).
std::shared_ptr<const json::FieldMask> nothing_read();
// Whether `fields` keeps nothing at all (nothing_read(), or any other empty mask).
bool keeps_nothing(const json::FieldMask* fields);

struct WatchEvent {
  enum class Type { Added, Modified, Deleted, Bookmark, Error };
  Type type = Type::Added;
  json::Document object;  // the object; for Error, the metav1.Status
  // The object's coded text, when WatchOptions::text_codes asked for it (Added and Modified).
  json::WrittenText text;
};

// A watch in progress. next() blocks until an event arrives, the stream ends (nullopt), the
// server's timeout passes, or `wait` elapses (nullopt with timed_out() true). Never forever.
class WatchStream {
 public:
  virtual ~WatchStream() = default;
  virtual ApiResult<std::optional<WatchEvent>> next(std::chrono::milliseconds wait) = 0;
  virtual bool timed_out() const = 0;
  // Ends the stream from another thread; a blocked next() returns promptly.
  virtual void cancel() = 0;
};

// One create of Client::create_all.
struct CreateOutcome {
  ApiResult<json::Document> result;
  // The create was sent a second time because the first copy got no answer (its pipelined
  // exchange ended before it): that copy may have been stored, and then this one was answered
  // AlreadyExists.
  bool resent = false;
};

// What create_all answers for an object it will not send (no metadata.name), or nullopt.
std::optional<ApiError> unnamed_create(const GroupVersionResource& r, const json::Value& obj);

class QpsLimiter;

// `ns` empty means cluster-scoped resources or "all namespaces" for list/watch.
class Client {
 public:
  virtual ~Client() = default;

  virtual ApiResult<json::Document> get(const GroupVersionResource& r, std::string_view ns, std::string_view name) = 0;
  // One page; the returned document is the List with metadata.continue / resourceVersion.
  virtual ApiResult<json::Document> list(const GroupVersionResource& r, std::string_view ns, const ListOptions& opts) = 0;
  virtual ApiResult<json::Document> create(const GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                           const WriteOptions& opts = {}) = 0;
  virtual ApiResult<json::Document> update(const GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                           const WriteOptions& opts = {}) = 0;
  virtual ApiResult<json::Document> update_status(const GroupVersionResource& r, std::string_view ns,
                                                  const json::Value& obj, const WriteOptions& opts = {}) = 0;
  virtual ApiResult<json::Document> patch(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                                          PatchType type, std::string_view body, const PatchOptions& opts = {},
                                          std::string_view subresource = {}) = 0;
  // The returned document is the object (while finalizers or graceful deletion keep it) or a Status.
  virtual ApiResult<json::Document> remove(const GroupVersionResource& r, std::string_view ns, std::string_view name,
                                           const DeleteOptions& opts = {}) = 0;
  virtual ApiResult<json::Document> delete_collection(const GroupVersionResource& r, std::string_view ns,
                                                      const ListOptions& selector, const DeleteOptions& opts = {}) = 0;
  virtual ApiResult<std::unique_ptr<WatchStream>> watch(const GroupVersionResource& r, std::string_view ns,
                                                        const WatchOptions& opts) = 0;

  // Creates each object, in order, in its metadata.namespace, with one request and one rate-limit
  // token each: what create() does for each in turn, except that a client may send them as one
  // pipelined exchange on one connection (RestClient does). A create left without an answer when
  // that exchange ends early (the server closed the connection) is sent again on its own
  // (CreateOutcome::resent). So every object must carry a metadata.name chosen by the caller (not
  // generateName): a create sent twice cannot then make two objects. One without a name fails as
  // BadRequest, unsent.
  virtual std::vector<CreateOutcome> create_all(const GroupVersionResource& r, std::span<const json::Document> objects,
                                                const WriteOptions& opts = {});

  // The client-side rate limit every request of this client takes a token from, if it has one: a
  // caller that paces its own requests (the event recorder writes a backlog in bursts) plans with
  // the client's budget itself instead of keeping a second one that would drift from it.
  virtual const QpsLimiter* rate_limit() const { return nullptr; }
};

}  // namespace unitrain::kube
