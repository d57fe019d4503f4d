// The core pipeline against the in-memory fake API server, with a framework that exists only in
// this test: pods and services are created exactly once, status follows the pods, and jobs that
// belong to another controller get no writes.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <thread>

#include <fmt/format.h>

#include "core/api/meta.h"
#include "core/controller/job_controller.h"
#include "core/controller/pod_builder.h"
#include "core/kube/fake_client.h"
#include "tests/integration/controller/echo_framework.h"
#include "tests/support/create_log.h"
#include "tests/support/eventually.h"
#include "tests/support/forwarding_client.h"
#include "tests/support/recording_sink.h"

namespace c = unitrain::controller;
namespace fw = unitrain::framework;
namespace json = unitrain::json;
namespace kube = unitrain::kube;
using json::Document;

namespace {

using unitrain::testing::echo::EchoPlugin;
using unitrain::testing::echo::kJobs;
const kube::GroupVersionResource kPods{"", "v1", "pods"};
const kube::GroupVersionResource kServices{"", "v1", "services"};

using unitrain::testing::RecordingSink;

using unitrain::testing::eventually;

Document echo_job(std::string_view name, int replicas, std::string_view run_policy = "{}") {
  return Document::parse(fmt::format(R"({{"apiVersion":"test.unitrain.io/v1","kind":"EchoJob","metadata":{{"name":"{}","namespace":"ns"}},
    "spec":{{"runPolicy":{},"echoReplicaSpecs":{{"Worker":{{"replicas":{},"template":{{"spec":{{"containers":[{{"name":"echo","image":"busybox"}}]}}}}}}}}}}}})",
                                     name, run_policy, replicas)).value();
}

size_t count_writes(const kube::FakeClient& client, kube::FakeClient::Verb verb, const std::string& resource) {
  size_t n = 0;
  for (const auto& w : client.writes())
    if (w.verb == verb && w.resource == resource) ++n;
  return n;
}

Document get(kube::FakeClient& client, const kube::GroupVersionResource& r, std::string_view name) {
  auto obj = client.get(r, "ns", name);
  REQUIRE(obj);
  return std::move(*obj);
}

void set_phase(kube::FakeClient& client, std::string_view pod, std::string_view phase) {
  auto obj = get(client, kPods, pod);
  REQUIRE(json::set_string(obj, "/status/phase", phase));
  REQUIRE(client.update_status(kPods, "ns", obj.root()));
}

std::string last_condition(kube::FakeClient& client, std::string_view job) {
  auto obj = client.get(kJobs, "ns", job);
  if (!obj) return "";
  const json::Value* conds = json::find(obj->root(), "/status/conditions");
  if (!conds || !conds->IsArray() || conds->Empty()) return "";
  const json::Value& last = (*conds)[conds->Size() - 1];
  return fmt::format("{}={}", json::get_string(last, "/type").value_or(""), json::get_string(last, "/status").value_or(""));
}

struct Fixture {
  kube::FakeClient client;
  kube::RealClock clock;
  RecordingSink events;
  std::unique_ptr<c::JobController> controller;

  void start(c::JobControllerOptions options = {}) {
    controller = std::make_unique<c::JobController>(client, clock, events, std::make_unique<EchoPlugin>(), std::move(options));
    controller->start();
    REQUIRE(controller->wait_for_sync(std::chrono::seconds(5)));
  }
};

}  // namespace

