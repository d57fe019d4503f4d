// What decoding one watch event costs the operator, the way it did before field masks and the way
// it does now: CPU time and heap allocations per event, and the bytes the cached copy keeps.
//   before: parse the whole frame into a document, project the pod out of it, copy to exact size
//   after:  parse the frame through the pod mask (only the kept fields are built), copy to exact size
// Both run the same events through the watch decoder's framing. Then what reading a cached pod
// costs a reconcile (Indexer::get): decoded from the store's coded text, or the document the
// store keeps decoded for its readers. Prints figures, asserts nothing.
//
//   bench_decode [events=20000]
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/kube/informer.h"
#include "core/kube/watch_decoder.h"
#include "tests/support/counting_malloc.h"

using namespace unitrain;

namespace {

// A worker pod as the local cluster serves it once running (about 2.3 KB of JSON), with the
// annotations, env and status a training pod typically has.
std::string pod_event(int i) {
  return fmt::format(
      R"({{"type":"MODIFIED","object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"job-{0}-worker-{1}","namespace":"default",)"
      R"("uid":"0b5c9a3e-8f1d-4d8e-9f8a-{2:012}","resourceVersion":"{3}","creationTimestamp":"2026-11-30T10:00:00Z",)"
      R"("labels":{{"training.kubeflow.org/job-name":"job-{0}","training.kubeflow.org/operator-name":"pytorchjob-controller",)"
      R"("training.kubeflow.org/replica-index":"{1}","training.kubeflow.org/replica-type":"worker"}},)"
      R"("annotations":{{"sim.unitrain.io/duration":"5s"}},"ownerReferences":[{{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob",)"
      R"("name":"job-{0}","uid":"1c2d3e4f-0000-4000-8000-{0:012}","controller":true,"blockOwnerDeletion":true}}]}},)"
      R"("spec":{{"initContainers":[{{"name":"init-pytorch","image":"alpine:3.10","command":["sh","-c","err=1;for i in $(seq 100); do if nslookup job-{0}-master-0; then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err"]}}],)"
      R"("containers":[{{"name":"pytorch","image":"docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",)"
      R"("command":["python3","/opt/pytorch-mnist/mnist.py","--epochs=1"],"env":[{{"name":"MASTER_PORT","value":"23456"}},)"
      R"({{"name":"MASTER_ADDR","value":"job-{0}-master-0"}},{{"name":"WORLD_SIZE","value":"4"}},{{"name":"RANK","value":"{1}"}},)"
      R"({{"name":"PYTHONUNBUFFERED","value":"1"}}],"ports":[{{"name":"pytorchjob-port","containerPort":23456,"protocol":"TCP"}}],)"
      R"("resources":{{"limits":{{"cpu":"1","memory":"2Gi"}}}}}}],"restartPolicy":"OnFailure","schedulerName":"default-scheduler",)"
      R"("nodeName":"node-3"}},"status":{{"phase":"Running","podIP":"10.244.1.17","startTime":"2026-11-30T10:00:01Z",)"
      R"("conditions":[{{"type":"Initialized","status":"True","lastTransitionTime":"2026-11-30T10:00:02Z"}},)"
      R"({{"type":"Ready","status":"True","lastTransitionTime":"2026-11-30T10:00:03Z"}},)"
      R"({{"type":"ContainersReady","status":"True","lastTransitionTime":"2026-11-30T10:00:03Z"}},)"
      R"({{"type":"PodScheduled","status":"True","lastTransitionTime":"2026-11-30T10:00:00Z"}}],)"
      R"("initContainerStatuses":[{{"name":"init-pytorch","ready":true,"restartCount":0,"state":{{"terminated":{{"exitCode":0,"reason":"Completed",)"
      R"("startedAt":"2026-11-30T10:00:01Z","finishedAt":"2026-11-30T10:00:02Z"}}}}}}],)"
      R"("containerStatuses":[{{"name":"pytorch","ready":true,"restartCount":0,"image":"docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",)"
      R"("state":{{"running":{{"startedAt":"2026-11-30T10:00:03Z"}}}}}}]}}}}}})",
      i / 4, i % 4, i, 1000 + i);
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

struct Figures {
  double us_per_event = 0, mallocs_per_event = 0, cached_bytes = 0;
};

template <class Decode>
Figures run(const std::string& stream, int events, Decode decode) {
  Figures f;
  size_t cached = 0;
  const uint64_t mallocs = bench::malloc_calls.load();
  const double cpu = cpu_seconds();
  std::vector<json::Document> keep;
  keep.reserve(events);
  int n = 0;
  for (size_t off = 0; off < stream.size(); off += 16384) {
    const std::string_view chunk = std::string_view(stream).substr(off, 16384);
    n += decode(chunk, keep);
  }
  f.us_per_event = (cpu_seconds() - cpu) * 1e6 / n;
  f.mallocs_per_event = static_cast<double>(bench::malloc_calls.load() - mallocs) / n;
  for (const auto& d : keep) cached += d.allocated_bytes();
  f.cached_bytes = static_cast<double>(cached) / n;
  return f;
}

