// How many heap allocations the operator's hot paths make, so that a change which brings back
// avoidable ones fails here rather than only in a profile (docs/performance.md, "Allocations per
// watch event"). Each bound is the count measured when the case was written plus a margin for
// harmless drift (a standard library that sizes a buffer differently): a regression by one more
// copy of the event, its document or its parse stacks exceeds it.
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/api/kubeflow.h"
#include "core/json/json.h"
#include "core/kube/informer.h"
#include "core/kube/watch_decoder.h"
#include "tests/support/counting_malloc.h"
#include "tests/support/skip.h"
#include "tests/unit/kube_cache/test_objects.h"

using namespace unitrain;

namespace {

// Allocation calls `run` makes.
template <class F>
uint64_t allocations_of(F&& run) {
  const uint64_t before = bench::allocation_calls();
  run();
  return bench::allocation_calls() - before;
}

std::string pod_frame(int i, int resource_version) {
  json::Document pod = kube::testing::realistic_pod("default", fmt::format("job-{}-worker-0", i), fmt::format("job-{}", i));
  REQUIRE(json::set_string(pod, "/metadata/resourceVersion", std::to_string(resource_version)));
  REQUIRE(json::set_string(pod, "/metadata/uid", fmt::format("0b5c9a3e-8f1d-4d8e-9f8a-{:012}", i)));
  return fmt::format(R"({{"type":"MODIFIED","object":{}}})", pod.dump()) + "\n";
}

}  // namespace

TEST_CASE("allocations: a moved document hands over its storage and leaves a null one, allocating nothing") {
  if (!bench::kCountingAllocations) return testing::skip("allocation counts need glibc's malloc (a sanitizer replaces it)");
  json::Document a = json::Document::parse(R"({"a":[1,2,{"b":"a string longer than the short-string buffer"}]})").value();
  const std::string text = a.dump();
  json::Document b;
  json::Document c;
  const uint64_t moves = allocations_of([&] {
    json::Document moved(std::move(a));
    b = std::move(moved);
    json::Document empty;  // default-constructed: no storage either
    c = std::move(empty);
  });
  CHECK(moves == 0);
  CHECK(b.dump() == text);
  // The moved-from and default documents are null documents, fully usable.
  CHECK(a.root().IsNull());
  CHECK(c.root().IsNull());
  CHECK(a.allocated_bytes() == 0);
  CHECK(a.dump() == "null");
  CHECK(a == json::Document());
  CHECK(json::Document(a).root().IsNull());
  REQUIRE(json::set_string(a = json::Document::object(), "/x", "y"));
  CHECK(a.dump() == R"({"x":"y"})");
  a.root().SetArray();  // writing through root() of a document without storage gives it one
  json::Document d;
  d.root().SetObject();
  d.root().AddMember("k", json::Value(1), d.alloc());
  CHECK(d.dump() == R"({"k":1})");
}

// The informer's path for a pod update, from the bytes of the frame to the cache: the watch
// decoder parses the frame through the pods' mask and writes the store's coded text in the same
// pass, the informer keys it and the store keeps the event's document (its previous version is
// the document the store kept from the previous event: nothing to decode).
TEST_CASE("allocations: decoding and storing a pod update allocates at most 16 times") {
  if (!bench::kCountingAllocations) return testing::skip("allocation counts need glibc's malloc (a sanitizer replaces it)");
  kube::Indexer store({{kube::kNamespaceIndex, kube::index_by_namespace}, {kube::kControllerUidIndex, kube::index_by_controller_uid}},
                      kube::builtin_index_fields());
  const auto previous_fields = json::FieldMask::parse("metadata{namespace,resourceVersion,ownerReferences},status{phase}").value();
  kube::WatchDecoder decoder(kube::pod_fields());
  decoder.write_text_with(store.text_codes());
  // No assertion inside: what Catch2 allocates for one would be counted.
  bool decoded = true;
  auto decode_and_store = [&](const std::string& frame) {
    decoder.feed(frame);
    auto ev = decoder.next();
    if (!ev || !ev->has_value()) {
      decoded = false;
      return kube::Indexer::Previous{};
    }
    kube::WatchEvent& event = **ev;
    const std::string key = kube::object_key(event.object.root());
    auto doc = std::make_shared<const json::Document>(std::move(event.object));
    return store.upsert(key, std::move(doc), {true, &previous_fields}, std::move(event.text));
  };
  // The store learns its string codes from its first objects; the decoder's buffer and the
  // stream's text scratch reach their size.
  for (int i = 0; i < 250; ++i) decode_and_store(pod_frame(i, 1000 + i));
  const std::string update = pod_frame(249, 5000);
  uint64_t count = 0;
  kube::Indexer::Previous previous;
  count = allocations_of([&] { previous = decode_and_store(update); });
  REQUIRE(decoded);
  REQUIRE(previous.existed);
  REQUIRE(previous.object);
  CHECK(json::get_string(previous.object->root(), "/metadata/resourceVersion") == "1249");
  CHECK(json::get_string(store.get("default/job-249-worker-0")->root(), "/metadata/resourceVersion") == "5000");
  INFO("allocations for one pod update: " << count);
  // Measured 12 (see docs/performance.md; 41 before the parse stacks, the document moves and
  // the index values were reworked): the frame's document storage and pool chunks, the
  // mask filter's stacks, the coded text, the key, the shared document, the index values.
  CHECK(count <= 16);
}

TEST_CASE("allocations: decoding a valid job status builds no field paths") {
  if (!bench::kCountingAllocations) return testing::skip("allocation counts need glibc's malloc (a sanitizer replaces it)");
  const json::Document status = json::Document::parse(R"({
    "conditions": [
      {"type": "Created", "status": "True", "reason": "PyTorchJobCreated", "message": "PyTorchJob default/a-job-with-a-long-name is created.",
       "lastUpdateTime": "2026-12-02T06:00:00Z", "lastTransitionTime": "2026-12-02T06:00:00Z"},
      {"type": "Running", "status": "True", "reason": "PyTorchJobRunning", "message": "PyTorchJob default/a-job-with-a-long-name is running.",
       "lastUpdateTime": "2026-12-02T06:00:05Z", "lastTransitionTime": "2026-12-02T06:00:05Z"}],
    "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 3}},
    "startTime": "2026-12-02T06:00:00Z", "lastReconcileTime": "2026-12-02T06:00:05Z"})").value();
  uint64_t count = 0;
  std::optional<Result<api::JobStatus, api::FieldErrorList>> decoded;
  count = allocations_of([&] { decoded.emplace(api::JobStatus::from_json(status.root())); });
  REQUIRE(*decoded);
  CHECK((**decoded).conditions.size() == 2);
  CHECK((**decoded).replica_statuses.size() == 2);
  INFO("allocations for one status: " << count);
  // What the status itself holds: two conditions (the vector, four strings each longer than the
  // short-string buffer), two replica statuses (map nodes and keys). Before the decoder built
  // its paths only for errors it also made about 40 path strings.
  CHECK(count <= 20);
}
