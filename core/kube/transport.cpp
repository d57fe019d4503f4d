#include "core/kube/transport.h"

#include <poll.h>
#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <stop_token>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/http/span_body.hpp>
#include <boost/beast/ssl.hpp>
#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/asio/any_stream.h"
#include "core/kube/answer_pace.h"

namespace unitrain::kube {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using http::TransportError;
using Kind = http::TransportError::Kind;

bool is_ip_literal(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// "CN=name,O=org" (RFC 2253), or "(none)".
std::string subject_text(X509_NAME* name) {
  if (name == nullptr) return "(none)";
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return "(none)";
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);  // NOLINT(google-runtime-int): OpenSSL's type
  std::string out(data != nullptr && size > 0 ? std::string(data, static_cast<size_t>(size)) : std::string("(empty)"));
  BIO_free(bio);
  return out;
}

// "12:AB:..." of a key identifier; "" when absent.
std::string key_id_text(const ASN1_OCTET_STRING* id) {
  if (id == nullptr) return {};
  std::string out;
  for (int i = 0; i < ASN1_STRING_length(id); ++i)
    out += fmt::format("{}{:02X}", i == 0 ? "" : ":", ASN1_STRING_get0_data(id)[i]);
  return out;
}

// The subjects of the CA certificates in `pem`, quoted and comma-separated, for messages that
// say which CA the client expected (with their key identifiers: two CAs may share a name).
std::string ca_subjects(const std::string& pem) {
  if (pem.empty()) return "a CA of the system trust store";
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return "the configured CA";
  std::string out;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    if (!out.empty()) out += ", ";
    out += "\"" + subject_text(X509_get_subject_name(cert)) + "\"";
    if (auto id = key_id_text(X509_get0_subject_key_id(cert)); !id.empty()) out += " (key " + id + ")";
    X509_free(cert);
  }
  ERR_clear_error();  // the loop ends on "no start line"
  BIO_free(bio);
  return out.empty() ? "the configured CA" : "the CA " + out;
}

// What the server presented when its certificate did not verify: the leaf's subject and issuer.
std::string presented_certificate(SSL* ssl) {
  STACK_OF(X509)* chain = SSL_get_peer_cert_chain(ssl);
  if (chain == nullptr || sk_X509_num(chain) == 0) return "the server presented no certificate";
  X509* leaf = sk_X509_value(chain, 0);
  const std::string issuer_key = key_id_text(X509_get0_authority_key_id(leaf));
  return fmt::format("the server's certificate is \"{}\", issued by \"{}\"{}", subject_text(X509_get_subject_name(leaf)),
                     subject_text(X509_get_issuer_name(leaf)), issuer_key.empty() ? "" : " (key " + issuer_key + ")");
}

std::string openssl_error_text() {
  unsigned long e = ERR_get_error();  // NOLINT(google-runtime-int): OpenSSL's type
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

// Rotating bearer token (bound service-account tokens are refreshed by the kubelet about every
// hour): re-read when the file's mtime or size changes, and at least every `reread`.
class TokenSource {
 public:
  TokenSource(std::string static_token, std::string file, std::chrono::seconds reread)
      : static_(std::move(static_token)), file_(std::move(file)), reread_(reread) {}

  std::string get() {
    if (file_.empty()) return static_;
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    struct stat st {};
    bool changed = false;
    if (::stat(file_.c_str(), &st) == 0) {
      changed = st.st_mtim.tv_sec != mtime_.tv_sec || st.st_mtim.tv_nsec != mtime_.tv_nsec || st.st_size != size_;
    }
    if (!read_once_ || changed || now - last_read_ >= reread_) {
      std::ifstream in(file_, std::ios::binary);
      if (in) {
        std::ostringstream ss;
        ss << in.rdbuf();
        std::string t = trim(ss.str());
        // A half-written file during rotation reads as empty: keep the previous token.
        if (!t.empty()) cached_ = std::move(t);
        mtime_ = st.st_mtim;
        size_ = st.st_size;
      }
      last_read_ = now;
      read_once_ = true;
    }
    return cached_.empty() ? static_ : cached_;
  }

 private:
  std::string static_;
  std::string file_;
  std::chrono::seconds reread_;
  std::mutex mu_;
  std::string cached_;
  timespec mtime_{};
  off_t size_ = -1;
  Clock::time_point last_read_{};
  bool read_once_ = false;
};

// The deadline of the wait in progress on one io_context, as a timer on that io_context: the
// thread sleeps until the operation completes, the timer fires, or a handler posted from another
// thread (a cancellation) runs. (io_context::run_for and run_one_until cut every wait into
// slices of at most one second, each one a wake-up: an idle watch would wake its reader once a
// second.) Arming the timer is a system call, and a wait happens per request and per chunk of a
// watch, so the timer stays armed across waits and is re-armed only for an earlier deadline; one
// that fires before the deadline of the wait in progress re-arms itself for it.
class WaitDeadline {
 public:
  explicit WaitDeadline(asio::io_context& ioc) : timer_(ioc) {}

  void begin(Clock::time_point at) {
    current_ = at;
    passed_ = false;
    if (!armed_ || timer_.expiry() > at) arm(at);
  }
  void end() { current_ = kNone; }
  bool passed() const { return passed_; }
  // No more wake-up from the timer; its handler runs (aborted) at the next run of the io_context.
  void disarm() {
    current_ = kNone;
    armed_ = false;
    timer_.cancel();
  }

 private:
  static constexpr Clock::time_point kNone = Clock::time_point::max();
  void arm(Clock::time_point at) {
    timer_.expires_at(at);  // the handler of an earlier wait runs aborted
    armed_ = true;
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;  // replaced or disarmed
      armed_ = false;
      if (current_ == kNone) return;
      if (Clock::now() >= current_) passed_ = true;
      else arm(current_);
    });
  }

  asio::steady_timer timer_;
  Clock::time_point current_ = kNone;
  bool armed_ = false;
  bool passed_ = false;
};

