// Plain HTTP request/response values shared by the transport and the REST layer. No Beast here:
// everything above the transport sees only these types.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace unitrain::kube::http {

struct Header {
  std::string name;
  std::string value;
};

struct Request {
  std::string method = "GET";
  std::string target;  // path + query, percent-encoded, without the server's path prefix
  std::vector<Header> headers;  // Host, Authorization, User-Agent, Content-Length are added
  std::string body;
};

struct Response {
  int status = 0;
  std::vector<Header> headers;
  std::string body;

  // Case-insensitive lookup of the first header with that name.
  std::optional<std::string_view> header(std::string_view name) const;
};

// No usable HTTP response. `request_sent` says whether the server may have seen the request,
// which decides whether a non-idempotent verb may be retried.
struct TransportError {
  enum class Kind { Resolve, Connect, Tls, TlsVerify, Timeout, ConnectionLost, Protocol, Cancelled };
  Kind kind = Kind::Connect;
  std::string message;
  bool request_sent = false;
};

// Retry-After as seconds (RFC 9110 also allows an HTTP date; the API server sends seconds, and a
// date is treated as absent).
std::optional<std::chrono::seconds> parse_retry_after(std::string_view value);

bool iequals(std::string_view a, std::string_view b);

}  // namespace unitrain::kube::http
