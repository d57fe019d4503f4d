// The local cluster's HTTP transport: accepting plain or TLS connections, reading requests and
// writing responses with Boost.Beast, bearer-token checks, fault injection, and the streaming
// responses (watches, followed logs). What a request means is decided by Beast-free code:
// routing.h, resource_handler.h, non_resource.h, watch_framing.h. This is the only local-cluster
// file that includes Asio or Beast, and it stays whole (a little over 600 lines) so that their
// templates are compiled once (docs/architecture.md, "Build time").
#include "localcluster/server.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/asio/any_stream.h"
#include "localcluster/api_front.h"
#include "localcluster/content_negotiation.h"
#include "localcluster/http_message.h"
#include "localcluster/non_resource.h"
#include "localcluster/pod_logs.h"
#include "localcluster/request_options.h"
#include "localcluster/resource_handler.h"
#include "localcluster/routing.h"
#include "localcluster/watch_framing.h"

namespace unitrain::localcluster {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Request = http::request<http::string_body>;

constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);
constexpr size_t kBodyLimit = 64u << 20;
// Go's http.DefaultMaxHeaderBytes, kube-apiserver's: long label selectors fit in a request line.
constexpr size_t kHeaderLimit = 1u << 20;

// The request as the Beast-free handlers see it; its body refers to `req`.
HttpRequest to_http_request(const Request& req) {
  auto [path, query] = parse_target(std::string_view(req.target().data(), req.target().size()));
  HttpRequest out;
  out.method = std::string(req.method_string());
  out.path = std::move(path);
  out.query = std::move(query);
  out.accept = std::string(req[http::field::accept]);
  out.content_type = std::string(req[http::field::content_type]);
  out.body = req.body();
  return out;
}

// Wakes a streaming response (watch or log follow) that sleeps on its connection's strand.
struct Wakeup {
  explicit Wakeup(asio::any_io_executor ex) : timer(ex) {}
  asio::steady_timer timer;
  bool pending = false;      // strand only
  bool client_gone = false;  // strand only
  bool reader_done = false;  // strand only
  void wake() {
    pending = true;
    timer.cancel();
  }
};

// Lets callbacks from store or log writers post to connections only while the server runs: after
// stop() the io_context is going away and must not get new work.
struct Gate {
  std::shared_mutex mu;
  bool open = true;
  template <class F>
  void post(const asio::any_io_executor& ex, F&& f) {
    std::shared_lock lock(mu);
    if (open) asio::post(ex, std::forward<F>(f));
  }
};

// The I/O of one connection, plain TCP or TLS: through net::AnyStream, Beast's operations and
// the routing and streaming coroutines below are compiled once, not once per stream type.
class Conn {
 public:
  explicit Conn(net::AnyStream& stream) : stream_(stream) {}

  beast::tcp_stream& lowest() { return stream_.lowest(); }

  // Set when the connection failed, closed or sent something unreadable before a whole request
  // arrived.
  asio::awaitable<beast::error_code> read_request(beast::flat_buffer& buffer,
                                                  http::request_parser<http::string_body>& parser) {
    auto [ec, n] = co_await http::async_read(stream_, buffer, parser, nothrow);
    co_return ec;
  }

  // Reads and drops what the client still sends (up to `limit` bytes or until it stops for a
  // while), so that closing after an early answer does not reset the connection before the
  // client has read that answer.
  asio::awaitable<void> drain(size_t limit) {
    std::array<char, 16384> sink{};
    for (size_t total = 0; total < limit;) {
      lowest().expires_after(std::chrono::seconds(2));
      auto [ec, n] = co_await stream_.async_read_some(asio::buffer(sink), nothrow);
      if (ec) break;
      total += n;
    }
  }

  asio::awaitable<bool> write_response(http::response<http::string_body>& res) {
    auto [ec, n] = co_await http::async_write(stream_, res, nothrow);
    co_return !ec;
  }

  asio::awaitable<bool> write_header(http::response_serializer<http::empty_body>& sr) {
    auto [ec, n] = co_await http::async_write_header(stream_, sr, nothrow);
    co_return !ec;
  }

