// How many pods per second the local cluster's controllers (scheduler + simulated kubelet, with
// the garbage collector and Job controller watching too) carry from create to Succeeded, and the
// process memory at that size. Not a timed test: it prints figures.
//
//   bench_localcluster_controllers [pods=10000] [nodes=10] [duration=1ms] [store-only]
// "store-only" creates the pods with no controller running: the store's share of the memory.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <malloc.h>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>

#include "localcluster/controllers/controller_base.h"
#include "localcluster/controllers/controllers.h"
#include "localcluster/memory_store.h"

using namespace unitrain;
using namespace unitrain::localcluster;
using namespace unitrain::localcluster::controllers;

namespace {

long status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::string(field).size()));
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    int pods = argc > 1 ? std::stoi(argv[1]) : 10000;
    int nodes = argc > 2 ? std::stoi(argv[2]) : 10;
    std::string duration = argc > 3 ? argv[3] : "1ms";
    bool store_only = argc > 4 && std::string(argv[4]) == "store-only";

    auto made = make_memory_store({});
    if (!made) {
      std::cerr << "store: " << made.error().message << "\n";
      return 1;
    }
    Store& store = **made;
    ResourceInfo pods_r = *store.find_resource("", "v1", "pods");
    long rss_start = status_kb("VmRSS:");

    ControllersOptions o;
    o.kubelet_options.restart_backoff = std::chrono::milliseconds(0);
    o.kubelet_options.nodes = nodes;
    o.kubelet_options.cpu = "100000";
    o.kubelet_options.memory = "10Ti";
    o.kubelet_options.pods = std::to_string(pods);
    std::optional<Controllers> controllers;
    if (!store_only) controllers.emplace(store, std::move(o));

    // Completion is observed through a watch of our own, like any client would.
    std::atomic<int> succeeded{0};
    std::unordered_set<std::string> done;
    EventLoop observer(store, "bench-observer");
    observer.watch(pods_r, "", [&](EventType t, const json::Value& obj) {
      if (t == EventType::Deleted || str_at(obj, "/status/phase") != "Succeeded") return;
      if (done.insert(std::string(str_at(obj, "/metadata/uid"))).second) succeeded.fetch_add(1);
    });
    observer.start();

    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < pods; ++i) {
      auto pod = json::Document::parse(fmt::format(
          R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"bench-{}","annotations":{{"sim.unitrain.io/duration":"{}"}}}},
              "spec":{{"restartPolicy":"Never","containers":[{{"name":"main","image":"trainer:1",
              "resources":{{"requests":{{"cpu":"100m","memory":"128Mi"}}}}}}]}}}})",
          i, duration));
      auto created = store.create(pods_r, "default", std::move(*pod));
      if (!created) {
        std::cerr << "create: " << created.error().message << "\n";
        return 1;
      }
    }
    auto t_created = std::chrono::steady_clock::now();
    if (store_only) {
      fmt::print("store only: {} pods created in {:.2f} s, RSS {} MiB ({:.1f} KiB per pod)\n", pods,
                 std::chrono::duration<double>(t_created - t0).count(), status_kb("VmRSS:") / 1024,
                 double(status_kb("VmRSS:") - rss_start) / pods);
      observer.stop();
      return 0;
    }
    auto deadline = t_created + std::chrono::minutes(10);
    while (succeeded.load() < pods && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto t_done = std::chrono::steady_clock::now();
    long rss_end = status_kb("VmRSS:");
    long hwm = status_kb("VmHWM:");

    auto secs = [](auto d) { return std::chrono::duration<double>(d).count(); };
    fmt::print("pods: {} on {} nodes, sim duration {}\n", pods, nodes, duration);
    fmt::print("succeeded: {}\n", succeeded.load());
    fmt::print("create phase: {:.2f} s ({:.0f} creates/s)\n", secs(t_created - t0), pods / secs(t_created - t0));
    fmt::print("create -> all Succeeded: {:.2f} s ({:.0f} pods/s)\n", secs(t_done - t0), succeeded.load() / secs(t_done - t0));
    fmt::print("RSS: start {} MiB, end {} MiB, peak {} MiB ({:.1f} KiB per pod over start)\n", rss_start / 1024,
               rss_end / 1024, hwm / 1024, double(rss_end - rss_start) / pods);
    // How much of that is memory the allocator keeps after the burst rather than live data.
    malloc_trim(0);
    fmt::print("RSS after malloc_trim: {} MiB\n", status_kb("VmRSS:") / 1024);
    observer.stop();
    return succeeded.load() == pods ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "bench: " << e.what() << "\n";
    return 1;
  }
}
