// HTTP/1.1 client for one API server: TLS (chain + hostname verification by default, SNI, client
// certificates and CA from memory), bearer tokens re-read from a rotating file, a keep-alive
// pool, and streamed response bodies for watches. Every call is bounded by a timeout.
//
// One attempt per call: retries, backoff and QPS limits belong to the REST layer, which knows
// which verbs are safe to repeat. The only exception is a pooled keep-alive connection that the
// server had already closed: a GET on it is retried once on a fresh connection.
//
// Thread-safe: any number of threads may call send()/open_stream() concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "core/base/passkey.h"
#include "core/base/result.h"
#include "core/kube/config.h"
#include "core/kube/http.h"

namespace unitrain::kube {

struct TransportOptions {
  size_t max_idle_connections = 25;  // client-go's MaxIdleConnsPerHost
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  // Re-read the token file at least this often even if its mtime did not change.
  std::chrono::seconds token_reread{60};
  std::string user_agent = "unitrain/0.1";
  // Once requested, a request in flight (connecting, writing, waiting for the response) ends at
  // once and every later one fails without being sent, both with a Cancelled error: what a
  // cancelled context does to client-go's requests, so a stopping process is not held up by a
  // server that does not answer.
  std::stop_token cancel;
};

// The body of a response that is read incrementally (watches). Owned by one reader thread;
// cancel() may be called from any thread.
class BodyStream {
 public:
  enum class Read { Data, End, Timeout };
  virtual ~BodyStream() = default;
  // Status and headers; the body field is empty.
  virtual const http::Response& head() const = 0;
  // Appends body bytes to `out` (Data), or reports the end of the body (End) or that `wait`
  // passed with no bytes (Timeout; the stream stays usable). A connection dropped before the end
  // of the body is a ConnectionLost error; cancel() makes it a Cancelled error.
  // Every complete chunk already received is appended in one read.
  virtual Result<Read, http::TransportError> read(std::chrono::milliseconds wait, std::string& out) = 0;
  virtual void cancel() = 0;
};

class Transport {
 public:
  static Result<std::unique_ptr<Transport>> create(const RestConfig& cfg, TransportOptions opts = {});
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // One request, whole response body, bounded by `timeout` (0: the config's timeout).
  Result<http::Response, http::TransportError> send(const http::Request& req,
                                                    std::chrono::milliseconds timeout = {});
  // Several requests as one pipelined HTTP/1.1 exchange: written together in one write on one
  // connection, the responses read in their order, all bounded by `timeout` (0: the config's).
  // One result per request, in order. A response that says `Connection: close`, or a connection
  // lost before every response arrived, ends the pipeline: each request left without a response
  // gets a ConnectionLost error (request_sent: the server may have seen it), for the caller to
  // send again where repeating it is safe; this never repeats a request that was written.
  std::vector<Result<http::Response, http::TransportError>> send_pipelined(std::span<const http::Request> reqs,
                                                                           std::chrono::milliseconds timeout = {});
  // Sends the request and returns once the response headers arrived (bounded by the config's
  // timeout); the body is then read through the stream.
  Result<std::unique_ptr<BodyStream>, http::TransportError> open_stream(const http::Request& req);

  // The token that the next request will carry ("" when none); re-reads the file if needed.
  std::string current_token();
  size_t idle_connections() const;
  size_t connections_opened() const;
  // What reading answers cost, for tests and measurements: each run of a connection's
  // io_context (requests and watches alike) is an epoll_wait, even when a completion is ready.
  // socket_reads counts the reads the transport itself issues (plain TCP answers).
  struct IoCounts {
    uint64_t io_runs = 0;
    uint64_t socket_reads = 0;
  };
  IoCounts io_counts() const;

 private:
  struct Impl;

 public:
  // Only create() can make the key; public so std::make_unique can call it.
  Transport(PassKey<Transport>, std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace unitrain::kube