  asio::awaitable<bool> write_chunk(const std::string& data) {
    auto [ec, n] = co_await asio::async_write(stream_, http::make_chunk(asio::buffer(data)), nothrow);
    co_return !ec;
  }

  asio::awaitable<void> write_last_chunk() { co_await asio::async_write(stream_, http::make_chunk_last(), nothrow); }

  // Watches the connection for the client going away while a response streams; the stream gets
  // no further request until it closes.
  void start_disconnect_reader(const std::shared_ptr<Wakeup>& w, const std::shared_ptr<std::array<char, 512>>& sink) {
    stream_.async_read_some(asio::buffer(*sink), [w, sink](beast::error_code, size_t) {
      w->client_gone = true;
      w->reader_done = true;
      w->timer.cancel();
    });
  }

 private:
  net::AnyStream& stream_;
};

}  // namespace

struct ApiServer::Impl {
  Impl(Store& s, ServerOptions o)
      : store(s), options(std::move(o)), front(store, options.webhooks), logs(options.max_log_lines_per_pod),
        resources(store, front, logs), gate(std::make_shared<Gate>()), rng(std::random_device{}()), acceptor(ioc) {}

  // Declaration order matters: the io_context goes first on destruction (its pending handlers
  // own suspended connection frames that still use the members declared before it).
  Store& store;
  ServerOptions options;
  // Every resource verb goes through the front: admission and conversion webhooks.
  ApiFront front;
  PodLogs logs;
  ResourceHandler resources;
  std::optional<ssl::context> tls;
  RequestMetrics metrics;
  std::shared_ptr<Gate> gate;
  std::mutex rng_mu;
  std::mt19937_64 rng;
  mutable std::mutex token_mu;  // options.token changes when the token rotates
  uint16_t bound_port = 0;
  std::atomic<bool> stopped{false};
  std::vector<std::thread> threads;
  asio::io_context ioc;
  tcp::acceptor acceptor;

  std::string scheme() const { return tls ? "https" : "http"; }

  std::chrono::seconds default_watch_timeout() {
    std::lock_guard lock(rng_mu);
    auto lo = options.default_watch_min.count(), hi = std::max(options.default_watch_max.count(), lo);
    return std::chrono::seconds(std::uniform_int_distribution<long long>(lo, hi)(rng));
  }

  // Wakes `w` on its connection's strand, while the server runs.
  std::function<void()> waker(const std::shared_ptr<Wakeup>& w) {
    return [gate = gate, w, ex = w->timer.get_executor()] { gate->post(ex, [w] { w->wake(); }); };
  }

