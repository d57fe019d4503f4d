// The process's caches as `--enable-scheme '*'` builds them, on the local cluster full of pods and
// Services no module could own: none of those is cached (JobSet, whose children carry no label
// of ours, does not widen the selection to everything), while a JobSet's headless Service and a
// PyTorchJob's pods and Services are cached and both jobs run to their end.
#include <fmt/format.h>

#include "cmd/training-operator/controllers.h"
#include "cmd/training-operator/flags.h"
#include "cmd/training-operator/frameworks.h"
#include "core/kube/fault_log.h"
#include "tests/integration/frameworks/local_cluster_fixture.h"
#include "tests/support/json.h"

namespace json = unitrain::json;
namespace kube = unitrain::kube;
namespace op = unitrain::operator_cmd;
using unitrain::testing::eventually;
using Cluster = unitrain::testing::LocalClusterFixture;

namespace {

const kube::GroupVersionResource kJobSets{"jobset.x-k8s.io", "v1alpha2", "jobsets"};
const kube::GroupVersionResource kPyTorchJobs{"kubeflow.org", "v1", "pytorchjobs"};
const kube::GroupVersionResource kPods{"", "v1", "pods"};
const kube::GroupVersionResource kServices{"", "v1", "services"};
const kube::GroupVersionResource kBatchJobs{"batch", "v1", "jobs"};

// Pods and Services of nobody's (no label, no owner), of another operator (its label, its owner).
void create_foreign(Cluster& k, std::string_view prefix, int n) {
  for (int i = 0; i < n; ++i) {
    auto pod = unitrain::testing::yaml(fmt::format(R"(
apiVersion: v1
kind: Pod
metadata: {{name: {}-pod-{}, namespace: default}}
spec: {{containers: [{{name: c, image: busybox}}]}}
)",
                                                   prefix, i));
    REQUIRE(k.client->create(kPods, "default", pod.root()));
  }
  auto svc = unitrain::testing::yaml(fmt::format(R"(
apiVersion: v1
kind: Service
metadata:
  name: {}-svc
  namespace: default
  labels: {{app.kubernetes.io/managed-by: someone-else}}
  ownerReferences: [{{apiVersion: apps/v1, kind: Deployment, name: web, uid: 00000000-0000-0000-0000-000000000001, controller: true}}]
spec: {{clusterIP: None, selector: {{app: web}}}}
)",
                                                 prefix));
  REQUIRE(k.client->create(kServices, "default", svc.root()));
  auto bare = unitrain::testing::yaml(fmt::format(R"(
apiVersion: v1
kind: Service
metadata: {{name: {}-bare, namespace: default}}
spec: {{clusterIP: None}}
)",
                                                  prefix));
  REQUIRE(k.client->create(kServices, "default", bare.root()));
  auto job = unitrain::testing::yaml(fmt::format(R"(
apiVersion: batch/v1
kind: Job
metadata: {{name: {}-job, namespace: default}}
spec:
  template:
    metadata: {{annotations: {{sim.unitrain.io/duration: 1h}}}}
    spec: {{restartPolicy: Never, containers: [{{name: c, image: busybox}}]}}
)",
                                                 prefix));
  REQUIRE(k.client->create(kBatchJobs, "default", job.root()));
}

// Names of the cached objects of `informer`, sorted, each followed by a space.
std::string cached_names(const kube::Informer& informer) {
  std::vector<std::string> names;
  for (const auto& obj : informer.cache().list()) names.emplace_back(json::get_string(obj->root(), "/metadata/name").value_or(""));
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += n + " ";
  return out;
}

constexpr const char* kPyTorchJob = R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: default}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 300ms}}
        spec: {containers: [{name: pytorch, image: example.com/train:1}]}
    Worker:
      replicas: 1
      template:
        metadata: {annotations: {sim.unitrain.io/duration: 300ms}}
        spec: {containers: [{name: pytorch, image: example.com/train:1}]}
)";

