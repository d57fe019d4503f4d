#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <thread>

#include <catch2/catch.hpp>

#include "core/kube/fake_client.h"
#include "core/kube/informer.h"
#include "tests/unit/kube_cache/test_objects.h"
#include "tests/support/eventually.h"
#include "tests/support/forwarding_client.h"

using namespace unitrain;
using namespace unitrain::kube;
using namespace unitrain::kube::testing;
using namespace std::chrono_literals;

namespace {

using unitrain::testing::eventually;

struct Recorder {
  std::mutex mu;
  std::vector<std::string> log;  // "add ns/a", "update ns/a 5->6", "delete ns/a unknown"
  EventHandlers handlers() {
    EventHandlers h;
    h.on_add = [this](const json::Value& o) { push("add " + object_key(o)); };
    h.on_update = [this](const json::Value& a, const json::Value& b) {
      push(fmt::format("update {}", object_key(b)));
      (void)a;
    };
    h.on_delete = [this](const json::Value& o, bool unknown) {
      push(fmt::format("delete {}{}", object_key(o), unknown ? " unknown" : ""));
    };
    return h;
  }
  void push(std::string s) {
    std::lock_guard g(mu);
    log.push_back(std::move(s));
  }
  size_t size() {
    std::lock_guard g(mu);
    return log.size();
  }
  size_t count(const std::string& s) {
    std::lock_guard g(mu);
    return static_cast<size_t>(std::count(log.begin(), log.end(), s));
  }
  size_t count_prefix(const std::string& p) {
    std::lock_guard g(mu);
    return static_cast<size_t>(
        std::count_if(log.begin(), log.end(), [&](const std::string& s) { return s.rfind(p, 0) == 0; }));
  }
};

InformerOptions pod_options() {
  InformerOptions o;
  o.resource = kPods;
  o.seed = 42;
  return o;
}

}  // namespace

TEST_CASE("informer: initial sync lists in pages and notifies each object once", "[informer]") {
  FakeClient c;
  FakeClock clock;
  for (int i = 0; i < 1203; ++i) (void)c.seed(kPods, simple_object("ns", fmt::format("p{:04}", i)).root());
  Informer inf(c, clock, pod_options());
  Recorder rec;
  inf.add_handlers(rec.handlers());
  CHECK(!inf.has_synced());
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  CHECK(inf.has_synced());
  CHECK(inf.cache().size() == 1203);
  CHECK(c.list_calls() == 3);  // 500 + 500 + 203
  CHECK(rec.size() == 1203);
  CHECK(rec.count("add ns/p0042") == 1);
  CHECK(inf.resource_version() == std::to_string(c.resource_version()));
  REQUIRE(eventually([&] { return c.open_watches(kPods) == 1; }));
}

TEST_CASE("informer: watch events update the cache and call handlers once per change", "[informer]") {
  FakeClient c;
  FakeClock clock;
  (void)c.seed(kPods, simple_object("ns", "a").root());
  Informer inf(c, clock, pod_options());
  Recorder rec;
  inf.add_handlers(rec.handlers());
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  REQUIRE(eventually([&] { return c.open_watches(kPods) == 1; }));
  REQUIRE(c.create(kPods, "ns", simple_object("ns", "b").root()));
  REQUIRE(c.patch(kPods, "ns", "a", PatchType::Merge, R"({"metadata":{"labels":{"x":"y"}}})"));
  REQUIRE(c.remove(kPods, "ns", "b"));
  REQUIRE(eventually([&] { return rec.size() == 4; }));
  CHECK(rec.count("add ns/a") == 1);
  CHECK(rec.count("add ns/b") == 1);
  CHECK(rec.count("update ns/a") == 1);
  CHECK(rec.count("delete ns/b") == 1);
  auto a = inf.cache().get("ns/a");
  REQUIRE(a);
  CHECK(json::get_string(a->root(), "/metadata/labels/x") == "y");
  CHECK(!inf.cache().get("ns/b"));
  CHECK(inf.resource_version() == std::to_string(c.resource_version()));
  // A bookmark moves the resume point without touching the cache.
  REQUIRE(c.create(kServices, "ns", simple_object("ns", "svc").root()));  // bumps the version elsewhere
  c.send_bookmark(kPods);
  REQUIRE(eventually([&] { return inf.stats().bookmarks == 1; }));
  CHECK(inf.resource_version() == std::to_string(c.resource_version()));
  CHECK(rec.size() == 4);
}

TEST_CASE("informer: 410 relist applies a correct delta with synthesized deletes", "[informer]") {
  FakeClient c;
  FakeClock clock;
  for (const char* n : {"a", "b", "c"}) (void)c.seed(kPods, simple_object("ns", n).root());
  Informer inf(c, clock, pod_options());
  Recorder rec;
  inf.add_handlers(rec.handlers());
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  REQUIRE(eventually([&] { return c.open_watches(kPods) == 1; }));

  // The watch misses these changes, and the history that could replay them is compacted.
  c.pause_watch_delivery(true);
  REQUIRE(c.create(kPods, "ns", simple_object("ns", "d").root()));
  REQUIRE(c.remove(kPods, "ns", "b"));
  REQUIRE(c.patch(kPods, "ns", "c", PatchType::Merge, R"({"status":{"phase":"Running"}})", {}, "status"));
  c.pause_watch_delivery(false);
  c.compact(c.resource_version());
  c.expire_watches(kPods);

  REQUIRE(eventually([&] { return inf.stats().relists == 1 && rec.size() == 6; }));
  CHECK(rec.count("add ns/d") == 1);
  CHECK(rec.count("update ns/c") == 1);
  CHECK(rec.count("delete ns/b unknown") == 1);
  CHECK(rec.count_prefix("update ns/a") == 0);  // unchanged resourceVersion: no event
  CHECK(inf.stats().synthesized_deletes == 1);
  std::vector<std::string> keys = inf.cache().keys();
  std::sort(keys.begin(), keys.end());
  CHECK(keys == std::vector<std::string>{"ns/a", "ns/c", "ns/d"});
  auto cpod = inf.cache().get("ns/c");
  REQUIRE(cpod);
  CHECK(json::get_string(cpod->root(), "/status/phase") == "Running");
  REQUIRE(eventually([&] { return c.open_watches(kPods) == 1; }));
}

TEST_CASE("informer: a watch request failing with 410 relists, a stream ending empty backs off", "[informer]") {
  FakeClient c;
  FakeClock clock;
  (void)c.seed(kPods, simple_object("ns", "a").root());
  Informer inf(c, clock, pod_options());
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  REQUIRE(eventually([&] { return c.open_watches(kPods) == 1; }));
  int watches = c.watch_calls();
  ApiError gone;
  gone.reason = ApiError::Reason::Gone;
  gone.code = 410;
  c.fail_next(FakeClient::Verb::Watch, gone);
  c.close_watches(kPods);
  // The closed stream delivered nothing: the informer waits on the clock before re-watching.
  REQUIRE(clock.await_waiters(1));
  CHECK(c.watch_calls() == watches);
  clock.advance(30s);
  REQUIRE(eventually([&] { return inf.stats().relists == 1; }));
  CHECK(c.list_calls() == 2);
  REQUIRE(eventually([&] { return c.open_watches(kPods) == 1; }));
}

