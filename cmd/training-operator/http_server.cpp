#include "cmd/training-operator/http_server.h"

#include <charconv>
#include <mutex>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fmt/format.h>

#include "core/asio/any_stream.h"

namespace unitrain::operator_cmd {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

Result<std::pair<std::string, uint16_t>> parse_bind_address(std::string_view flag, std::string_view address) {
  auto colon = address.rfind(':');
  if (colon == std::string_view::npos)
    return fail(fmt::format("{}: \"{}\" is not host:port (e.g. \":8080\")", flag, address));
  std::string host(address.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  auto port_text = address.substr(colon + 1);
  unsigned port = 0;
  auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || p != port_text.data() + port_text.size() || port > 65535 || port_text.empty())
    return fail(fmt::format("{}: port \"{}\" in \"{}\" is not a number in 0..65535", flag, port_text, address));
  return std::pair<std::string, uint16_t>{host, static_cast<uint16_t>(port)};
}

namespace {

// One request per connection: the probes, Prometheus and the API server's webhook client all
// cope with "Connection: close".
class Session : public std::enable_shared_from_this<Session> {
 public:
  // `context` is null for plain HTTP.
  Session(tcp::socket socket, const HttpRequestHandler& handler, std::shared_ptr<ssl::context> context)
      : context_(std::move(context)),
        stream_(context_ ? net::AnyStream(beast::tcp_stream(std::move(socket)), *context_)
                         : net::AnyStream(beast::tcp_stream(std::move(socket)))),
        handler_(handler) {}

  void run() {
    stream_.lowest().expires_after(std::chrono::seconds(10));
    if (auto* tls = stream_.tls()) {
      tls->async_handshake(ssl::stream_base::server, [self = shared_from_this()](beast::error_code ec) {
        if (!ec) self->read();
      });
    } else {
      read();
    }
  }

 private:
  void read() {
    parser_.body_limit(8 * 1024 * 1024);
    bhttp::async_read(stream_, buffer_, parser_,
                      [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec) return;
    const auto& request = parser_.get();
    std::string_view target = request.target();
    const HttpRequest r{request.method_string(), target.substr(0, target.find('?')), request.body(),
                        request[bhttp::field::authorization]};
    HttpReply reply = handler_(r);
    response_.version(request.version());
    response_.result(static_cast<unsigned>(reply.status));
    response_.set(bhttp::field::content_type, reply.content_type);
    response_.keep_alive(false);
    response_.body() = std::move(reply.body);
    response_.prepare_payload();
    bhttp::async_write(stream_, response_, [self = shared_from_this()](beast::error_code, size_t) {
      if (auto* tls = self->stream_.tls()) {
        tls->async_shutdown([self](beast::error_code) {});
      } else {
        beast::error_code ignored;
        self->stream_.lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
      }
    });
  }

  std::shared_ptr<ssl::context> context_;  // declared first: outlives the stream that uses it
  net::AnyStream stream_;
  const HttpRequestHandler& handler_;
  beast::flat_buffer buffer_;
  bhttp::request_parser<bhttp::string_body> parser_;
  bhttp::response<bhttp::string_body> response_;
};

}  // namespace

struct HttpServer::Impl {
  HttpRequestHandler handler;
  bool tls = false;
  std::mutex mu;
  std::shared_ptr<ssl::context> context;  // null until a certificate is set
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::thread thread;
  uint16_t port = 0;

  void accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec && !tls) {
        std::make_shared<Session>(std::move(socket), handler, nullptr)->run();
      } else if (!ec) {
        std::shared_ptr<ssl::context> current;
        {
          std::lock_guard lock(mu);
          current = context;
        }
        if (current) std::make_shared<Session>(std::move(socket), handler, std::move(current))->run();
      }
      accept();
    });
  }
};

HttpServer::HttpServer(PassKey<HttpServer>, std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

namespace {

Result<std::unique_ptr<HttpServer::Impl>> listen(const std::string& host, uint16_t port, HttpRequestHandler handler) {
  auto impl = std::make_unique<HttpServer::Impl>();
  impl->handler = std::move(handler);
  beast::error_code ec;
  auto address = host.empty() ? asio::ip::address(asio::ip::address_v4::any()) : asio::ip::make_address(host, ec);
  if (ec) return fail(fmt::format("listen address \"{}\": {}", host, ec.message()));
  tcp::endpoint endpoint(address, port);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail(fmt::format("listen on {}:{}: {}", host.empty() ? "*" : host, port, ec.message()));
  impl->port = impl->acceptor.local_endpoint().port();
  return impl;
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::start(const std::string& host, uint16_t port, HttpHandler handler) {
  auto get_only = [handler = std::move(handler)](const HttpRequest& r) -> HttpReply {
    if (r.method != "GET" && r.method != "HEAD") return HttpReply{405, "text/plain; charset=utf-8", "method not allowed\n"};
    return handler(r.path);
  };
  auto impl = listen(host, port, std::move(get_only));
  if (!impl) return fail(std::move(impl.error()));
  Impl* raw = impl->get();
  raw->accept();
  raw->thread = std::thread([raw] { raw->io.run(); });
  return std::make_unique<HttpServer>(PassKey<HttpServer>{}, std::move(*impl));
}

Result<std::unique_ptr<HttpServer>> HttpServer::start_tls(const std::string& host, uint16_t port,
                                                          HttpRequestHandler handler) {
  auto impl = listen(host, port, std::move(handler));
  if (!impl) return fail(std::move(impl.error()));
  Impl* raw = impl->get();
  raw->tls = true;
  raw->accept();
  raw->thread = std::thread([raw] { raw->io.run(); });
  return std::make_unique<HttpServer>(PassKey<HttpServer>{}, std::move(*impl));
}

Status HttpServer::set_certificate(const std::string& cert_pem, const std::string& key_pem) {
  if (!impl_->tls) return fail("set_certificate: this server does not serve HTTPS");
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                       ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  beast::error_code ec;
  context->use_certificate_chain(asio::buffer(cert_pem), ec);
  if (ec) return fail(fmt::format("serving certificate: {}", ec.message()));
  context->use_private_key(asio::buffer(key_pem), ssl::context::pem, ec);
  if (ec) return fail(fmt::format("serving key: {}", ec.message()));
  std::lock_guard lock(impl_->mu);
  impl_->context = std::move(context);
  return {};
}

HttpServer::~HttpServer() { stop(); }

uint16_t HttpServer::port() const { return impl_->port; }

void HttpServer::stop() {
  if (!impl_->thread.joinable()) return;
  impl_->io.stop();
  impl_->thread.join();
}

}  // namespace unitrain::operator_cmd
