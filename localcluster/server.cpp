#include "localcluster/server.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <map>
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
#include "localcluster/discovery.h"
#include "localcluster/openapi.h"
#include "localcluster/table.h"

namespace unitrain::localcluster {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Request = http::request<http::string_body>;
using Strand = asio::strand<asio::io_context::executor_type>;

constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);
constexpr size_t kBodyLimit = 64u << 20;

// ---- small helpers ----------------------------------------------------------------------------

std::string percent_decode(std::string_view s, bool plus_is_space) {
  auto hex = [](char h) -> int {
    if (h >= '0' && h <= '9') return h - '0';
    if (h >= 'a' && h <= 'f') return h - 'a' + 10;
    if (h >= 'A' && h <= 'F') return h - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%' && i + 2 < s.size()) {
      int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += (plus_is_space && c == '+') ? ' ' : c;
  }
  return out;
}

using Query = std::map<std::string, std::string, std::less<>>;

Query parse_query(std::string_view q) {
  Query out;
  while (!q.empty()) {
    size_t amp = q.find('&');
    std::string_view kv = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view{} : q.substr(amp + 1);
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    std::string key = percent_decode(kv.substr(0, eq), true);
    std::string value = eq == std::string_view::npos ? std::string() : percent_decode(kv.substr(eq + 1), true);
    out.emplace(std::move(key), std::move(value));
  }
  return out;
}

