#include <catch2/catch.hpp>

#include "core/gang/gang.h"

namespace gang = unitrain::gang;
namespace json = unitrain::json;
using json::Document;

namespace {

Document parse(std::string_view text) {
  auto d = Document::parse(text);
  REQUIRE(d);
  return std::move(*d);
}

gang::PodGroupRequest request() {
  gang::PodGroupRequest r;
  r.ns = "team";
  r.name = "job";
  r.annotations = parse(R"({"a":"b"})");
  r.owner_reference = parse(R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","name":"job","uid":"u1","controller":true,"blockOwnerDeletion":true})");
  r.min_member = 3;
  return r;
}

}  // namespace

TEST_CASE("gang backend selection follows --gang-scheduler-name") {
  CHECK(gang::make_backend("") == nullptr);
  auto v = gang::make_backend("Volcano");
  REQUIRE(v);
  CHECK(v->name() == "volcano");
  CHECK(v->scheduler_name() == "volcano");
  CHECK(v->resource().group == "scheduling.volcano.sh");
  auto sp = gang::make_backend("scheduler-plugins-scheduler");
  REQUIRE(sp);
  CHECK(sp->name() == "scheduler-plugins");
  CHECK(sp->scheduler_name() == "scheduler-plugins-scheduler");
  CHECK(sp->resource().version == "v1alpha1");
}

TEST_CASE("volcano PodGroup: queue defaults, an existing queue is kept, owner and annotations copied") {
  auto v = gang::make_backend("volcano");
  auto r = request();
  r.priority_class = "high";
  r.min_resources = gang::ResourceList{{"cpu", unitrain::api::Quantity::parse("1500m").value()}};
  auto pg = v->desired(r, nullptr);
  CHECK(pg.dump() ==
        R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"PodGroup","metadata":{"name":"job","namespace":"team",)"
        R"("annotations":{"a":"b"},"ownerReferences":[{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","name":"job",)"
        R"("uid":"u1","controller":true,"blockOwnerDeletion":true}]},"spec":{"minMember":3,"queue":"default",)"
        R"("priorityClassName":"high","minResources":{"cpu":"1500m"}}})");
  auto existing = parse(R"({"spec":{"minMember":3,"queue":"research","priorityClassName":"high","minResources":{"cpu":"1.5"}}})");
  auto kept = v->desired(r, &existing.root());
  CHECK(json::get_string(kept.root(), "/spec/queue") == "research");
  CHECK_FALSE(v->spec_differs(existing.root(), kept.root()));  // 1.5 == 1500m
  r.min_member = 4;
  CHECK(v->spec_differs(existing.root(), v->desired(r, &existing.root()).root()));
}

TEST_CASE("volcano holds pod creation until the PodGroup leaves Pending") {
  auto v = gang::make_backend("volcano");
  CHECK_FALSE(v->admits_pod_creation(nullptr));
  CHECK_FALSE(v->admits_pod_creation(&parse(R"({"status":{}})").root()));
  CHECK_FALSE(v->admits_pod_creation(&parse(R"({"status":{"phase":"Pending"}})").root()));
  CHECK(v->admits_pod_creation(&parse(R"({"status":{"phase":"Inqueue"}})").root()));
  auto sp = gang::make_backend("sp");
  CHECK(sp->admits_pod_creation(nullptr));
}

TEST_CASE("scheduler-plugins PodGroup has minMember, minResources and the schedule timeout") {
  auto sp = gang::make_backend("scheduler-plugins-scheduler");
  auto r = request();
  r.schedule_timeout_seconds = 30;
  auto pg = sp->desired(r, nullptr);
  CHECK(json::dump(*json::find(pg.root(), "/spec")) == R"({"minMember":3,"scheduleTimeoutSeconds":30})");
  CHECK(json::get_string(pg.root(), "/apiVersion") == "scheduling.x-k8s.io/v1alpha1");
  auto same = parse(R"({"spec":{"minMember":3,"scheduleTimeoutSeconds":30,"minResources":{}}})");
  CHECK_FALSE(sp->spec_differs(same.root(), pg.root()));
  auto other = parse(R"({"spec":{"minMember":3}})");
  CHECK(sp->spec_differs(other.root(), pg.root()));
}

