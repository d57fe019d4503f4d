// Client over HTTP: URL building, content types, metav1.Status decoding, client-side QPS limit
// and client-go's retry rules, on top of the Beast transport (which this header does not expose).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>

#include "core/base/passkey.h"
#include "core/kube/client.h"
#include "core/kube/config.h"
#include "core/kube/http.h"
#include "core/kube/qps_limiter.h"
#include "core/kube/transport.h"

namespace unitrain::kube {

// ---- request building (pure, unit-tested) ---------------------------------------------------
// Percent-encodes everything but RFC 3986 unreserved characters.
std::string url_escape(std::string_view s);
// /api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUBRESOURCE]] or /apis/GROUP/VERSION/...
std::string resource_path(const GroupVersionResource& r, std::string_view ns, std::string_view name = {},
                          std::string_view subresource = {});
// "?labelSelector=...&limit=..." or "" when no option is set.
std::string list_query(const ListOptions& o);
std::string watch_query(const WatchOptions& o);
const char* patch_content_type(PatchType t);
// metav1.DeleteOptions as JSON.
std::string delete_options_body(const DeleteOptions& o);

// ---- response decoding (pure, unit-tested) --------------------------------------------------
// client-go's reasonForCode: the reason an HTTP code implies when the body says nothing better.
ApiError::Reason reason_for_code(int code);
std::optional<ApiError::Reason> parse_reason(std::string_view status_reason);
// An HTTP failure into an ApiError: metav1.Status reason/message/causes/retryAfterSeconds when
// the body is a Status, else the reason the code implies and the body's start as the message.
ApiError decode_status(int code, std::string_view body, std::optional<std::string_view> retry_after_header = {});
ApiError from_transport_error(const http::TransportError& e);

// ---- retry policy (pure, unit-tested) -------------------------------------------------------
struct RetryPolicy {
  int max_retries = 10;  // client-go's default for Retry-After retries
  std::chrono::milliseconds base_backoff{200};
  std::chrono::milliseconds max_backoff{10000};
  std::chrono::seconds max_retry_after{60};  // a larger Retry-After is clamped
};
// The outcome of one attempt: an HTTP status (with its Retry-After), or a transport failure.
struct AttemptOutcome {
  int status = 0;
  std::optional<std::chrono::seconds> retry_after;
  const http::TransportError* transport_error = nullptr;
};
// How long to wait before attempt `attempt + 1`, or nullopt to give up. Follows client-go:
// 429 and a 5xx carrying Retry-After are retried for any verb (the server asked for it); other
// 5xx (but 501) and lost connections/timeouts only for GET; failures before the request reached
// the server (resolve/connect) for any verb. TLS errors are never retried.
std::optional<std::chrono::milliseconds> retry_delay(const RetryPolicy& p, std::string_view method, int attempt,
                                                     const AttemptOutcome& outcome);

// One attempt of a request (a retry is another attempt), as RestClientOptions::on_attempt sees it.
struct AttemptReport {
  std::string_view method;  // "GET"
  std::string_view target;  // path and query
  std::chrono::steady_clock::duration took{};
  int status = 0;  // the HTTP status; 0 when no response arrived (then transport_error says why)
  const http::TransportError* transport_error = nullptr;
};

struct RestClientOptions {
  RetryPolicy retry;
  TransportOptions transport;
  // How retries wait; tests replace it to run without sleeping.
  std::function<void(std::chrono::milliseconds)> sleep;
  // Once stop is requested, a failed attempt is no longer retried and a retry wait (the default
  // sleep) ends at once: a stopping process is not held up by an API server that is gone.
  std::stop_token stop;
  // Once stop is requested, a request still waiting for the rate limiter's token fails at once
  // (Cancelled) instead of waiting: for a client whose writes may be given up (events), so a
  // stopping process is not held up by its rate limit.
  bool stop_ends_rate_limit_wait = false;
  // Told about every attempt as soon as it ends, before any retry wait, on the calling thread
  // (request latency metrics; an unreachable server is reported at once, not after the retries).
  // Must not block.
  std::function<void(const AttemptReport&)> on_attempt;
};

class RestClient final : public Client {
 public:
  static Result<std::unique_ptr<RestClient>> create(const RestConfig& cfg, RestClientOptions opts = {});

  ApiResult<json::Document> get(const GroupVersionResource& r, std::string_view ns, std::string_view name) override;
  ApiResult<json::Document> list(const GroupVersionResource& r, std::string_view ns, const ListOptions& opts) override;
  ApiResult<json::Document> create(const GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                   const WriteOptions& opts = {}) override;
  // One token each, all reserved at once and waited for once (at a low qps a batch of four costs one
  // sleep and wake-up, not four; the last is sent when it would have been one at a time, the
  // others no earlier than their own token); then one pipelined exchange (Transport::send_pipelined),
  // each answer through the retry rules as a lone request's; a create the exchange left without an
  // answer is sent again on its own, through execute().
  std::vector<CreateOutcome> create_all(const GroupVersionResource& r, std::span<const json::Document> objects,
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

  // GET of any API path ("/apis/batch/v1"), for discovery.
  ApiResult<json::Document> get_path(std::string_view path);

  const QpsLimiter* rate_limit() const override { return &limiter_; }

  const RestConfig& config() const { return cfg_; }
  Transport& transport() { return *transport_; }

  // Only create() can make the key; public so std::make_unique can call it.
  RestClient(PassKey<RestClient>, RestConfig cfg, RestClientOptions opts, std::unique_ptr<Transport> t);

 private:
  using Sent = Result<http::Response, http::TransportError>;
  // Limiter + retries; a 2xx response or the decoded failure. `first`: the outcome of the first
  // attempt when it was already sent (in a pipelined exchange); the retries follow as usual.
  ApiResult<http::Response> execute(const http::Request& req, std::optional<Sent> first = std::nullopt);
  // A response's body as JSON (through `fields`), or the failure.
  ApiResult<json::Document> decode(const http::Request& req, ApiResult<http::Response> r,
                                   const json::FieldMask* fields) const;
  void report(const http::Request& req, std::chrono::steady_clock::time_point started, int status,
              const http::TransportError* error) const;
  // Takes `n` rate-limiter tokens, waiting once as long as the last takes; false when the wait was
  // cut short by a stop request (stop_ends_rate_limit_wait).
  bool take_tokens(size_t n = 1);
  // Waits `delay` before a retry; false (retry no more) once stop is requested.
  bool wait_to_retry(std::chrono::milliseconds delay);
  // `fields`: decode only those (a list's items through list_fields()).
  ApiResult<json::Document> request_json(std::string method, std::string target, std::string body = {},
                                         std::string content_type = {}, const json::FieldMask* fields = nullptr);
  ApiResult<json::Document> put_object(const GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                       std::string_view subresource, const json::FieldMask* response_fields);

  RestConfig cfg_;
  RestClientOptions opts_;
  std::unique_ptr<Transport> transport_;
  QpsLimiter limiter_;
};

}  // namespace unitrain::kube
