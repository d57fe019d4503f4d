// The probe and metrics HTTP endpoint. Beast stays inside http_server.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/base/result.h"

namespace unitrain::operator_cmd {

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Called on the server thread for every GET; must not block for long.
using HttpHandler = std::function<HttpReply(std::string_view path)>;

// Splits a controller-runtime bind address (":8080", "127.0.0.1:0", "[::1]:9000") into host and
// port; an empty host means every interface. The message names `flag`.
Result<std::pair<std::string, uint16_t>> parse_bind_address(std::string_view flag, std::string_view address);

class HttpServer {
 public:
  static Result<std::unique_ptr<HttpServer>> start(const std::string& host, uint16_t port, HttpHandler handler);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;
  void stop();

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace unitrain::operator_cmd