// The pods of the stream, decoded through the cache's mask (what the informer stores).
std::vector<json::Document> keep_for_reads(const std::string& stream, int events) {
  std::vector<json::Document> out;
  out.reserve(static_cast<size_t>(events));
  kube::WatchDecoder d(kube::pod_fields());
  d.feed(stream);
  while (auto ev = d.next()) {
    if (!*ev) break;
    out.push_back(std::move((**ev).object));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int events = argc > 1 ? std::atoi(argv[1]) : 20000;
  std::string stream;
  for (int i = 0; i < events; ++i) stream += pod_event(i) + "\n";
  fmt::print("{} MODIFIED events of a running worker pod, {:.0f} bytes of JSON each\n", events,
             static_cast<double>(stream.size()) / events);

  // Before: whole frames, then the projection out of the document.
  kube::WatchDecoder whole;
  auto before = run(stream, events, [&](std::string_view chunk, std::vector<json::Document>& keep) {
    int n = 0;
    whole.feed(chunk);
    while (auto ev = whole.next()) {
      if (!*ev) break;
      keep.push_back(json::Document::copy_of(kube::project_pod((**ev).object.root()).root()));
      ++n;
    }
    return n;
  });
  // After: frames decoded through the pod mask.
  kube::WatchDecoder masked(kube::pod_fields());
  auto after = run(stream, events, [&](std::string_view chunk, std::vector<json::Document>& keep) {
    int n = 0;
    masked.feed(chunk);
    while (auto ev = masked.next()) {
      if (!*ev) break;
      keep.push_back(json::Document::copy_of((**ev).object.root()));
      ++n;
    }
    return n;
  });
  fmt::print("| decode | CPU µs/event | allocations/event | cached bytes/pod (document pool) |\n|---|---|---|---|\n");
  fmt::print("| whole document, then projected | {:.2f} | {:.1f} | {:.0f} |\n", before.us_per_event, before.mallocs_per_event,
             before.cached_bytes);
  fmt::print("| through the field mask | {:.2f} | {:.1f} | {:.0f} |\n", after.us_per_event, after.mallocs_per_event,
             after.cached_bytes);

  // The informer's path per event: decoded through the mask, then stored (Indexer::upsert codes
  // the store's text; the previous version is the memo's document). The store learns its codes
  // from the first 200 events, before the clock starts.
  kube::Indexer store({}, nullptr, kube::kDecodedMemoBytes);
  kube::WatchDecoder learn(kube::pod_fields());
  for (int i = 0; i < 200; ++i) {
    learn.feed(pod_event(1000000 + i) + "\n");
    auto ev = learn.next();
    if (ev && *ev) {
      auto doc = std::make_shared<const json::Document>(std::move((**ev).object));
      store.upsert(kube::object_key(doc->root()), doc);
    }
  }
  kube::WatchDecoder informed(kube::pod_fields());
  informed.write_text_with(store.text_codes());  // as the informer's watch streams do
  auto stored = run(stream, events, [&](std::string_view chunk, std::vector<json::Document>&) {
    int n = 0;
    informed.feed(chunk);
    while (auto ev = informed.next()) {
      if (!*ev) break;
      auto doc = std::make_shared<const json::Document>(std::move((**ev).object));
      const std::string key = kube::object_key(doc->root());
      store.upsert(key, std::move(doc), {}, std::move((**ev).text));
      ++n;
    }
    return n;
  });
  fmt::print("| through the field mask and stored (Indexer::upsert, coded text) | {:.2f} | {:.1f} | {:.0f} text |\n",
             stored.us_per_event, stored.mallocs_per_event, static_cast<double>(store.text_bytes()) / store.size());

  // Reads of cached pods: every read decoded (no memo), then reads the memo answers.
  kube::Indexer coded({}, nullptr, 0);
  kube::Indexer memoized({}, nullptr, kube::kDecodedMemoBytes);
  std::vector<std::string> keys;
  for (const auto& d : keep_for_reads(stream, events)) {
    keys.push_back(kube::object_key(d.root()));
    coded.upsert(keys.back(), d.root());
    memoized.upsert(keys.back(), std::make_shared<const json::Document>(json::Document::copy_of(d.root())));
  }
  auto reads = [&](const kube::Indexer& store, size_t distinct) {
    const uint64_t mallocs = bench::malloc_calls.load();
    const double cpu = cpu_seconds();
    size_t n = 0;
    for (int round = 0; round < 4; ++round)
      for (size_t i = 0; i < keys.size(); ++i, ++n) (void)store.get(keys[(keys.size() - 1 - i % distinct)]);
    return std::pair{(cpu_seconds() - cpu) * 1e6 / static_cast<double>(n),
                     static_cast<double>(bench::malloc_calls.load() - mallocs) / static_cast<double>(n)};
  };
  const auto [decode_us, decode_mallocs] = reads(coded, keys.size());
  const auto [memo_us, memo_mallocs] = reads(memoized, 8);
  // What a kept document holds: its pool (a decoded one sizes its first chunk to the text).
  const double decoded_pool = static_cast<double>(coded.get(keys.front())->allocated_bytes());
  const double event_pool = static_cast<double>(memoized.get(keys.front())->allocated_bytes());
  fmt::print("\n| cached pod read (Indexer::get) | CPU µs/read | allocations/read | document pool bytes |\n|---|---|---|---|\n");
  fmt::print("| decoded from the coded text | {:.2f} | {:.1f} | {:.0f} |\n", decode_us, decode_mallocs, decoded_pool);
  fmt::print("| kept decoded (within {} KiB of the last read or written) | {:.2f} | {:.1f} | {:.0f} |\n",
             kube::kDecodedMemoBytes / 1024, memo_us, memo_mallocs, event_pool);
  return 0;
}
