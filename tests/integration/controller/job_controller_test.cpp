// The core pipeline against the in-memory fake API server, with a framework that exists only in
// this test: pods and services are created exactly once, status follows the pods, and jobs that
// belong to another controller get no writes.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "core/api/meta.h"
#include "core/controller/job_controller.h"
#include "core/controller/pod_builder.h"
#include "core/kube/fake_client.h"

namespace c = unitrain::controller;
namespace fw = unitrain::framework;
namespace json = unitrain::json;
namespace kube = unitrain::kube;
using json::Document;

namespace {

const kube::GroupVersionResource kJobs{"test.unitrain.io", "v1", "echojobs"};
const kube::GroupVersionResource kPods{"", "v1", "pods"};
const kube::GroupVersionResource kServices{"", "v1", "services"};

fw::FrameworkDescriptor echo_descriptor() {
  fw::FrameworkDescriptor d;
  d.name = "test.unitrain.io/echojob";
  d.group = "test.unitrain.io";
  d.version = "v1";
  d.kind = "EchoJob";
  d.plural = "echojobs";
  d.replica_specs_field = "echoReplicaSpecs";
  d.replica_types = {"Worker"};
  d.default_container = "echo";
  d.controller_name = "echojob-controller";
  d.managed_by = {"kubeflow.org/training-operator"};
  return d;
}

// A framework of one replica type: a headless service per pod, Running while any pod runs,
// Succeeded when every pod succeeded, Failed when one failed under restartPolicy Never.
class EchoPlugin final : public fw::FrameworkPlugin {
 public:
  const fw::FrameworkDescriptor& descriptor() const override { return d_; }
  void set_defaults(Document& job) const override {
    if (json::find(job.root(), "/spec/echoReplicaSpecs/Worker") &&
        !json::find(job.root(), "/spec/echoReplicaSpecs/Worker/restartPolicy"))
      (void)json::set_string(job, "/spec/echoReplicaSpecs/Worker/restartPolicy", "Never");
  }
  fw::Validation validate(const json::Value*, const json::Value& job) const override {
    fw::Validation v;
    if (!json::find(job, "/spec/echoReplicaSpecs/Worker"))
      v.errors.push_back(unitrain::api::FieldError::required(unitrain::api::FieldPath("spec").child("echoReplicaSpecs").key("Worker"), "must be present"));
    return v;
  }
  std::vector<fw::PodSlot> pod_slots(const json::Value& job) const override {
    std::vector<fw::PodSlot> out;
    for (int32_t i = 0; i < c::replicas_of(d_, job, "Worker"); ++i) out.push_back({"Worker", i});
    return out;
  }
  unitrain::Status decorate_pod(const json::Value&, const fw::PodSlot& s, Document& pod) const override {
    return json::set_string(pod, "/metadata/annotations/echo-index", std::to_string(s.index));
  }
  unitrain::Result<std::vector<fw::DesiredObject>> desired_objects(const json::Value& job, const fw::Observed&) const override {
    std::vector<fw::DesiredObject> out;
    if (json::get_bool(job, "/spec/runPolicy/suspend").value_or(false)) return out;
    const std::string name(json::get_string(job, "/metadata/name").value_or(""));
    for (const auto& s : pod_slots(job)) {
      fw::DesiredObject o;
      o.resource = kServices;
      const auto labels = c::replica_labels(d_, name, "Worker", s.index);
      o.object = Document::parse(fmt::format(R"({{"apiVersion":"v1","kind":"Service","metadata":{{"name":"{}","labels":{}}},"spec":{{"clusterIP":"None","selector":{}}}}})",
                                             c::replica_name(name, "Worker", s.index), labels.dump(), labels.dump())).value();
      out.push_back(std::move(o));
    }
    return out;
  }
  fw::StatusProposal compute_status(const json::Value& job, const fw::Observed& observed) const override {
    fw::StatusProposal p;
    auto& w = p.replica_statuses["Worker"];
    for (const auto* pod : observed.pods) {
      auto phase = json::get_string(*pod, "/status/phase").value_or("");
      if (phase == "Running") ++w.active;
      if (phase == "Succeeded") ++w.succeeded;
      if (phase == "Failed") ++w.failed;
    }
    const std::string name(json::get_string(job, "/metadata/name").value_or(""));
    const int32_t n = c::replicas_of(d_, job, "Worker");
    if (w.succeeded == n) {
      p.conditions.push_back({"Succeeded", "True", "EchoJobSucceeded", fmt::format("EchoJob {} is successfully completed.", name)});
      p.set_completion_time = true;
    } else if (w.failed > 0 && json::get_string(job, "/spec/echoReplicaSpecs/Worker/restartPolicy") == "Never") {
      p.conditions.push_back({"Failed", "True", "EchoJobFailed", fmt::format("EchoJob {} is failed because {} Worker replica(s) failed.", name, w.failed)});
      p.set_completion_time = true;
    } else if (w.active > 0) {
      p.conditions.push_back({"Running", "True", "EchoJobRunning", fmt::format("EchoJob {} is running.", name)});
    }
    return p;
  }
  std::vector<kube::GroupVersionResource> pruned_resources() const override { return {kServices}; }

 private:
  fw::FrameworkDescriptor d_ = echo_descriptor();
};

class RecordingSink final : public c::EventSink {
 public:
  void event(const json::Value&, std::string_view type, std::string_view reason, std::string message) override {
    std::lock_guard lock(mu_);
    events_.push_back(fmt::format("{} {} {}", type, reason, message));
  }
  std::vector<std::string> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> events_;
};

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

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
  CHECK(f.controller->counters()["ns"].successful == 1);
  CHECK(f.controller->counters()["ns"].created == 1);
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
  CHECK(f.controller->counters()["ns"].failed == 1);
}

TEST_CASE("controller: suspend deletes pods and services; resume recreates them") {
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