// Transport::IoCounts, shared by a transport's connections.
struct IoCounters {
  std::atomic<uint64_t> io_runs{0};
  std::atomic<uint64_t> socket_reads{0};
};

// One TCP (optionally TLS) connection with its own io_context, so a request runs its
// asynchronous operations with deadlines on the calling thread.
struct Connection {
  explicit Connection(IoCounters& c) : counters(c) {}
  IoCounters& counters;
  asio::io_context ioc{1};
  std::optional<net::AnyStream> stream;  // set by connect()
  beast::flat_buffer buffer;
  // The serialized requests of a pipelined exchange, kept between exchanges: a burst's buffer
  // (several kB) allocated anew each time grew the thread's heap and faulted its pages in again
  // after every trim (13% of the event recorder's thread in a profile); reused, it costs nothing.
  std::string wire;
  // A pipelined exchange's hold (AnswerPace) sleeps here; a cancellation ends it.
  std::mutex hold_mu;
  std::condition_variable_any hold_cv;
  bool reused = false;
  // A read of a TLS answer in flight on the io_context (it writes into `buffer`'s free room),
  // and how the last one ended.
  bool tls_reading = false;
  bool tls_read_done = false;
  boost::system::error_code tls_read_ec;
  WaitDeadline deadline{ioc};  // after ioc: its timer goes first

  beast::tcp_stream& lowest() { return stream->lowest(); }
  // Plain TCP: the socket is non-blocking, the requests' reads and writes are made at once.
  bool plain() { return stream->tls() == nullptr; }
  void close() {
    boost::system::error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    lowest().socket().close(ec);
  }
  // Runs the io_context until nothing is pending: the operations in flight complete (aborted
  // once the socket is closed or the resolver cancelled).
  void drain() {
    deadline.disarm();
    ioc.restart();
    ioc.run();
  }
  // A pooled connection that is readable while idle was closed by the server (or got junk).
  bool stale() {
    if (!lowest().socket().is_open() || buffer.size() != 0) return true;
    pollfd p{lowest().socket().native_handle(), POLLIN, 0};
    int r = ::poll(&p, 1, 0);
    return r != 0;
  }
};

// Runs the connection's io_context until `finished()` holds or `deadline` passes, sleeping in
// between, and returns whether it holds (when it does not, the operation is still pending).
template <class Finished>
bool run_until_finished(Connection& c, const Finished& finished, Clock::time_point deadline) {
  if (finished()) return true;
  c.deadline.begin(deadline);
  c.ioc.restart();
  while (!finished() && !c.deadline.passed()) {
    c.counters.io_runs.fetch_add(1, std::memory_order_relaxed);
    c.ioc.run_one();
  }
  c.deadline.end();
  return finished();
}

// Runs the connection's io_context until `done` or `deadline`; on deadline closes the socket so
// the pending operation completes (aborted) and returns false. `cancel` closes it the same way
// from another thread (the close runs on the io_context's own thread); the caller tells a
// cancellation from its outcome by the token.
bool run_until(Connection& c, const bool& done, Clock::time_point deadline, const std::stop_token& cancel) {
  if (done) return true;
  if (Clock::now() < deadline && !cancel.stop_requested()) {
    std::stop_callback on_cancel(cancel, [&c] { asio::post(c.ioc, [&c] { c.close(); }); });
    if (run_until_finished(c, [&done] { return done; }, deadline)) return true;
  }
  c.close();
  c.drain();
  return false;
}

// The most of a pipelined exchange's serialized requests a pooled connection keeps for the next.
constexpr size_t kKeptWire = 256 * 1024;

// The room a connection's buffer has for answers: a socket read takes at most the buffer's free
// room, and one recv should take every answer that arrived (a burst of pods' create answers,
// ~2.5 kB each). Beast's reads into a buffer that started empty asked for 512 bytes at a time
// (its free room, at least 512), and the buffer never grew: the parser emptied it each time.
constexpr size_t kAnswerRoom = 32 * 1024;