std::string qget(const Query& q, std::string_view key) {
  auto it = q.find(key);
  return it == q.end() ? std::string() : it->second;
}
bool qtrue(const Query& q, std::string_view key) {
  auto v = qget(q, key);
  return v == "1" || v == "true" || v == "True";
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.push_back(percent_decode(path.substr(i, j - i), false));
    i = j + 1;
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// One media range of an Accept or Content-Type header: "application/json;as=Table;g=meta.k8s.io;v=v1".
struct MediaType {
  std::string type;
  std::map<std::string, std::string> params;
  std::string param(const std::string& k) const {
    auto it = params.find(k);
    return it == params.end() ? std::string() : it->second;
  }
};

MediaType parse_media_type(std::string_view s) {
  MediaType m;
  size_t semi = s.find(';');
  m.type = std::string(trim(s.substr(0, semi)));
  std::transform(m.type.begin(), m.type.end(), m.type.begin(), [](unsigned char c) { return std::tolower(c); });
  while (semi != std::string_view::npos) {
    s = s.substr(semi + 1);
    semi = s.find(';');
    std::string_view p = trim(s.substr(0, semi));
    size_t eq = p.find('=');
    if (eq == std::string_view::npos) continue;
    m.params[std::string(trim(p.substr(0, eq)))] = std::string(trim(p.substr(eq + 1)));
  }
  return m;
}

std::vector<MediaType> parse_accept(std::string_view accept) {
  std::vector<MediaType> out;
  while (!accept.empty()) {
    size_t comma = accept.find(',');
    auto one = trim(accept.substr(0, comma));
    if (!one.empty()) out.push_back(parse_media_type(one));
    accept = comma == std::string_view::npos ? std::string_view{} : accept.substr(comma + 1);
  }
  return out;
}

enum class Output { Json, Table, Metadata };

struct Negotiated {
  Output output = Output::Json;
  std::string content_type = "application/json";
};

// Picks the first acceptable representation. Protobuf is never produced: every Kubernetes client
// lists JSON as an alternative and decodes whatever the Content-Type says.
Negotiated negotiate(std::string_view accept) {
  for (const auto& m : parse_accept(accept)) {
    std::string as = m.param("as");
    if (as.empty()) continue;
    if (m.type != "application/json") continue;
    if (m.param("g") != "meta.k8s.io" || m.param("v") != "v1") continue;
    if (as == "Table") return {Output::Table, "application/json;as=Table;v=v1;g=meta.k8s.io"};
    if (as == "PartialObjectMetadata" || as == "PartialObjectMetadataList") {
      return {Output::Metadata, "application/json;as=" + as + ";v=v1;g=meta.k8s.io"};
    }
  }
  return {};
}

// Which aggregated discovery version the client asks for, if any.
std::optional<std::string> aggregated_discovery_version(std::string_view accept) {
  for (const auto& m : parse_accept(accept)) {
    if (m.type != "application/json" || m.param("g") != "apidiscovery.k8s.io" ||
        m.param("as") != "APIGroupDiscoveryList") {
      continue;
    }
    auto v = m.param("v");
    if (v == "v2" || v == "v2beta1") return v;
  }
  return std::nullopt;
}

StatusError status_error(int code, std::string reason, std::string message) {
  StatusError e;
  e.code = code;
  e.reason = std::move(reason);
  e.message = std::move(message);
  return e;
}
StatusError not_found_path() {
  return status_error(404, "NotFound", "the server could not find the requested resource");
}

// PartialObjectMetadata for one object, or a PartialObjectMetadataList for a list.
json::Document metadata_only(const json::Value& v) {
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  auto one = [&](const json::Value& obj) {
    json::Value p(rapidjson::kObjectType);
    p.AddMember("kind", "PartialObjectMetadata", a);
    p.AddMember("apiVersion", "meta.k8s.io/v1", a);
    if (auto* m = json::find(obj, "/metadata")) p.AddMember("metadata", json::clone(*m, a), a);
    return p;
  };
  if (v.IsObject() && v.HasMember("items")) {
    d.root().AddMember("kind", "PartialObjectMetadataList", a);
    d.root().AddMember("apiVersion", "meta.k8s.io/v1", a);
    if (auto* m = json::find(v, "/metadata")) d.root().AddMember("metadata", json::clone(*m, a), a);
    json::Value items(rapidjson::kArrayType);
    if (v["items"].IsArray()) {
      for (const auto& it : v["items"].GetArray()) items.PushBack(one(it), a);
    }
    d.root().AddMember("items", items, a);
  } else {
    d.root() = one(v);
  }
  return d;
}

// ---- pod logs -------------------------------------------------------------------------------

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

class PodLogs {
 public:
  explicit PodLogs(size_t max_lines) : max_lines_(max_lines) {}

  void append(const std::string& key, std::string_view line, Gate& gate) {
    std::vector<std::shared_ptr<Wakeup>> wake;
    {
      std::lock_guard lock(mu_);
      auto& log = logs_[key];
      log.lines.emplace_back(line);
      if (log.lines.size() > max_lines_) {
        log.lines.pop_front();
        ++log.first;
      }
      for (auto it = log.followers.begin(); it != log.followers.end();) {
        if (auto w = it->lock()) {
          wake.push_back(std::move(w));
          ++it;
        } else {
          it = log.followers.erase(it);
        }
      }
    }
    for (auto& w : wake) gate.post(w->timer.get_executor(), [w] { w->wake(); });
  }

  void clear(const std::string& key) {
    std::lock_guard lock(mu_);
    logs_.erase(key);
  }

  // Lines from absolute index `from` on (all when from is 0), and the index after the last.
  std::pair<std::vector<std::string>, uint64_t> read(const std::string& key, uint64_t from) {
    std::lock_guard lock(mu_);
    auto it = logs_.find(key);
    if (it == logs_.end()) return {{}, from};
    auto& log = it->second;
    uint64_t start = std::max(from, log.first);
    std::vector<std::string> out(log.lines.begin() + static_cast<std::ptrdiff_t>(start - log.first), log.lines.end());
    return {std::move(out), log.first + log.lines.size()};
  }

  void follow(const std::string& key, const std::shared_ptr<Wakeup>& w) {
    std::lock_guard lock(mu_);
    logs_[key].followers.push_back(w);
  }

 private:
  struct Log {
    std::deque<std::string> lines;
    uint64_t first = 0;  // absolute index of lines.front()
    std::vector<std::weak_ptr<Wakeup>> followers;
  };
  size_t max_lines_;
  std::mutex mu_;
  std::map<std::string, Log> logs_;
};

std::string log_key(std::string_view ns, std::string_view pod) { return std::string(ns) + "/" + std::string(pod); }

// ---- routing ----------------------------------------------------------------------------------

struct ResourceRoute {
  ResourceInfo info;
  std::string ns;
  std::string name;
  std::string subresource;
  bool legacy_watch = false;  // /api/v1/watch/... paths
};

// Plain (non-streaming) response.
struct Reply {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

Reply error_reply(const StatusError& e) {
  return Reply{static_cast<unsigned>(e.code), "application/json", e.to_status().dump(), {}};
}

std::string verb_for_metrics(http::verb method, const ResourceRoute& r, bool watch, bool apply) {
  switch (method) {
    case http::verb::get:
      if (watch) return "WATCH";
      return r.name.empty() ? "LIST" : "GET";
    case http::verb::post:
      return "POST";
    case http::verb::put:
      return "PUT";
    case http::verb::patch:
      return apply ? "APPLY" : "PATCH";
    case http::verb::delete_:
      return r.name.empty() ? "DELETECOLLECTION" : "DELETE";
    default:
      return std::string(http::to_string(method));
  }
}

bool has_verb(const ResourceInfo& r, std::string_view verb) {
  return r.verbs.empty() || std::find(r.verbs.begin(), r.verbs.end(), verb) != r.verbs.end();
}

// ---- connections ------------------------------------------------------------------------------

// The I/O of one connection, plain TCP or TLS: through net::AnyStream, Beast's operations and
// the routing and streaming coroutines below are compiled once, not once per stream type.
class Conn {
 public:
  explicit Conn(net::AnyStream& stream) : stream_(stream) {}

  beast::tcp_stream& lowest() { return stream_.lowest(); }

  // False when the connection failed or closed before a whole request arrived.
  asio::awaitable<bool> read_request(beast::flat_buffer& buffer, http::request_parser<http::string_body>& parser) {
    auto [ec, n] = co_await http::async_read(stream_, buffer, parser, nothrow);
    co_return !ec;
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

// ---- the server -------------------------------------------------------------------------------

struct ApiServer::Impl {
  Impl(Store& s, ServerOptions o)
      : store(s), options(std::move(o)), front(store, options.webhooks), logs(options.max_log_lines_per_pod),
        gate(std::make_shared<Gate>()),
        rng(std::random_device{}()), acceptor(ioc) {}

  // Declaration order matters: the io_context goes first on destruction (its pending handlers
  // own suspended connection frames that still use the members declared before it).
  Store& store;
  ServerOptions options;
  // Every resource verb goes through the front: admission and conversion webhooks.
  ApiFront front;
  std::optional<ssl::context> tls;
  RequestMetrics metrics;
  PodLogs logs;
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
      stream.lowest().expires_after(std::chrono::minutes(5));
      if (!co_await stream.read_request(buffer, parser)) co_return;
      Request req = parser.release();
      bool keep = co_await handle(stream, req);
      if (!keep || !req.keep_alive()) co_return;
    }
  }

  asio::awaitable<bool> write_reply(Conn& stream, const Request& req, Reply reply) {
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
    std::string_view target(req.target().data(), req.target().size());
    size_t qpos = target.find('?');
    std::string path = std::string(target.substr(0, qpos));
    Query query = qpos == std::string_view::npos ? Query{} : parse_query(target.substr(qpos + 1));
    if (!authorized(req, path)) {
      metrics.record({"", "", "", "", "", 401});
      co_return co_await write_reply(stream, req, error_reply(status_error(401, "Unauthorized", "Unauthorized")));
    }
    if (path == "/unitrain/faults") {
      Reply r = faults_admin(req);
      metrics.record({std::string(http::to_string(req.method())), "", "", "", "", static_cast<int>(r.status)});
      co_return co_await write_reply(stream, req, std::move(r));
    }
    if (path == "/unitrain/restart") {
      Reply r = restart_admin(req);
      const bool accepted = r.status == 202;
      metrics.record({std::string(http::to_string(req.method())), "", "", "", "", static_cast<int>(r.status)});
      co_await write_reply(stream, req, std::move(r));
      if (accepted) options.request_restart();
      co_return !accepted;  // the restart closes every connection anyway
    }
    auto segs = split_path(path);
    bool is_resource_path = (segs.size() >= 3 && segs[0] == "api") || (segs.size() >= 4 && segs[0] == "apis");
    if (!is_resource_path) {
      Reply r = non_resource(req, path, segs);
      metrics.record({std::string(http::to_string(req.method())), "", "", "", "", static_cast<int>(r.status)});
      co_return co_await write_reply(stream, req, std::move(r));
    }
    auto route = resolve(segs);
    if (!route) {
      metrics.record({std::string(http::to_string(req.method())), "", "", "", "", route.error().code});
      co_return co_await write_reply(stream, req, error_reply(route.error()));
    }
    bool watch = req.method() == http::verb::get && (route->legacy_watch || qtrue(query, "watch"));
    auto ctype = parse_media_type(std::string_view(req[http::field::content_type].data(),
                                                   req[http::field::content_type].size()));
    bool apply = req.method() == http::verb::patch && ctype.type == "application/apply-patch+yaml";
    RequestKey key{verb_for_metrics(req.method(), *route, watch, apply), route->info.group, route->info.version,
                   route->info.resource, route->subresource, 200};
    FaultDecision fault;
    if (options.faults) fault = options.faults->decide(key.verb, route->info, route->subresource, route->name);
    if (fault.latency.count() > 0) {
      asio::steady_timer delay(stream.lowest().get_executor());
      delay.expires_after(fault.latency);
      co_await delay.async_wait(nothrow);
    }
    if (fault.action == FaultDecision::Action::Error) {
      Reply r = error_reply(*fault.error);
      if (fault.retry_after_seconds) r.headers.emplace_back("Retry-After", std::to_string(*fault.retry_after_seconds));
      key.code = static_cast<int>(r.status);
      metrics.record(std::move(key));
      co_return co_await write_reply(stream, req, std::move(r));
    }
    // Closing without a response is what a client sees when a connection breaks mid-request.
    if (fault.action == FaultDecision::Action::Drop) co_return false;
    if (watch && route->subresource.empty()) {
      co_return co_await serve_watch(stream, req, *route, query, key, fault);
    }
    if (req.method() == http::verb::get && route->subresource == "log" && qtrue(query, "follow")) {
      co_return co_await serve_log(stream, req, *route, query, key);
    }
    Reply r = resource_call(req, *route, query, ctype, apply);
    key.code = static_cast<int>(r.status);
    metrics.record(std::move(key));
    if (fault.action == FaultDecision::Action::DropAfterCommit) co_return false;
    if (fault.action == FaultDecision::Action::Malformed && r.status / 100 == 2) r.body.resize(r.body.size() / 2);
    co_return co_await write_reply(stream, req, std::move(r));
  }

  // GET shows the fault configuration and what was injected; PUT or POST replaces it.
  Reply restart_admin(const Request& req) {
    if (!options.request_restart) {
      return error_reply(status_error(404, "NotFound", "restart is not available on this server"));
    }
    if (req.method() != http::verb::post) {
      return error_reply(status_error(405, "MethodNotAllowed",
                                      "the server does not allow this method on the requested resource"));
    }
    spdlog::info("localcluster: restart requested through /unitrain/restart");
    return Reply{202, "application/json", R"({"restarting":true})", {}};
  }

  Reply faults_admin(const Request& req) {
    if (!options.faults) {
      return error_reply(status_error(404, "NotFound", "fault injection is not enabled on this server"));
    }
    if (req.method() == http::verb::get) return Reply{200, "application/json", options.faults->describe(), {}};
    if (req.method() == http::verb::put || req.method() == http::verb::post) {
      auto c = FaultConfig::parse(req.body());
      if (!c) return error_reply(status_error(400, "BadRequest", c.error().message));
      options.faults->configure(std::move(*c));
      spdlog::info("localcluster: faults set to {}", options.faults->config().to_json());
      return Reply{200, "application/json", options.faults->describe(), {}};
    }
    return error_reply(status_error(405, "MethodNotAllowed",
                                    "the server does not allow this method on the requested resource"));
  }

  // ---- non-resource paths ----

  Reply non_resource(const Request& req, const std::string& path, const std::vector<std::string>& segs) {
    if (req.method() != http::verb::get) {
      return error_reply(status_error(405, "MethodNotAllowed",
                                      fmt::format("the server does not allow this method on the requested resource")));
    }
    std::string accept(req[http::field::accept]);
    if (path == "/healthz" || path == "/readyz" || path == "/livez" || path.starts_with("/healthz/") ||
        path.starts_with("/readyz/") || path.starts_with("/livez/")) {
      return Reply{200, "text/plain; charset=utf-8", "ok", {}};
    }
    if (path == "/version" || path == "/version/") {
      json::Document d = json::Document::object();
      auto& a = d.alloc();
      std::string minor;
      auto& gv = options.git_version;
      size_t dot1 = gv.find('.'), dot2 = gv.find('.', dot1 + 1);
      std::string major = dot1 == std::string::npos ? "1" : gv.substr(1, dot1 - 1);
      minor = dot1 == std::string::npos ? "0" : gv.substr(dot1 + 1, dot2 - dot1 - 1);
      d.root().AddMember("major", json::str(major, a), a);
      d.root().AddMember("minor", json::str(minor, a), a);
      d.root().AddMember("gitVersion", json::str(gv, a), a);
      d.root().AddMember("gitCommit", "unitrain-localcluster", a);
      d.root().AddMember("gitTreeState", "clean", a);
      d.root().AddMember("buildDate", "2024-01-01T00:00:00Z", a);
      d.root().AddMember("goVersion", "go1.23.0", a);
      d.root().AddMember("compiler", "gc", a);
      d.root().AddMember("platform", "linux/amd64", a);
      return Reply{200, "application/json", d.pretty(), {}};
    }
    if (path == "/metrics") return Reply{200, "text/plain; version=0.0.4; charset=utf-8", metrics.render(), {}};
    auto resources = store.resources();
    if (segs.size() == 1 && (segs[0] == "api" || segs[0] == "apis")) {
      if (auto v = aggregated_discovery_version(accept)) {
        std::string av = "apidiscovery.k8s.io/" + *v;
        return Reply{200, "application/json;g=apidiscovery.k8s.io;v=" + *v + ";as=APIGroupDiscoveryList",
                     aggregated_discovery_json(resources, segs[0] == "api", av),
                     {}};
      }
      if (segs[0] == "api") return Reply{200, "application/json", api_versions_json(fmt::format("127.0.0.1:{}", bound_port)), {}};
      return Reply{200, "application/json", api_group_list_json(resources), {}};
    }
    if (segs.size() == 2 && segs[0] == "api" && segs[1] == "v1") {
      return Reply{200, "application/json", api_resource_list_json(resources, "", "v1"), {}};
    }
    if (segs.size() == 2 && segs[0] == "apis") {
      auto body = api_group_json(resources, segs[1]);
      if (!body.empty()) return Reply{200, "application/json", std::move(body), {}};
    }
    if (segs.size() == 3 && segs[0] == "apis") {
      auto body = api_resource_list_json(resources, segs[1], segs[2]);
      if (!body.empty()) return Reply{200, "application/json", std::move(body), {}};
    }
    if (segs.size() >= 2 && segs[0] == "openapi" && segs[1] == "v3") {
      if (segs.size() == 2) {
        std::map<std::string, std::string> hashes;
        std::vector<std::pair<std::string, std::string>> gvs;
        for (const auto& r : resources) {
          std::pair<std::string, std::string> gv{r.group, r.version};
          if (std::find(gvs.begin(), gvs.end(), gv) == gvs.end()) gvs.push_back(gv);
        }
        for (const auto& [g, v] : gvs) {
          hashes[openapi_gv_path(g, v)] = content_hash(openapi_v3_group_version(openapi_resources(resources, g, v)));
        }
        return Reply{200, "application/json", openapi_v3_root(hashes), {}};
      }
      std::string group, version;
      if (segs.size() == 4 && segs[2] == "api") {
        version = segs[3];
      } else if (segs.size() == 5 && segs[2] == "apis") {
        group = segs[3];
        version = segs[4];
      }
      auto doc = version.empty() ? std::string() : openapi_v3_group_version(openapi_resources(resources, group, version));
      if (!doc.empty()) return Reply{200, "application/json", std::move(doc), {}};
    }
    // No OpenAPI v2: kubectl 1.32 reads v3 for field validation and explain.
    return error_reply(not_found_path());
  }

  std::vector<OpenApiResource> openapi_resources(const std::vector<ResourceInfo>& resources, const std::string& group,
                                                 const std::string& version) const {
    std::vector<OpenApiResource> out;
    for (const auto& r : resources) {
      if (r.group != group || r.version != version) continue;
      OpenApiResource o{r, json::Document()};
      if (auto crd = crd_object(r)) {
        auto* versions = json::find(crd->root(), "/spec/versions");
        if (versions != nullptr && versions->IsArray()) {
          for (const auto& v : versions->GetArray()) {
            if (json::get_string(v, "/name").value_or("") != version) continue;
            if (auto* sch = json::find(v, "/schema/openAPIV3Schema")) o.schema = json::Document::copy_of(*sch);
          }
        }
      }
      out.push_back(std::move(o));
    }
    return out;
  }

  // ---- resource paths ----

  StoreResult<ResourceRoute> resolve(const std::vector<std::string>& segs) const {
    std::string group, version;
    size_t i;
    if (segs[0] == "api") {
      version = segs[1];
      i = 2;
    } else {
      group = segs[1];
      version = segs[2];
      i = 3;
    }
    ResourceRoute route;
    std::vector<std::string> rest(segs.begin() + static_cast<std::ptrdiff_t>(i), segs.end());
    if (!rest.empty() && rest[0] == "watch") {
      route.legacy_watch = true;
      rest.erase(rest.begin());
    }
    if (rest.size() >= 3 && rest[0] == "namespaces") {
      auto inner = store.find_resource(group, version, rest[2]);
      if (inner && inner->namespaced) {
        route.ns = rest[1];
        rest.erase(rest.begin(), rest.begin() + 2);
      }
    }
    if (rest.empty() || rest.size() > 3) return fail(not_found_path());
    auto info = store.find_resource(group, version, rest[0]);
    if (!info) return fail(not_found_path());
    route.info = std::move(*info);
    if (rest.size() >= 2) route.name = rest[1];
    if (rest.size() == 3) route.subresource = rest[2];
    if (!route.ns.empty() && !route.info.namespaced) return fail(not_found_path());
    if (!route.subresource.empty()) {
      bool ok = (route.subresource == "status" && route.info.has_status) ||
                (route.subresource == "scale" && route.info.has_scale) ||
                (route.subresource == "log" && route.info.group.empty() && route.info.resource == "pods");
      if (!ok) return fail(not_found_path());
    }
    return route;
  }

  // Printer columns of a custom resource, when `r` is served from a CRD.
  std::optional<std::vector<PrinterColumn>> crd_columns(const ResourceInfo& r) const {
    auto crd = crd_object(r);
    if (!crd) return std::nullopt;
    return crd_printer_columns(crd->root(), r.version);
  }

  // The CRD that defines `r`, when it is a custom resource.
  std::optional<json::Document> crd_object(const ResourceInfo& r) const {
    if (r.group.empty() || r.group.find('.') == std::string::npos) return std::nullopt;
    auto crd_info = store.find_resource("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    if (!crd_info) return std::nullopt;
    auto crd = store.get(*crd_info, "", r.resource + "." + r.group);
    if (!crd) return std::nullopt;
    return std::move(*crd);
  }

  IncludeObject include_object(const Query& q) const {
    auto v = qget(q, "includeObject");
    if (v == "None") return IncludeObject::None;
    if (v == "Object") return IncludeObject::Object;
    return IncludeObject::Metadata;
  }

  // Renders a store result (one object or a list) the way the client asked.
  Reply render(const ResourceInfo& r, const Request& req, const Query& q, unsigned status, const json::Value& v) {
    auto neg = negotiate(std::string_view(req[http::field::accept].data(), req[http::field::accept].size()));
    switch (neg.output) {
      case Output::Table:
        return Reply{status, neg.content_type,
                     make_table(r, v, crd_columns(r), include_object(q), std::chrono::system_clock::now()).dump(),
                     {}};
      case Output::Metadata:
        return Reply{status, neg.content_type, metadata_only(v).dump(), {}};
      case Output::Json:
        break;
    }
    return Reply{status, "application/json", json::dump(v), {}};
  }

  bool wants_plain_json(const Request& req) const {
    return negotiate(std::string_view(req[http::field::accept].data(), req[http::field::accept].size())).output ==
           Output::Json;
  }

  static bool dry_run(const Query& q) { return qget(q, "dryRun") == "All"; }

  static ListRequest list_request(const Query& q) {
    ListRequest l;
    l.label_selector = qget(q, "labelSelector");
    l.field_selector = qget(q, "fieldSelector");
    auto limit = qget(q, "limit");
    if (!limit.empty()) l.limit = std::strtoll(limit.c_str(), nullptr, 10);
    l.continue_token = qget(q, "continue");
    l.resource_version = qget(q, "resourceVersion");
    l.resource_version_match = qget(q, "resourceVersionMatch");
    return l;
  }

  // The request body as a JSON document; YAML bodies are converted.
  static StoreResult<json::Document> body_document(const Request& req, const MediaType& ctype) {
    const std::string& body = req.body();
    if (ctype.type == "application/yaml" || ctype.type == "application/apply-patch+yaml") {
      auto docs = json::parse_yaml(body);
      if (!docs) return fail(status_error(400, "BadRequest", "the body of the request was in an unknown format: " +
                                                                 docs.error().message));
      if (docs->empty()) return fail(status_error(400, "BadRequest", "the request body is empty"));
      return std::move(docs->front());
    }
    if (!ctype.type.empty() && ctype.type != "application/json" && ctype.type != "*/*" &&
        !ctype.type.ends_with("+json")) {
      return fail(status_error(415, "UnsupportedMediaType",
                               fmt::format("the body of the request was in an unknown format - accepted media types "
                                           "include: application/json, application/yaml")));
    }
    auto doc = json::Document::parse(body);
    if (!doc) {
      return fail(status_error(400, "BadRequest", "the object provided is unrecognized: " + doc.error().message));
    }
    return std::move(*doc);
  }

  // DeleteOptions from query parameters, overridden by a DeleteOptions body when one is sent.
  static StoreResult<DeleteRequest> delete_request(const Request& req, const Query& q) {
    DeleteRequest d;
    if (auto p = qget(q, "propagationPolicy"); !p.empty()) d.propagation_policy = p;
    if (auto g = qget(q, "gracePeriodSeconds"); !g.empty()) d.grace_period_seconds = std::strtoll(g.c_str(), nullptr, 10);
    d.dry_run = dry_run(q);
    if (trim(req.body()).empty()) return d;
    auto body = json::Document::parse(req.body());
    if (!body) return fail(status_error(400, "BadRequest", "DeleteOptions body: " + body.error().message));
    const auto& b = body->root();
    if (auto p = json::get_string(b, "/propagationPolicy")) d.propagation_policy = std::string(*p);
    if (auto g = json::get_int(b, "/gracePeriodSeconds")) d.grace_period_seconds = *g;
    if (auto u = json::get_string(b, "/preconditions/uid")) d.precondition_uid = std::string(*u);
    if (auto rv = json::get_string(b, "/preconditions/resourceVersion")) {
      d.precondition_resource_version = std::string(*rv);
    }
    if (auto o = json::get_bool(b, "/orphanDependents"); o && !d.propagation_policy) {
      d.propagation_policy = *o ? "Orphan" : "Background";
    }
    if (auto* dr = json::find(b, "/dryRun"); dr != nullptr && dr->IsArray()) {
      for (const auto& x : dr->GetArray()) {
        if (x.IsString() && std::string_view(x.GetString()) == "All") d.dry_run = true;
      }
    }
    return d;
  }

  Reply method_not_allowed() {
    return error_reply(
        status_error(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
  }

  // Admission warnings become `Warning: 299 - "<text>"` headers, which kubectl prints.
  Reply resource_call(const Request& req, const ResourceRoute& route, const Query& q, const MediaType& ctype,
                      bool apply) {
    CallNotes notes;
    Reply reply = resource_call(req, route, q, ctype, apply, notes);
    for (const auto& w : notes.warnings) {
      std::string text;
      for (char c : w) {
        if (c == '"' || c == '\\') text += '\\';
        text += c;
      }
      reply.headers.emplace_back("Warning", "299 - \"" + text + "\"");
    }
    return reply;
  }

  Reply resource_call(const Request& req, const ResourceRoute& route, const Query& q, const MediaType& ctype,
                      bool apply, CallNotes& notes) {
    const ResourceInfo& r = route.info;
    bool collection = route.name.empty();
    // Namespaced resources are listed across namespaces at the cluster path; every other verb
    // needs the namespace in the path.
    if (r.namespaced && route.ns.empty() && !(collection && req.method() == http::verb::get)) {
      return error_reply(not_found_path());
    }
    switch (req.method()) {
      case http::verb::get: {
        if (route.subresource == "log") return pod_log(route, q);
        if (collection) {
          if (!has_verb(r, "list")) return method_not_allowed();
          auto l = front.list(r, route.ns, list_request(q));
          if (!l) return error_reply(l.error());
          if (wants_plain_json(req)) return Reply{200, "application/json", std::move(*l), {}};
          auto doc = json::Document::parse(*l);
          if (!doc) return error_reply(status_error(500, "InternalError", doc.error().message));
          return render(r, req, q, 200, doc->root());
        }
        if (!has_verb(r, "get")) return method_not_allowed();
        auto obj = front.get(r, route.ns, route.name, route.subresource);
        if (!obj) return error_reply(obj.error());
        return render(r, req, q, 200, obj->root());
      }
      case http::verb::post: {
        if (!collection || !route.subresource.empty() || !has_verb(r, "create")) return method_not_allowed();
        auto body = body_document(req, ctype);
        if (!body) return error_reply(body.error());
        auto created = front.create(r, route.ns, std::move(*body), dry_run(q), notes);
        if (!created) return error_reply(created.error());
        return render(r, req, q, 201, created->root());
      }
      case http::verb::put: {
        if (collection || !has_verb(r, "update")) return method_not_allowed();
        auto body = body_document(req, ctype);
        if (!body) return error_reply(body.error());
        auto updated =
            front.update(r, route.ns, route.name, std::move(*body), route.subresource, dry_run(q), notes);
        if (!updated) return error_reply(updated.error());
        return render(r, req, q, 200, updated->root());
      }
      case http::verb::patch: {
        if (collection || !has_verb(r, "patch")) return method_not_allowed();
        PatchKind kind;
        std::string body = req.body();
        if (ctype.type == "application/merge-patch+json") {
          kind = PatchKind::Merge;
        } else if (ctype.type == "application/json-patch+json") {
          kind = PatchKind::JSON;
        } else if (ctype.type == "application/strategic-merge-patch+json") {
          kind = PatchKind::Strategic;
        } else if (apply) {
          kind = PatchKind::Apply;
          auto doc = body_document(req, ctype);
          if (!doc) return error_reply(doc.error());
          body = doc->dump();
        } else {
          return error_reply(status_error(
              415, "UnsupportedMediaType",
              fmt::format("the body of the request was in an unknown format - accepted media types include: "
                          "application/json-patch+json, application/merge-patch+json, "
                          "application/apply-patch+yaml, application/strategic-merge-patch+json")));
        }
        if (apply && qget(q, "fieldManager").empty()) {
          return error_reply(status_error(422, "Invalid",
                                          "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: "
                                          "is required for apply patch"));
        }
        auto patched = front.patch(r, route.ns, route.name, kind, body, route.subresource, qget(q, "fieldManager"),
                                   dry_run(q), notes);
        if (!patched) return error_reply(patched.error());
        return render(r, req, q, 200, patched->root());
      }
      case http::verb::delete_: {
        if (!route.subresource.empty()) return method_not_allowed();
        auto d = delete_request(req, q);
        if (!d) return error_reply(d.error());
        if (collection) {
          if (!has_verb(r, "deletecollection")) return method_not_allowed();
          auto out = front.remove_collection(r, route.ns, list_request(q), *d, notes);
          if (!out) return error_reply(out.error());
          return Reply{200, "application/json", std::move(*out), {}};
        }
        if (!has_verb(r, "delete")) return method_not_allowed();
        auto out = front.remove(r, route.ns, route.name, *d, notes);
        if (!out) return error_reply(out.error());
        return render(r, req, q, 200, out->root());
      }
      default:
        return method_not_allowed();
    }
  }

  // ---- pod logs ----

  static std::string join_lines(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines) {
      out += l;
      out += '\n';
    }
    return out;
  }

  static void apply_log_limits(std::vector<std::string>& lines, const Query& q) {
    if (auto t = qget(q, "tailLines"); !t.empty()) {
      long long n = std::max(0LL, std::strtoll(t.c_str(), nullptr, 10));
      if (static_cast<size_t>(n) < lines.size()) {
        lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
      }
    }
  }

  Reply pod_log(const ResourceRoute& route, const Query& q) {
    auto pod = store.get(route.info, route.ns, route.name);
    if (!pod) return error_reply(pod.error());
    auto [lines, next] = logs.read(log_key(route.ns, route.name), 0);
    apply_log_limits(lines, q);
    std::string body = join_lines(lines);
    if (auto lb = qget(q, "limitBytes"); !lb.empty()) {
      auto n = static_cast<size_t>(std::max(0LL, std::strtoll(lb.c_str(), nullptr, 10)));
      if (body.size() > n) body.resize(n);
    }
    return Reply{200, "text/plain", std::move(body), {}};
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

  // One watch event line, re-encoded when the client asked for Tables or metadata.
  std::string event_line(const WatchEvent& ev, const ResourceInfo& r, Output output, IncludeObject include,
                         const std::optional<std::vector<PrinterColumn>>& columns) {
    std::string line = "{\"type\":\"" + ev.type + "\",\"object\":";
    const std::string& obj = ev.object ? *ev.object : std::string("null");
    if (output == Output::Json || ev.type == "ERROR" || ev.type == "BOOKMARK") {
      line += obj;
    } else if (auto doc = json::Document::parse(obj); !doc) {
      line += obj;
    } else if (output == Output::Table) {
      line += make_table(r, doc->root(), columns, include, std::chrono::system_clock::now()).dump();
    } else {
      line += metadata_only(doc->root()).dump();
    }
    line += "}\n";
    return line;
  }

  asio::awaitable<bool> serve_watch(Conn& stream, const Request& req, const ResourceRoute& route, const Query& q,
                                    RequestKey key, const FaultDecision& fault) {
    if (!has_verb(route.info, "watch")) {
      key.code = 405;
      metrics.record(std::move(key));
      co_return co_await write_reply(stream, req, method_not_allowed());
    }
    WatchRequest wr;
    wr.label_selector = qget(q, "labelSelector");
    wr.field_selector = qget(q, "fieldSelector");
    if (!route.name.empty()) {
      std::string by_name = "metadata.name=" + route.name;
      wr.field_selector = wr.field_selector.empty() ? by_name : wr.field_selector + "," + by_name;
    }
    wr.resource_version = qget(q, "resourceVersion");
    wr.allow_bookmarks = qtrue(q, "allowWatchBookmarks");
    wr.send_initial_events = qtrue(q, "sendInitialEvents");
    if (options.faults && options.faults->expire_watch(wr.resource_version)) {
      // What the watch cache answers when the resourceVersion left its window: 200, then one
      // ERROR event carrying a 410 Expired Status.
      auto gone = status_error(410, "Expired", "too old resource version: " + wr.resource_version + " (" +
                                                   store.resource_version() + ")");
      metrics.record(key);
      // A named Reply: GCC 12 destroys a braced temporary inside a co_await expression twice.
      Reply expired;
      expired.body = "{\"type\":\"ERROR\",\"object\":" + gone.to_status().dump() + "}\n";
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
    auto neg = negotiate(std::string_view(req[http::field::accept].data(), req[http::field::accept].size()));
    auto include = include_object(q);
    std::optional<std::vector<PrinterColumn>> columns;
    if (neg.output == Output::Table) columns = crd_columns(route.info);

    std::chrono::seconds timeout = default_watch_timeout();
    if (auto t = qget(q, "timeoutSeconds"); !t.empty()) {
      timeout = std::chrono::seconds(std::max(0LL, std::strtoll(t.c_str(), nullptr, 10)));
    }
    auto deadline = std::chrono::steady_clock::now() + timeout;

    auto w = std::make_shared<Wakeup>(stream.lowest().get_executor());
    auto ex = w->timer.get_executor();
    (*watcher)->set_notify([gate = gate, w, ex] { gate->post(ex, [w] { w->wake(); }); });

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
        std::string line = event_line(ev, route.info, neg.output, include, columns);
        if (fault.malformed_watch && ev.type != "BOOKMARK" && options.faults->roll(fault.malformed_probability)) {
          options.faults->count("malformed");
          // Balanced braces, so a decoder that frames by depth still sees a whole (invalid) event.
          line = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":]}}\n";
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

  asio::awaitable<bool> serve_log(Conn& stream, const Request& req, const ResourceRoute& route, const Query& q,
                                  RequestKey key) {
    auto pod = store.get(route.info, route.ns, route.name);
    if (!pod) {
      key.code = pod.error().code;
      metrics.record(std::move(key));
      co_return co_await write_reply(stream, req, error_reply(pod.error()));
    }
    metrics.record(key);
    std::string k = log_key(route.ns, route.name);
    auto w = std::make_shared<Wakeup>(stream.lowest().get_executor());
    auto ex = w->timer.get_executor();
    logs.follow(k, w);
    // Pod changes wake the stream too, so it ends once the pod finishes or goes away.
    WatchRequest wr;
    wr.field_selector = "metadata.name=" + route.name;
    wr.resource_version = std::string(json::get_string(pod->root(), "/metadata/resourceVersion").value_or(""));
    auto pod_watch = store.watch(route.info, route.ns, wr);
    if (pod_watch) (*pod_watch)->set_notify([gate = gate, w, ex] { gate->post(ex, [w] { w->wake(); }); });

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
    apply_log_limits(lines, q);
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
      auto phase = json::get_string(current->root(), "/status/phase").value_or("");
      if (phase == "Succeeded" || phase == "Failed") {
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

ApiServer::ApiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

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
  return std::unique_ptr<ApiServer>(new ApiServer(std::move(impl)));
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

void ApiServer::append_pod_log(std::string_view ns, std::string_view pod, std::string_view line) {
  impl_->logs.append(log_key(ns, pod), line, *impl_->gate);
}

void ApiServer::clear_pod_log(std::string_view ns, std::string_view pod) { impl_->logs.clear(log_key(ns, pod)); }

const RequestMetrics& ApiServer::metrics() const { return impl_->metrics; }

void ApiServer::set_token(std::string token) {
  std::lock_guard lock(impl_->token_mu);
  impl_->options.token = std::move(token);
}

}  // namespace unitrain::localcluster
