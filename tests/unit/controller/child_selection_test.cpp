// What the shared informers of children select for a set of modules (child_selection): pods for
// the modules whose jobs have pods only, and the children of a module without a constant label
// (JobSet's headless Service) by their controller reference, not by widening to everything.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "core/api/labels.h"
#include "core/controller/child_caches.h"
#include "core/framework/registry.h"
#include "frameworks/jobset/register.h"
#include "frameworks/pytorch/register.h"
#include "frameworks/trainer/register.h"

namespace c = unitrain::controller;
namespace fw = unitrain::framework;
namespace json = unitrain::json;
namespace kube = unitrain::kube;

namespace {

const kube::GroupVersionResource kBatchJobs{"batch", "v1", "jobs"};

struct Modules {
  fw::Registry registry;
  Modules() {
    REQUIRE(unitrain::frameworks::pytorch::register_pytorch(registry));
    REQUIRE(unitrain::frameworks::jobset::register_jobset(registry));
    REQUIRE(unitrain::frameworks::trainer::register_trainer(registry));
  }
  const fw::FrameworkDescriptor* operator[](std::string_view name) const {
    const fw::Registration* r = registry.find(name);
    REQUIRE(r != nullptr);
    return &r->descriptor;
  }
};

// An object with `labels` (a JSON object) and, unless `owner_kind` is empty, a controller
// reference to an object of that kind.
json::Document object(std::string_view kind, std::string_view labels, std::string_view owner_api_version = "",
                      std::string_view owner_kind = "") {
  const std::string owners =
      owner_kind.empty() ? std::string()
                         : fmt::format(R"(,"ownerReferences":[{{"apiVersion":"{}","kind":"{}","name":"j","uid":"u","controller":true}}])",
                                       owner_api_version, owner_kind);
  return json::Document::parse(fmt::format(R"({{"apiVersion":"v1","kind":"{}","metadata":{{"name":"o","namespace":"ns","labels":{}{}}}}})",
                                           kind, labels, owners))
      .value();
}

// Whether an informer with `selection` caches `obj`: the API server sends it (label_selector) and
// the informer keeps it.
bool cached(const kube::Selection& selection, const json::Document& obj) {
  auto server = unitrain::api::LabelSelector::parse(selection.label_selector);
  REQUIRE(server);
  static const json::Value kNone;
  const json::Value* labels = json::find(obj.root(), "/metadata/labels");
  return server->matches(labels ? *labels : kNone) && (!selection.keep || selection.keep(obj.root()));
}

constexpr const char* kPyTorchLabels = R"({"training.kubeflow.org/operator-name":"pytorchjob-controller"})";

}  // namespace

TEST_CASE("child selection: with JobSet and PyTorchJob, pods are PyTorchJob's label selector and JobSet's Service is kept by owner") {
  Modules m;
  const std::vector<const fw::FrameworkDescriptor*> modules{m["kubeflow.org/pytorchjob"], m["jobset.x-k8s.io/jobset"]};

  auto pods = c::child_selection(modules, c::ChildKind::Pod, c::kPods);
  REQUIRE(pods);
  // JobSet's jobs have no pods of their own: the server still filters pods by one label.
  CHECK(pods->label_selector == "training.kubeflow.org/operator-name=pytorchjob-controller");
  CHECK(!pods->keep);
  CHECK(cached(*pods, object("Pod", kPyTorchLabels, "kubeflow.org/v1", "PyTorchJob")));
  CHECK(!cached(*pods, object("Pod", "{}")));
  CHECK(!cached(*pods, object("Pod", "{}", "apps/v1", "ReplicaSet")));
  // A JobSet's Job's pod is the Job controller's, not any module's.
  CHECK(!cached(*pods, object("Pod", R"({"jobset.sigs.k8s.io/jobset-name":"js"})", "batch/v1", "Job")));

  auto services = c::child_selection(modules, c::ChildKind::Service, c::kServices);
  REQUIRE(services);
  // Not expressible as one label selector: every Service arrives, the foreign ones are dropped.
  CHECK(services->label_selector.empty());
  REQUIRE(services->keep);
  CHECK(cached(*services, object("Service", "{}", "jobset.x-k8s.io/v1alpha2", "JobSet")));
  CHECK(cached(*services, object("Service", kPyTorchLabels, "kubeflow.org/v1", "PyTorchJob")));
  CHECK(!cached(*services, object("Service", "{}")));
  CHECK(!cached(*services, object("Service", "{}", "apps/v1", "Deployment")));

  // JobSet's batch Jobs: those a JobSet controls.
  auto jobs = c::child_selection(modules, c::ChildKind::Owned, kBatchJobs);
  REQUIRE(jobs);
  CHECK(cached(*jobs, object("Job", "{}", "jobset.x-k8s.io/v1alpha2", "JobSet")));
  CHECK(!cached(*jobs, object("Job", "{}", "batch/v1", "CronJob")));
}

TEST_CASE("child selection: a kind nobody reads gets no informer, and TrainJob widens neither pods nor Services") {
  Modules m;
  const auto* jobset = m["jobset.x-k8s.io/jobset"];
  const auto* trainjob = m["trainer.kubeflow.org/trainjob"];
  CHECK(!c::child_selection({jobset, trainjob}, c::ChildKind::Pod, c::kPods));
  CHECK(!c::child_selection({trainjob}, c::ChildKind::Service, c::kServices));
  CHECK(!c::child_selection({jobset}, c::ChildKind::PodGroup, {"scheduling.volcano.sh", "v1beta1", "podgroups"}));

  const std::vector<const fw::FrameworkDescriptor*> all{m["kubeflow.org/pytorchjob"], jobset, trainjob};
  auto pods = c::child_selection(all, c::ChildKind::Pod, c::kPods);
  REQUIRE(pods);
  CHECK(pods->label_selector == "training.kubeflow.org/operator-name=pytorchjob-controller");
  auto services = c::child_selection(all, c::ChildKind::Service, c::kServices);
  REQUIRE(services);
  REQUIRE(services->keep);
  CHECK(!cached(*services, object("Service", R"({"training.kubeflow.org/operator-name":"trainjob-controller"})")));
}

TEST_CASE("child selection: a module without labels that owns other kinds reads every pod, one that owns nothing its own") {
  Modules m;
  fw::FrameworkDescriptor unlabelled = *m["kubeflow.org/pytorchjob"];
  unlabelled.group = "example.com";
  unlabelled.kind = "PlainJob";
  unlabelled.child_label_selector.clear();
  unlabelled.owned_resources.clear();  // PyTorchJob's HPAs
  unlabelled.optional_owned_resources.clear();
  const std::vector<const fw::FrameworkDescriptor*> own_children{m["kubeflow.org/pytorchjob"], &unlabelled};
  auto pods = c::child_selection(own_children, c::ChildKind::Pod, c::kPods);
  REQUIRE(pods);
  CHECK(cached(*pods, object("Pod", "{}", "example.com/v1", "PlainJob")));
  CHECK(!cached(*pods, object("Pod", "{}")));
  // Owning batch Jobs, the pods of those are its own to read too (a launcher Job's pods): all pods.
  unlabelled.owned_resources = {kBatchJobs};
  pods = c::child_selection(own_children, c::ChildKind::Pod, c::kPods);
  REQUIRE(pods);
  CHECK(pods->label_selector.empty());
  CHECK(!pods->keep);
}
