// A tiny scripted HTTP/1.1 server on 127.0.0.1:0 for transport tests: plain sockets plus
// optional OpenSSL, one thread per connection, and handlers that write raw bytes so tests can
// misbehave on purpose (stall, drop a stream mid-body, split chunks anywhere).
#pragma once

#include <arpa/inet.h>
#include <csignal>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <openssl/ssl.h>

namespace unitrain::kube::testing {

struct RawRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string header(const std::string& n) const {
    auto it = headers.find(n);
    return it == headers.end() ? "" : it->second;
  }
};

class Session {
 public:
  Session(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}

  // nullopt when the peer closed or the server is stopping.
  std::optional<RawRequest> read_request() {
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return std::nullopt;
    RawRequest r;
    std::string head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    size_t line_end = head.find("\r\n");
    std::string first = head.substr(0, line_end);
    auto sp1 = first.find(' '), sp2 = first.rfind(' ');
    r.method = first.substr(0, sp1);
    r.target = first.substr(sp1 + 1, sp2 - sp1 - 1);
    size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      size_t e = head.find("\r\n", pos);
      if (e == std::string::npos) e = head.size();
      std::string line = head.substr(pos, e - pos);
      auto colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      r.headers[name] = value;
      pos = e + 2;
    }
    size_t len = r.headers.count("content-length") ? std::stoul(r.headers["content-length"]) : 0;
    while (buf_.size() < len)
      if (!fill()) return std::nullopt;
    r.body = buf_.substr(0, len);
    buf_.erase(0, len);
    return r;
  }

  bool write(const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      int n = ssl_ ? SSL_write(ssl_, data.data() + off, static_cast<int>(data.size() - off))
                   : static_cast<int>(::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL));
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

  void respond(int status, const std::string& body, const std::vector<std::string>& extra_headers = {},
               const std::string& content_type = "application/json") {
    std::string out = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: " + content_type +
                      "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    for (const auto& h : extra_headers) out += h + "\r\n";
    out += "\r\n" + body;
    write(out);
  }
  void start_chunked(int status = 200) {
    write("HTTP/1.1 " + std::to_string(status) + " OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
  }
  void chunk(const std::string& data) {
    char len[32];
    std::snprintf(len, sizeof len, "%zx\r\n", data.size());
    write(len + data + "\r\n");
  }
  void end_chunks() { write("0\r\n\r\n"); }
  void close() { ::shutdown(fd_, SHUT_RDWR); }

 private:
  bool fill() {
    char tmp[4096];
    int n = ssl_ ? SSL_read(ssl_, tmp, sizeof tmp) : static_cast<int>(::recv(fd_, tmp, sizeof tmp, 0));
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  int fd_;
  SSL* ssl_;
  std::string buf_;
};

class TestServer {
 public:
  using Handler = std::function<void(Session&)>;

  explicit TestServer(Handler h, SSL_CTX* tls = nullptr) : handler_(std::move(h)), tls_(tls) {
    // SSL_write/SSL_shutdown write with plain write(); a client that already closed would kill
    // the test process with SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 64) != 0)
      throw std::runtime_error("test server: bind/listen failed");
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { accept_loop(); });
  }

  ~TestServer() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    accept_thread_.join();
    {
      std::lock_guard lock(mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : sessions_) t.join();
    for (int fd : fds_) ::close(fd);
    ::close(listen_fd_);
  }

  uint16_t port() const { return port_; }
  int connections() const { return accepted_.load(); }
  bool stopping() const { return stopping_.load(); }

 private:
  void accept_loop() {
    while (!stopping_) {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      // As an API server's sockets (Go sets TCP_NODELAY; so does the local cluster): without it
      // Nagle holds a small answer back until the client acknowledges the one before.
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ++accepted_;
      std::lock_guard lock(mu_);
      fds_.push_back(fd);
      sessions_.emplace_back([this, fd] { serve(fd); });
    }
  }
  void serve(int fd) {
    SSL* ssl = nullptr;
    if (tls_) {
      ssl = SSL_new(tls_);
      SSL_set_fd(ssl, fd);
      if (SSL_accept(ssl) != 1) {
        SSL_free(ssl);
        ::close(fd);
        return;
      }
    }
    Session s(fd, ssl);
    handler_(s);
    if (ssl) {
      SSL_shutdown(ssl);
      SSL_free(ssl);
    }
    ::shutdown(fd, SHUT_RDWR);
    // The fd stays open until the server goes away so shutdown() in the destructor never hits a
    // reused descriptor.
  }

  Handler handler_;
  SSL_CTX* tls_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> sessions_;
};

}  // namespace unitrain::kube::testing