TEST_CASE("informer: list errors back off exponentially from 800ms with jitter", "[informer]") {
  FakeClient c;
  FakeClock clock;
  ApiError e;
  e.reason = ApiError::Reason::ServiceUnavailable;
  e.code = 503;
  for (int i = 0; i < 3; ++i) c.fail_next(FakeClient::Verb::List, e);
  auto opts = pod_options();
  opts.backoff_jitter = 0;  // exact delays; the jittered range is checked below
  Informer inf(c, clock, opts);
  inf.start();
  REQUIRE(eventually([&] { return c.list_calls() == 1; }));
  REQUIRE(clock.await_waiters(1));
  clock.advance(799ms);
  std::this_thread::sleep_for(30ms);
  CHECK(c.list_calls() == 1);
  clock.advance(1ms);
  REQUIRE(eventually([&] { return c.list_calls() == 2; }));
  REQUIRE(eventually([&] { return clock.waiters() == 1; }));
  clock.advance(1599ms);
  std::this_thread::sleep_for(30ms);
  CHECK(c.list_calls() == 2);
  clock.advance(1ms);
  REQUIRE(eventually([&] { return c.list_calls() == 3; }));
  REQUIRE(eventually([&] { return clock.waiters() == 1; }));
  clock.advance(3200ms);
  REQUIRE(inf.wait_for_sync(10s));
  CHECK(inf.stats().errors == 3);
}

TEST_CASE("informer: jittered backoff stays within [d, 2d] and caps at 30s", "[informer]") {
  FakeClient c;
  FakeClock clock;
  ApiError e;
  e.reason = ApiError::Reason::InternalError;
  e.code = 500;
  for (int i = 0; i < 8; ++i) c.fail_next(FakeClient::Verb::List, e);
  Informer inf(c, clock, pod_options());
  inf.start();
  // Expected un-jittered delays 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30 seconds.
  std::vector<double> base{0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30};
  for (size_t i = 0; i < base.size(); ++i) {
    REQUIRE(eventually([&] { return c.list_calls() == static_cast<int>(i + 1) && clock.waiters() == 1; }));
    auto d = std::chrono::duration<double>(base[i]);
    clock.advance(std::chrono::duration_cast<Clock::Duration>(d - 1ms));
    std::this_thread::sleep_for(20ms);
    CHECK(c.list_calls() == static_cast<int>(i + 1));  // never earlier than d
    clock.advance(std::chrono::duration_cast<Clock::Duration>(std::min(d, std::chrono::duration<double>(30.0 - base[i] + 0.001)) + 1ms));
    REQUIRE(eventually([&] { return c.list_calls() == static_cast<int>(i + 2); }));  // never later than min(2d, 30s)
  }
  REQUIRE(inf.wait_for_sync(10s));
}

TEST_CASE("informer: label and field selectors limit the cache", "[informer]") {
  FakeClient c;
  FakeClock clock;
  (void)c.seed(kPods, simple_object("ns", "mine", R"({"app":"train"})").root());
  (void)c.seed(kPods, simple_object("ns", "theirs", R"({"app":"web"})").root());
  auto opts = pod_options();
  opts.label_selector = "app=train";
  Informer inf(c, clock, opts);
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  CHECK(inf.cache().keys() == std::vector<std::string>{"ns/mine"});
  REQUIRE(eventually([&] { return c.open_watches(kPods) == 1; }));
  REQUIRE(c.create(kPods, "ns", simple_object("ns", "web2", R"({"app":"web"})").root()));
  REQUIRE(c.create(kPods, "ns", simple_object("ns", "train2", R"({"app":"train"})").root()));
  REQUIRE(eventually([&] { return inf.cache().size() == 2; }));
  CHECK(inf.cache().get("ns/train2"));
  CHECK(!inf.cache().get("ns/web2"));

  auto fopts = pod_options();
  fopts.field_selector = "metadata.name=theirs";
  Informer byfield(c, clock, fopts);
  byfield.start();
  REQUIRE(byfield.wait_for_sync(10s));
  CHECK(byfield.cache().keys() == std::vector<std::string>{"ns/theirs"});
}

TEST_CASE("informer: several namespaces get one list and watch each", "[informer]") {
  FakeClient c;
  FakeClock clock;
  for (const char* ns : {"a", "b", "c"}) (void)c.seed(kPods, simple_object(ns, "p").root());
  auto opts = pod_options();
  opts.namespaces = {"a", "c"};
  Informer inf(c, clock, opts);
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  std::vector<std::string> keys = inf.cache().keys();
  std::sort(keys.begin(), keys.end());
  CHECK(keys == std::vector<std::string>{"a/p", "c/p"});
  REQUIRE(eventually([&] { return c.open_watches(kPods) == 2; }));
  CHECK(c.list_calls() == 2);
  REQUIRE(c.create(kPods, "b", simple_object("b", "q").root()));
  REQUIRE(c.create(kPods, "c", simple_object("c", "q").root()));
  REQUIRE(eventually([&] { return inf.cache().size() == 3; }));
  CHECK(inf.cache().get("c/q"));
  CHECK(!inf.cache().get("b/q"));
  // A relist of one namespace must not delete the other's objects.
  c.compact(c.resource_version());
  c.expire_watches(kPods);
  REQUIRE(eventually([&] { return inf.stats().relists == 2; }));
  CHECK(inf.cache().size() == 3);
  CHECK(inf.stats().synthesized_deletes == 0);
}

TEST_CASE("informer: indexers by namespace, controller uid and a custom function", "[informer]") {
  FakeClient c;
  FakeClock clock;
  (void)c.seed(kPods, realistic_pod("n1", "j1-worker-0", "j1").root());
  (void)c.seed(kPods, realistic_pod("n1", "j1-worker-1", "j1", "Succeeded").root());
  (void)c.seed(kPods, realistic_pod("n2", "j2-worker-0", "j2").root());
  auto opts = pod_options();
  opts.indexers[kControllerUidIndex] = index_by_controller_uid;
  opts.indexers["phase"] = [](const json::Value& o) -> std::vector<std::string> {
    auto p = json::get_string(o, "/status/phase");
    if (!p) return {};
    return {std::string(*p)};
  };
  Informer inf(c, clock, opts);
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  CHECK(inf.cache().by_index(kNamespaceIndex, "n1").size() == 2);
  CHECK(inf.cache().by_index(kControllerUidIndex, "uid-j1").size() == 2);
  CHECK(inf.cache().by_index(kControllerUidIndex, "uid-j2").size() == 1);
  CHECK(inf.cache().by_index("phase", "Succeeded").size() == 1);
  CHECK(inf.cache().by_index("nope", "x").empty());
  REQUIRE(eventually([&] { return c.open_watches(kPods) == 1; }));
  REQUIRE(c.patch(kPods, "n1", "j1-worker-0", PatchType::Merge, R"({"status":{"phase":"Succeeded"}})", {}, "status"));
  REQUIRE(eventually([&] { return inf.cache().by_index("phase", "Succeeded").size() == 2; }));
  CHECK(inf.cache().by_index("phase", "Running").size() == 1);
  REQUIRE(c.remove(kPods, "n2", "j2-worker-0"));
  REQUIRE(eventually([&] { return inf.cache().by_index(kControllerUidIndex, "uid-j2").empty(); }));
}

TEST_CASE("informer: handlers added after sync replay the cache as adds", "[informer]") {
  FakeClient c;
  FakeClock clock;
  (void)c.seed(kPods, simple_object("ns", "a").root());
  Informer inf(c, clock, pod_options());
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  Recorder rec;
  inf.add_handlers(rec.handlers());
  CHECK(rec.count("add ns/a") == 1);
}