// Parses the bytes of the answer already in the connection's buffer (the answers after it stay
// there); true once the parser needs no more: the answer is complete, or `ec` says why it cannot be.
template <class Parser>
bool parse_buffered(Connection& c, Parser& parser, boost::system::error_code& ec) {
  while (c.buffer.size() > 0) {
    const size_t used = parser.put(c.buffer.data(), ec);
    c.buffer.consume(used);
    if (ec == bhttp::error::need_more) {
      ec = {};
      return false;
    }
    if (ec || parser.is_done()) return true;
    if (used == 0) return false;
  }
  return false;
}

// A request whose body is the caller's string, not a copy of it.
using WireRequest = bhttp::request<bhttp::span_body<const char>>;
using ResponseParser = bhttp::response_parser<bhttp::string_body>;

// Appends the request as it goes on the wire (start line, headers, body) to `out`.
void append_serialized(std::string& out, WireRequest& msg) {
  bhttp::request_serializer<bhttp::span_body<const char>> sr{msg};
  boost::system::error_code ec;
  do {
    sr.next(ec, [&](boost::system::error_code&, const auto& buffers) {
      const size_t before = out.size();
      for (auto b : beast::buffers_range_ref(buffers)) out.append(static_cast<const char*>(b.data()), b.size());
      sr.consume(out.size() - before);
    });
  } while (!ec && !sr.is_done());
}