constexpr const char* kJobSet = R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: default}
spec:
  network: {enableDNSHostnames: true}
  replicatedJobs:
    - name: workers
      replicas: 2
      template:
        spec:
          parallelism: 1
          completions: 1
          backoffLimit: 0
          template:
            metadata: {annotations: {sim.unitrain.io/duration: 300ms}}
            spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}
)";

}  // namespace

TEST_CASE("JobSet with every scheme enabled: foreign pods, Services and Jobs are not cached, its Service and a PyTorchJob's children are") {
  Cluster k;
  for (const char* file : {"jobset.x-k8s.io_jobsets.yaml", "kubeflow.org_jaxjobs.yaml", "kubeflow.org_mpijobs.yaml",
                           "kubeflow.org_mxjobs.yaml", "kubeflow.org_paddlejobs.yaml", "kubeflow.org_pytorchjobs.yaml",
                           "kubeflow.org_tfjobs.yaml", "kubeflow.org_xgboostjobs.yaml", "trainer.kubeflow.org_clustertrainingruntimes.yaml",
                           "trainer.kubeflow.org_trainingruntimes.yaml", "trainer.kubeflow.org_trainjobs.yaml"})
    k.install_crd(file);
  create_foreign(k, "before", 10);

  unitrain::framework::Registry registry;
  REQUIRE(op::register_frameworks(registry));
  const char* argv[] = {"training-operator", "--enable-scheme", "*"};
  auto flags = op::parse_flags(3, argv, registry);
  REQUIRE(flags);
  REQUIRE(flags->enabled.size() == registry.all().size());
  kube::FaultLog faults(k.clock, {"https://local", "none"});
  auto made = op::Controllers::create(registry, *flags, *k.client, *k.client, k.clock, faults);
  REQUIRE(made);
  auto& controllers = **made;
  auto& caches = controllers.caches();
  caches.start();
  REQUIRE(caches.wait_for_sync(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
  for (auto& fw : controllers.all())
    if (fw.name == "jobset.x-k8s.io/jobset" || fw.name == "kubeflow.org/pytorchjob") fw.controller->start();

  const kube::Informer* pods = caches.children_informer(kPods);
  const kube::Informer* services = caches.children_informer(kServices);
  const kube::Informer* batch_jobs = caches.children_informer(kBatchJobs);
  REQUIRE(pods != nullptr);
  REQUIRE(services != nullptr);
  REQUIRE(batch_jobs != nullptr);
  // Listed: nothing of ours yet, and nothing foreign.
  CHECK(pods->cache().size() == 0);
  CHECK(services->cache().size() == 0);
  CHECK(batch_jobs->cache().size() == 0);

  REQUIRE(k.client->create(kPyTorchJobs, "default", unitrain::testing::yaml(kPyTorchJob).root()));
  REQUIRE(k.client->create(kJobSets, "default", unitrain::testing::yaml(kJobSet).root()));
  // Watched: foreign objects created while the jobs run are not cached either.
  create_foreign(k, "after", 5);

  REQUIRE(eventually([&] { return k.has_condition(kPyTorchJobs, "pt", "Succeeded"); }, std::chrono::seconds(60)));
  REQUIRE(eventually(
      [&] {
        auto js = k.client->get(kJobSets, "default", "js");
        return js && json::get_string(js->root(), "/status/terminalState") == "Completed";
      },
      std::chrono::seconds(60)));
  CHECK(k.client->get(kServices, "default", "js"));
  // The watch events of what the jobs created have reached the caches by now: the JobSet's
  // Service, and its batch Jobs.
  REQUIRE(eventually([&] { return services->cache().get("default/js") != nullptr && batch_jobs->cache().size() == 2; }));
  CHECK(cached_names(*pods) == "pt-master-0 pt-worker-0 ");
  CHECK(cached_names(*services) == "js pt-master-0 pt-worker-0 ");
  CHECK(cached_names(*batch_jobs) == "js-workers-0 js-workers-1 ");
  for (auto& fw : controllers.all()) fw.controller->stop();
  caches.stop();
}