TEST_CASE("informer: stop returns promptly while watching", "[informer]") {
  FakeClient c;
  FakeClock clock;
  Informer inf(c, clock, pod_options());  // its watch waits minutes for an event: stop() cancels it
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  REQUIRE(eventually([&] { return c.open_watches(kPods) == 1; }));
  auto start = std::chrono::steady_clock::now();
  inf.stop();
  CHECK(std::chrono::steady_clock::now() - start < 2s);
}

namespace {

// What an informer asks of its watch streams: the wait of each next() call, and cancels.
struct WatchLog {
  std::mutex mu;
  std::vector<std::chrono::milliseconds> waits;
  int cancels = 0;
  std::vector<std::chrono::milliseconds> snapshot() {
    std::lock_guard g(mu);
    return waits;
  }
  int cancelled() {
    std::lock_guard g(mu);
    return cancels;
  }
};

class RecordingStream final : public WatchStream {
 public:
  RecordingStream(std::unique_ptr<WatchStream> inner, WatchLog& log) : inner_(std::move(inner)), log_(log) {}
  ApiResult<std::optional<WatchEvent>> next(std::chrono::milliseconds wait) override {
    {
      std::lock_guard g(log_.mu);
      log_.waits.push_back(wait);
    }
    return inner_->next(wait);
  }
  bool timed_out() const override { return inner_->timed_out(); }
  void cancel() override {
    {
      std::lock_guard g(log_.mu);
      ++log_.cancels;
    }
    inner_->cancel();
  }

 private:
  std::unique_ptr<WatchStream> inner_;
  WatchLog& log_;
};

class RecordingClient final : public unitrain::testing::ForwardingClient {
 public:
  RecordingClient(Client& inner, WatchLog& log) : ForwardingClient(inner), log_(log) {}
  ApiResult<std::unique_ptr<WatchStream>> watch(const GroupVersionResource& r, std::string_view ns,
                                                const WatchOptions& opts) override {
    auto w = inner_.watch(r, ns, opts);
    if (!w) return w;
    return std::unique_ptr<WatchStream>(std::make_unique<RecordingStream>(std::move(*w), log_));
  }

 private:
  WatchLog& log_;
};

}  // namespace

TEST_CASE("informer: a silent watch is one wait until the server's timeout, and stop() cancels it", "[informer]") {
  FakeClient c;
  FakeClock clock;
  WatchLog log;
  RecordingClient client(c, log);
  auto opts = pod_options();
  opts.watch_timeout_seconds = 120;
  Informer inf(client, clock, opts);
  Recorder rec;
  inf.add_handlers(rec.handlers());
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  REQUIRE(eventually([&] { return log.snapshot().size() == 1; }));
  // An idle informer does not poll its watch: the one wait covers the server's timeout (a poll
  // every second would have made about three calls by now).
  std::this_thread::sleep_for(2500ms);
  auto waits = log.snapshot();
  REQUIRE(waits.size() == 1);
  CHECK(waits[0] > 120s);
  // After an event, the next wait runs to the same end of the watch.
  REQUIRE(c.create(kPods, "ns", simple_object("ns", "a").root()));
  REQUIRE(eventually([&] { return rec.count("add ns/a") == 1 && log.snapshot().size() == 2; }));
  CHECK(log.snapshot()[1] > 110s);
  CHECK(log.snapshot()[1] <= waits[0]);
  // stop() cancels the waiting stream (it would otherwise wait two minutes) and counts no error.
  const auto start = std::chrono::steady_clock::now();
  inf.stop();
  CHECK(std::chrono::steady_clock::now() - start < 30s);
  CHECK(log.cancelled() == 1);
  CHECK(inf.stats().errors == 0);
  CHECK(inf.stats().watches == 1);
}

TEST_CASE("informer: a watch silent past the server's timeout is taken for dead and watched again", "[informer]") {
  FakeClient c;  // it never ends a watch at its timeoutSeconds: a server that stopped answering
  FakeClock clock;
  auto opts = pod_options();
  opts.watch_timeout_seconds = 1;
  opts.watch_grace = 100ms;
  Informer inf(c, clock, opts);
  Recorder rec;
  inf.add_handlers(rec.handlers());
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  REQUIRE(eventually([&] { return inf.stats().watches >= 2; }));
  // The new watch resumes where the old one was: no relist, nothing missed, no error.
  REQUIRE(c.create(kPods, "ns", simple_object("ns", "b").root()));
  REQUIRE(eventually([&] { return rec.count("add ns/b") == 1; }));
  CHECK(inf.stats().relists == 0);
  CHECK(inf.stats().lists == 1);
  CHECK(inf.stats().errors == 0);
  CHECK(inf.cache().size() == 1);
}

TEST_CASE("projection: a container state keeps a terminated exit code, a null left by a merge patch goes", "[informer]") {
  auto full = realistic_pod("ns", "w-0", "j", "Failed");
  auto state = json::Document::parse(R"({"running":null,"terminated":{"exitCode":3,"reason":"Error"}})");
  REQUIRE(state);
  (void)json::set(full, "/status/containerStatuses/0/state", json::Value(state->root(), full.alloc()));
  auto p = project_pod(full.root());
  CHECK(json::dump(*json::find(p.root(), "/status/containerStatuses/0/state")) == R"({"terminated":{"exitCode":3,"reason":"Error"}})");

  auto running = json::Document::parse(R"({"running":{"startedAt":"2024-01-02T03:04:05Z"},"terminated":null})");
  REQUIRE(running);
  (void)json::set(full, "/status/containerStatuses/0/state", json::Value(running->root(), full.alloc()));
  // A running state is kept (abnormal-pod events tell it from a waiting one); the null goes.
  CHECK(json::dump(*json::find(project_pod(full.root()).root(), "/status/containerStatuses/0/state")) ==
        R"({"running":{"startedAt":"2024-01-02T03:04:05Z"}})");
  CHECK(json::get_string(project_pod(full.root()).root(), "/status/containerStatuses/0/name") == "pytorch");
}

TEST_CASE("projection: a pod no container started in keeps its conditions' reasons and its init containers", "[informer]") {
  auto full = json::Document::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},
      "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable",
      "message":"0/3 nodes are available","lastTransitionTime":"2024-01-02T03:04:05Z","lastProbeTime":null}],
      "initContainerStatuses":[{"name":"init","ready":false,"restartCount":0,"image":"i",
      "state":{"waiting":{"reason":"ErrImagePull","message":"pull access denied"}}}]}})");
  REQUIRE(full);
  auto p = project_pod(full->root());
  CHECK(json::dump(*json::find(p.root(), "/status/conditions/0")) ==
        R"({"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/3 nodes are available",)"
        R"("lastTransitionTime":"2024-01-02T03:04:05Z"})");
  CHECK(json::dump(*json::find(p.root(), "/status/initContainerStatuses/0")) ==
        R"({"name":"init","ready":false,"restartCount":0,"state":{"waiting":{"reason":"ErrImagePull","message":"pull access denied"}}})");
}

