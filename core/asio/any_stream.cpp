#include "core/asio/any_stream.h"

#include <variant>

#include <boost/asio/bind_executor.hpp>

namespace unitrain::net {

namespace beast = boost::beast;

struct AnyStream::Impl {
  std::variant<beast::tcp_stream, TlsStream> stream;

  template <class... Args>
  explicit Impl(Args&&... args) : stream(std::forward<Args>(args)...) {}
};

AnyStream::AnyStream(beast::tcp_stream stream)
    : impl_(std::make_unique<Impl>(std::in_place_type<beast::tcp_stream>, std::move(stream))) {}

AnyStream::AnyStream(beast::tcp_stream stream, boost::asio::ssl::context& context)
    : impl_(std::make_unique<Impl>(std::in_place_type<TlsStream>, std::move(stream), context)) {}

AnyStream::AnyStream(AnyStream&&) noexcept = default;
AnyStream& AnyStream::operator=(AnyStream&&) noexcept = default;
AnyStream::~AnyStream() = default;

AnyStream::executor_type AnyStream::get_executor() noexcept { return lowest().get_executor(); }

beast::tcp_stream& AnyStream::lowest() noexcept {
  if (auto* tls = std::get_if<TlsStream>(&impl_->stream)) return beast::get_lowest_layer(*tls);
  return std::get<beast::tcp_stream>(impl_->stream);
}

AnyStream::TlsStream* AnyStream::tls() noexcept { return std::get_if<TlsStream>(&impl_->stream); }

void AnyStream::read_some(MutableBuffers buffers, executor_type executor, Handler handler) {
  std::visit([&](auto& s) { s.async_read_some(buffers, boost::asio::bind_executor(std::move(executor), std::move(handler))); },
             impl_->stream);
}

void AnyStream::write_some(ConstBuffers buffers, executor_type executor, Handler handler) {
  std::visit([&](auto& s) { s.async_write_some(buffers, boost::asio::bind_executor(std::move(executor), std::move(handler))); },
             impl_->stream);
}

}  // namespace unitrain::net