  // ---- connection handling ----

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(asio::make_strand(ioc), nothrow);
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
        spdlog::warn("localcluster: accept: {}", ec.message());
        continue;
      }
      socket.set_option(tcp::no_delay(true));
      auto ex = socket.get_executor();
      asio::co_spawn(ex, connection(std::move(socket)), [](std::exception_ptr e) {
        if (!e) return;
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          spdlog::error("localcluster: connection ended by exception: {}", x.what());
        }
      });
    }
  }

  asio::awaitable<void> connection(tcp::socket socket) {
    net::AnyStream stream = tls ? net::AnyStream(beast::tcp_stream(std::move(socket)), *tls)
                                : net::AnyStream(beast::tcp_stream(std::move(socket)));
    if (auto* tls_stream = stream.tls()) {
      stream.lowest().expires_after(std::chrono::seconds(30));
      auto [ec] = co_await tls_stream->async_handshake(ssl::stream_base::server, nothrow);
      if (ec) {
        spdlog::debug("localcluster: TLS handshake: {}", ec.message());
        co_return;
      }
    }
    Conn conn(stream);
    co_await serve(conn);
    if (auto* tls_stream = stream.tls()) {
      stream.lowest().expires_after(std::chrono::seconds(2));
      co_await tls_stream->async_shutdown(nothrow);
    } else {
      beast::error_code ec;
      stream.lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    }
  }

  asio::awaitable<void> serve(Conn& stream) {
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(kBodyLimit);
      parser.header_limit(kHeaderLimit);
      stream.lowest().expires_after(std::chrono::minutes(5));
      if (auto ec = co_await stream.read_request(buffer, parser)) {
        auto reply = unreadable_request_reply(ec);
        if (!reply) co_return;
        // The answer Go's net/http (and so kube-apiserver) gives, then the connection closes.
        Request answered;
        answered.version(parser.is_header_done() ? parser.get().version() : 11);
        answered.keep_alive(false);
        metrics.record({"", "", "", "", "", static_cast<int>(reply->status)});
        if (co_await write_reply(stream, answered, std::move(*reply))) {
          beast::error_code sec;
          stream.lowest().socket().shutdown(tcp::socket::shutdown_send, sec);
          co_await stream.drain(kBodyLimit);
        }
        co_return;
      }
      Request req = parser.release();
      bool keep = co_await handle(stream, req);
      if (!keep || !req.keep_alive()) co_return;
    }
  }

  asio::awaitable<bool> write_reply(Conn& stream, const Request& req, HttpReply reply) {
    http::response<http::string_body> res{static_cast<http::status>(reply.status), req.version()};
    res.set(http::field::content_type, reply.content_type);
    res.set("Cache-Control", "no-cache, private");
    for (auto& [k, v] : reply.headers) res.insert(k, v);
    res.keep_alive(req.keep_alive());
    res.body() = std::move(reply.body);
    res.prepare_payload();
    stream.lowest().expires_after(std::chrono::seconds(60));
    co_return co_await stream.write_response(res);
  }

  // The reply to a request that could not be read, or nullopt when there is nobody to answer (the
  // connection closed or timed out between requests).
  static std::optional<HttpReply> unreadable_request_reply(const beast::error_code& ec) {
    if (ec == http::error::body_limit) return error_reply(errors::request_entity_too_large(kBodyLimit));
    if (ec == http::error::header_limit) {
      return HttpReply{431, "text/plain; charset=utf-8", "431 Request Header Fields Too Large", {}};
    }
    if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message) {
      return HttpReply{400, "text/plain; charset=utf-8", "400 Bad Request", {}};
    }
    return std::nullopt;
  }

  // The boundary where an exception from a handler (an allocation failure, a bug) becomes a 500
  // answer instead of a connection closed without one.
  template <class F>
  static HttpReply answer_or_internal_error(F&& handler) {
    try {
      return handler();
    } catch (const std::exception& x) {
      spdlog::error("localcluster: request failed: {}", x.what());
      return error_reply(errors::internal_error_occurred(x.what()));
    }
  }

  bool authorized(const Request& req, std::string_view path) const {
    std::lock_guard lock(token_mu);
    if (!options.token) return true;
    // Probes stay anonymous, as kube-apiserver's system:public-info-viewer allows.
    if (path == "/healthz" || path == "/readyz" || path == "/livez") return true;
    auto h = req[http::field::authorization];
    std::string_view v(h.data(), h.size());
    return v.size() > 7 && (v.substr(0, 7) == "Bearer " || v.substr(0, 7) == "bearer ") &&
           trim(v.substr(7)) == *options.token;
  }

  asio::awaitable<bool> handle(Conn& stream, const Request& req) {
    const HttpRequest hr = to_http_request(req);
    if (!authorized(req, hr.path)) {
      metrics.record({"", "", "", "", "", 401});
      co_return co_await write_reply(stream, req, error_reply(errors::unauthorized()));
    }
    if (hr.path == "/unitrain/faults") {
      HttpReply r = serve_faults_admin(hr, options.faults.get());
      if (r.status == 200 && hr.method != "GET") {
        spdlog::info("localcluster: faults set to {}", options.faults->config().to_json());
      }
      metrics.record({hr.method, "", "", "", "", static_cast<int>(r.status)});
      co_return co_await write_reply(stream, req, std::move(r));
    }
    if (hr.path == "/unitrain/restart") {
      HttpReply r = serve_restart_admin(hr, static_cast<bool>(options.request_restart));
      const bool accepted = r.status == 202;
      if (accepted) spdlog::info("localcluster: restart requested through /unitrain/restart");
      metrics.record({hr.method, "", "", "", "", static_cast<int>(r.status)});
      co_await write_reply(stream, req, std::move(r));
      if (accepted) options.request_restart();
      co_return !accepted;  // the restart closes every connection anyway
    }
    auto segs = split_path(hr.path);
    if (!is_resource_path(segs)) {
      const NonResourceContext context{store, metrics, options.git_version, fmt::format("127.0.0.1:{}", bound_port)};
      HttpReply r = answer_or_internal_error([&] { return serve_non_resource(hr, segs, context); });
      metrics.record({hr.method, "", "", "", "", static_cast<int>(r.status)});
      co_return co_await write_reply(stream, req, std::move(r));
    }
    auto route = resolve_route(store, segs);
    if (!route) {
      metrics.record({hr.method, "", "", "", "", route.error().code});
      co_return co_await write_reply(stream, req, error_reply(route.error()));
    }
    // Logs are text/plain whatever the Accept header says.
    if (route->subresource != "log" && !accepts_json(hr.accept)) {
      metrics.record({hr.method, "", "", "", "", 406});
      co_return co_await write_reply(stream, req, error_reply(errors::not_acceptable_json()));
    }
    bool watch = hr.method == "GET" && (route->legacy_watch || query_flag(hr.query, "watch"));
    auto ctype = parse_media_type(hr.content_type);
    bool apply = hr.method == "PATCH" && ctype.type == "application/apply-patch+yaml";
    RequestKey key{metrics_verb(hr.method, *route, watch, apply), route->info.group, route->info.version,
                   route->info.resource, route->subresource, 200};
    FaultDecision fault;
    if (options.faults) fault = options.faults->decide(key.verb, route->info, route->subresource, route->name);
    if (fault.latency.count() > 0) {
      asio::steady_timer delay(stream.lowest().get_executor());
      delay.expires_after(fault.latency);
      co_await delay.async_wait(nothrow);
    }
    if (fault.action == FaultDecision::Action::Error) {
      HttpReply r = error_reply(*fault.error);
      if (fault.retry_after_seconds) r.headers.emplace_back("Retry-After", std::to_string(*fault.retry_after_seconds));
      key.code = static_cast<int>(r.status);
      metrics.record(std::move(key));
      co_return co_await write_reply(stream, req, std::move(r));
    }
    // Closing without a response is what a client sees when a connection breaks mid-request.
    if (fault.action == FaultDecision::Action::Drop) co_return false;
    if (watch && route->subresource.empty()) {
      co_return co_await serve_watch(stream, req, hr, *route, key, fault);
    }
    if (hr.method == "GET" && route->subresource == "log" && query_flag(hr.query, "follow")) {
      co_return co_await serve_log(stream, req, hr, *route, key);
    }
    HttpReply r = answer_or_internal_error([&] { return resources.handle(hr, *route, ctype, apply); });
    key.code = static_cast<int>(r.status);
    metrics.record(std::move(key));
    if (fault.action == FaultDecision::Action::DropAfterCommit) co_return false;
    if (fault.action == FaultDecision::Action::Malformed && r.status / 100 == 2) r.body.resize(r.body.size() / 2);
    co_return co_await write_reply(stream, req, std::move(r));
  }

  // ---- streaming ----

  asio::awaitable<void> finish_stream(Conn& stream, const std::shared_ptr<Wakeup>& w, bool write_ok) {
    if (write_ok) {
      stream.lowest().expires_after(std::chrono::seconds(10));
      co_await stream.write_last_chunk();
    }
    // The pending reader must complete before the stream is destroyed.
    beast::error_code ec;
    stream.lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    stream.lowest().socket().cancel(ec);
    while (!w->reader_done) {
      w->timer.expires_after(std::chrono::seconds(5));
      auto [tec] = co_await w->timer.async_wait(nothrow);
      if (!tec) stream.lowest().socket().close(ec);
    }
  }

  asio::awaitable<bool> write_stream_header(Conn& stream, const Request& req, std::string_view content_type) {
    http::response<http::empty_body> res{http::status::ok, req.version()};
    res.set(http::field::content_type, content_type);
    res.set("Cache-Control", "no-cache, private");
    res.chunked(true);
    res.keep_alive(false);
    http::response_serializer<http::empty_body> sr{res};
    stream.lowest().expires_never();
    co_return co_await stream.write_header(sr);
  }

  asio::awaitable<bool> serve_watch(Conn& stream, const Request& req, const HttpRequest& hr,
                                    const ResourceRoute& route, RequestKey key, const FaultDecision& fault) {
    if (!has_verb(route.info, "watch")) {
      key.code = 405;
      metrics.record(std::move(key));
      co_return co_await write_reply(stream, req, error_reply(errors::method_not_allowed()));
    }
    auto parsed = watch_request(hr.query, route.name);
    auto timeout_option = watch_timeout(hr.query);
    if (!parsed || !timeout_option) {
      const StatusError& e = !parsed ? parsed.error() : timeout_option.error();
      key.code = e.code;
      metrics.record(std::move(key));
      co_return co_await write_reply(stream, req, error_reply(e));
    }
    const WatchRequest wr = std::move(*parsed);
    if (options.faults && options.faults->expire_watch(wr.resource_version)) {
      // What the watch cache answers when the resourceVersion left its window: 200, then one
      // ERROR event carrying a 410 Expired Status.
      auto gone = errors::expired("too old resource version: " + wr.resource_version + " (" +
                                  store.resource_version() + ")");
      metrics.record(key);
      // A named reply: GCC 12 destroys a braced temporary inside a co_await expression twice.
      HttpReply expired;
      expired.body = watch_error_line(gone);
      co_return co_await write_reply(stream, req, std::move(expired));
    }
    int64_t sent = 0;
    bool cut = false;
    auto watcher = front.watch(route.info, route.ns, wr);
    if (!watcher) {
      key.code = watcher.error().code;
      metrics.record(std::move(key));
      co_return co_await write_reply(stream, req, error_reply(watcher.error()));
    }
    metrics.record(key);
    auto neg = negotiate(hr.accept);
    auto include = include_object(hr.query);
    std::optional<std::vector<PrinterColumn>> columns;
    if (neg.representation == Representation::Table) columns = resources.crd_columns(route.info);

    std::chrono::seconds timeout = default_watch_timeout();
    if (*timeout_option) timeout = **timeout_option;
    auto deadline = std::chrono::steady_clock::now() + timeout;

    auto w = std::make_shared<Wakeup>(stream.lowest().get_executor());
    (*watcher)->set_notify(waker(w));

    bool ok = co_await write_stream_header(stream, req, neg.content_type);
    if (!ok) {
      (*watcher)->set_notify({});
      (*watcher)->stop();
      co_return false;
    }
    auto sink = std::make_shared<std::array<char, 512>>();
    stream.start_disconnect_reader(w, sink);
    auto next_bookmark = std::chrono::steady_clock::now() + options.bookmark_interval;
    bool final_bookmark_sent = false;
    for (;;) {
      w->pending = false;
      bool closed = false;
      auto events = (*watcher)->drain(closed);
      for (const auto& ev : events) {
        if (!ok || cut) break;
        std::string line = watch_event_line(ev, route.info, neg.representation, include, columns);
        if (fault.malformed_watch && ev.type != "BOOKMARK" && options.faults->roll(fault.malformed_probability)) {
          options.faults->count("malformed");
          line = std::string(kMalformedWatchEventLine);
        }
        ok = co_await stream.write_chunk(line);
        // Read per event: a cut configured while the watch is open applies to it.
        const int64_t cut_after = options.faults ? options.faults->watch_cut_after_events() : 0;
        if (ev.type != "BOOKMARK" && ++sent >= cut_after && cut_after > 0) cut = true;
      }
      if (cut) options.faults->count("watchCut");
      if (!ok || closed || cut || w->client_gone) break;
      auto now = std::chrono::steady_clock::now();
      if (now >= deadline) {
        // A last bookmark lets the client resume exactly where this watch ends.
        if (final_bookmark_sent || !wr.allow_bookmarks) break;
        final_bookmark_sent = true;
        (*watcher)->request_bookmark();
        continue;
      }
      if (now >= next_bookmark) {
        next_bookmark = now + options.bookmark_interval;
        (*watcher)->request_bookmark();
        continue;
      }
      if (w->pending) continue;
      w->timer.expires_at(wr.allow_bookmarks ? std::min(deadline, next_bookmark) : deadline);
      co_await w->timer.async_wait(nothrow);
    }
    (*watcher)->set_notify({});
    (*watcher)->stop();
    // An aborted cut ends without the last chunk: the client sees the connection break.
    co_await finish_stream(stream, w, ok && !w->client_gone && !(cut && options.faults->watch_cut_abort()));
    co_return false;
  }

  // `kubectl logs -f`: the container's lines as they come, until that run of the container ends.
  asio::awaitable<bool> serve_log(Conn& stream, const Request& req, const HttpRequest& hr, const ResourceRoute& route,
                                  RequestKey key) {
    const Query& q = hr.query;
    auto pod = store.get(route.info, route.ns, route.name);
    if (!pod) {
      key.code = pod.error().code;
      metrics.record(std::move(key));
      co_return co_await write_reply(stream, req, error_reply(pod.error()));
    }
    auto target = log_target(pod->root(), q);
    if (!target || target->previous || !target->running) {
      // Nothing to follow (an error, the previous run, a container that already ended): the
      // whole answer at once.
      HttpReply r = resources.handle(hr, route, {}, false);
      key.code = static_cast<int>(r.status);
      metrics.record(std::move(key));
      co_return co_await write_reply(stream, req, std::move(r));
    }
    metrics.record(key);
    const std::string container_id = target->container_id;
    const std::string container = target->container;
    std::string k = PodLogs::key(route.ns, route.name, container);
    auto w = std::make_shared<Wakeup>(stream.lowest().get_executor());
    auto wake = std::make_shared<std::function<void()>>(waker(w));  // held while the stream lasts
    logs.follow(k, wake);
    // Pod changes wake the stream too, so it ends once the pod finishes or goes away.
    WatchRequest wr;
    wr.field_selector = "metadata.name=" + route.name;
    wr.resource_version = std::string(json::get_string(pod->root(), "/metadata/resourceVersion").value_or(""));
    auto pod_watch = store.watch(route.info, route.ns, wr);
    if (pod_watch) (*pod_watch)->set_notify(waker(w));

    bool ok = co_await write_stream_header(stream, req, "text/plain");
    if (!ok) {
      if (pod_watch) {
        (*pod_watch)->set_notify({});
        (*pod_watch)->stop();
      }
      co_return false;
    }
    auto sink = std::make_shared<std::array<char, 512>>();
    stream.start_disconnect_reader(w, sink);
    auto [lines, next] = logs.read(k, 0);
    keep_tail_lines(lines, q);
    for (bool first = true;; first = false) {
      w->pending = false;
      if (!first) std::tie(lines, next) = logs.read(k, next);
      if (!lines.empty()) ok = co_await stream.write_chunk(join_lines(lines));
      lines.clear();
      if (!ok || w->client_gone) break;
      if (pod_watch) {
        bool closed = false;
        (void)(*pod_watch)->drain(closed);
      }
      auto current = store.get(route.info, route.ns, route.name);
      if (!current) break;
      auto now = log_target(current->root(), q);
      if (!now || !now->running || now->container_id != container_id) {
        std::tie(lines, next) = logs.read(k, next);
        if (!lines.empty()) ok = co_await stream.write_chunk(join_lines(lines));
        break;
      }
      if (w->pending) continue;
      w->timer.expires_after(std::chrono::hours(24));
      co_await w->timer.async_wait(nothrow);
    }
    if (pod_watch) {
      (*pod_watch)->set_notify({});
      (*pod_watch)->stop();
    }
    co_await finish_stream(stream, w, ok && !w->client_gone);
    co_return false;
  }
};

