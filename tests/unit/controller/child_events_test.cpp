// Which changes to a job's children make its controller reconcile, and which go first: the
// reference operators' predicates (react() in core/controller/child_caches.h).
#include <catch2/catch.hpp>

#include "core/controller/child_caches.h"

namespace c = unitrain::controller;
namespace fw = unitrain::framework;
namespace json = unitrain::json;
using Change = c::ChildEvent::Change;
using c::ChildKind;

namespace {

// A module's descriptor and its PipelineDepartures::reconciles_on_any_child answer.
struct Module {
  fw::FrameworkDescriptor descriptor;
  bool reconciles_on_any_child = false;
};

Module training_operator() {
  Module m;
  m.descriptor.kind = "PyTorchJob";
  m.descriptor.replica_type_label = "training.kubeflow.org/replica-type";
  return m;
}

Module mpi_operator() {
  Module m;
  m.descriptor.kind = "MPIJob";
  m.descriptor.replica_type_label = "training.kubeflow.org/job-role";
  m.reconciles_on_any_child = true;
  return m;
}

json::Document child(std::string_view rv, std::string_view labels = "{}", std::string_view status = "{}") {
  return json::Document::parse(fmt::format(R"({{"metadata":{{"name":"c","namespace":"ns","resourceVersion":"{}","labels":{}}},"status":{}}})",
                                           rv, labels, status))
      .value();
}

c::ChildReaction react(const Module& m, Change change, ChildKind kind, const json::Document& obj,
                       const json::Document* previous = nullptr, bool job_cached = true, bool grandchild = false) {
  c::ChildEvent e{change, kind, obj.root(), previous ? &previous->root() : nullptr, {}, grandchild};
  return c::react(e, m.descriptor, m.reconciles_on_any_child, job_cached);
}

const std::string kWorker = R"({"training.kubeflow.org/replica-type":"worker"})";

}  // namespace

TEST_CASE("child events: training-operator reconciles on a create or delete only with the replica-type label") {
  const auto d = training_operator();
  for (auto change : {Change::Added, Change::Deleted}) {
    auto labelled = react(d, change, ChildKind::Pod, child("1", kWorker));
    CHECK(labelled.reconcile);
    CHECK(labelled.observed);
    CHECK(!labelled.status_first);
    CHECK(react(d, change, ChildKind::Service, child("1", kWorker)).observed);
    // An owned Service, ConfigMap or PodGroup without the label: nothing (upstream's predicates).
    for (auto kind : {ChildKind::Service, ChildKind::Owned, ChildKind::PodGroup}) {
      auto r = react(d, change, kind, child("1"));
      CHECK(!r.reconcile);
      CHECK(!r.observed);
    }
    // Labelled owned kinds reconcile, but no expectation waits for them.
    auto owned = react(d, change, ChildKind::Owned, child("1", kWorker));
    CHECK(owned.reconcile);
    CHECK(!owned.observed);
  }
}

TEST_CASE("child events: mpi-operator reconciles on every create and delete, grandchildren lower no expectation") {
  const auto d = mpi_operator();
  CHECK(react(d, Change::Added, ChildKind::Service, child("1")).reconcile);
  CHECK(react(d, Change::Deleted, ChildKind::Owned, child("1")).reconcile);
  CHECK(!react(d, Change::Added, ChildKind::Service, child("1")).observed);
  const std::string worker = R"({"training.kubeflow.org/job-role":"worker"})";
  CHECK(react(d, Change::Added, ChildKind::Pod, child("1", worker)).observed);
  auto launcher_pod = react(d, Change::Added, ChildKind::Pod, child("1", R"({"training.kubeflow.org/job-role":"launcher"})"),
                            nullptr, true, true);
  CHECK(launcher_pod.reconcile);
  CHECK(!launcher_pod.observed);
}

TEST_CASE("child events: an update reconciles when the resourceVersion changed and the job is cached") {
  for (const auto& d : {training_operator(), mpi_operator()}) {
    const auto before = child("1"), after = child("2"), same = child("1");
    CHECK(react(d, Change::Updated, ChildKind::Owned, after, &before).reconcile);
    CHECK(!react(d, Change::Updated, ChildKind::Owned, same, &before).reconcile);  // a resync, not a change
    CHECK(!react(d, Change::Updated, ChildKind::Owned, after, &before, false).reconcile);  // another job's, or gone
    CHECK(!react(d, Change::Updated, ChildKind::Pod, after, &before).observed);
  }
}