TEST_CASE("projection: project_pod keeps the decision fields and drops the rest", "[informer]") {
  auto full = realistic_pod("ns", "w-0", "j", "Failed");
  (void)json::set(full, "/status/containerStatuses/0/state",
                  json::Value(rapidjson::kObjectType));
  (void)json::set_int(full, "/status/containerStatuses/0/state/terminated/exitCode", 137);
  (void)json::set_string(full, "/status/containerStatuses/0/state/terminated/reason", "OOMKilled");
  (void)json::set_int(full, "/status/containerStatuses/0/restartCount", 3);
  (void)json::set_string(full, "/metadata/deletionTimestamp", "2024-01-02T03:05:00Z");
  (void)json::set_string(full, "/status/reason", "Evicted");
  (void)json::set_string(full, "/status/message", "The node was low on resource: memory.");
  auto init = json::Document::parse(R"([{"name":"init-pytorch","restartCount":2,"ready":false,"image":"alpine:3.10"}])");
  REQUIRE(init);
  (void)json::set(full, "/status/initContainerStatuses", json::Value(init->root(), full.alloc()));
  auto p = project_pod(full.root());
  CHECK(json::get_string(p.root(), "/metadata/name") == "w-0");
  CHECK(json::get_string(p.root(), "/metadata/namespace") == "ns");
  CHECK(json::get_string(p.root(), "/metadata/labels/training.kubeflow.org~1job-name") == "j");
  CHECK(json::get_string(p.root(), "/metadata/ownerReferences/0/uid") == "uid-j");
  CHECK(json::get_bool(p.root(), "/metadata/ownerReferences/0/controller") == true);
  CHECK(json::get_string(p.root(), "/metadata/deletionTimestamp") == "2024-01-02T03:05:00Z");
  CHECK(json::get_string(p.root(), "/metadata/creationTimestamp") == json::get_string(full.root(), "/metadata/creationTimestamp"));
  CHECK(json::get_string(p.root(), "/status/phase") == "Failed");
  // MPI's launcher failure reads the pod's reason and message; the backoff limit counts the
  // restarts of init containers too.
  CHECK(json::get_string(p.root(), "/status/reason") == "Evicted");
  CHECK(json::get_string(p.root(), "/status/message") == "The node was low on resource: memory.");
  CHECK(json::dump(*json::find(p.root(), "/status/initContainerStatuses")) ==
        R"([{"name":"init-pytorch","restartCount":2,"ready":false}])");
  CHECK(json::get_int(p.root(), "/status/containerStatuses/0/state/terminated/exitCode") == 137);
  CHECK(json::get_string(p.root(), "/status/containerStatuses/0/state/terminated/reason") == "OOMKilled");
  CHECK(json::get_int(p.root(), "/status/containerStatuses/0/restartCount") == 3);
  CHECK(json::get_string(p.root(), "/status/containerStatuses/0/name") == "pytorch");
  CHECK(json::get_bool(p.root(), "/status/containerStatuses/0/ready") == true);
  CHECK(!json::find(p.root(), "/status/containerStatuses/0/image"));
  CHECK(json::get_string(p.root(), "/status/conditions/1/type") == "Ready");
  CHECK(json::get_string(p.root(), "/status/conditions/1/status") == "True");
  CHECK(!json::find(p.root(), "/status/conditions/1/lastProbeTime"));
  CHECK(json::get_string(p.root(), "/status/podIP") == "10.244.1.17");
  CHECK(!json::find(p.root(), "/status/hostIP"));
  CHECK(json::dump(*json::find(p.root(), "/spec")) == R"({"nodeName":"node-3"})");
  CHECK(!json::find(p.root(), "/metadata/managedFields"));
  CHECK(!json::find(p.root(), "/metadata/annotations"));
  CHECK(json::get_string(p.root(), "/metadata/resourceVersion") == json::get_string(full.root(), "/metadata/resourceVersion"));

  auto svc = json::Document::parse(
      R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"ns","resourceVersion":"7",
          "annotations":{"a":"b"},"labels":{"l":"v"}},
          "spec":{"clusterIP":"None","ports":[{"name":"p","port":23456,"targetPort":23456,"protocol":"TCP"}],
          "selector":{"l":"v"},"publishNotReadyAddresses":true}})");
  REQUIRE(svc);
  auto ps = project_service(svc->root());
  // Controllers keep a Service's selector in sync; events name its cluster IP and ports.
  CHECK(json::dump(*json::find(ps.root(), "/spec")) ==
        R"({"clusterIP":"None","ports":[{"name":"p","port":23456}],"selector":{"l":"v"},"publishNotReadyAddresses":true})");
  CHECK(json::get_string(ps.root(), "/metadata/labels/l") == "v");
  CHECK(!json::find(ps.root(), "/metadata/annotations"));
}

TEST_CASE("projection: every mask the caches use parses, and jobs and owned objects keep all but managedFields", "[informer]") {
  auto job = json::Document::parse(
      R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"j","namespace":"ns","uid":"u",
          "annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{...}","keep":"me"},
          "managedFields":[{"manager":"kubectl"}],"finalizers":["f"]},
          "spec":{"runPolicy":{"cleanPodPolicy":null}},"status":{"conditions":[]}})");
  REQUIRE(job);
  auto j = json::Document::project(job->root(), *job_fields());
  CHECK(j.dump() == R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"j","namespace":"ns",)"
                    R"("uid":"u","annotations":{"keep":"me"},"finalizers":["f"]},"spec":{"runPolicy":{"cleanPodPolicy":null}},)"
                    R"("status":{"conditions":[]}})");
  auto owned = json::Document::project(job->root(), *owned_fields());
  CHECK(json::get_string(owned.root(), "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration") == "{...}");
  CHECK(!json::find(owned.root(), "/metadata/managedFields"));
  auto pc = json::Document::parse(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"high",
      "uid":"u","resourceVersion":"3","labels":{"a":"b"}},"value":1000,"description":"d"})");
  REQUIRE(pc);
  CHECK(json::Document::project(pc->root(), *priority_class_fields()).dump() ==
        R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"high","uid":"u","resourceVersion":"3"},"value":1000})");
}