std::string ms_text(Clock::duration d) {
  return fmt::format("{}ms", std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

class StreamImpl;

}  // namespace

struct Transport::Impl {
  RestConfig cfg;
  TransportOptions opts;
  std::unique_ptr<ssl::context> ssl_ctx;  // null for http://
  std::string verify_name;
  std::string expected_ca;  // "the CA \"CN=...\"" or "the system trust store", for messages
  std::string authority;  // Host header
  TokenSource token;
  mutable std::mutex pool_mu;
  std::vector<std::unique_ptr<Connection>> idle;
  std::atomic<size_t> opened{0};
  AnswerPace pace;  // how long the server takes to answer a pipelined exchange
  IoCounters counters;

  Impl(const RestConfig& c, TransportOptions o)
      : cfg(c),
        opts(std::move(o)),
        verify_name(c.tls_server_name.empty() ? c.host : c.tls_server_name),
        expected_ca(c.scheme == "https" && !c.insecure ? ca_subjects(c.ca_pem) : ""),
        authority((c.host.find(':') != std::string::npos ? "[" + c.host + "]" : c.host) + ":" + std::to_string(c.port)),
        token(c.bearer_token, c.bearer_token_file, opts.token_reread) {}

  std::string where() const { return authority; }

  Result<std::unique_ptr<Connection>, TransportError> connect(Clock::time_point deadline) {
    auto conn = std::make_unique<Connection>(counters);
    if (ssl_ctx) conn->stream.emplace(beast::tcp_stream(conn->ioc), *ssl_ctx);
    else conn->stream.emplace(beast::tcp_stream(conn->ioc));
    const auto connect_deadline = std::min(deadline, Clock::now() + opts.connect_timeout);

    std::vector<tcp::endpoint> endpoints;
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(cfg.host, ec);
    if (!ec) {
      endpoints.emplace_back(addr, cfg.port);
    } else {
      tcp::resolver resolver(conn->ioc);
      bool done = false;
      resolver.async_resolve(cfg.host, std::to_string(cfg.port),
                             [&](const boost::system::error_code& e, tcp::resolver::results_type results) {
                               ec = e;
                               for (const auto& r : results) endpoints.push_back(r.endpoint());
                               done = true;
                             });
      if (!run_until_finished(*conn, [&done] { return done; }, connect_deadline)) {
        resolver.cancel();
        conn->drain();
        return fail(TransportError{Kind::Timeout, fmt::format("resolving {} timed out", cfg.host), false});
      }
      if (ec || endpoints.empty())
        return fail(TransportError{Kind::Resolve, fmt::format("cannot resolve {}: {}", cfg.host, ec.message()), false});
    }

    bool done = false;
    conn->lowest().async_connect(endpoints, [&](const boost::system::error_code& e, const tcp::endpoint&) {
      ec = e;
      done = true;
    });
    if (!run_until(*conn, done, connect_deadline, opts.cancel))
      return fail(TransportError{Kind::Timeout, fmt::format("connecting to {} timed out after {}", where(),
                                                            ms_text(opts.connect_timeout)), false});
    if (ec) return fail(TransportError{Kind::Connect, fmt::format("connecting to {}: {}", where(), ec.message()), false});
    boost::system::error_code opt_ec;
    conn->lowest().socket().set_option(tcp::no_delay(true), opt_ec);
    // Plain TCP requests read and write the socket themselves, at once (see receive()); their
    // asynchronous operations (watch streams) are unaffected.
    if (conn->plain()) conn->lowest().socket().non_blocking(true, opt_ec);

    if (auto* tls = conn->stream->tls()) {
      SSL* ssl = tls->native_handle();
      const bool ip = is_ip_literal(verify_name);
      if (!ip && !SSL_set_tlsext_host_name(ssl, verify_name.c_str()))
        return fail(TransportError{Kind::Tls, "setting SNI: " + openssl_error_text(), false});
      if (!cfg.insecure) {
        int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), verify_name.c_str())
                    : SSL_set1_host(ssl, verify_name.c_str());
        if (ok != 1) return fail(TransportError{Kind::Tls, "setting the verification name: " + openssl_error_text(), false});
      }
      done = false;
      tls->async_handshake(ssl::stream_base::client, [&](const boost::system::error_code& e) {
        ec = e;
        done = true;
      });
      if (!run_until(*conn, done, connect_deadline, opts.cancel))
        return fail(TransportError{Kind::Timeout, fmt::format("TLS handshake with {} timed out", where()), false});
      if (ec) {
        const long vr = SSL_get_verify_result(ssl);  // NOLINT(google-runtime-int): OpenSSL's type
        if (vr != X509_V_OK)
          return fail(TransportError{Kind::TlsVerify,
                                     fmt::format("TLS handshake with {}: certificate verification failed: {} "
                                                 "(verifying as \"{}\"); {}; expected a certificate issued by {}",
                                                 where(), X509_verify_cert_error_string(vr), verify_name,
                                                 presented_certificate(ssl), expected_ca),
                                     false});
        return fail(TransportError{Kind::Tls, fmt::format("TLS handshake with {}: {}", where(), ec.message()), false});
      }
    }
    ++opened;
    return conn;
  }

  Result<std::unique_ptr<Connection>, TransportError> acquire(Clock::time_point deadline) {
    {
      std::unique_lock lock(pool_mu);
      while (!idle.empty()) {
        auto c = std::move(idle.back());
        idle.pop_back();
        if (!c->stale()) {
          c->reused = true;
          return c;
        }
      }
    }
    return connect(deadline);
  }

  void release(std::unique_ptr<Connection> c) {
    std::lock_guard lock(pool_mu);
    if (idle.size() < opts.max_idle_connections) idle.push_back(std::move(c));
  }

  // The request as Beast writes it; the body is not copied: the message refers to `req.body`,
  // which must outlive it.
  WireRequest build(const http::Request& req) {
    WireRequest r;
    r.version(11);
    auto verb = bhttp::string_to_verb(req.method);
    if (verb == bhttp::verb::unknown) r.method_string(req.method);
    else r.method(verb);
    r.target(cfg.path_prefix + req.target);
    r.set(bhttp::field::host, authority);
    r.set(bhttp::field::user_agent, opts.user_agent);
    if (std::string t = token.get(); !t.empty()) r.set(bhttp::field::authorization, "Bearer " + t);
    for (const auto& h : req.headers) r.set(h.name, h.value);
    r.body() = WireRequest::body_type::value_type(req.body.data(), req.body.size());
    r.keep_alive(true);
    r.prepare_payload();
    return r;
  }

  std::string describe(const http::Request& req) const { return req.method + " " + cfg.path_prefix + req.target; }

  // Writes the request; on success the server may have seen it.
  Result<void, TransportError> write(Connection& c, const http::Request& req, Clock::time_point deadline) {
    auto msg = build(req);
    bhttp::request_serializer<bhttp::span_body<const char>> sr{msg};
    boost::system::error_code ec;
    size_t written = 0;
    // Plain TCP: written at once, no run of the io_context (the asynchronous write completed
    // inline too, but running its completion cost an epoll_wait); what the socket does not take
    // now is written asynchronously.
    if (c.plain()) {
      written = bhttp::write(c.lowest(), sr, ec);
      if (ec == asio::error::would_block) ec = {};
    }
    bool done = ec || sr.is_done();
    if (!done) {
      bhttp::async_write(*c.stream, sr, [&](const boost::system::error_code& e, size_t n) {
        ec = e;
        written += n;
        done = true;
      });
    }
    if (!run_until(c, done, deadline, opts.cancel))
      return fail(TransportError{Kind::Timeout, fmt::format("{}: writing the request timed out", describe(req)), written > 0});
    if (ec)
      return fail(TransportError{Kind::ConnectionLost, fmt::format("{}: writing the request: {}", describe(req), ec.message()),
                                 written > 0});
    return {};
  }

  static http::Response head_of(const bhttp::response_parser<bhttp::string_body>& p) {
    http::Response r;
    r.status = static_cast<int>(p.get().result_int());
    for (const auto& f : p.get()) r.headers.push_back({std::string(f.name_string()), std::string(f.value())});
    return r;
  }

  TransportError read_error(const http::Request& req, const boost::system::error_code& ec, bool got_some) {
    if (ec == bhttp::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
        ec == bhttp::error::partial_message || ec == ssl::error::stream_truncated || ec == asio::error::broken_pipe) {
      return {Kind::ConnectionLost,
              fmt::format("{}: {}: {}", describe(req),
                          got_some ? "connection lost in the middle of the response" : "server closed the connection before responding",
                          ec.message()),
              true};
    }
    if (ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category() || ec == bhttp::error::body_limit)
      return {Kind::Protocol, fmt::format("{}: malformed HTTP response: {}", describe(req), ec.message()), true};
    return {Kind::ConnectionLost, fmt::format("{}: reading the response: {}", describe(req), ec.message()), true};
  }

  // A reused keep-alive connection the server closed in the meantime fails without a response;
  // repeating is safe when the request cannot have had an effect.
  static bool retry_on_fresh(const Connection& c, const http::Request& req, const TransportError& e, bool got_response) {
    if (!c.reused || got_response || e.kind != Kind::ConnectionLost) return false;
    return !e.request_sent || req.method == "GET" || req.method == "HEAD";
  }

  // A request that failed because the process is stopping says so, whatever the socket reported.
  template <class T>
  Result<T, TransportError> unless_cancelled(const http::Request& req, Result<T, TransportError> r) const {
    if (r || !opts.cancel.stop_requested()) return r;
    return fail(TransportError{Kind::Cancelled, fmt::format("{}: cancelled: stopping", describe(req)),
                               r.error().request_sent});
  }

  // Brings more answer bytes into the connection's buffer. True when some came (`ec` clear) or
  // the connection ended or failed (`ec` says how: eof when the server closed it); false when
  // nothing came: at once with `wait` false, else when `deadline` passed or the request was
  // cancelled (the connection is then closed).
  // Plain TCP reads the socket at once, without running the io_context: a run is an epoll_wait
  // even when a completion is ready, and Asio's reads completed through the io_context (Beast
  // parsing one element of an answer per read, posting its completion) cost about 4 per answer.
  // The io_context only waits for the socket to become readable. TLS reads through it.
  bool receive(Connection& c, bool wait, Clock::time_point deadline, boost::system::error_code& ec) {
    if (c.buffer.capacity() < kAnswerRoom) c.buffer.reserve(kAnswerRoom);
    const size_t room = std::clamp<size_t>(c.buffer.capacity() - c.buffer.size(), 512, 64 * 1024);
    if (c.plain()) {
      auto& socket = c.lowest().socket();
      if (!wait) {
        counters.socket_reads.fetch_add(1, std::memory_order_relaxed);
        const size_t n = socket.read_some(c.buffer.prepare(room), ec);
        if (ec == asio::error::would_block) {
          ec = {};
          return false;
        }
        c.buffer.commit(n);
        return true;
      }
      // Asio's own read: it tries the socket once before it waits, and reads right after the
      // wake-up, in the same run. (Waiting for readability instead, async_wait, costs an
      // epoll_ctl per wait, the price of the read it saves.)
      bool done = false;
      counters.socket_reads.fetch_add(1, std::memory_order_relaxed);
      socket.async_read_some(c.buffer.prepare(room), [&](const boost::system::error_code& e, size_t n) {
        c.buffer.commit(n);
        ec = e;
        done = true;
      });
      return run_until(c, done, deadline, opts.cancel);
    }
    if (!c.tls_reading) {
      c.tls_reading = true;
      c.tls_read_done = false;
      c.stream->async_read_some(c.buffer.prepare(room), [&c](const boost::system::error_code& e, size_t n) {
        c.buffer.commit(n);
        c.tls_read_ec = e;
        c.tls_read_done = true;
      });
    }
    if (wait) {
      if (!run_until(c, c.tls_read_done, deadline, opts.cancel)) {
        c.tls_reading = false;
        return false;
      }
    } else {
      c.ioc.restart();
      c.counters.io_runs.fetch_add(1, std::memory_order_relaxed);
      c.ioc.poll();
      if (!c.tls_read_done) return false;
    }
    c.tls_reading = false;
    ec = c.tls_read_ec;
    return true;
  }

  // Reads the response to `req` from the connection into `parser` (`ec` says how the read
  // ended); false when `deadline` passed or the request was cancelled first. Answers that
  // arrived with earlier ones are parsed from the connection's buffer, without any system call.
  // With `sleeps` (an answer of a pipelined exchange): an answer not received yet is slept for
  // `hold` first (AnswerPace), then waited for on the socket; each counts in `sleeps`.
  bool read_response(Connection& c, const http::Request& req, ResponseParser& parser, boost::system::error_code& ec,
                     Clock::time_point deadline, Clock::duration hold = {}, int* sleeps = nullptr) {
    parser.body_limit(boost::none);  // lists of 100k pods are hundreds of MB
    if (req.method == "HEAD") parser.skip(true);  // Content-Length describes a body never sent
    parser.eager(true);  // the header and the body in one pass, whatever the buffer holds
    bool held = hold <= Clock::duration::zero();
    bool waited = false;
    for (;;) {
      if (parse_buffered(c, parser, ec)) return true;
      // Pipelined: what arrived already, then the hold, then a wait on the socket.
      bool got = false;
      if (sleeps && !waited) {
        got = receive(c, false, deadline, ec);
        if (!got && !held) {
          // Not a wait on the io_context: each chunk of the answers arriving would end it.
          std::unique_lock lock(c.hold_mu);
          c.hold_cv.wait_until(lock, opts.cancel, std::min(Clock::now() + hold, deadline), [] { return false; });
          ++*sleeps;
          held = true;
          got = receive(c, false, deadline, ec);
        }
        if (!got) {
          ++*sleeps;  // on the socket, below
          waited = true;
        }
      }
      if (!got && !receive(c, true, deadline, ec)) return false;
      if (ec == asio::error::eof) {
        // The end of an answer without a length, or a connection lost (RFC 9112 8).
        if (!parser.got_some()) {
          ec = bhttp::error::end_of_stream;
          return true;
        }
        ec = {};
        parser.put_eof(ec);
        return true;
      }
      if (ec) return true;
    }
  }

  Result<http::Response, TransportError> send(const http::Request& req, std::chrono::milliseconds timeout) {
    return unless_cancelled(req, send_once(req, timeout));
  }

  Result<http::Response, TransportError> send_once(const http::Request& req, std::chrono::milliseconds timeout) {
    if (opts.cancel.stop_requested()) return fail(TransportError{Kind::Cancelled, "", false});
    const auto total = timeout.count() > 0 ? timeout : cfg.timeout;
    const auto deadline = Clock::now() + total;
    for (int attempt = 0;; ++attempt) {
      auto conn = acquire(deadline);
      if (!conn) return fail(std::move(conn.error()));
      Connection& c = **conn;
      if (auto w = write(c, req, deadline); !w) {
        if (attempt == 0 && retry_on_fresh(c, req, w.error(), false)) continue;
        return fail(std::move(w.error()));
      }
      ResponseParser parser;
      boost::system::error_code ec;
      if (!read_response(c, req, parser, ec, deadline))
        return fail(TransportError{Kind::Timeout, fmt::format("{}: no complete response within {}", describe(req), ms_text(total)),
                                   true});
      if (ec) {
        auto e = read_error(req, ec, parser.got_some());
        if (attempt == 0 && retry_on_fresh(c, req, e, parser.got_some())) continue;
        return fail(std::move(e));
      }
      http::Response resp = head_of(parser);
      const bool keep = parser.keep_alive();
      resp.body = std::move(parser.get().body());
      // A cancellation may have left a close queued on the connection's io_context.
      if (keep && c.buffer.size() == 0 && !opts.cancel.stop_requested()) release(std::move(*conn));
      return resp;
    }
  }

  std::vector<Result<http::Response, TransportError>> send_pipelined(std::span<const http::Request> reqs,
                                                                     std::chrono::milliseconds timeout) {
    std::vector<Result<http::Response, TransportError>> out;
    out.reserve(reqs.size());
    if (reqs.empty()) return out;
    if (reqs.size() == 1) {
      out.push_back(send(reqs.front(), timeout));
      return out;
    }
    pipelined_once(reqs, timeout, out);
    for (size_t i = 0; i < out.size(); ++i) out[i] = unless_cancelled(reqs[i], std::move(out[i]));
    return out;
  }

  // Fills `out` with one result per request.
  void pipelined_once(std::span<const http::Request> reqs, std::chrono::milliseconds timeout,
                      std::vector<Result<http::Response, TransportError>>& out) {
    // Requests from `from` on get `error`, each naming itself.
    auto fail_from = [&](size_t from, Kind kind, const std::string& why, bool sent) {
      for (size_t i = from; i < reqs.size(); ++i)
        out.emplace_back(fail(TransportError{kind, fmt::format("{}: {}", describe(reqs[i]), why), sent}));
    };
    if (opts.cancel.stop_requested()) return fail_from(0, Kind::Cancelled, "cancelled: stopping", false);
    const auto total = timeout.count() > 0 ? timeout : cfg.timeout;
    const auto deadline = Clock::now() + total;
    for (int attempt = 0;; ++attempt) {
      auto conn = acquire(deadline);
      if (!conn) return fail_from(0, conn.error().kind, conn.error().message, false);
      Connection& c = **conn;
      std::string& wire = c.wire;
      wire.clear();  // keeps its capacity
      for (const auto& req : reqs) {
        auto msg = build(req);
        append_serialized(wire, msg);
      }
      boost::system::error_code ec;
      size_t written = 0;
      if (c.plain()) {  // as in write()
        written = asio::write(c.lowest().socket(), asio::buffer(wire), ec);
        if (ec == asio::error::would_block) ec = {};
      }
      bool done = ec || written == wire.size();
      if (!done) {
        asio::async_write(*c.stream, asio::buffer(wire) + written, [&](const boost::system::error_code& e, size_t n) {
          ec = e;
          written += n;
          done = true;
        });
      }
      if (!run_until(c, done, deadline, opts.cancel))
        return fail_from(0, Kind::Timeout, "writing the pipelined requests timed out", written > 0);
      // A rare large exchange (a pass creating many big objects) does not stay with the connection.
      if (wire.capacity() > kKeptWire) std::string().swap(wire);
      if (ec) {
        // A pooled connection the server had closed: nothing reached it, try a fresh one.
        if (attempt == 0 && c.reused && written == 0) continue;
        return fail_from(0, Kind::ConnectionLost, "writing the pipelined requests: " + ec.message(), written > 0);
      }
      // Answers not received yet are slept for, as long as the server took for as many before
      // (AnswerPace), instead of one wake-up each; the last one is waited for on the socket.
      const std::string_view target = reqs.front().target;
      const auto per_answer = pace.per_request(target);
      const auto written_at = Clock::now();
      int sleeps = 0;
      bool first_sleep_held = false;
      for (size_t i = 0; i < reqs.size(); ++i) {
        ResponseParser parser;
        const auto hold = AnswerPace::hold(per_answer, reqs.size() - i);
        const int sleeps_before = sleeps;
        if (!read_response(c, reqs[i], parser, ec, deadline, hold, &sleeps))
          return fail_from(i, Kind::Timeout, fmt::format("no complete response within {} (pipelined)", ms_text(total)),
                           true);
        if (sleeps_before == 0 && sleeps > 0) first_sleep_held = hold > Clock::duration::zero();
        if (ec) {
          auto e = read_error(reqs[i], ec, parser.got_some());
          const std::string why = "no response: the connection ended before it (" + e.message + ")";
          out.emplace_back(fail(std::move(e)));
          return fail_from(i + 1, Kind::ConnectionLost, why, true);
        }
        http::Response resp = head_of(parser);
        const bool keep = parser.keep_alive();
        resp.body = std::move(parser.get().body());
        out.emplace_back(std::move(resp));
        if (!keep) {
          // The server reads nothing after a response that closes the connection (RFC 9112 9.6).
          if (i + 1 < reqs.size())
            fail_from(i + 1, Kind::ConnectionLost,
                      fmt::format("no response: the server closed the connection after answering {} (Connection: close)",
                                  describe(reqs[i])),
                      true);
          return;
        }
      }
      pace.observe(target, reqs.size(), Clock::now() - written_at, first_sleep_held ? sleeps > 1 : sleeps > 0);
      if (c.buffer.size() == 0 && !opts.cancel.stop_requested()) release(std::move(*conn));
      return;
    }
  }

  Result<std::unique_ptr<BodyStream>, TransportError> open_stream(const http::Request& req) {
    return unless_cancelled(req, open_stream_once(req));
  }
  Result<std::unique_ptr<BodyStream>, TransportError> open_stream_once(const http::Request& req);
};

