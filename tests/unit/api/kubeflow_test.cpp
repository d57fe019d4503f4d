#include <catch2/catch.hpp>

#include "core/api/kubeflow.h"
#include "tests/support/json.h"

namespace api = unitrain::api;
namespace json = unitrain::json;
using api::FieldPath;
using api::JobStatus;

namespace {
using unitrain::testing::doc;
template <class T>
std::string encode(const T& v) {
  json::Document out = json::Document::object();
  out.root() = v.to_json(out.alloc());
  return out.dump();
}
template <class R>
std::string errors_of(const R& r) {
  REQUIRE_FALSE(r);
  return api::aggregate(r.error());
}
api::TimePoint at(std::string_view s) { return api::parse_time(s).value(); }
}  // namespace

TEST_CASE("job status round trips byte for byte in upstream shape") {
  const std::string text =
      R"({"conditions":[{"type":"Created","status":"True","reason":"PyTorchJobCreated","message":"PyTorchJob j is created.",)"
      R"("lastUpdateTime":"2024-01-02T03:04:05Z","lastTransitionTime":"2024-01-02T03:04:05Z"},)"
      R"({"type":"Running","status":"True","reason":"PyTorchJobRunning","message":"PyTorchJob j is running.",)"
      R"("lastUpdateTime":"2024-01-02T03:04:09Z","lastTransitionTime":"2024-01-02T03:04:09Z"}],)"
      R"("replicaStatuses":{"Master":{"active":1,"selector":"training.kubeflow.org/job-name=j"},"Worker":{"active":2,"failed":1}},)"
      R"("startTime":"2024-01-02T03:04:05Z","completionTime":"2024-01-02T04:00:00Z","lastReconcileTime":"2024-01-02T03:30:00Z"})";
  auto in = doc(text);
  auto s = JobStatus::from_json(in.root());
  REQUIRE(s);
  CHECK(s->conditions.size() == 2);
  CHECK(s->replica_statuses.at("Worker").failed == 1);
  CHECK(s->to_document().dump() == text);
  auto again = JobStatus::from_json(s->to_document().root());
  REQUIRE(again);
  CHECK(*again == *s);
}

TEST_CASE("job status omits empty fields like Go omitempty") {
  JobStatus empty;
  CHECK(empty.to_document().dump() == "{}");
  JobStatus s;
  s.replica_statuses["Worker"] = {};
  s.replica_statuses["Launcher"].succeeded = 1;
  CHECK(s.to_document().dump() == R"({"replicaStatuses":{"Launcher":{"succeeded":1},"Worker":{}}})");
  api::JobCondition c{"Running", "False", "", "", std::nullopt, std::nullopt};
  CHECK(encode(c) == R"({"type":"Running","status":"False","lastUpdateTime":null,"lastTransitionTime":null})");
  auto nulls = JobStatus::from_json(doc("null").root());
  REQUIRE(nulls);
  CHECK(nulls->conditions.empty());
  auto sparse = JobStatus::from_json(doc(R"({"conditions":null,"replicaStatuses":{"Worker":null},"startTime":null})").root());
  REQUIRE(sparse);
  CHECK(sparse->replica_statuses.count("Worker") == 1);
  CHECK_FALSE(sparse->start_time);
}

TEST_CASE("replica status keeps the deprecated label selector whole") {
  auto in = doc(R"({"active":1,"labelSelector":{"matchLabels":{"a":"b"}},"selector":"a=b"})");
  auto r = api::ReplicaStatus::from_json(in.root(), FieldPath("status").child("replicaStatuses").key("Worker"));
  REQUIRE(r);
  CHECK(encode(*r) == in.dump());
}

TEST_CASE("job status decode errors name every field") {
  auto in = doc(R"({"conditions":[{"type":"Running","status":5,"lastUpdateTime":"soon"},"x"],
    "replicaStatuses":{"Worker":{"active":"1","failed":3000000000}},"startTime":7})");
  CHECK(errors_of(JobStatus::from_json(in.root())) ==
        "[status.conditions[0].status: Invalid value: 5: must be a string, "
        "status.conditions[0].lastUpdateTime: Invalid value: \"soon\": time 'soon': position 1: expected 4-digit year, "
        "status.conditions[1]: Invalid value: \"x\": must be an object, "
        "status.replicaStatuses[Worker].active: Invalid value: \"1\": must be an integer, "
        "status.replicaStatuses[Worker].failed: Invalid value: 3000000000: must be a 32-bit integer, "
        "status.startTime: Invalid value: 7: must be an RFC 3339 time string]");
  CHECK(errors_of(JobStatus::from_json(doc(R"({"conditions":{}})").root())) ==
        "status.conditions: Invalid value: {}: must be an array");
  CHECK(errors_of(JobStatus::from_json(doc("[]").root())) == "status: Invalid value: []: must be an object");
}