TEST_CASE("controller: pods and services are created once and status follows them to Succeeded") {
  Fixture f;
  f.client.seed(kJobs, echo_job("train", 3).root());
  f.start();
  REQUIRE(eventually([&] { return count_writes(f.client, kube::FakeClient::Verb::Create, "pods") == 3; }));
  REQUIRE(eventually([&] { return count_writes(f.client, kube::FakeClient::Verb::Create, "services") == 3; }));
  auto pod = get(f.client, kPods, "train-worker-1");
  CHECK(json::get_string(pod.root(), "/metadata/annotations/echo-index") == "1");
  CHECK(json::get_string(pod.root(), "/spec/restartPolicy") == "Never");
  CHECK(unitrain::api::is_controlled_by(pod.root(), json::get_string(get(f.client, kJobs, "train").root(), "/metadata/uid").value_or("")));
  REQUIRE(eventually([&] { return last_condition(f.client, "train") == "Created=True"; }));

  for (auto p : {"train-worker-0", "train-worker-1", "train-worker-2"}) set_phase(f.client, p, "Running");
  REQUIRE(eventually([&] { return last_condition(f.client, "train") == "Running=True"; }));
  for (auto p : {"train-worker-0", "train-worker-1", "train-worker-2"}) set_phase(f.client, p, "Succeeded");
  REQUIRE(eventually([&] { return last_condition(f.client, "train") == "Succeeded=True"; }));
  auto job = get(f.client, kJobs, "train");
  CHECK(json::get_int(job.root(), "/status/replicaStatuses/Worker/succeeded") == 3);
  CHECK(json::find(job.root(), "/status/completionTime"));
  CHECK(json::find(job.root(), "/status/startTime"));
  // Running was flipped to False when the job succeeded.
  const json::Value& conds = *json::find(job.root(), "/status/conditions");
  bool running_false = false;
  for (const auto& cond : conds.GetArray())
    if (json::get_string(cond, "/type") == "Running") running_false = json::get_string(cond, "/status") == "False";
  CHECK(running_false);

  // Nothing was created twice, and a finished job with cleanPodPolicy None keeps its pods.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(count_writes(f.client, kube::FakeClient::Verb::Create, "pods") == 3);
  CHECK(count_writes(f.client, kube::FakeClient::Verb::Delete, "pods") == 0);
  CHECK(eventually([&] { return f.controller->counters()["ns"].successful == 1; }));
  CHECK(eventually([&] { return f.controller->counters()["ns"].created == 1; }));
}

namespace {
// Notes how many passes had ended when each status write of the controller went out.
class StatusWriteProbe : public unitrain::testing::ForwardingClient {
 public:
  using ForwardingClient::ForwardingClient;
  std::function<uint64_t()> passes;
  std::atomic<uint64_t> status_writes{0}, passes_at_last_write{0};

  kube::ApiResult<Document> update_status(const kube::GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                          const kube::WriteOptions& opts = {}) override {
    auto written = inner_.update_status(r, ns, obj, opts);
    if (written && passes) {
      passes_at_last_write = passes();
      ++status_writes;
    }
    return written;
  }
};
}  // namespace

