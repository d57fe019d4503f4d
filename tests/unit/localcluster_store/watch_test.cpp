#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "helpers.h"

using lc::DeleteRequest;
using lc::PatchKind;
using lc::WatchRequest;

TEST_CASE("watch from resourceVersion 0 starts with ADDED for existing objects, then live events") {
  auto s = new_store();
  create_ok(*s, pods(), "default", pod_doc("a"));
  create_ok(*s, pods(), "kube-system", pod_doc("other"));
  WatchRequest req;
  req.resource_version = "0";
  auto w = s->watch(pods(), "default", req);
  REQUIRE(w);
  std::atomic<int> notified{0};
  (*w)->set_notify([&] { ++notified; });
  CHECK(notified == 1);  // the initial events were already queued
  auto first = drain(**w);
  CHECK(first.types == std::vector<std::string>{"ADDED"});
  CHECK(str(first.objects[0], "/metadata/name") == "a");

  create_ok(*s, pods(), "default", pod_doc("b"));
  REQUIRE(s->patch(pods(), "default", "b", PatchKind::Merge, R"({"metadata":{"labels":{"x":"y"}}})"));
  REQUIRE(s->remove(pods(), "default", "b", DeleteRequest{}));
  create_ok(*s, pods(), "kube-system", pod_doc("ignored"));
  CHECK(notified >= 2);
  auto live = drain(**w);
  CHECK(live.types == std::vector<std::string>{"ADDED", "MODIFIED", "DELETED"});
  CHECK_FALSE(live.closed);
  // The DELETED event carries the resourceVersion of the deletion.
  CHECK(std::stoull(str(live.objects[2], "/metadata/resourceVersion")) >
        std::stoull(str(live.objects[1], "/metadata/resourceVersion")));
  (*w)->stop();
  bool closed = false;
  (*w)->drain(closed);
  CHECK(closed);
}

TEST_CASE("watch resumes from a resourceVersion and gets 410 Expired when it left the window") {
  lc::StoreOptions o;
  o.watch_window = 3;
  auto s = new_store(o);
  auto a = create_ok(*s, pods(), "default", pod_doc("a"));
  std::string rv_a = str(a, "/metadata/resourceVersion");
  create_ok(*s, pods(), "default", pod_doc("b"));
  create_ok(*s, pods(), "default", pod_doc("c"));
  WatchRequest req;
  req.resource_version = rv_a;
  auto w = s->watch(pods(), "", req);
  REQUIRE(w);
  auto d = drain(**w);
  REQUIRE(d.types == std::vector<std::string>{"ADDED", "ADDED"});
  CHECK(str(d.objects[0], "/metadata/name") == "b");
  CHECK(str(d.objects[1], "/metadata/name") == "c");

  for (const char* n : {"d", "e", "f"}) create_ok(*s, pods(), "default", pod_doc(n));
  auto old = s->watch(pods(), "", req);
  REQUIRE(old);
  auto g = drain(**old);
  REQUIRE(g.types == std::vector<std::string>{"ERROR"});
  CHECK(g.closed);
  CHECK(json::get_int(g.objects[0].root(), "/code") == 410);
  CHECK(str(g.objects[0], "/reason") == "Expired");
  CHECK(str(g.objects[0], "/message").starts_with("too old resource version: " + rv_a + " ("));

  WatchRequest bad;
  bad.resource_version = "abc";
  CHECK(s->watch(pods(), "", bad).error().code == 400);
}

TEST_CASE("watch with selectors sends objects leaving the selection as DELETED and entering as ADDED") {
  auto s = new_store();
  create_ok(*s, pods(), "default", pod_doc("p", R"("labels":{"app":"web"})"));
  WatchRequest req;
  req.resource_version = s->resource_version();
  req.label_selector = "app=web";
  auto w = s->watch(pods(), "default", req);
  REQUIRE(w);
  WatchRequest freq;
  freq.resource_version = s->resource_version();
  freq.field_selector = "status.phase=Running";
  auto fw = s->watch(pods(), "", freq);
  REQUIRE(fw);

  REQUIRE(s->patch(pods(), "default", "p", PatchKind::Merge, R"({"metadata":{"labels":{"app":"db"}}})"));
  REQUIRE(s->patch(pods(), "default", "p", PatchKind::Merge, R"({"metadata":{"labels":{"extra":"1"}}})"));
  REQUIRE(s->patch(pods(), "default", "p", PatchKind::Merge, R"({"metadata":{"labels":{"app":"web"}}})"));
  REQUIRE(s->patch(pods(), "default", "p", PatchKind::Merge, R"({"metadata":{"labels":{"extra":"2"}}})"));
  CHECK(drain(**w).types == std::vector<std::string>{"DELETED", "ADDED", "MODIFIED"});

  REQUIRE(s->patch(pods(), "default", "p", PatchKind::Merge, R"({"status":{"phase":"Running"}})", "status"));
  REQUIRE(s->patch(pods(), "default", "p", PatchKind::Merge, R"({"status":{"phase":"Succeeded"}})", "status"));
  CHECK(drain(**fw).types == std::vector<std::string>{"ADDED", "DELETED"});
}