namespace {

class StreamImpl final : public BodyStream {
 public:
  StreamImpl(std::unique_ptr<Connection> conn, std::unique_ptr<bhttp::response_parser<bhttp::string_body>> parser,
             http::Response head, std::string what)
      : conn_(std::move(conn)), parser_(std::move(parser)), head_(std::move(head)), what_(std::move(what)) {
    // A socket read takes at most the buffer's free capacity (at least 512 bytes): room for the
    // chunks that arrived while the reader waited for a CPU, taken in one read.
    conn_->buffer.reserve(kReadRoom);
  }

  ~StreamImpl() override {
    // Complete (abort) any pending read before the parser it writes into goes away.
    conn_->close();
    conn_->drain();
  }

  const http::Response& head() const override { return head_; }

  Result<Read, TransportError> read(std::chrono::milliseconds wait, std::string& out) override {
    if (cancelled_) return cancelled_error();
    if (failed_) return fail(*failed_);
    if (parser_->is_done()) return Read::End;
    const auto deadline = Clock::now() + wait;
    for (;;) {
      if (!in_flight_) {
        in_flight_ = true;
        bhttp::async_read_some(*conn_->stream, conn_->buffer, *parser_, [this](const boost::system::error_code& e, size_t) {
          ec_ = e;
          in_flight_ = false;
        });
      }
      // On timeout the read stays pending: the next read() picks it up.
      run_until_finished(*conn_, [this] { return !in_flight_; }, deadline);
      if (cancelled_) return cancelled_error();
      if (in_flight_) return Read::Timeout;
      if (!ec_) take_buffered();
      // Chunks parsed before a broken one are handed out first; the next read reports it.
      if (ec_) failed_ = broken(ec_);
      auto& body = parser_->get().body();
      if (!body.empty()) {
        out.append(body);
        body.clear();
        return Read::Data;
      }
      if (failed_) return fail(*failed_);
      if (parser_->is_done()) return Read::End;
      if (Clock::now() >= deadline) return Read::Timeout;
    }
  }