TEST_CASE("run policy decode and encode") {
  const std::string text =
      R"({"cleanPodPolicy":"Running","ttlSecondsAfterFinished":60,"activeDeadlineSeconds":8589934592,"backoffLimit":3,)"
      R"("schedulingPolicy":{"minAvailable":2,"queue":"q","minResources":{"cpu":"4","memory":"8Gi","nvidia.com/gpu":2},)"
      R"("priorityClass":"high","scheduleTimeoutSeconds":30},"suspend":false,"managedBy":"kubeflow.org/training-operator"})";
  auto rp = api::RunPolicy::from_json(doc(text).root(), FieldPath("spec").child("runPolicy"));
  REQUIRE(rp);
  CHECK(rp->active_deadline_seconds == 8589934592);
  REQUIRE(rp->scheduling_policy);
  CHECK(rp->scheduling_policy->min_resources->at("nvidia.com/gpu") == "2");
  CHECK(rp->suspend == false);
  // minResources is re-encoded in key order with quantities as strings.
  CHECK(encode(*rp) ==
        R"({"cleanPodPolicy":"Running","ttlSecondsAfterFinished":60,"activeDeadlineSeconds":8589934592,"backoffLimit":3,)"
        R"("schedulingPolicy":{"minAvailable":2,"queue":"q","minResources":{"cpu":"4","memory":"8Gi","nvidia.com/gpu":"2"},)"
        R"("priorityClass":"high","scheduleTimeoutSeconds":30},"suspend":false,"managedBy":"kubeflow.org/training-operator"})");
  auto empty = api::RunPolicy::from_json(doc("{}").root(), FieldPath("spec").child("runPolicy"));
  REQUIRE(empty);
  CHECK(encode(*empty) == "{}");
  api::RunPolicy with_empty_sched;
  with_empty_sched.scheduling_policy.emplace();
  with_empty_sched.scheduling_policy->min_resources.emplace();
  CHECK(encode(with_empty_sched) == R"({"schedulingPolicy":{"minResources":{}}})");
}

TEST_CASE("run policy wrong types give k8s-style field errors") {
  FieldPath rp = FieldPath("spec").child("runPolicy");
  CHECK(errors_of(api::RunPolicy::from_json(doc(R"({"backoffLimit":"x"})").root(), rp)) ==
        R"(spec.runPolicy.backoffLimit: Invalid value: "x": must be an integer)");
  CHECK(errors_of(api::RunPolicy::from_json(doc(R"({"backoffLimit":1.5})").root(), rp)) ==
        "spec.runPolicy.backoffLimit: Invalid value: 1.5: must be an integer");
  CHECK(errors_of(api::RunPolicy::from_json(doc(R"({"suspend":"true","cleanPodPolicy":1})").root(), rp)) ==
        "[spec.runPolicy.cleanPodPolicy: Invalid value: 1: must be a string, "
        R"(spec.runPolicy.suspend: Invalid value: "true": must be a boolean])");
  CHECK(errors_of(api::RunPolicy::from_json(
            doc(R"({"schedulingPolicy":{"minAvailable":-1.0,"minResources":{"cpu":true}}})").root(), rp)) ==
        "[spec.runPolicy.schedulingPolicy.minAvailable: Invalid value: -1: must be an integer, "
        "spec.runPolicy.schedulingPolicy.minResources[cpu]: Invalid value: true: must be a quantity (string or number)]");
  CHECK(errors_of(api::RunPolicy::from_json(doc(R"({"activeDeadlineSeconds":18446744073709551615})").root(), rp)) ==
        "spec.runPolicy.activeDeadlineSeconds: Invalid value: 18446744073709551615: must be a 64-bit integer");
  CHECK(errors_of(api::RunPolicy::from_json(doc(R"({"schedulingPolicy":"gang"})").root(), rp)) ==
        R"(spec.runPolicy.schedulingPolicy: Invalid value: "gang": must be an object)");
}

