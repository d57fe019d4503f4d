// Pods per second the whole local cluster carries from an HTTP create to Succeeded (API server,
// store, scheduler, simulated kubelet, GC and Job controller, an informer observing), its RSS at
// that size, and the informer's bytes per cached pod with and without the pod projection.
// Prints figures; asserts nothing about time.
//
//   bench_localcluster_http [pods=10000] [nodes=10] [client-threads=4]
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/kube/informer.h"
#include "core/kube/rest_client.h"
#include "localcluster/controllers/controllers.h"
#include "localcluster/local_cluster.h"

using namespace unitrain;
namespace lc = unitrain::localcluster;

namespace {

long rss_kb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// Bytes the allocator has handed out and not taken back, over every arena: less noisy than RSS
// for what one cache holds.
size_t heap_in_use() { return mallinfo2().uordblks + mallinfo2().hblkhd; }

long settled_rss_kb() {
  malloc_trim(0);
  return rss_kb();
}

const kube::GroupVersionResource kPods{"", "v1", "pods"};

}  // namespace

int main(int argc, char** argv) {
  try {
    spdlog::set_level(spdlog::level::warn);
    const int pods = argc > 1 ? std::stoi(argv[1]) : 10000;
    const int nodes = argc > 2 ? std::stoi(argv[2]) : 10;
    const int threads = argc > 3 ? std::stoi(argv[3]) : 4;
    const long rss_start = rss_kb();

    lc::LocalClusterOptions o;
    o.attach = [&](lc::Store& s) -> std::shared_ptr<void> {
      lc::controllers::ControllersOptions co;
      co.kubelet_options.restart_backoff = std::chrono::milliseconds(0);
      co.kubelet_options.nodes = nodes;
      co.kubelet_options.cpu = "100000";
      co.kubelet_options.memory = "10Ti";
      co.kubelet_options.pods = std::to_string(pods);
      return std::make_shared<lc::controllers::Controllers>(s, std::move(co));
    };
    lc::LocalCluster cluster(o);
    if (auto s = cluster.start(); !s) {
      std::cerr << s.error().message << "\n";
      return 1;
    }
    kube::RestConfig cfg;
    cfg.scheme = "http";
    cfg.host = "127.0.0.1";
    cfg.port = cluster.port();
    cfg.qps = -1;
    auto client = kube::RestClient::create(cfg);
    if (!client) return 1;
    kube::RealClock clock;

    std::atomic<int> succeeded{0};
    std::mutex mu;
    std::set<std::string> done;
    kube::InformerOptions io;
    io.resource = kPods;
    io.namespaces = {"default"};
    io.fields = kube::pod_fields();
    kube::Informer observer(**client, clock, io);
    auto count = [&](const json::Value& obj) {
      if (json::get_string(obj, "/status/phase") != "Succeeded") return;
      std::lock_guard g(mu);
      if (done.insert(std::string(json::get_string(obj, "/metadata/name").value_or(""))).second) ++succeeded;
    };
    observer.add_handlers({count, [&](const json::Value&, const json::Value& n) { count(n); }, {}, {}});
    observer.start();
    observer.wait_for_sync(std::chrono::seconds(10));

    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> creators;
    std::atomic<int> failures{0};
    for (int t = 0; t < threads; ++t) {
      creators.emplace_back([&, t] {
        auto c = kube::RestClient::create(cfg);
        if (!c) return;
        for (int i = t; i < pods; i += threads) {
          auto pod = json::Document::parse(fmt::format(
              R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"bench-{}","labels":{{"app":"bench"}},
                  "annotations":{{"sim.unitrain.io/duration":"1ms"}}}},
                  "spec":{{"restartPolicy":"Never","containers":[{{"name":"main","image":"trainer:1",
                  "env":[{{"name":"RANK","value":"{}"}}],
                  "resources":{{"requests":{{"cpu":"100m","memory":"128Mi"}}}}}}]}}}})",
              i, i));
          if (!(*c)->create(kPods, "default", pod->root())) ++failures;
        }
      });
    }
    for (auto& t : creators) t.join();
    const auto t_created = std::chrono::steady_clock::now();
    const auto deadline = t_created + std::chrono::minutes(10);
    while (succeeded.load() < pods && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const auto t_done = std::chrono::steady_clock::now();
    const long rss_end = rss_kb();
    auto secs = [](auto d) { return std::chrono::duration<double>(d).count(); };
    fmt::print("pods: {} on {} nodes, {} client threads, create failures {}\n", pods, nodes, threads, failures.load());
    fmt::print("HTTP creates: {:.2f} s ({:.0f}/s)\n", secs(t_created - t0), pods / secs(t_created - t0));
    fmt::print("create -> all Succeeded (seen by an informer): {:.2f} s ({:.0f} pods/s), succeeded {}\n",
               secs(t_done - t0), succeeded.load() / secs(t_done - t0), succeeded.load());
    fmt::print("RSS of the whole process (cluster + controllers + clients): start {} MiB, at {} pods {} MiB, "
               "after malloc_trim {} MiB\n", rss_start / 1024, pods, rss_end / 1024, settled_rss_kb() / 1024);
    observer.stop();

    // Informer bytes per cached pod: the RSS an extra informer adds once synced, whole objects
    // vs the projection (the server's own copies are there before and after).
    for (bool project : {false, true}) {
      const long before = settled_rss_kb();
      const size_t heap_before = heap_in_use();
      kube::InformerOptions po;
      po.resource = kPods;
      po.namespaces = {"default"};
      if (project) po.fields = kube::pod_fields();
      auto inf = std::make_unique<kube::Informer>(**client, clock, po);
      inf->start();
      inf->wait_for_sync(std::chrono::seconds(120));
      inf->stop();  // the cache stays; the list's transient buffers go
      const long after = settled_rss_kb();
      const size_t heap_after = heap_in_use();
      size_t json_bytes = 0;
      for (const auto& obj : inf->cache().list()) json_bytes += obj->dump().size();
      const double n = static_cast<double>(std::max<size_t>(1, inf->cache().size()));
      fmt::print("informer cache, {}: {} pods, {:.0f} heap bytes per pod, {:.0f} RSS bytes per pod, compact JSON "
                 "{:.0f} bytes per pod\n",
                 project ? "projected (project_pod)" : "whole objects", inf->cache().size(),
                 (static_cast<double>(heap_after) - static_cast<double>(heap_before)) / n,
                 double(after - before) * 1024 / n,
                 double(json_bytes) / n);
      inf.reset();
    }
    cluster.stop();
    return succeeded.load() == pods ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "bench: " << e.what() << "\n";
    return 1;
  }
}
