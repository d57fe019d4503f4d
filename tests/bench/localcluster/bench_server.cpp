// Request throughput of the local cluster over HTTP: pod creates (keep-alive connections, several
// client threads) and full LISTs of 10k pods. Prints figures; asserts nothing.
// Usage: bench_localcluster_server [creates=5000] [threads=4] [pods=10000] [lists=20]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "localcluster/local_cluster.h"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

std::string pod(const std::string& name) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         R"(","labels":{"app":"bench"}},"spec":{"containers":[{"name":"c","image":"busybox","env":[{"name":"A","value":"1"}]}]}})";
}

// One keep-alive connection issuing requests in sequence.
struct Conn {
  asio::io_context ioc;
  beast::tcp_stream s{ioc};
  beast::flat_buffer buf;
  explicit Conn(uint16_t port) { s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port)); }
  http::response<http::string_body> send(http::verb v, const std::string& target, const std::string& body = {}) {
    http::request<http::string_body> req{v, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    req.keep_alive(true);
    req.body() = body;
    req.prepare_payload();
    http::write(s, req);
    http::response_parser<http::string_body> p;
    p.body_limit(1u << 30);
    http::read(s, buf, p);
    return p.release();
  }
};

}  // namespace

int main(int argc, char** argv) {
  int creates = argc > 1 ? std::atoi(argv[1]) : 5000;
  int threads = argc > 2 ? std::atoi(argv[2]) : 4;
  int pods = argc > 3 ? std::atoi(argv[3]) : 10000;
  int lists = argc > 4 ? std::atoi(argv[4]) : 20;
  unitrain::localcluster::LocalClusterOptions o;
  unitrain::localcluster::LocalCluster cluster(o);
  if (auto s = cluster.start(); !s) {
    std::fprintf(stderr, "start: %s\n", s.error().message.c_str());
    return 1;
  }
  try {
    std::atomic<int> next{0}, errors{0};
    auto t0 = Clock::now();
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&] {
        Conn c(cluster.port());
        for (int i = next++; i < creates; i = next++) {
          auto r = c.send(http::verb::post, "/api/v1/namespaces/default/pods", pod("c" + std::to_string(i)));
          if (r.result_int() != 201) ++errors;
        }
      });
    }
    for (auto& t : ts) t.join();
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("creates over HTTP: %d in %.2f s = %.0f req/s (%d client threads, %d errors)\n", creates, secs,
                creates / secs, threads, errors.load());

    // Top up to `pods` pods directly through the store; the figure of interest is the LIST.
    auto& store = cluster.store();
    auto info = store.find_resource("", "v1", "pods");
    for (int i = creates; i < pods; ++i) {
      auto d = unitrain::json::Document::parse(pod("c" + std::to_string(i)));
      if (!store.create(*info, "default", std::move(*d))) ++errors;
    }
    Conn c(cluster.port());
    size_t bytes = 0;
    t0 = Clock::now();
    for (int i = 0; i < lists; ++i) {
      auto r = c.send(http::verb::get, "/api/v1/namespaces/default/pods");
      if (r.result_int() != 200) ++errors;
      bytes = r.body().size();
    }
    secs = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("LIST of %d pods: %d in %.2f s = %.1f req/s, %.1f ms each, %.1f MB per response\n",
                std::max(pods, creates), lists, secs, lists / secs, 1000 * secs / lists, bytes / 1e6);
    // The same LIST without HTTP, to separate the store's share from the server's.
    t0 = Clock::now();
    for (int i = 0; i < lists; ++i) {
      if (!store.list(*info, "default", {})) ++errors;
    }
    secs = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("Store::list of the same pods in-process: %.1f ms each\n", 1000 * secs / lists);
    t0 = Clock::now();
    for (int i = 0; i < lists; ++i) {
      auto r = c.send(http::verb::get, "/api/v1/namespaces/default/pods?limit=500");
      if (r.result_int() != 200) ++errors;
    }
    secs = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("LIST limit=500 page: %.1f ms each\n", 1000 * secs / lists);
    return errors.load() == 0 ? 0 : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench: %s\n", e.what());
    return 1;
  }
}