TEST_CASE("child events: a pod that changed phase or an owned object whose status changed goes first") {
  const auto d = training_operator();
  const auto pending = child("1", kWorker, R"({"phase":"Pending"})");
  const auto running = child("2", kWorker, R"({"phase":"Running"})");
  const auto running_again = child("3", kWorker, R"({"phase":"Running","conditions":[{"type":"Ready"}]})");
  const auto succeeded = child("4", kWorker, R"({"phase":"Succeeded"})");
  CHECK(react(d, Change::Updated, ChildKind::Pod, running, &pending).status_first);
  CHECK(react(d, Change::Updated, ChildKind::Pod, succeeded, &running_again).status_first);
  auto same_phase = react(d, Change::Updated, ChildKind::Pod, running_again, &running);
  CHECK(same_phase.reconcile);
  CHECK(!same_phase.status_first);

  const auto job_running = child("1", "{}", R"({"active":1})");
  const auto job_complete = child("2", "{}", R"({"active":0,"conditions":[{"type":"Complete","status":"True"}]})");
  const auto relabelled = child("3", R"({"a":"b"})", R"({"active":0,"conditions":[{"type":"Complete","status":"True"}]})");
  CHECK(react(mpi_operator(), Change::Updated, ChildKind::Owned, job_complete, &job_running).status_first);
  CHECK(!react(mpi_operator(), Change::Updated, ChildKind::Owned, relabelled, &job_complete).status_first);
  // Services and PodGroups only ever need more creates (a PodGroup admitted by Volcano).
  CHECK(!react(d, Change::Updated, ChildKind::PodGroup, job_complete, &job_running).status_first);
}

TEST_CASE("child events: the previous version as the caches decode it (previous_fields) gives the same answers") {
  // Children with everything a projection could drop: labels, spec, conditions, owner references.
  auto full = [](std::string_view rv, std::string_view phase, std::string_view owner_uid) {
    return json::Document::parse(fmt::format(
               R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"c","namespace":"ns","resourceVersion":"{}",)"
               R"("labels":{{"training.kubeflow.org/replica-type":"worker"}},"ownerReferences":[{{"apiVersion":"kubeflow.org/v1",)"
               R"("kind":"PyTorchJob","name":"j","uid":"{}","controller":true}}]}},"spec":{{"nodeName":"n1"}},)"
               R"("status":{{"phase":"{}","active":1,"conditions":[{{"type":"Ready","status":"True"}}]}}}})",
               rv, owner_uid, phase))
        .value();
  };
  const std::vector<json::Document> versions = [&] {
    std::vector<json::Document> v;
    v.push_back(full("1", "Pending", "u1"));
    v.push_back(full("2", "Running", "u1"));
    v.push_back(full("2", "Running", "u1"));
    v.push_back(full("3", "Succeeded", "u1"));
    v.push_back(full("4", "Succeeded", "u2"));
    return v;
  }();
  for (const auto& m : {training_operator(), mpi_operator()}) {
    for (auto kind : {ChildKind::Pod, ChildKind::Service, ChildKind::Owned, ChildKind::PodGroup}) {
      const auto fields = c::previous_fields(kind);
      REQUIRE(fields);
      for (const auto& before : versions) {
        const auto projected = json::Document::parse(before.dump(), *fields).value();
        CHECK(unitrain::api::controller_of(projected.root())->uid == unitrain::api::controller_of(before.root())->uid);
        CHECK(unitrain::api::namespace_of(projected.root()) == "ns");
        for (const auto& now : versions) {
          const auto whole = react(m, Change::Updated, kind, now, &before);
          const auto masked = react(m, Change::Updated, kind, now, &projected);
          CHECK(whole.reconcile == masked.reconcile);
          CHECK(whole.status_first == masked.status_first);
          CHECK(whole.observed == masked.observed);
        }
      }
    }
  }
}