ApiServer::ApiServer(PassKey<ApiServer>, std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ApiServer::~ApiServer() { stop(); }

Result<std::unique_ptr<ApiServer>> ApiServer::start(Store& store, ServerOptions options) {
  auto impl = std::make_unique<Impl>(store, std::move(options));
  auto& o = impl->options;
  size_t colon = o.listen.rfind(':');
  if (colon == std::string::npos) return fail("--listen " + o.listen + ": expected host:port");
  std::string host = o.listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  std::string port_text = o.listen.substr(colon + 1);
  char* end = nullptr;
  long port = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port < 0 || port > 65535) {
    return fail("--listen " + o.listen + ": port must be a number in 0..65535");
  }
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host.empty() ? "0.0.0.0" : host, ec);
  if (ec) return fail("--listen " + o.listen + ": " + ec.message());
  if (o.tls) {
    impl->tls.emplace(ssl::context::tls_server);
    auto& ctx = *impl->tls;
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                    ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    ctx.use_certificate_chain(asio::buffer(o.tls->server_cert_pem), ec);
    if (ec) return fail("TLS certificate: " + ec.message());
    ctx.use_private_key(asio::buffer(o.tls->server_key_pem), ssl::context::pem, ec);
    if (ec) return fail("TLS private key: " + ec.message());
  }
  tcp::endpoint ep(addr, static_cast<unsigned short>(port));
  auto& acc = impl->acceptor;
  acc.open(ep.protocol(), ec);
  if (!ec) acc.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(ep, ec);
  if (!ec) acc.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("--listen " + o.listen + ": " + ec.message());
  impl->bound_port = acc.local_endpoint().port();
  Impl* raw = impl.get();
  asio::co_spawn(raw->ioc, raw->accept_loop(), [](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      spdlog::error("localcluster: accept loop ended by exception: {}", x.what());
    }
  });
  int n = std::max(1, o.threads);
  for (int i = 0; i < n; ++i) {
    raw->threads.emplace_back([raw] {
      for (;;) {
        try {
          raw->ioc.run();
          return;
        } catch (const std::exception& x) {
          spdlog::error("localcluster: worker thread: {}", x.what());
        }
      }
    });
  }
  spdlog::info("localcluster: serving on {}://{}:{}", raw->scheme(), host, raw->bound_port);
  return std::make_unique<ApiServer>(PassKey<ApiServer>{}, std::move(impl));
}

void ApiServer::stop() {
  if (!impl_ || impl_->stopped.exchange(true)) return;
  {
    std::unique_lock lock(impl_->gate->mu);
    impl_->gate->open = false;
  }
  asio::post(impl_->ioc, [raw = impl_.get()] {
    boost::system::error_code ec;
    raw->acceptor.close(ec);
  });
  impl_->ioc.stop();
  for (auto& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
  impl_->threads.clear();
}

uint16_t ApiServer::port() const { return impl_->bound_port; }

std::string ApiServer::url() const { return fmt::format("{}://127.0.0.1:{}", impl_->scheme(), impl_->bound_port); }

void ApiServer::append_pod_log(const ContainerLogLine& l) {
  impl_->logs.append(PodLogs::key(l.ns, l.pod, l.container), l.line, l.run_id, l.restarted);
}

void ApiServer::clear_pod_log(std::string_view ns, std::string_view pod, std::string_view container) {
  impl_->logs.clear(PodLogs::key(ns, pod, container));
}

const RequestMetrics& ApiServer::metrics() const { return impl_->metrics; }

void ApiServer::set_token(std::string token) {
  std::lock_guard lock(impl_->token_mu);
  impl_->options.token = std::move(token);
}

}  // namespace unitrain::localcluster