TEST_CASE("pod decoration per reference operator") {
  auto v = gang::make_backend("volcano");
  auto pod = parse(R"({"metadata":{"name":"p"},"spec":{"schedulerName":"custom"}})");
  auto d = v->decorate_pod(pod, "job", "worker", {});
  CHECK(d.template_scheduler_differs);
  CHECK(json::get_string(pod.root(), "/spec/schedulerName") == "custom");  // training-operator keeps it
  CHECK(json::get_string(pod.root(), "/metadata/annotations/scheduling.k8s.io~1group-name") == "job");
  CHECK(json::get_string(pod.root(), "/metadata/annotations/volcano.sh~1task-spec") == "worker");

  auto forced = parse(R"({"spec":{"schedulerName":"custom"}})");
  v->decorate_pod(forced, "job", "worker", {.force_scheduler_name = true, .volcano_task_spec = false});
  CHECK(json::get_string(forced.root(), "/spec/schedulerName") == "volcano");
  CHECK_FALSE(json::find(forced.root(), "/metadata/annotations/volcano.sh~1task-spec"));

  auto sp = gang::make_backend("sp-sched");
  auto p2 = parse(R"({"spec":{}})");
  CHECK_FALSE(sp->decorate_pod(p2, "job", "master", {}).template_scheduler_differs);
  CHECK(json::get_string(p2.root(), "/spec/schedulerName") == "sp-sched");
  CHECK(json::get_string(p2.root(), "/metadata/labels/scheduling.x-k8s.io~1pod-group") == "job");
}

TEST_CASE("minResources: requests (else limits) summed over pods up to minMember, by priority") {
  auto master = parse(R"({"containers":[{"resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]})");
  auto worker = parse(R"({"containers":[{"resources":{"limits":{"cpu":"500m","nvidia.com/gpu":"1"}}},)"
                      R"({"resources":{}},{"resources":{"requests":{"cpu":"250m"}}}]})");
  std::vector<gang::ReplicaResources> replicas{{"Master", 1, 0, &master.root()}, {"Worker", 3, 0, &worker.root()}};
  auto all = gang::min_resources(replicas, 4);
  REQUIRE(all);
  CHECK(gang::to_json(*all).dump() == R"({"cpu":"3250m","memory":"1Gi","nvidia.com/gpu":"3"})");
  auto two = gang::min_resources(replicas, 2);
  REQUIRE(two);
  CHECK(gang::to_json(*two).dump() == R"({"cpu":"1750m","memory":"1Gi","nvidia.com/gpu":"1"})");
  replicas[1].priority = 10;  // workers first now
  auto prioritized = gang::min_resources(replicas, 2);
  REQUIRE(prioritized);
  CHECK(gang::to_json(*prioritized).dump() == R"({"cpu":"1500m","nvidia.com/gpu":"2"})");
}

TEST_CASE("minResources: a bad quantity is an error naming the container and field") {
  auto bad = parse(R"({"containers":[{"resources":{"requests":{"cpu":"lots"}}}]})");
  auto r = gang::min_resources({{"Worker", 1, 0, &bad.root()}}, 1);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.rfind("Worker: containers[0].resources.requests.cpu: ", 0) == 0);
}

TEST_CASE("volcano PodGroup without the training-operator queue default: an empty queue is left out") {
  auto v = gang::make_backend("volcano");
  auto r = request();
  r.default_queue = false;
  auto existing = parse(R"({"spec":{"minMember":3,"queue":"research"}})");
  CHECK(json::dump(*json::find(v->desired(r, &existing.root()).root(), "/spec")) == R"({"minMember":3})");
  r.queue = "given";
  CHECK(json::get_string(v->desired(r, nullptr).root(), "/spec/queue") == "given");
  // An empty computed list is a present, empty minResources for Volcano (a pointer upstream).
  r.min_resources = gang::ResourceList{};
  CHECK(json::dump(*json::find(v->desired(r, nullptr).root(), "/spec/minResources")) == "{}");
}

TEST_CASE("scheduler-plugins PodGroup leaves an empty minResources out") {
  auto sp = gang::make_backend("scheduler-plugins-scheduler");
  auto r = request();
  r.min_resources = gang::ResourceList{};
  r.schedule_timeout_seconds = 0;
  CHECK(json::dump(*json::find(sp->desired(r, nullptr).root(), "/spec")) == R"({"minMember":3,"scheduleTimeoutSeconds":0})");
}

TEST_CASE("pod requests: a limit fills in a missing request per resource (mpi-operator) or only without requests") {
  auto spec = parse(R"({"containers":[{"resources":{"requests":{"cpu":"1"},"limits":{"cpu":"2","memory":"1Gi"}}},)"
                    R"({"resources":{"limits":{"cpu":"500m"}}}]})");
  auto per_resource = gang::pod_requests(spec.root(), gang::MissingRequests::LimitsPerResource);
  REQUIRE(per_resource);
  CHECK(gang::to_json(*per_resource).dump() == R"({"cpu":"1500m","memory":"1Gi"})");
  auto when_none = gang::pod_requests(spec.root(), gang::MissingRequests::LimitsWhenNone);
  REQUIRE(when_none);
  CHECK(gang::to_json(*when_none).dump() == R"({"cpu":"1500m"})");
}