TEST_CASE("controller: the echo of a pass's own status write queues no pass when nothing would change, another writer's update does") {
  kube::FakeClient server;
  StatusWriteProbe client(server);
  kube::RealClock clock;
  RecordingSink events;
  server.seed(kJobs, echo_job("solo", 1).root());
  c::JobController controller(client, clock, events, std::make_unique<EchoPlugin>(), {});
  client.passes = [&] { return controller.reconcile_stats().total; };
  controller.start();
  REQUIRE(controller.wait_for_sync(std::chrono::seconds(5)));
  REQUIRE(eventually([&] { return last_condition(server, "solo") == "Created=True"; }));

  set_phase(server, "solo-worker-0", "Running");
  REQUIRE(eventually([&] { return last_condition(server, "solo") == "Running=True"; }));
  // The pass that wrote Running is the last one: its write's echo (the job's only change since)
  // queues none. Before, that echo queued one more pass, which found nothing to do.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // past the queue's 100 ms settle
  CHECK(client.status_writes == 2);
  CHECK(controller.reconcile_stats().total == client.passes_at_last_write + 1);
  CHECK(controller.reconcile_stats().settled_echoes >= 1);

  // An update of the job by another writer is no echo: it gets its pass.
  const uint64_t before = controller.reconcile_stats().total;
  auto job = get(server, kJobs, "solo");
  REQUIRE(json::set_string(job, "/metadata/labels/team", "vision"));
  REQUIRE(server.update(kJobs, "ns", job.root()));
  CHECK(eventually([&] { return controller.reconcile_stats().total == before + 1; }));

  // The job still runs to its end on its pods' changes; with cleanPodPolicy None and no TTL the
  // finished-job step has nothing to do, so the Succeeded write's echo queues no pass either.
  set_phase(server, "solo-worker-0", "Succeeded");
  REQUIRE(eventually([&] { return last_condition(server, "solo") == "Succeeded=True"; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  CHECK(client.status_writes == 3);
  CHECK(controller.reconcile_stats().total == client.passes_at_last_write + 1);
  controller.stop();
}

TEST_CASE("controller: a job managed by another controller gets no writes") {
  Fixture f;
  f.client.seed(kJobs, echo_job("theirs", 2, R"({"managedBy":"kueue.x-k8s.io/multikueue"})").root());
  f.client.clear_writes();
  f.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(f.client.writes().empty());
  CHECK(f.controller->reconcile_stats().total >= 1);
}

TEST_CASE("controller: a job without managedBy is left alone when the operator gives it to another module") {
  Fixture f;
  f.client.seed(kJobs, echo_job("unset", 1).root());
  f.client.seed(kJobs, echo_job("ours", 1, R"({"managedBy":"kubeflow.org/training-operator"})").root());
  f.client.clear_writes();
  c::JobControllerOptions options;
  options.owns_unset_managed_by = false;
  f.start(options);
  REQUIRE(eventually([&] { return last_condition(f.client, "ours") == "Created=True"; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(last_condition(f.client, "unset").empty());
  for (const auto& w : f.client.writes()) CHECK(w.name.rfind("unset", 0) != 0);
}

TEST_CASE("controller: an invalid job fails with the field errors and creates nothing") {
  Fixture f;
  auto job = Document::parse(R"({"apiVersion":"test.unitrain.io/v1","kind":"EchoJob","metadata":{"name":"bad","namespace":"ns"},"spec":{"echoReplicaSpecs":{}}})").value();
  f.client.seed(kJobs, job.root());
  f.start();
  REQUIRE(eventually([&] { return last_condition(f.client, "bad") == "Failed=True"; }));
  auto obj = get(f.client, kJobs, "bad");
  const json::Value& conds = *json::find(obj.root(), "/status/conditions");
  const json::Value& failed = conds[conds.Size() - 1];
  CHECK(json::get_string(failed, "/reason") == "EchoJobFailedValidation");
  CHECK(json::get_string(failed, "/message") ==
        "EchoJob.test.unitrain.io \"bad\" is invalid: spec.echoReplicaSpecs[Worker]: Required value: must be present");
  CHECK(count_writes(f.client, kube::FakeClient::Verb::Create, "pods") == 0);
}

TEST_CASE("controller: cleanPodPolicy All deletes pods and their services when the job fails") {
  Fixture f;
  f.client.seed(kJobs, echo_job("cleanup", 2, R"({"cleanPodPolicy":"All"})").root());
  f.start();
  REQUIRE(eventually([&] { return count_writes(f.client, kube::FakeClient::Verb::Create, "pods") == 2; }));
  set_phase(f.client, "cleanup-worker-0", "Running");
  set_phase(f.client, "cleanup-worker-1", "Failed");
  REQUIRE(eventually([&] { return last_condition(f.client, "cleanup") == "Failed=True"; }));
  REQUIRE(eventually([&] { return count_writes(f.client, kube::FakeClient::Verb::Delete, "pods") == 2; }));
  REQUIRE(eventually([&] { return count_writes(f.client, kube::FakeClient::Verb::Delete, "services") == 2; }));
  CHECK(eventually([&] { return f.controller->counters()["ns"].failed == 1; }));
}

TEST_CASE("controller: suspend deletes pods and services, resume recreates them") {
  Fixture f;
  f.client.seed(kJobs, echo_job("pause", 2).root());
  f.start();
  REQUIRE(eventually([&] { return count_writes(f.client, kube::FakeClient::Verb::Create, "pods") == 2; }));
  auto job = get(f.client, kJobs, "pause");
  REQUIRE(json::set_bool(job, "/spec/runPolicy/suspend", true));
  REQUIRE(f.client.update(kJobs, "ns", job.root()));
  REQUIRE(eventually([&] { return last_condition(f.client, "pause") == "Suspended=True"; }));
  REQUIRE(eventually([&] { return count_writes(f.client, kube::FakeClient::Verb::Delete, "pods") == 2; }));
  REQUIRE(eventually([&] { return count_writes(f.client, kube::FakeClient::Verb::Delete, "services") == 2; }));
  job = get(f.client, kJobs, "pause");
  REQUIRE(json::set_bool(job, "/spec/runPolicy/suspend", false));
  REQUIRE(f.client.update(kJobs, "ns", job.root()));
  REQUIRE(eventually([&] { return count_writes(f.client, kube::FakeClient::Verb::Create, "pods") == 4; }));
  REQUIRE(eventually([&] {
    auto obj = f.client.get(kJobs, "ns", "pause");
    if (!obj) return false;
    for (const auto& cond : json::find(obj->root(), "/status/conditions")->GetArray())
      if (json::get_string(cond, "/type") == "Suspended") return json::get_string(cond, "/status") == "False";
    return false;
  }));
}

TEST_CASE("controller: backoffLimit counts pods re-created for restart, not only in-place restarts") {
  Fixture f;
  auto job = echo_job("retry", 1, R"({"backoffLimit":2})");
  REQUIRE(json::set_string(job, "/spec/echoReplicaSpecs/Worker/restartPolicy", "ExitCode"));
  f.client.seed(kJobs, job.root());
  f.start();
  for (int attempt = 1; attempt <= 2; ++attempt) {
    INFO("attempt " << attempt);
    REQUIRE(eventually([&] { return count_writes(f.client, kube::FakeClient::Verb::Create, "pods") == static_cast<size_t>(attempt); }));
    auto pod = get(f.client, kPods, "retry-worker-0");
    REQUIRE(json::set_string(pod, "/status/phase", "Failed"));
    auto statuses = Document::parse(R"([{"name":"echo","restartCount":0,"state":{"terminated":{"exitCode":137}}}])").value();
    REQUIRE(json::set(pod, "/status/containerStatuses", json::clone(statuses.root(), pod.alloc())));
    REQUIRE(f.client.update_status(kPods, "ns", pod.root()));
    const bool deleted = eventually([&] { return count_writes(f.client, kube::FakeClient::Verb::Delete, "pods") == static_cast<size_t>(attempt); });
    if (!deleted) {
      for (const auto& e : f.events.events()) UNSCOPED_INFO(e);
      for (const auto& w : f.client.writes()) UNSCOPED_INFO(static_cast<int>(w.verb) << " " << w.resource << " " << w.name);
      auto st = f.controller->reconcile_stats();
      UNSCOPED_INFO("reconciles " << st.total << " errors " << st.errors);
    }
    REQUIRE(deleted);
  }
  REQUIRE(eventually([&] { return last_condition(f.client, "retry") == "Failed=True"; }));
  CHECK(count_writes(f.client, kube::FakeClient::Verb::Create, "pods") == 2);  // no third attempt
  auto obj = get(f.client, kJobs, "retry");
  const json::Value& conds = *json::find(obj.root(), "/status/conditions");
  CHECK(json::get_string(conds[conds.Size() - 1], "/message") ==
        "Job retry has failed because it has reached the specified backoff limit");
}

TEST_CASE("controller: start_caches syncs without reconciling, start() then reconciles, stop() of a follower is prompt") {
  kube::FakeClient client;
  kube::RealClock clock;
  RecordingSink events;
  client.seed(kJobs, echo_job("standby", 2).root());
  client.clear_writes();
  SECTION("a follower that becomes leader") {
    c::JobController controller(client, clock, events, std::make_unique<EchoPlugin>(), c::JobControllerOptions{});
    controller.start_caches();
    REQUIRE(controller.wait_for_sync(std::chrono::seconds(5)));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(client.writes().empty());
    CHECK(controller.reconcile_stats().total == 0);
    CHECK(controller.queue_metrics().depth == 1);  // the job waits for a leader
    controller.start();
    REQUIRE(eventually([&] { return count_writes(client, kube::FakeClient::Verb::Create, "pods") == 2; }));
    controller.stop();
  }
  SECTION("a follower that stops with keys queued does not wait for a drain") {
    c::JobController controller(client, clock, events, std::make_unique<EchoPlugin>(), c::JobControllerOptions{});
    controller.start_caches();
    REQUIRE(controller.wait_for_sync(std::chrono::seconds(5)));
    REQUIRE(eventually([&] { return controller.queue_metrics().depth == 1; }));
    auto t0 = std::chrono::steady_clock::now();
    controller.stop();
    // A drain would wait its full 30 s: nothing takes keys from a follower's queue.
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
    CHECK(client.writes().empty());
  }
}

namespace {
// Services cannot be listed (as when a CRD is missing): that informer never syncs.
class ServicesUnlistable final : public unitrain::testing::ForwardingClient {
 public:
  using ForwardingClient::ForwardingClient;
  kube::ApiResult<Document> list(const kube::GroupVersionResource& r, std::string_view ns,
                                 const kube::ListOptions& opts) override {
    if (r == kServices) {
      kube::ApiError e;
      e.reason = kube::ApiError::Reason::NotFound;
      e.code = 404;
      e.message = "the server could not find the requested resource";
      return unitrain::fail(std::move(e));
    }
    return inner_.list(r, ns, opts);
  }
};
}  // namespace

TEST_CASE("controller: stop() of a leader whose caches never synced is prompt") {
  kube::FakeClient client;
  kube::RealClock clock;
  RecordingSink events;
  client.seed(kJobs, echo_job("unsynced", 2).root());
  client.clear_writes();
  ServicesUnlistable no_services(client);
  c::JobController controller(no_services, clock, events, std::make_unique<EchoPlugin>(), c::JobControllerOptions{});
  controller.start();
  REQUIRE(eventually([&] { return controller.queue_metrics().depth == 1; }));
  CHECK_FALSE(controller.wait_for_sync(std::chrono::milliseconds(0)));
  auto t0 = std::chrono::steady_clock::now();
  controller.stop();
  // A drain would wait its full 30 s: the workers wait for synced caches and never take the key.
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
  CHECK(client.writes().empty());
}

namespace {
// Counts the reads of jobs: a confirmation of a cached job on the server is one GET.
class JobReads final : public unitrain::testing::ForwardingClient {
 public:
  using ForwardingClient::ForwardingClient;
  kube::ApiResult<Document> get(const kube::GroupVersionResource& r, std::string_view ns, std::string_view name) override {
    if (r == kJobs) ++job_gets;
    return inner_.get(r, ns, name);
  }
  std::atomic<int> job_gets{0};
};

// A job that ran: its status counts `active` Worker pods, none of which exists now (they went
// while no operator watched).
Document ran_job(std::string_view name, int active) {
  auto job = echo_job(name, active);
  auto status = Document::parse(fmt::format(R"({{"replicaStatuses":{{"Worker":{{"active":{}}}}}}})", active)).value();
  REQUIRE(json::set(job, "/status", json::clone(status.root(), job.alloc())));
  return job;
}
}  // namespace

TEST_CASE("controller: pods a job's status counted are created again only once the job is confirmed on the server") {
  kube::FakeClient client;
  JobReads reads(client);
  kube::RealClock clock;
  RecordingSink events;
  client.seed(kJobs, ran_job("live", 2).root());
  client.seed(kJobs, ran_job("gone", 2).root());
  client.seed(kJobs, echo_job("new", 2).root());
  client.clear_writes();
  // Passes run on this thread, one at a time: the caches are started, the workers are not.
  c::JobController controller(reads, clock, events, std::make_unique<EchoPlugin>(), c::JobControllerOptions{});
  controller.start_caches();
  REQUIRE(controller.wait_for_sync(std::chrono::seconds(5)));

  // A new job's pods are created without reading the job.
  REQUIRE_FALSE(controller.reconcile("ns/new").error);
  CHECK(count_writes(client, kube::FakeClient::Verb::Create, "pods") == 2);
  CHECK(reads.job_gets == 0);

  // The cache still holds a job the server deleted (its watch events do not arrive).
  client.pause_watch_delivery(true);
  REQUIRE(client.remove(kJobs, "ns", "gone"));
  client.clear_writes();
  auto r = controller.reconcile("ns/gone");
  CHECK_FALSE(r.error);
  CHECK(reads.job_gets == 1);
  CHECK(client.writes().empty());  // no pod, no Service, no status write
  CHECK(controller.reconcile_stats().stale_jobs == 1);

  // A live job gets its missing pods again, after one read.
  r = controller.reconcile("ns/live");
  CHECK_FALSE(r.error);
  CHECK(reads.job_gets == 2);
  CHECK(count_writes(client, kube::FakeClient::Verb::Create, "pods") == 2);
  CHECK(controller.reconcile_stats().job_confirmations == 2);
  CHECK(controller.reconcile_stats().stale_jobs == 1);
  controller.stop();
}

TEST_CASE("controller: a confirmation that fails creates nothing and the pass is retried") {
  kube::FakeClient client;
  kube::RealClock clock;
  RecordingSink events;
  client.seed(kJobs, ran_job("train", 1).root());
  client.clear_writes();
  c::JobController controller(client, clock, events, std::make_unique<EchoPlugin>(), c::JobControllerOptions{});
  controller.start_caches();
  REQUIRE(controller.wait_for_sync(std::chrono::seconds(5)));
  kube::ApiError unavailable;
  unavailable.reason = kube::ApiError::Reason::InternalError;
  unavailable.code = 500;
  unavailable.message = "etcdserver: request timed out";
  client.fail_next(kube::FakeClient::Verb::Get, unavailable);
  auto r = controller.reconcile("ns/train");
  REQUIRE(r.error);
  CHECK(r.error->code == 500);
  CHECK(client.writes().empty());
  CHECK_FALSE(controller.reconcile("ns/train").error);
  CHECK(count_writes(client, kube::FakeClient::Verb::Create, "pods") == 1);
  controller.stop();
}

namespace {

// Records every create the controller makes (CreateLog) and answers chosen creates of a
// create_all as the test says instead of (or besides) passing them on.
class CreateRecorder final : public unitrain::testing::CreateLog {
 public:
  enum class Answer {
    Refused,          // not sent: answered with `error`
    ResentAfterDrop,  // the first copy stored, then resent and answered AlreadyExists (resent)
    ResentConflict,   // resent and answered as the server answers it (an AlreadyExists of someone else's)
  };
  using CreateLog::CreateLog;

  // The next create of pod `name` in a create_all.
  void answer_once(std::string name, Answer answer, kube::ApiError error = {}) {
    std::lock_guard lock(mu_);
    answers_.insert_or_assign("pods/" + name, std::pair(answer, std::move(error)));
  }

 protected:
  std::vector<kube::CreateOutcome> send_all(const kube::GroupVersionResource& r, std::span<const Document> objects,
                                            const kube::WriteOptions& opts) override {
    std::vector<kube::CreateOutcome> out;
    for (const auto& o : objects) {
      const std::string name(unitrain::api::name_of(o.root()));
      const std::string ns(json::get_string(o.root(), "/metadata/namespace").value_or(""));
      std::optional<std::pair<Answer, kube::ApiError>> answer;
      {
        std::lock_guard lock(mu_);
        if (auto it = answers_.find(r.resource + "/" + name); it != answers_.end()) {
          answer = std::move(it->second);
          answers_.erase(it);
        }
      }
      if (!answer) {
        out.push_back({inner_.create(r, ns, o.root(), opts), false});
      } else if (answer->first == Answer::Refused) {
        out.push_back({unitrain::fail(answer->second), false});
      } else {
        if (answer->first == Answer::ResentAfterDrop) REQUIRE(inner_.create(r, ns, o.root(), opts));
        out.push_back({inner_.create(r, ns, o.root(), opts), true});
      }
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::pair<Answer, kube::ApiError>, std::less<>> answers_;
};

struct RecorderFixture {
  kube::FakeClient client;
  CreateRecorder recorder{client};
  kube::RealClock clock;
  RecordingSink events;
  std::unique_ptr<c::JobController> controller;

  void start() {
    controller = std::make_unique<c::JobController>(recorder, clock, events, std::make_unique<EchoPlugin>(), c::JobControllerOptions{});
    controller->start();
    REQUIRE(controller->wait_for_sync(std::chrono::seconds(5)));
  }
  size_t count_events(std::string_view needle) const {
    size_t n = 0;
    for (const auto& e : events.events()) n += e.find(needle) != std::string::npos;
    return n;
  }
};

const std::string kFourPods = "pods: train-worker-0 train-worker-1 train-worker-2 train-worker-3";
const std::string kFourServices = "services: train-worker-0 train-worker-1 train-worker-2 train-worker-3";

}  // namespace

TEST_CASE("controller: a pass creates its services, then its pods, each as one create_all in replica order") {
  RecorderFixture f;
  f.client.seed(kJobs, echo_job("train", 4).root());
  f.start();
  REQUIRE(eventually([&] { return count_writes(f.client, kube::FakeClient::Verb::Create, "pods") == 4; }));
  REQUIRE(eventually([&] { return last_condition(f.client, "train") == "Created=True"; }));
  // No lone create, no create on another thread: one exchange per resource, in the pass's order.
  CHECK(f.recorder.lines() == std::vector<std::string>{kFourServices, kFourPods});
  CHECK(f.count_events("Normal SuccessfulCreatePod Created pod: train-worker-") == 4);
  CHECK(f.count_events("Normal SuccessfulCreateService Created service: train-worker-") == 4);
}

TEST_CASE("controller: the 2nd of 4 pod creates fails: the others are created, the failure is the pass's error, and "
          "the next pass creates only that pod") {
  RecorderFixture f;
  f.client.seed(kJobs, echo_job("train", 4).root());
  kube::ApiError quota;
  quota.reason = kube::ApiError::Reason::Forbidden;
  quota.code = 403;
  quota.message = "exceeded quota: pods";
  f.recorder.answer_once("train-worker-1", CreateRecorder::Answer::Refused, quota);
  f.start();
  // The failed create lowered its expectation again: the retry does not wait for an ADD that
  // will never come (it would wait 5 minutes).
  REQUIRE(eventually([&] { return count_writes(f.client, kube::FakeClient::Verb::Create, "pods") == 4; }));
  REQUIRE(eventually([&] { return last_condition(f.client, "train") == "Created=True"; }));
  const auto lines = f.recorder.lines();
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == kFourServices);
  CHECK(lines[1] == kFourPods);
  CHECK(lines[2] == "pods: train-worker-1");
  CHECK(f.count_events("Warning FailedCreatePod Error creating: exceeded quota: pods") == 1);
  CHECK(f.count_events("Normal SuccessfulCreatePod Created pod: train-worker-") == 4);
}

TEST_CASE("controller: a pod create resent after its exchange broke off and answered AlreadyExists is ours: created") {
  RecorderFixture f;
  f.client.seed(kJobs, echo_job("train", 4).root());
  f.recorder.answer_once("train-worker-1", CreateRecorder::Answer::ResentAfterDrop);
  f.start();
  REQUIRE(eventually([&] { return last_condition(f.client, "train") == "Created=True"; }));
  CHECK(f.recorder.lines() == std::vector<std::string>{kFourServices, kFourPods});
  CHECK(count_writes(f.client, kube::FakeClient::Verb::Create, "pods") == 4);
  CHECK(f.count_events("Normal SuccessfulCreatePod Created pod: train-worker-1") == 1);
  CHECK(f.count_events("Warning") == 0);
  // The pass went on: the job's pods run it to Succeeded.
  for (int i = 0; i < 4; ++i) set_phase(f.client, fmt::format("train-worker-{}", i), "Succeeded");
  REQUIRE(eventually([&] { return last_condition(f.client, "train") == "Succeeded=True"; }));
}

TEST_CASE("controller: a resent pod create answered AlreadyExists for someone else's pod is a conflict, as any") {
  RecorderFixture f;
  f.client.seed(kJobs, echo_job("train", 2).root());
  f.client.seed(kPods, Document::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-worker-1","namespace":"ns"},
    "spec":{"containers":[{"name":"other","image":"busybox"}]}})").value().root());
  f.recorder.answer_once("train-worker-1", CreateRecorder::Answer::ResentConflict);
  f.start();
  REQUIRE(eventually([&] { return f.events.has("Warning FailedCreatePod Error creating: pods \"train-worker-1\" already exists"); }));
  CHECK(f.count_events("SuccessfulCreatePod Created pod: train-worker-1") == 0);
  CHECK(f.count_events("SuccessfulCreatePod Created pod: train-worker-0") == 1);
  auto foreign = get(f.client, kPods, "train-worker-1");
  CHECK(unitrain::api::owner_references_of(foreign.root()).empty());
}
