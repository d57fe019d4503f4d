// The probe and metrics HTTP endpoint, and the HTTPS webhook endpoint. Beast stays inside
// http_server.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/base/passkey.h"
#include "core/base/result.h"

namespace unitrain::operator_cmd {

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Called on the server thread for every GET; must not block for long.
using HttpHandler = std::function<HttpReply(std::string_view path)>;

struct HttpRequest {
  std::string_view method;  // "POST"
  std::string_view path;    // without the query
  std::string_view body;
  std::string_view authorization = {};  // the Authorization header, "" when absent
};
// Called on the server thread for every request of any method.
using HttpRequestHandler = std::function<HttpReply(const HttpRequest&)>;

// Splits a controller-runtime bind address (":8080", "127.0.0.1:0", "[::1]:9000") into host and
// port; an empty host means every interface. The message names `flag`.
Result<std::pair<std::string, uint16_t>> parse_bind_address(std::string_view flag, std::string_view address);

class HttpServer {
 public:
  static Result<std::unique_ptr<HttpServer>> start(const std::string& host, uint16_t port, HttpHandler handler);
  // HTTPS. Connections fail their handshake until set_certificate() has succeeded once.
  static Result<std::unique_ptr<HttpServer>> start_tls(const std::string& host, uint16_t port,
                                                       HttpRequestHandler handler);
  // Serves `cert_pem` (leaf first, then chain) with `key_pem` from the next connection on;
  // connections already open finish with the previous certificate. HTTPS servers only.
  Status set_certificate(const std::string& cert_pem, const std::string& key_pem);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;
  void stop();

  struct Impl;
  // Only start() and start_tls() can make the key; public so std::make_unique can call it.
  HttpServer(PassKey<HttpServer>, std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace unitrain::operator_cmd