TEST_CASE("bookmarks on request and at the end of initial events") {
  auto s = new_store();
  create_ok(*s, pods(), "default", pod_doc("a"));
  WatchRequest req;
  req.resource_version = "0";
  req.allow_bookmarks = true;
  req.send_initial_events = true;
  auto w = s->watch(pods(), "", req);
  REQUIRE(w);
  auto d = drain(**w);
  REQUIRE(d.types == std::vector<std::string>{"ADDED", "BOOKMARK"});
  CHECK(str(d.objects[1], "/metadata/annotations/k8s.io~1initial-events-end") == "true");
  create_ok(*s, builtin("", "configmaps"), "default", doc(R"({"metadata":{"name":"unrelated"}})"));
  (*w)->request_bookmark();
  auto b = drain(**w);
  REQUIRE(b.types == std::vector<std::string>{"BOOKMARK"});
  CHECK(str(b.objects[0], "/metadata/resourceVersion") == s->resource_version());
  CHECK(str(b.objects[0], "/kind") == "Pod");

  WatchRequest plain;
  plain.resource_version = s->resource_version();
  auto nw = s->watch(pods(), "", plain);
  REQUIRE(nw);
  (*nw)->request_bookmark();
  CHECK(drain(**nw).types.empty());
}

TEST_CASE("a watcher that falls too far behind is closed after its queued events") {
  lc::StoreOptions o;
  o.watcher_queue_limit = 3;
  auto s = new_store(o);
  WatchRequest req;
  req.resource_version = s->resource_version();
  auto w = s->watch(pods(), "", req);
  REQUIRE(w);
  for (int i = 0; i < 6; ++i) create_ok(*s, pods(), "default", pod_doc("p" + std::to_string(i)));
  auto d = drain(**w);
  CHECK(d.types.size() == 3);
  CHECK(d.closed);
}

TEST_CASE("concurrent writers and a notified watcher see every event exactly once") {
  auto s = new_store();
  WatchRequest req;
  req.resource_version = s->resource_version();
  auto w = s->watch(pods(), "", req);
  REQUIRE(w);
  std::mutex mu;
  std::condition_variable cv;
  int wakeups = 0;
  (*w)->set_notify([&] {
    std::lock_guard l(mu);
    ++wakeups;
    cv.notify_one();
  });
  const int threads = 4, per_thread = 150;
  std::vector<std::thread> writers;
  for (int t = 0; t < threads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        auto r = s->create(pods(), "default", pod_doc("t" + std::to_string(t) + "-" + std::to_string(i)));
        if (!r) FAIL_CHECK(r.error().message);
      }
    });
  }
  std::set<std::string> seen;
  uint64_t last_rv = 0;
  bool ordered = true;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (seen.size() < static_cast<size_t>(threads * per_thread) && std::chrono::steady_clock::now() < deadline) {
    {
      std::unique_lock l(mu);
      cv.wait_for(l, std::chrono::milliseconds(50));
    }
    bool closed = false;
    for (auto& e : (*w)->drain(closed)) {
      auto d = doc(*e.object);
      seen.insert(str(d, "/metadata/name"));
      uint64_t rv = std::stoull(str(d, "/metadata/resourceVersion"));
      ordered = ordered && rv > last_rv;
      last_rv = rv;
    }
    REQUIRE_FALSE(closed);
  }
  for (auto& t : writers) t.join();
  CHECK(seen.size() == static_cast<size_t>(threads * per_thread));
  CHECK(ordered);
  CHECK(wakeups > 0);
  (*w)->stop();
}
