// CPU time and heap allocations per JSON pointer read, on a pod as the operator caches it and
// with the pointers its reconciles read most: json::find (each token a view of the pointer,
// decoded only when it has an escape) against the walk it replaced (json::split_pointer into a
// vector of strings, then one step per string). Prints figures, asserts nothing.
//
//   bench_json_pointer [rounds=200000]
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/json/json.h"
#include "tests/support/counting_malloc.h"

using namespace unitrain;

namespace {

constexpr const char* kPod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"job-7-worker-1","namespace":"default",
"uid":"0b5c9a3e-8f1d-4d8e-9f8a-000000000029","resourceVersion":"1029","creationTimestamp":"2026-11-30T10:00:00Z",
"labels":{"training.kubeflow.org/job-name":"job-7","training.kubeflow.org/operator-name":"pytorchjob-controller",
"training.kubeflow.org/replica-index":"1","training.kubeflow.org/replica-type":"worker"},
"ownerReferences":[{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","name":"job-7","uid":"1c2d3e4f-0000-4000-8000-000000000007",
"controller":true,"blockOwnerDeletion":true}]},
"spec":{"containers":[{"name":"pytorch","image":"docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"}],"nodeName":"node-3"},
"status":{"phase":"Running","podIP":"10.244.1.17","startTime":"2026-11-30T10:00:01Z",
"containerStatuses":[{"name":"pytorch","ready":true,"restartCount":0,"state":{"running":{"startedAt":"2026-11-30T10:00:03Z"}}}]}})";

constexpr const char* kPointers[] = {
    "/metadata/name",
    "/metadata/namespace",
    "/metadata/resourceVersion",
    "/metadata/labels/training.kubeflow.org~1replica-type",
    "/metadata/labels/training.kubeflow.org~1replica-index",
    "/metadata/ownerReferences/0/uid",
    "/status/phase",
    "/status/containerStatuses/0/state/running/startedAt",
};

// The walk json::find did before: the pointer split into strings, then one step per string.
const json::Value* find_by_split(const json::Value& root, std::string_view pointer) {
  auto tokens = json::split_pointer(pointer);
  if (!tokens) return nullptr;
  const json::Value* cur = &root;
  for (const std::string& t : *tokens) {
    if (cur->IsObject()) {
      auto it = cur->FindMember(json::Value(rapidjson::StringRef(t.data(), t.size())));
      if (it == cur->MemberEnd()) return nullptr;
      cur = &it->value;
    } else if (cur->IsArray()) {
      rapidjson::SizeType idx = 0;
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), idx);
      if (ec != std::errc() || p != t.data() + t.size() || idx >= cur->Size()) return nullptr;
      cur = &(*cur)[idx];
    } else {
      return nullptr;
    }
  }
  return cur;
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

template <typename Find>
void run(const char* label, const json::Value& root, long rounds, Find find) {
  size_t found = 0;
  const uint64_t mallocs = bench::malloc_calls.load();
  const double t0 = cpu_seconds();
  for (long i = 0; i < rounds; ++i) {
    for (const char* p : kPointers) found += find(root, p) != nullptr;
  }
  const double took = cpu_seconds() - t0;
  const double reads = static_cast<double>(rounds) * std::size(kPointers);
  fmt::print("{:<28} {:>8.1f} ns/read {:>6.2f} mallocs/read  ({} of {} found)\n", label, took * 1e9 / reads,
             static_cast<double>(bench::malloc_calls.load() - mallocs) / reads, found, static_cast<size_t>(reads));
}

}  // namespace

int main(int argc, char** argv) {
  const long rounds = argc > 1 ? std::atol(argv[1]) : 200000;
  auto doc = json::Document::parse(kPod);
  if (!doc) {
    fmt::print(stderr, "{}\n", doc.error().message);
    return 1;
  }
  fmt::print("{} pointers x {} rounds on a cached pod\n", std::size(kPointers), rounds);
  for (int pass = 0; pass < 2; ++pass) {
    run("split into strings (before)", doc->root(), rounds, find_by_split);
    run("json::find (after)", doc->root(), rounds,
        [](const json::Value& r, std::string_view p) { return json::find(r, p); });
  }
  return 0;
}