TEST_CASE("replica specs decode, keep the template whole and encode like Go") {
  const std::string text =
      R"({"Worker":{"replicas":2,"template":{"metadata":{"labels":{"x":"y"}},"spec":{"containers":[{"name":"pytorch",)"
      R"("image":"i","x-unknown":{"k":[1,2]}}]}},"restartPolicy":"OnFailure"},"Master":{"replicas":1,"template":{"spec":{}}}})";
  auto specs = api::replica_specs_from_json(doc(text).root(), FieldPath("spec").child("pytorchReplicaSpecs"));
  REQUIRE(specs);
  REQUIRE(specs->size() == 2);
  CHECK(specs->begin()->first == "Master");  // key order, as Go encodes maps
  CHECK(specs->at("Worker").replicas == 2);
  CHECK(specs->at("Worker").restart_policy == api::restart_policy::kOnFailure);
  CHECK(json::get_string(specs->at("Worker").pod_template.root(), "/spec/containers/0/image") == "i");
  json::Document out = json::Document::object();
  out.root() = api::replica_specs_to_json(*specs, out.alloc());
  CHECK(out.dump() ==
        R"({"Master":{"replicas":1,"template":{"spec":{}}},"Worker":{"replicas":2,"template":{"metadata":{"labels":{"x":"y"}},)"
        R"("spec":{"containers":[{"name":"pytorch","image":"i","x-unknown":{"k":[1,2]}}]}},"restartPolicy":"OnFailure"}})");
  api::ReplicaSpec bare;
  CHECK(encode(bare) == R"({"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":null}}})");

  auto bad = api::replica_specs_from_json(
      doc(R"({"Worker":{"replicas":"2","template":[],"restartPolicy":false},"PS":7,"Chief":null})").root(),
      FieldPath("spec").child("tfReplicaSpecs"));
  CHECK(errors_of(bad) ==
        "[spec.tfReplicaSpecs[Worker].replicas: Invalid value: \"2\": must be an integer, "
        "spec.tfReplicaSpecs[Worker].template: Invalid value: []: must be an object, "
        "spec.tfReplicaSpecs[Worker].restartPolicy: Invalid value: false: must be a string, "
        "spec.tfReplicaSpecs[PS]: Invalid value: 7: must be an object]");
  auto with_null = api::replica_specs_from_json(doc(R"({"Chief":null})").root(), FieldPath("spec").child("tfReplicaSpecs"));
  REQUIRE(with_null);
  CHECK(with_null->count("Chief") == 1);
}

TEST_CASE("condition helpers") {
  JobStatus s;
  auto t0 = at("2024-01-02T03:04:05Z");
  CHECK_FALSE(s.is_finished());
  CHECK(s.set_condition("Created", "TFJobCreated", "TFJob j is created.", t0));
  CHECK(s.has_condition("Created"));
  CHECK_FALSE(s.has_condition("Running"));
  CHECK(s.update_condition("Running", "False", "TFJobSuspended", "TFJob j is suspended.", t0));
  CHECK_FALSE(s.is_running());
  REQUIRE(s.condition("Running"));
  CHECK(s.condition("Running")->status == "False");
  CHECK_FALSE(s.condition("Succeeded"));
  CHECK(s.set_condition("Succeeded", "TFJobSucceeded", "done", t0));
  CHECK(s.is_succeeded());
  CHECK(s.is_finished());
  CHECK_FALSE(s.is_failed());
}

TEST_CASE("set_condition follows the training-operator rules") {
  auto t0 = at("2024-01-02T03:04:05.700Z");
  auto t1 = at("2024-01-02T03:05:00Z");
  auto t2 = at("2024-01-02T03:06:00Z");
  JobStatus s;
  CHECK(s.set_condition("Created", "JobCreated", "created", t0));
  REQUIRE(s.conditions.size() == 1);
  CHECK(s.conditions[0].last_update_time == at("2024-01-02T03:04:05Z"));  // stored in whole seconds
  CHECK(s.conditions[0].last_transition_time == s.conditions[0].last_update_time);

  CHECK(s.set_condition("Running", "JobRunning", "running", t1));
  // Same status and reason: nothing changes, not even the message.
  CHECK_FALSE(s.set_condition("Running", "JobRunning", "other message", t2));
  CHECK(s.conditions[1].message == "running");

  // Restarting removes Running and is appended last.
  CHECK(s.set_condition("Restarting", "JobRestarting", "restarting", t1));
  REQUIRE(s.conditions.size() == 2);
  CHECK(s.conditions[1].type == "Restarting");
  // Running removes Restarting.
  CHECK(s.set_condition("Running", "JobRunning", "running again", t2));
  REQUIRE(s.conditions.size() == 2);
  CHECK(s.conditions[1].type == "Running");
  CHECK(s.conditions[1].last_transition_time == t2);

  // Same status, new reason: lastTransitionTime kept, lastUpdateTime moves, entry moves last.
  CHECK(s.set_condition("Created", "Recreated", "again", t2));
  CHECK(s.conditions.back().type == "Created");
  CHECK(s.conditions.back().last_transition_time == at("2024-01-02T03:04:05Z"));
  CHECK(s.conditions.back().last_update_time == t2);

  // Succeeded flips Running to False in place, keeping reason, message and times.
  CHECK(s.set_condition("Succeeded", "JobSucceeded", "ok", t2));
  REQUIRE(s.conditions.size() == 3);
  CHECK(s.conditions[0].type == "Running");
  CHECK(s.conditions[0].status == "False");
  CHECK(s.conditions[0].reason == "JobRunning");
  CHECK(s.conditions[0].last_transition_time == t2);
  // Upstream quirk kept: Succeeded does not block a later Failed.
  CHECK(s.set_condition("Failed", "JobFailed", "failed", t2));
  CHECK(s.is_succeeded());
  CHECK(s.is_failed());
  // Failed=True is terminal: nothing changes any more.
  const auto before = s;
  CHECK_FALSE(s.set_condition("Running", "JobRunning", "late", t2));
  CHECK_FALSE(s.update_condition("Failed", "False", "x", "y", t2));
  CHECK(s == before);
}