  void cancel() override {
    cancelled_ = true;
    // Closing on the io_context's own thread aborts a blocked read; if no read is running, the
    // next read() sees the flag first.
    asio::post(conn_->ioc, [c = conn_.get()] { c->close(); });
  }

 private:
  static constexpr size_t kReadRoom = 16 * 1024;

  TransportError broken(const boost::system::error_code& ec) const {
    return {Kind::ConnectionLost, fmt::format("{}: stream broken before the end of the body: {}", what_, ec.message()),
            true};
  }

  Result<Read, TransportError> cancelled_error() const {
    return fail(TransportError{Kind::Cancelled, what_ + ": cancelled", true});
  }

  // Beast's parser stops after each element (a chunk header, a chunk's data), so a read hands
  // out one chunk; the chunks already in the buffer are parsed here instead of one read each.
  void take_buffered() {
    while (conn_->buffer.size() > 0 && !parser_->is_done()) {
      const size_t used = parser_->put(conn_->buffer.data(), ec_);
      conn_->buffer.consume(used);
      if (ec_ == bhttp::error::need_more) {
        ec_ = {};
        return;
      }
      if (ec_ || used == 0) return;
    }
  }

  std::unique_ptr<Connection> conn_;
  std::unique_ptr<bhttp::response_parser<bhttp::string_body>> parser_;
  http::Response head_;
  std::string what_;
  bool in_flight_ = false;
  boost::system::error_code ec_;
  std::optional<TransportError> failed_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace

Result<std::unique_ptr<BodyStream>, TransportError> Transport::Impl::open_stream_once(const http::Request& req) {
  if (opts.cancel.stop_requested()) return fail(TransportError{Kind::Cancelled, "", false});
  const auto deadline = Clock::now() + cfg.timeout;
  for (int attempt = 0;; ++attempt) {
    auto conn = acquire(deadline);
    if (!conn) return fail(std::move(conn.error()));
    Connection& c = **conn;
    if (auto w = write(c, req, deadline); !w) {
      if (attempt == 0 && retry_on_fresh(c, req, w.error(), false)) continue;
      return fail(std::move(w.error()));
    }
    auto parser = std::make_unique<bhttp::response_parser<bhttp::string_body>>();
    parser->body_limit(boost::none);
    boost::system::error_code ec;
    bool done = false;
    bhttp::async_read_header(*c.stream, c.buffer, *parser, [&](const boost::system::error_code& e, size_t) {
      ec = e;
      done = true;
    });
    if (!run_until(c, done, deadline, opts.cancel))
      return fail(TransportError{Kind::Timeout, fmt::format("{}: no response headers within {}", describe(req),
                                                            ms_text(cfg.timeout)), true});
    if (ec) {
      auto e = read_error(req, ec, parser->got_some());
      if (attempt == 0 && retry_on_fresh(c, req, e, parser->got_some())) continue;
      return fail(std::move(e));
    }
    http::Response head = head_of(*parser);
    // Body bytes that arrived with the headers are already in the parser's buffer; read() hands
    // them out first.
    return std::unique_ptr<BodyStream>(
        std::make_unique<StreamImpl>(std::move(*conn), std::move(parser), std::move(head), describe(req)));
  }
}

Transport::Transport(PassKey<Transport>, std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Transport::~Transport() = default;

Result<std::unique_ptr<Transport>> Transport::create(const RestConfig& cfg, TransportOptions opts) {
  if (cfg.host.empty()) return fail("transport: no server host configured");
  auto impl = std::make_unique<Impl>(cfg, std::move(opts));
  if (cfg.scheme == "https") {
    auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                     ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    boost::system::error_code ec;
    if (cfg.insecure) {
      ctx->set_verify_mode(ssl::verify_none);
    } else {
      ctx->set_verify_mode(ssl::verify_peer);
      if (!cfg.ca_pem.empty()) {
        ctx->add_certificate_authority(asio::buffer(cfg.ca_pem), ec);
        if (ec) return fail(fmt::format("transport: certificate authority PEM: {}", ec.message()));
      } else {
        ctx->set_default_verify_paths(ec);
        if (ec) return fail(fmt::format("transport: system trust store: {}", ec.message()));
      }
    }
    if (!cfg.client_cert_pem.empty()) {
      ctx->use_certificate_chain(asio::buffer(cfg.client_cert_pem), ec);
      if (ec) return fail(fmt::format("transport: client certificate PEM: {}", ec.message()));
      ctx->use_private_key(asio::buffer(cfg.client_key_pem), ssl::context::pem, ec);
      if (ec) return fail(fmt::format("transport: client key PEM: {}", ec.message()));
    }
    impl->ssl_ctx = std::move(ctx);
  } else if (cfg.scheme != "http") {
    return fail(fmt::format("transport: unsupported scheme \"{}\"", cfg.scheme));
  }
  return std::make_unique<Transport>(PassKey<Transport>{}, std::move(impl));
}

Result<http::Response, http::TransportError> Transport::send(const http::Request& req, std::chrono::milliseconds timeout) {
  return impl_->send(req, timeout);
}

std::vector<Result<http::Response, http::TransportError>> Transport::send_pipelined(std::span<const http::Request> reqs,
                                                                                   std::chrono::milliseconds timeout) {
  return impl_->send_pipelined(reqs, timeout);
}

Result<std::unique_ptr<BodyStream>, http::TransportError> Transport::open_stream(const http::Request& req) {
  return impl_->open_stream(req);
}

std::string Transport::current_token() { return impl_->token.get(); }

size_t Transport::idle_connections() const {
  std::lock_guard lock(impl_->pool_mu);
  return impl_->idle.size();
}

size_t Transport::connections_opened() const { return impl_->opened.load(); }

Transport::IoCounts Transport::io_counts() const {
  return {impl_->counters.io_runs.load(std::memory_order_relaxed), impl_->counters.socket_reads.load(std::memory_order_relaxed)};
}

}  // namespace unitrain::kube
