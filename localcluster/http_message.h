// A request and a response as the local cluster's handlers see them: plain values, so that
// routing, content negotiation and the REST handlers compile without Boost.Beast (only server.cpp
// speaks HTTP), and the parsing of request targets, which takes untrusted input.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "localcluster/api_errors.h"

namespace unitrain::localcluster {

// Decoded query parameters; the first of repeated ones is kept.
using Query = std::map<std::string, std::string, std::less<>>;

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // as sent (percent-encoded), without the query
  Query query;
  std::string accept;
  std::string content_type;
  std::string_view body;  // the transport's buffer, valid while the request is handled
};

// A whole (non-streaming) response.
struct HttpReply {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// The metav1.Status of `e` with its code.
HttpReply error_reply(const StatusError& e);

// %XX escapes decoded (a malformed one is kept as is); with `plus_is_space`, '+' is a space
// (query strings).
std::string percent_decode(std::string_view s, bool plus_is_space);
// "a=1&b=x%20y&c" -> {a: "1", b: "x y", c: ""}.
Query parse_query(std::string_view query);
// The path and the decoded query of a request target ("/api/v1/pods?watch=1").
std::pair<std::string, Query> parse_target(std::string_view target);
// The decoded, non-empty segments of a path: "/api/v1//pods" -> {"api", "v1", "pods"}.
std::vector<std::string> split_path(std::string_view path);

// The parameter's value, "" when absent.
std::string query_value(const Query& q, std::string_view key);
// Whether a boolean parameter is true as kube-apiserver's parameter codec reads it
// (runtime.Convert_Slice_string_To_bool): present and neither "0" nor "false" in any case, so
// "", "yes" and "maybe" are true.
bool query_flag(const Query& q, std::string_view key);

// Spaces and tabs trimmed from both ends (header values).
std::string_view trim(std::string_view s);

}  // namespace unitrain::localcluster
