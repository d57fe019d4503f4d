#pragma once
// One stream type for TCP with or without TLS.
//
// Beast's HTTP operations (read a request, write a response, read a chunked body) are large
// templates compiled once per stream type. The local cluster's API server, the operator's HTTP
// server and the Kubernetes client each speak plain HTTP and HTTPS, so each compiled every
// operation twice: half of each of those files' compile time went to the TLS copy. Written
// against AnyStream, the operations are compiled once; only the two streams' own read_some and
// write_some are compiled per type, once, in any_stream.cpp. The price is one type-erased
// completion handler per read or write; the handler's executor, allocator and cancellation slot
// pass through unchanged.

#include <array>
#include <cstddef>
#include <memory>
#include <utility>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

namespace unitrain::net {

class AnyStream {
 public:
  using executor_type = boost::asio::any_io_executor;
  using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;
  using Handler = boost::asio::any_completion_handler<void(boost::system::error_code, std::size_t)>;

  // A buffer sequence cut to at most kMaxBuffers buffers. read_some and write_some may transfer
  // fewer bytes than offered, so the buffers past the cut simply wait for the next call.
  static constexpr std::size_t kMaxBuffers = 16;
  template <class Buffer>
  struct Buffers {
    std::array<Buffer, kMaxBuffers> items{};
    std::size_t count = 0;
    const Buffer* begin() const { return items.data(); }
    const Buffer* end() const { return items.data() + count; }
  };
  using MutableBuffers = Buffers<boost::asio::mutable_buffer>;
  using ConstBuffers = Buffers<boost::asio::const_buffer>;

  // Plain TCP.
  explicit AnyStream(boost::beast::tcp_stream stream);
  // TLS over `stream`; the handshake is the caller's, through tls().
  AnyStream(boost::beast::tcp_stream stream, boost::asio::ssl::context& context);
  AnyStream(AnyStream&&) noexcept;
  AnyStream& operator=(AnyStream&&) noexcept;
  ~AnyStream();

  executor_type get_executor() noexcept;
  // The TCP stream underneath: connect, timeouts (expires_after), socket options, shutdown.
  boost::beast::tcp_stream& lowest() noexcept;
  // The TLS stream for the handshake, SNI and TLS shutdown; nullptr on plain TCP.
  TlsStream* tls() noexcept;

  template <class MutableBufferSequence, class Token>
  auto async_read_some(const MutableBufferSequence& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const MutableBufferSequence& b) {
          executor_type executor = boost::asio::get_associated_executor(handler, get_executor());
          read_some(cut<MutableBuffers>(b), std::move(executor), Handler(std::move(handler)));
        },
        token, buffers);
  }

  template <class ConstBufferSequence, class Token>
  auto async_write_some(const ConstBufferSequence& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const ConstBufferSequence& b) {
          executor_type executor = boost::asio::get_associated_executor(handler, get_executor());
          write_some(cut<ConstBuffers>(b), std::move(executor), Handler(std::move(handler)));
        },
        token, buffers);
  }

 private:
  template <class Out, class Sequence>
  static Out cut(const Sequence& sequence) {
    Out out;
    for (auto it = boost::asio::buffer_sequence_begin(sequence);
         it != boost::asio::buffer_sequence_end(sequence) && out.count < kMaxBuffers; ++it) {
      auto buffer = *it;  // Beast's buffer views give values, not references (no operator->).
      if (buffer.size() != 0) out.items[out.count++] = buffer;
    }
    return out;
  }
  // `executor` is the handler's own executor, taken before erasure: Boost 1.81's erased
  // any_completion_executor lacks the blocking.never property that Beast's streams require of
  // the executor they post a completion to.
  void read_some(MutableBuffers buffers, executor_type executor, Handler handler);
  void write_some(ConstBuffers buffers, executor_type executor, Handler handler);

  struct Impl;
  // Behind a pointer: moving an AnyStream never moves a stream an operation is using.
  std::unique_ptr<Impl> impl_;
};

}  // namespace unitrain::net
