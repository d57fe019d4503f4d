#include "cmd/training-operator/http_server.h"

#include <charconv>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <fmt/format.h>

namespace unitrain::operator_cmd {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
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

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpHandler& handler) : stream_(std::move(socket)), handler_(handler) {}

  void run() {
    stream_.expires_after(std::chrono::seconds(10));
    bhttp::async_read(stream_, buffer_, request_,
                      [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

 private:
  void on_read(beast::error_code ec) {
    if (ec) return;
    HttpReply reply;
    if (request_.method() != bhttp::verb::get && request_.method() != bhttp::verb::head) {
      reply = HttpReply{405, "text/plain; charset=utf-8", "method not allowed\n"};
    } else {
      std::string_view target = request_.target();
      reply = handler_(target.substr(0, target.find('?')));
    }
    response_.version(request_.version());
    response_.result(static_cast<unsigned>(reply.status));
    response_.set(bhttp::field::content_type, reply.content_type);
    response_.keep_alive(false);
    response_.body() = std::move(reply.body);
    response_.prepare_payload();
    bhttp::async_write(stream_, response_, [self = shared_from_this()](beast::error_code, size_t) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    });
  }

  beast::tcp_stream stream_;
  const HttpHandler& handler_;
  beast::flat_buffer buffer_;
  bhttp::request<bhttp::string_body> request_;
  bhttp::response<bhttp::string_body> response_;
};

}  // namespace

struct HttpServer::Impl {
  HttpHandler handler;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::thread thread;
  uint16_t port = 0;

  void accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) std::make_shared<Session>(std::move(socket), handler)->run();
      accept();
    });
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const std::string& host, uint16_t port, HttpHandler handler) {
  auto impl = std::make_unique<Impl>();
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
  impl->accept();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::~HttpServer() { stop(); }

uint16_t HttpServer::port() const { return impl_->port; }

void HttpServer::stop() {
  if (!impl_->thread.joinable()) return;
  impl_->io.stop();
  impl_->thread.join();
}

}  // namespace unitrain::operator_cmd