namespace {

size_t heap_in_use() {
  malloc_trim(0);
  return mallinfo2().uordblks;
}

struct CacheFootprint {
  double heap_per_pod = 0;
  double payload_per_pod = 0;
};

CacheFootprint measure_cache(FakeClient& c, FakeClock& clock, int pods, std::shared_ptr<const json::FieldMask> fields) {
  size_t before = heap_in_use();
  CacheFootprint f;
  {
    auto opts = pod_options();
    opts.fields = std::move(fields);
    opts.indexers[kControllerUidIndex] = index_by_controller_uid;
    Informer inf(c, clock, opts);
    inf.start();
    REQUIRE(inf.wait_for_sync(900s));
    REQUIRE(inf.cache().size() == static_cast<size_t>(pods));
    inf.stop();  // the cache stays; threads and the open watch go
    size_t after = heap_in_use();
    f.heap_per_pod = static_cast<double>(after - before) / pods;
    size_t payload = 0;
    for (const auto& o : inf.cache().list()) payload += o->dump().size();
    f.payload_per_pod = static_cast<double>(payload) / pods;
  }
  return f;
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

TEST_CASE("informer: projection reduces the memory per cached pod", "[informer][memory]") {
  const int kPodsCount = 10000;
  FakeClient c;
  FakeClock clock;
  for (int i = 0; i < kPodsCount; ++i) {
    (void)c.seed(kPods, realistic_pod(fmt::format("ns{}", i % 10), fmt::format("job{}-worker-{}", i / 8, i % 8),
                                      fmt::format("job{}", i / 8))
                            .root());
  }
  auto full = measure_cache(c, clock, kPodsCount, nullptr);
  auto projected = measure_cache(c, clock, kPodsCount, pod_fields());
  std::cout << fmt::format(
      "[measure] cached pod, {} realistic pods: full {:.0f} B heap ({:.0f} B JSON), projected {:.0f} B heap ({:.0f} B "
      "JSON)\n",
      kPodsCount, full.heap_per_pod, full.payload_per_pod, projected.heap_per_pod, projected.payload_per_pod);
  CHECK(projected.payload_per_pod * 4 < full.payload_per_pod);
#ifndef __SANITIZE_ADDRESS__
  // AddressSanitizer replaces malloc, and mallinfo2 then reports nothing useful. Each cached
  // document owns a pool sized to its content, so the heap follows the payload (RapidJSON's
  // default 64 KiB first chunk once made both figures ~66 KB).
  CHECK(projected.heap_per_pod * 3 < full.heap_per_pod);
  CHECK(full.heap_per_pod < 4 * full.payload_per_pod);
#endif
}

// Not a timed test: prints the ingest rate of a 100k-pod initial list. Hidden from ctest (it
// allocates ~1.5 GB); run with `kube_cache_test "[.bench]"`.
TEST_CASE("informer: ingest rate of a 100k pod list", "[.bench]") {
  const int kPodsCount = 100000;
  FakeClient c;
  FakeClock clock;
  for (int i = 0; i < kPodsCount; ++i) {
    (void)c.seed(kPods, realistic_pod(fmt::format("ns{}", i % 10), fmt::format("job{}-worker-{}", i / 8, i % 8),
                                      fmt::format("job{}", i / 8))
                            .root());
  }
  for (bool project : {true, false}) {
    auto opts = pod_options();
    if (project) opts.fields = pod_fields();
    auto start = std::chrono::steady_clock::now();
    double cpu_start = cpu_seconds();
    Informer inf(c, clock, opts);
    inf.start();
    REQUIRE(inf.wait_for_sync(1800s));
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // CPU time of the process (the fake server's list encoding + the informer's decoding,
    // projection and indexing): wall time on a shared machine says little.
    double cpu = cpu_seconds() - cpu_start;
    CHECK(inf.cache().size() == static_cast<size_t>(kPodsCount));
    std::cout << fmt::format(
        "[measure] informer ingest ({}): {} pods, wall {:.2f} s ({:.0f} objects/s), cpu {:.2f} s ({:.0f} objects per "
        "cpu-second)\n",
        project ? "projected" : "full", kPodsCount, secs, kPodsCount / secs, cpu, kPodsCount / cpu);
  }
}

TEST_CASE("projection: a projected pod's pool holds no more than a parsed copy of it", "[informer][memory]") {
  auto full = realistic_pod("ns", "job-worker-0", "job");
  auto p = project_pod(full.root());
  auto parsed = json::Document::parse(p.dump());
  REQUIRE(parsed);
  // Objects built with AddMember reserve 16 members each; the projection must not keep that.
  CHECK(p.alloc().Size() <= parsed->alloc().Size());
}

TEST_CASE("unite_selectors: one key says it to the server, anything else is checked on each object", "[informer]") {
  auto one = unite_selectors({{"app=a"}});
  REQUIRE(one);
  CHECK(one->label_selector == "app=a");
  CHECK(!one->keep);
  auto same_key = unite_selectors({{"op=b"}, {"op=a"}, {"op in (c,a)"}});
  REQUIRE(same_key);
  CHECK(same_key->label_selector == "op in (a,b,c)");
  CHECK(!same_key->keep);
  auto everything = unite_selectors({{"op=a"}, {""}});
  REQUIRE(everything);
  CHECK(everything->label_selector.empty());
  CHECK(!everything->keep);
  CHECK(unite_selectors({})->label_selector.empty());

  auto mixed = unite_selectors({{"op=a"}, {"team=x,tier=y"}});
  REQUIRE(mixed);
  CHECK(mixed->label_selector.empty());
  REQUIRE(mixed->keep);
  auto obj = [](std::string labels) { return simple_object("ns", "o", labels); };
  CHECK(mixed->keep(obj(R"({"op":"a"})").root()));
  CHECK(mixed->keep(obj(R"({"team":"x","tier":"y"})").root()));
  CHECK(!mixed->keep(obj(R"({"team":"x"})").root()));
  CHECK(!mixed->keep(obj("{}").root()));

  auto bad = unite_selectors({{"op in (a"}});
  REQUIRE(!bad);
  CHECK_THAT(bad.error().message, Catch::Contains("op in (a"));
}

TEST_CASE("unite_selectors: a party selecting by owner keeps what a kind of its group controls, united with labels", "[informer]") {
  auto owned = [](std::string_view labels, std::string_view owner_api_version, std::string_view owner_kind, bool controller) {
    return json::Document::parse(fmt::format(
               R"({{"metadata":{{"name":"o","namespace":"ns","labels":{},"ownerReferences":[{{"apiVersion":"{}","kind":"{}",)"
               R"("name":"x","uid":"u","controller":{}}}]}}}})",
               labels, owner_api_version, owner_kind, controller ? "true" : "false"))
        .value();
  };
  auto united = unite_selectors({{"op=a"}, {"", {{"jobset.x-k8s.io", "JobSet"}}}});
  REQUIRE(united);
  // Not one label selector: the server sends everything, each object is checked.
  CHECK(united->label_selector.empty());
  REQUIRE(united->keep);
  CHECK(united->keep(owned("{}", "jobset.x-k8s.io/v1alpha2", "JobSet", true).root()));
  CHECK(united->keep(owned("{}", "jobset.x-k8s.io/v1", "JobSet", true).root()));  // any version
  CHECK(united->keep(owned(R"({"op":"a"})", "kubeflow.org/v1", "PyTorchJob", true).root()));
  CHECK(!united->keep(owned("{}", "kubeflow.org/v1", "PyTorchJob", true).root()));
  CHECK(!united->keep(owned("{}", "example.com/v1", "JobSet", true).root()));           // another group's JobSet
  CHECK(!united->keep(owned("{}", "jobset.x-k8s.io/v1alpha2", "JobSet", false).root()));  // not its controller
  CHECK(!united->keep(simple_object("ns", "foreign", "{}").root()));
  // Owners alone: the same check, and a core-group owner ("v1") names the empty group.
  auto core_owner = unite_selectors({{"", {{"", "Node"}}}});
  REQUIRE(core_owner);
  REQUIRE(core_owner->keep);
  CHECK(core_owner->keep(owned("{}", "v1", "Node", true).root()));
  CHECK(!core_owner->keep(owned("{}", "example.com/v1", "Node", true).root()));
  // A party that wants everything still makes the union everything.
  auto everything = unite_selectors({{"", {{"jobset.x-k8s.io", "JobSet"}}}, {""}});
  REQUIRE(everything);
  CHECK(!everything->keep);
  CHECK(everything->label_selector.empty());
}

TEST_CASE("informer: `fields` reach the client, `keep` filters, and an object that stops matching leaves", "[informer]") {
  FakeClient c;
  FakeClock clock;
  (void)c.seed(kPods, simple_object("ns", "ours", R"({"team":"x"})").root());
  (void)c.seed(kPods, simple_object("ns", "theirs", R"({"team":"y"})").root());
  auto opts = pod_options();
  opts.fields = std::make_shared<const json::FieldMask>(json::FieldMask::parse("metadata{name,namespace,labels}").value());
  opts.keep = [](const json::Value& o) { return json::get_string(o, "/metadata/labels/team") == "x"; };
  Informer inf(c, clock, opts);
  Recorder rec;
  inf.add_handlers(rec.handlers());
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  REQUIRE(inf.cache().size() == 1);
  CHECK(inf.cache().get("ns/ours")->dump() == R"({"metadata":{"name":"ours","namespace":"ns","labels":{"team":"x"}}})");
  REQUIRE(eventually([&] { return c.open_watches(kPods) == 1; }));

  (void)c.create(kPods, "ns", simple_object("ns", "later", R"({"team":"x"})").root());
  (void)c.create(kPods, "ns", simple_object("ns", "other", R"({"team":"z"})").root());
  REQUIRE(eventually([&] { return rec.count("add ns/later") == 1; }));
  CHECK(json::find(inf.cache().get("ns/later")->root(), "/status") == nullptr);  // decoded through the mask
  auto moved = simple_object("ns", "ours", R"({"team":"y"})");
  REQUIRE(c.update(kPods, "ns", moved.root()));
  REQUIRE(eventually([&] { return rec.count("delete ns/ours") == 1; }));
  CHECK(inf.cache().size() == 1);
  CHECK(rec.count_prefix("add ns/other") == 0);
  CHECK(rec.count_prefix("add ns/theirs") == 0);
  inf.stop();
}

TEST_CASE("indexer: objects read back as stored, before and after it codes its most repeated strings", "[informer]") {
  Indexer store({{kControllerUidIndex, index_by_controller_uid}});
  // More objects than the store learns its codes from, so both plain and coded text are held;
  // every one carries strings a code must not swallow or break (quotes, backslashes, escaped
  // control bytes, non-ASCII) next to ones it codes.
  const int kObjects = 300;
  std::vector<std::string> dumps;
  for (int i = 0; i < kObjects; ++i) {
    auto pod = realistic_pod("ns", fmt::format("job{}-worker-{}", i / 4, i % 4), fmt::format("job{}", i / 4));
    REQUIRE(json::set_string(pod, "/metadata/uid", fmt::format("pod-uid-{}", i)));
    REQUIRE(json::set_string(pod, "/metadata/labels/odd", fmt::format("a\"b\\c\x01\x1f\tn\u00e9-{}", i)));
    REQUIRE(json::set_string(pod, "/metadata/annotations/\x02key", "training.kubeflow.org/job-name"));
    dumps.push_back(pod.dump());
    CHECK_FALSE(store.upsert(object_key(pod.root()), pod.root()));
  }
  REQUIRE(store.size() == static_cast<size_t>(kObjects));
  for (int i = 0; i < kObjects; ++i) {
    auto got = store.get(fmt::format("ns/job{}-worker-{}", i / 4, i % 4));
    REQUIRE(got);
    CHECK(got->dump() == dumps[static_cast<size_t>(i)]);
  }
  CHECK(store.list().size() == static_cast<size_t>(kObjects));
  CHECK(store.by_index(kControllerUidIndex, "uid-job70").size() == 4);

  // Coded text is smaller than the plain dump.
  auto late = realistic_pod("ns", "late", "late");
  const size_t before = store.text_bytes();
  store.upsert("ns/late", late.root());
  CHECK(store.text_bytes() - before < late.dump().size() * 4 / 5);  // about 3/4 for this pod
  CHECK(store.get("ns/late")->dump() == late.dump());

  CHECK(store.holds("ns/job0-worker-1", "pod-uid-1"));
  CHECK_FALSE(store.holds("ns/job0-worker-1", "pod-uid-2"));
  CHECK_FALSE(store.holds("ns/nope", "pod-uid-1"));

  // Replacing an object moves it between index values and returns the one it replaced.
  auto moved = realistic_pod("ns", "job0-worker-0", "other");
  auto old = store.upsert("ns/job0-worker-0", moved.root());
  REQUIRE(old);
  REQUIRE(old.object);
  CHECK(old.object->dump() == dumps[0]);
  CHECK(store.by_index(kControllerUidIndex, "uid-job0").size() == 3);
  CHECK(store.by_index(kControllerUidIndex, "uid-other").size() == 1);
  auto erased = store.erase("ns/job0-worker-0");
  REQUIRE(erased);
  REQUIRE(erased.object);
  CHECK(erased.object->dump() == moved.dump());
  CHECK(store.by_index(kControllerUidIndex, "uid-other").empty());
  CHECK_FALSE(store.erase("ns/job0-worker-0"));
  CHECK(store.size() == static_cast<size_t>(kObjects));
}

TEST_CASE("indexer: a write hands back the previous version only as asked, and unindexes it from the index fields",
          "[informer]") {
  // Without decoded documents kept for readers (a memoized previous version is handed back whole:
  // see the next test).
  Indexer store({{kControllerUidIndex, index_by_controller_uid}, {kNamespaceIndex, index_by_namespace}},
                builtin_index_fields(), 0);
  for (int i = 0; i < 250; ++i) {
    auto pod = realistic_pod("ns", fmt::format("p{}", i), fmt::format("job{}", i % 10));
    REQUIRE_FALSE(store.upsert(object_key(pod.root()), pod.root(), {false, nullptr}));
  }
  CHECK(store.by_index(kControllerUidIndex, "uid-job3").size() == 25);
  CHECK(store.index_keys(kNamespaceIndex, "ns").size() == 250);

  // Not handed back: there was one, and the index values move all the same.
  auto moved = realistic_pod("ns", "p3", "job4");
  auto replaced = store.upsert("ns/p3", moved.root(), {false, nullptr});
  CHECK(replaced.existed);
  CHECK(replaced.object == nullptr);
  CHECK(store.by_index(kControllerUidIndex, "uid-job3").size() == 24);
  CHECK(store.by_index(kControllerUidIndex, "uid-job4").size() == 26);

  // Through a mask (which keeps what the indexes read): only its fields are built.
  const auto phase = json::FieldMask::parse("metadata{namespace,ownerReferences,resourceVersion},status{phase}").value();
  auto running = realistic_pod("ns", "p3", "job4");
  REQUIRE(json::set_string(running, "/status/phase", "Succeeded"));
  auto masked = store.upsert("ns/p3", running.root(), {true, &phase});
  REQUIRE(masked.object);
  CHECK(json::get_string(masked.object->root(), "/status/phase") == json::get_string(moved.root(), "/status/phase"));
  CHECK(json::find(masked.object->root(), "/metadata/name") == nullptr);
  CHECK(json::find(masked.object->root(), "/spec") == nullptr);
  CHECK(json::get_string(store.get("ns/p3", phase)->root(), "/status/phase") == "Succeeded");

  // An object whose index values vanish leaves every index; so does an erase.
  auto orphan = realistic_pod("ns", "p5", "job5");
  json::remove(orphan, "/metadata/ownerReferences");
  REQUIRE(store.upsert("ns/p5", orphan.root(), {false, nullptr}));
  CHECK(store.by_index(kControllerUidIndex, "uid-job5").size() == 24);
  for (int i = 0; i < 250; ++i) {
    auto gone = store.erase(fmt::format("ns/p{}", i), {false, nullptr});
    CHECK(gone.existed);
    CHECK(gone.object == nullptr);
  }
  CHECK(store.size() == 0);
  CHECK(store.index_keys(kNamespaceIndex, "ns").empty());
  CHECK(store.by_index(kControllerUidIndex, "uid-job4").empty());
  CHECK(store.text_bytes() == 0);
}

TEST_CASE("indexer: the objects stored while it learnt its codes are coded once it knows them", "[informer]") {
  Indexer store;
  size_t plain = 0;
  // Exactly the objects it learns from: the last of them fixes the codes.
  for (int i = 0; i < 200; ++i) {
    auto pod = realistic_pod("ns", fmt::format("p{}", i), fmt::format("job{}", i / 4));
    plain += pod.dump().size();
    store.upsert(object_key(pod.root()), pod.root());
    if (i == 198) CHECK(store.text_bytes() == plain);  // still learning: plain text
  }
  CHECK(store.text_bytes() < plain * 4 / 5);
  for (int i = 0; i < 200; ++i) {
    auto pod = realistic_pod("ns", fmt::format("p{}", i), fmt::format("job{}", i / 4));
    CHECK(store.get(fmt::format("ns/p{}", i))->dump() == pod.dump());
  }
}

TEST_CASE("indexer: its own text reads back without the duplicate-key check that text from the wire gets", "[informer]") {
  // A document built in code may repeat a member name (RapidJSON's AddMember does not look), and
  // the same bytes from the wire are refused (see the watch decoder's tests). The store's text of
  // it reads back as that document, plain or coded: the store does not walk its own text again.
  Indexer store({}, nullptr, 0);
  auto repeating = [](const std::string& name) {
    auto pod = realistic_pod("ns", name);
    json::Value& labels = pod.root()["metadata"]["labels"];
    labels.AddMember("twice", "1", pod.alloc());
    labels.AddMember("twice", "2", pod.alloc());
    return pod;
  };
  store.upsert("ns/first", repeating("first").root());  // plain text: the codes are not known yet
  for (int i = 0; i < 250; ++i) store.upsert(fmt::format("ns/p{}", i), realistic_pod("ns", fmt::format("p{}", i)).root());
  store.upsert("ns/last", repeating("last").root());  // coded
  for (const char* key : {"ns/first", "ns/last"}) {
    auto got = store.get(key);
    REQUIRE(got);
    const json::Value& labels = got->root()["metadata"]["labels"];
    CHECK(std::count_if(labels.MemberBegin(), labels.MemberEnd(), [](const auto& m) { return json::view(m.name) == "twice"; }) == 2);
    CHECK_FALSE(json::Document::parse(got->dump()));
  }
}

TEST_CASE("indexer: text written with its current codes (a watch stream's) is stored as it is, other text written again",
          "[informer]") {
  Indexer store({}, nullptr, 0);  // no memo: reads decode the stored text
  for (int i = 0; i < 200; ++i) store.upsert(fmt::format("ns/p{}", i), realistic_pod("ns", fmt::format("p{}", i)).root());
  const auto codes = store.text_codes()->get();
  REQUIRE_FALSE(codes->empty());
  rapidjson::StringBuffer scratch;
  auto stored = [&](const std::string& name, std::shared_ptr<const json::StringCodes> with) {
    // The text handed over is a different pod's, so what a read gives tells which text was kept.
    auto pod = realistic_pod("ns", name);
    auto marker = realistic_pod("ns", name + "-text");
    json::WrittenText text{json::CodedText::write(marker.root(), *with, scratch), with};
    store.upsert("ns/" + name, std::make_shared<const json::Document>(std::move(pod)), {}, std::move(text));
    return json::string_at(store.get("ns/" + name)->root(), "/metadata/name");
  };
  CHECK(stored("current", codes) == "current-text");
  // Codes with the same strings are still not the store's: written again from the document.
  CHECK(stored("stale", std::make_shared<const json::StringCodes>(codes->strings())) == "stale");
  CHECK(stored("plain", std::make_shared<const json::StringCodes>()) == "plain");
}

TEST_CASE("informer: on_update gets the previous version through the handlers' previous_fields", "[informer]") {
  FakeClient c;
  FakeClock clock;
  (void)c.seed(kPods, realistic_pod("ns", "a").root());
  InformerOptions o = pod_options();
  o.index_fields = builtin_index_fields();  // what the namespace index reads is decoded as well
  o.memo_bytes = 0;  // else the previous version is the last event's document, whole
  Informer inf(c, clock, o);
  std::mutex mu;
  std::vector<std::string> seen;  // what each on_update saw of the previous version
  auto record = [&](const char* who, const json::Value& old) {
    std::lock_guard g(mu);
    seen.push_back(fmt::format("{} step={} name={}", who, json::get_string(old, "/metadata/labels/step").value_or("-"),
                               json::get_string(old, "/metadata/name").value_or("-")));
  };
  EventHandlers phase_only;
  phase_only.on_update = [&](const json::Value& old, const json::Value&) { record("labels", old); };
  phase_only.previous_fields = std::make_shared<const json::FieldMask>(json::FieldMask::parse("metadata{labels}").value());
  inf.add_handlers(phase_only);
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  REQUIRE(eventually([&] { return c.open_watches(kPods) == 1; }));
  REQUIRE(c.patch(kPods, "ns", "a", PatchType::Merge, R"({"metadata":{"labels":{"step":"1"}}})"));
  REQUIRE(eventually([&] {
    std::lock_guard g(mu);
    return seen.size() == 1;
  }));
  CHECK(seen[0] == "labels step=- name=-");  // only the mask's fields were decoded

  // A handler that names no fields makes every handler see the whole previous version.
  EventHandlers whole;
  whole.on_update = [&](const json::Value& old, const json::Value&) { record("whole", old); };
  inf.add_handlers(whole);
  REQUIRE(c.patch(kPods, "ns", "a", PatchType::Merge, R"({"metadata":{"labels":{"step":"2"}}})"));
  REQUIRE(eventually([&] {
    std::lock_guard g(mu);
    return seen.size() == 3;
  }));
  CHECK(std::count(seen.begin(), seen.end(), "labels step=1 name=a") == 1);
  CHECK(std::count(seen.begin(), seen.end(), "whole step=1 name=a") == 1);
  inf.stop();
}

// Memo bytes with room for `decoded` of the pods below (their pools differ by a few bytes with
// their names).
size_t memo_for_pods(size_t decoded) {
  Indexer probe({}, nullptr, 0);
  for (int i = 0; i < 250; ++i) probe.upsert(fmt::format("ns/p{}", i), realistic_pod("ns", fmt::format("p{}", i), "job0").root());
  const size_t pod_bytes = probe.get("ns/p100")->allocated_bytes();
  return decoded * pod_bytes + pod_bytes / 2;
}

// 250 pods, past the learning of the store's codes; job<k> owns p<4k>..p<4k+3>.
void add_pods(Indexer& store) {
  for (int i = 0; i < 250; ++i) {
    auto pod = realistic_pod("ns", fmt::format("p{}", i), fmt::format("job{}", i / 4));
    store.upsert(object_key(pod.root()), pod.root());
  }
}

TEST_CASE("indexer: readers share the documents it keeps decoded until their object changes, the memo is bounded",
          "[informer]") {
  const size_t kMemo = 8;
  Indexer store({{kControllerUidIndex, index_by_controller_uid}}, builtin_index_fields(), memo_for_pods(kMemo));
  add_pods(store);
  // A read is remembered: the next reads, by key or by index, get the same document.
  ObjectPtr first = store.get("ns/p0");
  REQUIRE(first);
  CHECK(store.get("ns/p0") == first);
  auto children = store.by_index(kControllerUidIndex, "uid-job0");
  REQUIRE(children.size() == 4);
  CHECK(std::count(children.begin(), children.end(), first) == 1);
  CHECK(store.get("ns/p1") == store.get("ns/p1"));
  // Through a mask: the whole document at hand does.
  CHECK(store.get("ns/p0", *resource_version_fields()) == first);

  // A write through a plain value forgets it: the next read decodes what was written.
  auto relabelled = realistic_pod("ns", "p0", "job0");
  REQUIRE(json::set_string(relabelled, "/metadata/labels/step", "2"));
  store.upsert("ns/p0", relabelled.root());
  ObjectPtr second = store.get("ns/p0");
  REQUIRE(second);
  CHECK(second != first);
  CHECK(second->dump() == relabelled.dump());
  CHECK(first->dump() != relabelled.dump());  // a reader's copy never changes under it

  // A write through a shared document is what readers get, and what the next write hands back
  // as the previous version (nothing decoded), whole even when asked for some fields.
  auto event = std::make_shared<const json::Document>(realistic_pod("ns", "p0", "job1"));
  auto replaced = store.upsert("ns/p0", event);
  REQUIRE(replaced.object);
  CHECK(replaced.object == second);
  CHECK(store.get("ns/p0") == event);
  CHECK(store.by_index(kControllerUidIndex, "uid-job1").size() == 5);
  const auto phase = json::FieldMask::parse("metadata{namespace,ownerReferences},status{phase}").value();
  auto moved_back = realistic_pod("ns", "p0", "job0");
  auto previous = store.upsert("ns/p0", moved_back.root(), {true, &phase});
  CHECK(previous.object == event);
  CHECK(store.by_index(kControllerUidIndex, "uid-job1").size() == 4);
  CHECK(store.get("ns/p0")->dump() == moved_back.dump());

  // An erase forgets it: a new object under the key is decoded from its own text.
  ObjectPtr before_erase = store.get("ns/p0");
  auto erased = store.erase("ns/p0");
  CHECK(erased.object == before_erase);
  CHECK(store.get("ns/p0") == nullptr);
  auto again = realistic_pod("ns", "p0", "job2");
  store.upsert("ns/p0", again.root());
  CHECK(store.get("ns/p0")->dump() == again.dump());

  // Bounded, least recently used out: after kMemo other objects were read, p5 is decoded anew.
  // (The shared documents above were built in code, with pools of another size: gone by now.)
  ObjectPtr p5 = store.get("ns/p5");
  for (size_t i = 0; i < kMemo - 1; ++i) (void)store.get(fmt::format("ns/p{}", 100 + i));
  CHECK(store.get("ns/p5") == p5);  // used again: now the most recent
  for (size_t i = 0; i < kMemo; ++i) (void)store.get(fmt::format("ns/p{}", 200 + i));
  ObjectPtr p5_again = store.get("ns/p5");
  CHECK(p5_again != p5);
  CHECK(p5_again->dump() == p5->dump());
  // A listing reads everything once and keeps nothing of it.
  ObjectPtr recent = store.get("ns/p7");
  (void)store.list();
  CHECK(store.get("ns/p7") == recent);

  // Without a memo every read decodes.
  Indexer plain({}, nullptr, 0);
  plain.upsert("ns/p0", event);
  CHECK(plain.get("ns/p0") != event);
  CHECK(plain.get("ns/p0") != plain.get("ns/p0"));
}

TEST_CASE("indexer: a reader by index that reads once leaves the memo to the documents others come back to",
          "[informer]") {
  const size_t kMemo = 8;
  Indexer store({{kControllerUidIndex, index_by_controller_uid}}, builtin_index_fields(), memo_for_pods(kMemo));
  add_pods(store);
  // The documents of the latest events (a write through a shared document) fill the memo.
  std::vector<ObjectPtr> events;
  for (int i = 200; i < 200 + static_cast<int>(kMemo); ++i) {
    // Parsed like a watch event (a pool of the size a decode makes).
    auto parsed = json::Document::parse(realistic_pod("ns", fmt::format("p{}", i), fmt::format("job{}", i / 4)).dump());
    REQUIRE(parsed);
    events.push_back(std::make_shared<const json::Document>(std::move(*parsed)));
    store.upsert(fmt::format("ns/p{}", i), events.back());
  }
  // Reading the children of more jobs than the memo holds, once each, keeps every one of them.
  for (int job = 0; job < 10; ++job) {
    auto children = store.by_index(kControllerUidIndex, fmt::format("uid-job{}", job), Indexer::Reading::Once);
    REQUIRE(children.size() == 4);
    std::vector<std::string> names, keys;
    for (const auto& child : children) names.emplace_back(json::get_string(child->root(), "/metadata/name").value_or(""));
    for (int k = 0; k < 4; ++k) keys.push_back(fmt::format("p{}", job * 4 + k));
    std::sort(keys.begin(), keys.end());  // in key order: "p10" before "p8"
    CHECK(names == keys);
  }
  for (size_t i = 0; i < kMemo; ++i) CHECK(store.get(fmt::format("ns/p{}", 200 + i)) == events[i]);
  // A reader that reads once still gets a remembered document; nothing decoded for it is kept.
  auto with_events = store.by_index(kControllerUidIndex, "uid-job50", Indexer::Reading::Once);
  REQUIRE(with_events.size() == 4);
  CHECK(with_events[0] == events[0]);
  auto first = store.by_index(kControllerUidIndex, "uid-job1", Indexer::Reading::Once);
  auto second = store.by_index(kControllerUidIndex, "uid-job1", Indexer::Reading::Once);
  REQUIRE(first.size() == 4);
  REQUIRE(second.size() == 4);
  CHECK(first[0] != second[0]);
  CHECK(first[0]->dump() == second[0]->dump());
  // Read to come back: remembered (and the oldest event's document goes).
  auto again = store.by_index(kControllerUidIndex, "uid-job1");
  CHECK(store.get("ns/p4") == again[0]);
}

TEST_CASE("informer: readers get the document of the last watch event, the previous version handed to on_update is it",
          "[informer]") {
  FakeClient c;
  FakeClock clock;
  (void)c.seed(kPods, realistic_pod("ns", "a").root());
  InformerOptions o = pod_options();
  o.index_fields = builtin_index_fields();
  Informer inf(c, clock, o);
  std::mutex mu;
  std::vector<const json::Value*> previous;  // the roots on_update was handed
  EventHandlers h;
  h.on_update = [&](const json::Value& old, const json::Value&) {
    std::lock_guard g(mu);
    previous.push_back(&old);
  };
  h.previous_fields = std::make_shared<const json::FieldMask>(json::FieldMask::parse("metadata{labels}").value());
  inf.add_handlers(h);
  inf.start();
  REQUIRE(inf.wait_for_sync(10s));
  REQUIRE(eventually([&] { return c.open_watches(kPods) == 1; }));
  REQUIRE(c.patch(kPods, "ns", "a", PatchType::Merge, R"({"metadata":{"labels":{"step":"1"}}})"));
  REQUIRE(eventually([&] { return inf.cache().get("ns/a") && json::get_string(inf.cache().get("ns/a")->root(), "/metadata/labels/step") == "1"; }));
  ObjectPtr stored = inf.cache().get("ns/a");
  CHECK(inf.cache().get("ns/a") == stored);  // kept, not decoded per read
  REQUIRE(c.patch(kPods, "ns", "a", PatchType::Merge, R"({"metadata":{"labels":{"step":"2"}}})"));
  REQUIRE(eventually([&] {
    std::lock_guard g(mu);
    return previous.size() == 2;
  }));
  std::lock_guard g(mu);
  CHECK(previous[1] == &stored->root());  // the first event's document, not a decode of it
  inf.stop();
}
