#pragma once
// An HTTPS webhook server for tests and a REST client for the local cluster: what the tests that
// drive the local cluster's admission and conversion webhooks share.

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "core/json/json.h"
#include "core/kube/config.h"
#include "core/kube/transport.h"
#include "localcluster/local_cluster.h"
#include "localcluster/tls.h"

namespace unitrain::testing {

// An HTTPS webhook server: one thread per connection, a handler per request path. Plain sockets
// and OpenSSL rather than Beast: the server only has to read the Content-Length requests of the
// local cluster's own client, and this file then compiles in a fraction of the time.
class HookServer {
 public:
  using Handler = std::function<json::Document(const std::string& path, const json::Document& review)>;

  HookServer(const localcluster::TlsMaterial& tls, Handler handler) : handler_(std::move(handler)), ctx_(SSL_CTX_new(TLS_server_method())) {
    if (!ctx_) throw std::runtime_error("SSL_CTX_new failed");
    use_certificate_chain(tls.server_cert_pem);
    use_private_key(tls.server_key_pem);
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (listen_fd_ < 0) throw std::runtime_error("socket failed");
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr = loopback(0);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, SOMAXCONN) != 0) {
      throw std::runtime_error("bind/listen on 127.0.0.1 failed");
    }
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { accept_loop(); });
  }
  ~HookServer() {
    stopping_ = true;
    {
      // Wakes the blocking accept.
      int s = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr = loopback(port_);
      (void)::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
      ::close(s);
    }
    accept_thread_.join();
    {
      std::lock_guard lock(mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : conn_threads_) t.join();
    // Closed only now, so that no shutdown above can hit a descriptor number already reused.
    for (int fd : fds_) ::close(fd);
    ::close(listen_fd_);
  }

  uint16_t port() const { return port_; }

  struct Seen {
    std::string path;
    json::Document review;
  };
  std::vector<Seen> seen(std::string_view path) {
    std::lock_guard lock(mu_);
    std::vector<Seen> out;
    for (const auto& s : seen_) {
      if (s.path == path) out.push_back(s);
    }
    return out;
  }

 private:
  struct SslFree {
    void operator()(SSL* s) const { SSL_free(s); }
    void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
    void operator()(BIO* b) const { BIO_free(b); }
    void operator()(X509* x) const { X509_free(x); }
    void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  };
  template <class T>
  using Owned = std::unique_ptr<T, SslFree>;

  static sockaddr_in loopback(uint16_t port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    return addr;
  }

  // Leaf first, then the rest of the chain.
  void use_certificate_chain(const std::string& pem) {
    Owned<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    Owned<X509> leaf(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!leaf || SSL_CTX_use_certificate(ctx_.get(), leaf.get()) != 1) throw std::runtime_error("server certificate");
    while (Owned<X509> ca{PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)}) {
      if (SSL_CTX_add_extra_chain_cert(ctx_.get(), ca.get()) != 1) throw std::runtime_error("certificate chain");
      (void)ca.release();  // owned by the context now
    }
    ERR_clear_error();  // the end of the PEM data
  }
  void use_private_key(const std::string& pem) {
    Owned<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    Owned<EVP_PKEY> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    if (!key || SSL_CTX_use_PrivateKey(ctx_.get(), key.get()) != 1) throw std::runtime_error("server private key");
  }

  void accept_loop() {
    for (;;) {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (stopping_) {
        if (fd >= 0) ::close(fd);
        return;
      }
      if (fd < 0) continue;
      std::lock_guard lock(mu_);
      fds_.push_back(fd);
      conn_threads_.emplace_back([this, fd] { serve(fd); });
    }
  }

  // Appends what the peer sent next; false once the connection ended or failed.
  static bool fill(SSL* ssl, std::string& buf) {
    char chunk[16384];
    int n = SSL_read(ssl, chunk, sizeof chunk);
    if (n <= 0) return false;
    buf.append(chunk, static_cast<size_t>(n));
    return true;
  }

  static bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
  }

  // One request with a Content-Length body (what the local cluster sends), taken off the front of
  // `buf`; false once the connection ended or the request is malformed.
  static bool read_request(SSL* ssl, std::string& buf, std::string& target, std::string& body) {
    size_t head_end;
    while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
      if (!fill(ssl, buf)) return false;
    }
    std::string_view head(buf.data(), head_end);
    size_t line_end = head.find("\r\n");
    std::string_view request_line = head.substr(0, line_end);
    size_t sp1 = request_line.find(' '), sp2 = request_line.rfind(' ');
    if (sp1 == std::string_view::npos || sp2 <= sp1) return false;
    target = std::string(request_line.substr(sp1 + 1, sp2 - sp1 - 1));
    size_t length = 0;
    while (line_end != std::string_view::npos) {
      size_t start = line_end + 2;
      line_end = head.find("\r\n", start);
      std::string_view line = head.substr(start, line_end == std::string_view::npos ? std::string_view::npos : line_end - start);
      size_t colon = line.find(':');
      if (colon == std::string_view::npos || !iequals(line.substr(0, colon), "Content-Length")) continue;
      std::string value(line.substr(colon + 1));
      length = static_cast<size_t>(std::strtoull(value.c_str(), nullptr, 10));
    }
    const size_t total = head_end + 4 + length;
    while (buf.size() < total) {
      if (!fill(ssl, buf)) return false;
    }
    body = buf.substr(head_end + 4, length);
    buf.erase(0, total);
    return true;
  }

  static bool write_all(SSL* ssl, std::string_view data) {
    while (!data.empty()) {
      int n = SSL_write(ssl, data.data(), static_cast<int>(data.size()));
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  void serve(int fd) {
    // OpenSSL writes with write(2): a client that gave up (a webhook timeout) must make it fail
    // with EPIPE rather than kill the test with SIGPIPE. Blocked only on this connection's thread.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    Owned<SSL> ssl(SSL_new(ctx_.get()));
    if (!ssl || SSL_set_fd(ssl.get(), fd) != 1 || SSL_accept(ssl.get()) != 1) return;
    std::string buf;
    for (;;) {
      std::string target, request_body;
      if (!read_request(ssl.get(), buf, target, request_body)) return;
      std::string path = target.substr(0, target.find('?'));
      auto review = json::Document::parse(request_body);
      json::Document body = review ? handler_(path, *review) : json::Document::object();
      if (review) {
        std::lock_guard lock(mu_);
        seen_.push_back({path, std::move(*review)});
      }
      std::string payload = body.dump();
      std::string res = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                        std::to_string(payload.size()) + "\r\n\r\n" + payload;
      if (!write_all(ssl.get(), res)) return;
    }
  }

  Handler handler_;
  Owned<SSL_CTX> ctx_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> conn_threads_;
  std::vector<Seen> seen_;
};

// A REST client for the local cluster.
struct Api {
  explicit Api(const localcluster::LocalCluster& c) {
    kube::RestConfig cfg;
    REQUIRE(kube::parse_server_url(c.url(), cfg));
    cfg.timeout = std::chrono::seconds(20);
    auto t = kube::Transport::create(cfg);
    REQUIRE(t);
    transport = std::move(*t);
  }
  kube::http::Response send(const std::string& method, const std::string& target, const std::string& body = {},
                            const std::string& ctype = "application/json") {
    kube::http::Request req;
    req.method = method;
    req.target = target;
    if (!body.empty()) req.headers.push_back({"Content-Type", ctype});
    req.headers.push_back({"Accept", "application/json"});
    req.body = body;
    auto r = transport->send(req);
    REQUIRE(r);
    return std::move(*r);
  }
  std::unique_ptr<kube::Transport> transport;
};

}  // namespace unitrain::testing
