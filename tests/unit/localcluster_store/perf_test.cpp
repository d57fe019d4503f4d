// Throughput of the Store API itself (no HTTP), reported for the local-cluster issue. The
// assertions check the work was done; the figures are printed, not judged.
#include <chrono>
#include <cstdio>
#include <ctime>

#include "helpers.h"

TEST_CASE("throughput: creates per second and lists of 10k pods per second") {
  auto s = new_store();
  const int n = 10000;
  std::vector<json::Document> bodies;
  bodies.reserve(n);
  for (int i = 0; i < n; ++i) {
    bodies.push_back(pod_doc("pod-" + std::to_string(i),
                             R"("labels":{"app":"bench","training.kubeflow.org/job-name":"j"})",
                             R"({"containers":[{"name":"pytorch","image":"pytorch:2.3","env":[{"name":"RANK","value":"0"},{"name":"WORLD_SIZE","value":"4"}],"ports":[{"containerPort":23456,"name":"pytorchjob-port"}],"resources":{"limits":{"cpu":"1","memory":"1Gi"}}}],"restartPolicy":"OnFailure"})"));
  }
  // CPU time next to wall time: the test machine is shared, so wall time alone says little.
  std::clock_t c0 = std::clock();
  auto t0 = std::chrono::steady_clock::now();
  for (auto& b : bodies) REQUIRE(s->create(pods(), "default", std::move(b)));
  auto t1 = std::chrono::steady_clock::now();
  std::clock_t c1 = std::clock();
  double create_s = std::chrono::duration<double>(t1 - t0).count();

  const int lists = 20;
  size_t bytes = 0;
  for (int i = 0; i < lists; ++i) {
    auto l = s->list(pods(), "default", {});
    REQUIRE(l);
    bytes = l->size();
  }
  auto t2 = std::chrono::steady_clock::now();
  std::clock_t c2 = std::clock();
  double list_s = std::chrono::duration<double>(t2 - t1).count();

  lc::ListRequest sel;
  sel.label_selector = "app=bench";
  auto l = s->list(pods(), "", sel);
  REQUIRE(l);
  auto t3 = std::chrono::steady_clock::now();
  CHECK(item_names(*l).size() == static_cast<size_t>(n));

  double create_cpu = double(c1 - c0) / CLOCKS_PER_SEC;
  double list_cpu = double(c2 - c1) / CLOCKS_PER_SEC;
  std::printf("lcstore perf: %d creates: wall %.3f s = %.0f creates/s, cpu %.3f s = %.0f creates/s per core\n"
              "lcstore perf: list of %d pods (%zu bytes): wall %.1f lists/s, cpu %.1f lists/s per core; "
              "with label selector (incl. parsing the result): wall %.3f s\n",
              n, create_s, n / create_s, create_cpu, n / create_cpu, n, bytes, lists / list_s, lists / list_cpu,
              std::chrono::duration<double>(t3 - t2).count());
}