TEST_CASE("set_condition with mpi-operator rules") {
  auto t0 = at("2024-01-02T03:04:05Z");
  JobStatus s;
  CHECK(s.update_condition("Failed", "True", "MPIJobEvicted", "1/2 workers are evicted", t0, api::ConditionRules::MPIOperator));
  CHECK(s.update_condition("Running", "True", "MPIJobRunning", "running", t0, api::ConditionRules::MPIOperator));
  CHECK(s.update_condition("Succeeded", "True", "MPIJobSucceeded", "done", t0, api::ConditionRules::MPIOperator));
  REQUIRE(s.conditions.size() == 3);
  CHECK(s.conditions[0].type == "Failed");
  CHECK(s.conditions[0].status == "False");
  CHECK(s.conditions[1].status == "False");
  CHECK(s.is_succeeded());
  CHECK_FALSE(s.is_failed());
  // The training-operator rules would not have let Running in after Failed.
  JobStatus t;
  CHECK(t.set_condition("Failed", "F", "f", t0));
  CHECK_FALSE(t.set_condition("Running", "R", "r", t0));
}

TEST_CASE("job-level status and run policy accessors") {
  auto job = doc(R"({"apiVersion":"kubeflow.org/v1","kind":"TFJob","metadata":{"name":"j"},)"
                 R"("spec":{"runPolicy":{"backoffLimit":2},"x-unknown":1},"status":{"startTime":"2024-01-02T03:04:05Z"},"z":0})");
  auto rp = api::run_policy_of(job.root());
  REQUIRE(rp);
  CHECK(rp->backoff_limit == 2);
  auto st = api::job_status_of(job.root());
  REQUIRE(st);
  CHECK(st->start_time == at("2024-01-02T03:04:05Z"));
  st->set_condition("Created", "TFJobCreated", "TFJob j is created.", at("2024-01-02T03:04:06Z"));
  REQUIRE(api::set_job_status(job, *st));
  CHECK(job.dump() ==
        R"({"apiVersion":"kubeflow.org/v1","kind":"TFJob","metadata":{"name":"j"},"spec":{"runPolicy":{"backoffLimit":2},"x-unknown":1},)"
        R"("status":{"conditions":[{"type":"Created","status":"True","reason":"TFJobCreated","message":"TFJob j is created.",)"
        R"("lastUpdateTime":"2024-01-02T03:04:06Z","lastTransitionTime":"2024-01-02T03:04:06Z"}],"startTime":"2024-01-02T03:04:05Z"},"z":0})");

  auto fresh = doc(R"({"kind":"TFJob"})");
  CHECK(api::job_status_of(fresh.root())->conditions.empty());
  CHECK(api::run_policy_of(fresh.root())->backoff_limit == std::nullopt);
  REQUIRE(api::set_job_status(fresh, api::JobStatus{}));
  CHECK(fresh.dump() == R"({"kind":"TFJob","status":{}})");
  CHECK(errors_of(api::run_policy_of(doc(R"({"spec":{"runPolicy":{"backoffLimit":"x"}}})").root())) ==
        R"(spec.runPolicy.backoffLimit: Invalid value: "x": must be an integer)");
  CHECK(errors_of(api::run_policy_of(doc(R"({"spec":[]})").root())) == "spec: Invalid value: []: must be an object");
  CHECK(errors_of(api::job_status_of(doc(R"({"status":{"startTime":"x"}})").root())).rfind("status.startTime: Invalid value", 0) == 0);
  json::Document arr = json::Document::array();
  CHECK_FALSE(api::set_job_status(arr, api::JobStatus{}));
}
