#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/framework/registry.h"
#include "core/json/json.h"
#include "frameworks/pytorch/register.h"
#include "tests/support/json.h"
#include "tests/support/framework.h"
#include "tests/support/skip.h"

namespace fw = unitrain::framework;
namespace json = unitrain::json;
using json::Document;

namespace {

using unitrain::testing::yaml;
using unitrain::testing::skip;

std::unique_ptr<fw::FrameworkPlugin> plugin(std::map<std::string, std::string, std::less<>> options = {}) {
  fw::PluginConfig c;
  c.options = std::move(options);
  return unitrain::testing::instantiate(unitrain::frameworks::pytorch::register_pytorch, "PyTorchJob", std::move(c));
}

Document parse(std::string_view text) {
  auto d = Document::parse(text);
  if (!d) FAIL(d.error().message);
  return *d;
}

// The sendrecv smoke test shape, with keys in the wrong case and nothing defaulted.
constexpr std::string_view kSendRecv = R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: sendrecv
  namespace: ml
  uid: 1234
spec:
  pytorchReplicaSpecs:
    master:
      template:
        spec:
          containers:
            - name: pytorch
              image: example/sendrecv:1
    WORKER:
      replicas: 3
      template:
        spec:
          containers:
            - name: pytorch
              image: example/sendrecv:1
              env:
                - name: USER_VAR
                  value: "x"
              ports:
                - name: metrics
                  containerPort: 9090
            - name: sidecar
              image: example/sidecar:1
)";

Document defaulted(std::string_view text) {
  auto p = plugin();
  Document job = yaml(text);
  p->set_defaults(job);
  return job;
}

// The core's share of a pod: name, labels and the template copy; decorate_pod adds the rest.
Document core_pod(const Document& job, const std::string& rt, int index) {
  std::string lower = rt == "Master" ? "master" : "worker";
  Document pod = Document::object();
  REQUIRE(json::set_string(pod, "/metadata/name", "sendrecv-" + lower + "-" + std::to_string(index)));
  REQUIRE(json::set_string(pod, "/metadata/labels/training.kubeflow.org~1replica-type", lower));
  REQUIRE(json::set(pod, "/spec", json::clone(*json::find(job.root(), "/spec/pytorchReplicaSpecs/" + rt + "/template/spec"), pod.alloc())));
  return pod;
}

std::vector<std::string> env_names_values(const json::Value& container) {
  std::vector<std::string> out;
  for (const auto& e : container["env"].GetArray()) {
    std::string s = e["name"].GetString();
    if (e.HasMember("value")) s += std::string("=") + e["value"].GetString();
    out.push_back(s);
  }
  return out;
}

json::Value* pod_field(Document& pod, std::string_view pointer) { return json::find(pod.root(), pointer); }

std::vector<std::string> messages(const fw::Validation& v) {
  std::vector<std::string> out;
  for (const auto& e : v.errors) out.push_back(e.to_string());
  return out;
}

Document pod_json(std::string_view name, std::string_view rt, int index, std::string_view phase, bool deleting = false) {
  std::string text = R"({"metadata":{"name":")" + std::string(name) + R"(","labels":{"training.kubeflow.org/replica-type":")" +
                     std::string(rt) + R"(","training.kubeflow.org/replica-index":")" + std::to_string(index) + "\"}" +
                     (deleting ? R"(,"deletionTimestamp":"2024-01-01T00:00:00Z")" : "") + R"(},"status":{"phase":")" +
                     std::string(phase) + R"("}})";
  return parse(text);
}

}  // namespace

TEST_CASE("pytorch: descriptor and options as registered") {
  fw::Registry r;
  REQUIRE(unitrain::frameworks::pytorch::register_pytorch(r));
  const fw::Registration* reg = r.find("pytorch");
  REQUIRE(reg != nullptr);
  const auto& d = reg->descriptor;
  CHECK(d.name == "kubeflow.org/pytorchjob");
  CHECK(r.find("PYTORCHJOB") == reg);
  CHECK(d.api_version() == "kubeflow.org/v1");
  CHECK(d.kind == "PyTorchJob");
  CHECK(d.plural == "pytorchjobs");
  CHECK(d.replica_specs_field == "pytorchReplicaSpecs");
  CHECK(d.replica_types == std::vector<std::string>{"Master", "Worker"});
  CHECK(d.default_container == "pytorch");
  CHECK(d.default_port_name == "pytorchjob-port");
  CHECK(d.default_port == 23456);
  CHECK(d.controller_name == "pytorchjob-controller");
  CHECK(d.replica_type_label == "training.kubeflow.org/replica-type");
  CHECK(d.metrics_framework == "pytorch");
  CHECK(d.managed_by == std::vector<std::string>{"kubeflow.org/training-operator"});
  REQUIRE(d.owned_resources.size() == 1);
  CHECK(d.owned_resources[0].group_resource() == "horizontalpodautoscalers.autoscaling");
  REQUIRE(reg->options.size() == 3);
  CHECK(reg->options[0].name == "pytorch-init-container-image");
  CHECK(reg->options[0].default_value == "alpine:3.10");
  CHECK(reg->options[1].name == "pytorch-init-container-max-tries");
  CHECK(reg->options[1].default_value == "100");
  CHECK(reg->options[2].name == "pytorch-init-container-template-file");
  CHECK(reg->options[2].default_value == "/etc/config/initContainer.yaml");
  fw::Registration no_factory;
  no_factory.descriptor = d;
  CHECK_FALSE(r.add(no_factory));
}

TEST_CASE("pytorch: defaults re-case keys, fill replicas, restart policy, ports, cleanPodPolicy and nprocPerNode") {
  Document job = defaulted(kSendRecv);
  const auto& specs = *json::find(job.root(), "/spec/pytorchReplicaSpecs");
  CHECK(json::canonical(specs).find("\"master\"") == std::string::npos);
  CHECK(json::get_int(job.root(), "/spec/pytorchReplicaSpecs/Master/replicas") == 1);
  CHECK(json::get_int(job.root(), "/spec/pytorchReplicaSpecs/Worker/replicas") == 3);
  CHECK(json::get_string(job.root(), "/spec/pytorchReplicaSpecs/Master/restartPolicy") == "OnFailure");
  CHECK(json::get_string(job.root(), "/spec/pytorchReplicaSpecs/Worker/restartPolicy") == "OnFailure");
  CHECK(json::get_string(job.root(), "/spec/runPolicy/cleanPodPolicy") == "None");
  CHECK(json::get_string(job.root(), "/spec/nprocPerNode") == "auto");
  CHECK(json::dump(*json::find(job.root(), "/spec/pytorchReplicaSpecs/Master/template/spec/containers/0/ports")) ==
        R"([{"name":"pytorchjob-port","containerPort":23456}])");
  // A custom-named port does not stop the default one; the sidecar gets nothing.
  CHECK(json::dump(*json::find(job.root(), "/spec/pytorchReplicaSpecs/Worker/template/spec/containers/0/ports")) ==
        R"([{"name":"metrics","containerPort":9090},{"name":"pytorchjob-port","containerPort":23456}])");
  CHECK(json::find(job.root(), "/spec/pytorchReplicaSpecs/Worker/template/spec/containers/1/ports") == nullptr);

  // Idempotent: a second pass changes nothing (the port is not added twice).
  Document again = job;
  plugin()->set_defaults(again);
  CHECK(again == job);
}

TEST_CASE("pytorch: defaults keep an existing pytorchjob-port and use container 0 without a pytorch container") {
  Document job = defaulted(R"(
metadata: {name: j}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: trainer
              image: i
            - name: other
              image: i
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: i
              ports: [{name: pytorchjob-port, containerPort: 3000}]
)");
  CHECK(json::get_string(job.root(), "/spec/pytorchReplicaSpecs/Worker/restartPolicy") == "Never");
  CHECK(json::dump(*json::find(job.root(), "/spec/pytorchReplicaSpecs/Master/template/spec/containers/0/ports")) ==
        R"([{"name":"pytorchjob-port","containerPort":3000}])");
  CHECK(json::dump(*json::find(job.root(), "/spec/pytorchReplicaSpecs/Worker/template/spec/containers/0/ports")) ==
        R"([{"name":"pytorchjob-port","containerPort":23456}])");
  CHECK(json::find(job.root(), "/spec/pytorchReplicaSpecs/Worker/template/spec/containers/1/ports") == nullptr);
}

TEST_CASE("pytorch: elastic min/max defaults and nprocPerNode") {
  auto elastic = [](std::string policy, std::string extra = "") {
    return defaulted("metadata: {name: e}\nspec:\n" + extra + "  elasticPolicy: " + policy +
                     "\n  pytorchReplicaSpecs:\n    Worker:\n      replicas: 4\n      template: {spec: {containers: [{name: pytorch, image: i}]}}\n");
  };
  auto both = elastic("{minReplicas: 1, maxReplicas: 3}");
  CHECK(json::get_int(both.root(), "/spec/elasticPolicy/minReplicas") == 1);
  CHECK(json::get_int(both.root(), "/spec/elasticPolicy/maxReplicas") == 3);
  auto only_max = elastic("{maxReplicas: 5}");
  CHECK(json::get_int(only_max.root(), "/spec/elasticPolicy/minReplicas") == 5);
  auto only_min = elastic("{minReplicas: 2}");
  CHECK(json::get_int(only_min.root(), "/spec/elasticPolicy/maxReplicas") == 2);
  auto neither = elastic("{rdzvBackend: c10d}");
  CHECK(json::get_int(neither.root(), "/spec/elasticPolicy/minReplicas") == 4);
  CHECK(json::get_int(neither.root(), "/spec/elasticPolicy/maxReplicas") == 4);
  CHECK(json::get_string(neither.root(), "/spec/nprocPerNode") == "auto");
  auto deprecated = elastic("{nProcPerNode: 2}");
  CHECK(json::find(deprecated.root(), "/spec/nprocPerNode") == nullptr);
  auto user = elastic("{}", "  nprocPerNode: \"4\"\n");
  CHECK(json::get_string(user.root(), "/spec/nprocPerNode") == "4");
}

TEST_CASE("pytorch: validation reports the webhook's errors in its order") {
  auto p = plugin();
  Document job = yaml(R"(
metadata: {name: 0-test}
spec:
  runPolicy: {managedBy: example.com/other}
  elasticPolicy: {nProcPerNode: 2}
  nprocPerNode: "2"
  pytorchReplicaSpecs:
    Master:
      replicas: 2
      template: {spec: {containers: [{name: pytorch, image: i}]}}
    Chief:
      template: {spec: {containers: []}}
    worker:
      replicas: 0
      template: {spec: {containers: [{name: main, image: ""}]}}
)");
  auto v = p->validate(nullptr, job.root());
  CHECK_FALSE(v.ok());
  const std::string dns =
      "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, "
      "and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
      "'[a-z]([-a-z0-9]*[a-z0-9])?')";
  CHECK(messages(v) == std::vector<std::string>{
                           "metadata.name: Invalid value: \"0-test\": should match: " + dns,
                           "spec.runPolicy.managedBy: Unsupported value: \"example.com/other\": supported values: "
                           "\"kubeflow.org/training-operator\", \"kueue.x-k8s.io/multikueue\"",
                           "spec.pytorchReplicaSpecs[Worker]: Required value: must be configured if elastic policy is used",
                           "spec.elasticPolicy.nProcPerNode: Forbidden: must not be used with spec.nprocPerNode",
                           "spec.pytorchReplicaSpecs[Chief]: Unsupported value: \"Chief\": supported values: \"Master\", \"Worker\"",
                           "spec.pytorchReplicaSpecs[Chief].template.spec.containers: Required value: must be specified",
                           "spec.pytorchReplicaSpecs[Chief].template.spec.containers: Required value: must have at least one "
                           "container with name pytorch",
                           "spec.pytorchReplicaSpecs[worker]: Unsupported value: \"worker\": supported values: \"Master\", \"Worker\"",
                           "spec.pytorchReplicaSpecs[worker].template.spec.containers[0].image: Required value: must be required",
                           "spec.pytorchReplicaSpecs[worker].template.spec.containers: Required value: must have at least one "
                           "container with name pytorch",
                           "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1",
                           "spec.pytorchReplicaSpecs[worker].replicas: Forbidden: must be at least 1",
                       });
  CHECK(v.warnings == std::vector<std::string>{"spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead"});
}

TEST_CASE("pytorch: validation of a good job, a missing map, a nil Master replicas and managedBy updates") {
  auto p = plugin();
  Document good = yaml(kSendRecv);
  // The raw object is validated case-sensitively, like the webhook does.
  CHECK(messages(p->validate(nullptr, good.root())).size() == 2);
  Document d = defaulted(kSendRecv);
  CHECK(p->validate(nullptr, d.root()).ok());

  Document none = yaml("metadata: {name: j}\nspec: {}\n");
  CHECK(messages(p->validate(nullptr, none.root())) ==
        std::vector<std::string>{"spec.pytorchReplicaSpecs: Required value: must be required"});

  Document nil_master = yaml("metadata: {name: j}\nspec:\n  pytorchReplicaSpecs:\n    Master:\n      template: {spec: {containers: [{name: pytorch, image: i}]}}\n");
  CHECK(messages(p->validate(nullptr, nil_master.root())) ==
        std::vector<std::string>{"spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"});

  Document old = d;
  Document changed = d;
  REQUIRE(json::set_string(changed, "/spec/runPolicy/managedBy", "kueue.x-k8s.io/multikueue"));
  CHECK(p->validate(&old.root(), old.root()).ok());
  CHECK(messages(p->validate(&old.root(), changed.root())) ==
        std::vector<std::string>{"spec.runPolicy.managedBy: Invalid value: \"kueue.x-k8s.io/multikueue\": field is immutable"});
  CHECK(p->validate(nullptr, changed.root()).ok());
}

TEST_CASE("pytorch: pod slots cover Master then Worker indices") {
  Document job = defaulted(kSendRecv);
  auto slots = plugin()->pod_slots(job.root());
  REQUIRE(slots.size() == 4);
  CHECK(slots[0].replica_type == "Master");
  CHECK(slots[0].index == 0);
  CHECK(slots[3].replica_type == "Worker");
  CHECK(slots[3].index == 2);
}

TEST_CASE("pytorch: master pod env, role label and no init container") {
  auto p = plugin();
  Document job = defaulted(kSendRecv);
  Document pod = core_pod(job, "Master", 0);
  REQUIRE(p->decorate_pod(job.root(), {"Master", 0}, pod));
  CHECK(json::get_string(pod.root(), "/metadata/labels/training.kubeflow.org~1job-role") == "master");
  CHECK(env_names_values(*pod_field(pod, "/spec/containers/0")) ==
        std::vector<std::string>{"PYTHONUNBUFFERED=1", "MASTER_PORT=23456", "PET_MASTER_PORT=23456",
                                 "MASTER_ADDR=sendrecv-master-0", "PET_MASTER_ADDR=sendrecv-master-0", "WORLD_SIZE=4",
                                 "RANK=0", "PET_NODE_RANK=0", "PET_NPROC_PER_NODE=auto", "PET_NNODES=4"});
  CHECK(pod_field(pod, "/spec/initContainers") == nullptr);
}

TEST_CASE("pytorch: worker pod env on every container after user env, and the init-pytorch container") {
  auto p = plugin({{"pytorch-init-container-image", "busybox:1"}, {"pytorch-init-container-max-tries", "7"}});
  Document job = defaulted(kSendRecv);
  Document pod = core_pod(job, "Worker", 1);
  REQUIRE(p->decorate_pod(job.root(), {"Worker", 1}, pod));
  CHECK(json::find(pod.root(), "/metadata/labels/training.kubeflow.org~1job-role") == nullptr);
  const std::vector<std::string> expected{"PYTHONUNBUFFERED=1", "MASTER_PORT=23456", "PET_MASTER_PORT=23456",
                                          "MASTER_ADDR=sendrecv-master-0", "PET_MASTER_ADDR=sendrecv-master-0",
                                          "WORLD_SIZE=4", "RANK=2", "PET_NODE_RANK=2", "PET_NPROC_PER_NODE=auto", "PET_NNODES=4"};
  std::vector<std::string> first = {"USER_VAR=x"};
  first.insert(first.end(), expected.begin(), expected.end());
  CHECK(env_names_values(*pod_field(pod, "/spec/containers/0")) == first);
  CHECK(env_names_values(*pod_field(pod, "/spec/containers/1")) == expected);
  CHECK(json::dump(*pod_field(pod, "/spec/initContainers")) ==
        R"([{"name":"init-pytorch","image":"busybox:1","command":["sh","-c","err=1;for i in $(seq 7); do if nslookup sendrecv-master-0; then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err"],"resources":{"limits":{"cpu":"100m","memory":"20Mi"},"requests":{"cpu":"50m","memory":"10Mi"}},"imagePullPolicy":"IfNotPresent"}])");
}

TEST_CASE("pytorch: default init container options and worker-only jobs") {
  Document job = defaulted(kSendRecv);
  Document pod = core_pod(job, "Worker", 0);
  REQUIRE(plugin()->decorate_pod(job.root(), {"Worker", 0}, pod));
  CHECK(json::get_string(pod.root(), "/spec/initContainers/0/image") == "alpine:3.10");
  CHECK(json::get_string(pod.root(), "/spec/initContainers/0/command/2")->find("$(seq 100)") != std::string_view::npos);

  Document solo = defaulted(R"(
metadata: {name: sendrecv, namespace: ml}
spec:
  nprocPerNode: "2"
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: pytorch, image: i}]}}
)");
  Document w0 = core_pod(solo, "Worker", 0);
  REQUIRE(plugin()->decorate_pod(solo.root(), {"Worker", 0}, w0));
  CHECK(json::get_string(w0.root(), "/metadata/labels/training.kubeflow.org~1job-role") == "master");
  CHECK(env_names_values(*pod_field(w0, "/spec/containers/0")) ==
        std::vector<std::string>{"PYTHONUNBUFFERED=1", "PET_NPROC_PER_NODE=2", "PET_NNODES=2"});
  CHECK(pod_field(w0, "/spec/initContainers") == nullptr);
  Document w1 = core_pod(solo, "Worker", 1);
  REQUIRE(plugin()->decorate_pod(solo.root(), {"Worker", 1}, w1));
  CHECK(json::find(w1.root(), "/metadata/labels/training.kubeflow.org~1job-role") == nullptr);
}

// A file in a directory of its own, removed with it.
class TemplateFile {
 public:
  explicit TemplateFile(std::string_view text)
      : dir_(std::filesystem::temp_directory_path() /
             ("unitrain-pytorch-template-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)))) {
    std::filesystem::create_directories(dir_);
    std::ofstream(path()) << text;
  }
  ~TemplateFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path() const { return (dir_ / "initContainer.yaml").string(); }

 private:
  std::filesystem::path dir_;
};

TEST_CASE("pytorch: --pytorch-init-container-template-file renders its fields into the workers' init containers") {
  TemplateFile file(R"(
- name: wait-for-master
  image: {{.InitContainerImage}}
  command: ["sh", "-c", "for i in $(seq {{ .MaxTries }}); do nslookup {{.MasterAddr}} && exit 0; sleep 1; done; exit 1"]
- name: second
  image: {{.InitContainerImage}}
)");
  auto p = plugin({{"pytorch-init-container-image", "busybox:1"},
                   {"pytorch-init-container-max-tries", "7"},
                   {"pytorch-init-container-template-file", file.path()}});
  Document job = defaulted(kSendRecv);
  Document pod = core_pod(job, "Worker", 1);
  REQUIRE(p->decorate_pod(job.root(), {"Worker", 1}, pod));
  CHECK(json::dump(*pod_field(pod, "/spec/initContainers")) ==
        R"([{"name":"wait-for-master","image":"busybox:1","command":["sh","-c","for i in $(seq 7); do nslookup sendrecv-master-0 && exit 0; sleep 1; done; exit 1"]},{"name":"second","image":"busybox:1"}])");
  // Read once, at start, as training-operator does: a later change is not seen.
  std::ofstream(file.path()) << "- {name: changed, image: x}\n";
  Document again = core_pod(job, "Worker", 0);
  REQUIRE(p->decorate_pod(job.root(), {"Worker", 0}, again));
  CHECK(json::get_string(again.root(), "/spec/initContainers/0/name") == "wait-for-master");
  // The Master gets none.
  Document master = core_pod(job, "Master", 0);
  REQUIRE(p->decorate_pod(job.root(), {"Master", 0}, master));
  CHECK(pod_field(master, "/spec/initContainers") == nullptr);
}

TEST_CASE("pytorch: a missing template file means the built-in init-pytorch, a bad one fails naming the file") {
  auto missing = plugin({{"pytorch-init-container-template-file", "/nonexistent/unitrain/initContainer.yaml"}});
  Document job = defaulted(kSendRecv);
  Document pod = core_pod(job, "Worker", 0);
  REQUIRE(missing->decorate_pod(job.root(), {"Worker", 0}, pod));
  CHECK(json::get_string(pod.root(), "/spec/initContainers/0/name") == "init-pytorch");

  auto error_of = [&](std::string_view text) {
    TemplateFile file(text);
    auto p = plugin({{"pytorch-init-container-template-file", file.path()}});
    Document w = core_pod(job, "Worker", 0);
    auto s = p->decorate_pod(job.root(), {"Worker", 0}, w);
    REQUIRE_FALSE(s);
    CHECK(s.error().message.find("--pytorch-init-container-template-file " + file.path() + ": ") == 0);
    return s.error().message;
  };
  CHECK(error_of("- name: x\n  image: {{.Image}}\n").find(
            "unsupported action {{.Image}}; the fields are {{.MasterAddr}}, {{.InitContainerImage}} and {{.MaxTries}}") !=
        std::string::npos);
  CHECK(error_of("- name: x\n  image: {{.InitContainerImage").find("unclosed action") != std::string::npos);
  CHECK(error_of("name: x\nimage: y\n").find("must be a YAML list of containers") != std::string::npos);
  CHECK(error_of("- image: y\n").find("every list item must be a container with a name") != std::string::npos);
  CHECK(error_of("- [unclosed\n").find("yaml: ") != std::string::npos);
}

TEST_CASE("pytorch: WORLD_SIZE multiplies by an integer nprocPerNode") {
  Document job = yaml(kSendRecv);
  REQUIRE(json::set_string(job, "/spec/nprocPerNode", "8"));
  plugin()->set_defaults(job);
  Document pod = core_pod(job, "Master", 0);
  REQUIRE(plugin()->decorate_pod(job.root(), {"Master", 0}, pod));
  auto env = env_names_values(*pod_field(pod, "/spec/containers/0"));
  CHECK(std::find(env.begin(), env.end(), "WORLD_SIZE=32") != env.end());
  CHECK(std::find(env.begin(), env.end(), "PET_NPROC_PER_NODE=8") != env.end());
}

TEST_CASE("pytorch: elastic env in the reference order") {
  Document job = defaulted(R"(
metadata: {name: elastic, namespace: ml}
spec:
  elasticPolicy:
    minReplicas: 1
    maxReplicas: 3
    rdzvBackend: etcd
    rdzvHost: etcd-service
    rdzvPort: 2379
    rdzvId: run-1
    rdzvConf: [{key: a, value: "1"}, {key: b, value: "2"}]
    maxRestarts: 10
    standalone: true
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: pytorch, image: i}]}}
)");
  Document pod = core_pod(job, "Worker", 1);
  REQUIRE(plugin()->decorate_pod(job.root(), {"Worker", 1}, pod));
  CHECK(env_names_values(*pod_field(pod, "/spec/containers/0")) ==
        std::vector<std::string>{"PYTHONUNBUFFERED=1", "PET_NPROC_PER_NODE=auto", "PET_RDZV_ENDPOINT=etcd-service:2379",
                                 "PET_RDZV_BACKEND=etcd", "PET_NNODES=1:3", "PET_MAX_RESTARTS=10", "PET_RDZV_ID=run-1",
                                 "PET_RDZV_CONF=a=1,b=2", "PET_STANDALONE"});

  Document plain = defaulted(R"(
metadata: {name: elastic, namespace: ml}
spec:
  elasticPolicy: {nProcPerNode: 4}
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: pytorch, image: i}]}}
)");
  Document p0 = core_pod(plain, "Worker", 0);
  REQUIRE(plugin()->decorate_pod(plain.root(), {"Worker", 0}, p0));
  CHECK(env_names_values(*pod_field(p0, "/spec/containers/0")) ==
        std::vector<std::string>{"PYTHONUNBUFFERED=1", "PET_RDZV_ENDPOINT=elastic-worker-0:23456", "PET_RDZV_BACKEND=c10d",
                                 "PET_NNODES=2:2", "PET_NPROC_PER_NODE=4"});
}

TEST_CASE("pytorch: a Master without pytorchjob-port cannot be decorated") {
  Document job = defaulted(kSendRecv);
  REQUIRE(json::remove(job, "/spec/pytorchReplicaSpecs/Master/template/spec/containers/0/ports"));
  Document pod = core_pod(job, "Worker", 0);
  auto s = plugin()->decorate_pod(job.root(), {"Worker", 0}, pod);
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("pytorchjob-port") != std::string::npos);
}

TEST_CASE("pytorch: one headless service per pod with every port of the pytorch container") {
  Document job = defaulted(kSendRecv);
  auto objs = plugin()->desired_objects(job.root(), {});
  REQUIRE(objs);
  REQUIRE(objs->size() == 4);
  const auto& m = (*objs)[0];
  CHECK(m.resource.group_resource() == "services");
  CHECK(m.update == fw::DesiredObject::Update::Never);
  CHECK(m.object.dump() ==
        R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"sendrecv-master-0","namespace":"ml","labels":{"training.kubeflow.org/job-name":"sendrecv","training.kubeflow.org/operator-name":"pytorchjob-controller","training.kubeflow.org/replica-index":"0","training.kubeflow.org/replica-type":"master"}},"spec":{"clusterIP":"None","selector":{"training.kubeflow.org/job-name":"sendrecv","training.kubeflow.org/operator-name":"pytorchjob-controller","training.kubeflow.org/replica-index":"0","training.kubeflow.org/replica-type":"master"},"ports":[{"name":"pytorchjob-port","port":23456}]}})");
  CHECK(json::get_string((*objs)[3].object.root(), "/metadata/name") == "sendrecv-worker-2");
  CHECK(json::dump(*json::find((*objs)[3].object.root(), "/spec/ports")) ==
        R"([{"name":"metrics","port":9090},{"name":"pytorchjob-port","port":23456}])");

  Document broken = defaulted(kSendRecv);
  REQUIRE(json::set_string(broken, "/spec/pytorchReplicaSpecs/Worker/template/spec/containers/0/name", "x"));
  auto err = plugin()->desired_objects(broken.root(), {});
  REQUIRE_FALSE(err);
  CHECK(err.error().message.find("failed to find the port") != std::string::npos);
}

TEST_CASE("pytorch: HPA for elastic jobs with metrics, none when suspended") {
  constexpr std::string_view text = R"(
metadata: {name: imagenet, namespace: ml}
spec:
  elasticPolicy:
    minReplicas: 1
    maxReplicas: 3
    metrics:
      - type: Resource
        resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: pytorch, image: i}]}}
)";
  Document job = defaulted(text);
  auto objs = plugin()->desired_objects(job.root(), {});
  REQUIRE(objs);
  REQUIRE(objs->size() == 3);
  const auto& hpa = objs->back();
  CHECK(hpa.resource.group_resource() == "horizontalpodautoscalers.autoscaling");
  CHECK(hpa.resource.version == "v2");
  CHECK(hpa.update == fw::DesiredObject::Update::WhenDiffers);
  CHECK(hpa.compared == std::vector<std::string>{"/spec"});
  CHECK(hpa.object.dump() ==
        R"({"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"imagenet","namespace":"ml"},"spec":{"scaleTargetRef":{"kind":"PyTorchJob","name":"imagenet","apiVersion":"kubeflow.org/v1"},"minReplicas":1,"maxReplicas":3,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":80}}}]}})");
  REQUIRE(json::set_bool(job, "/spec/runPolicy/suspend", true));
  auto suspended = plugin()->desired_objects(job.root(), {});
  REQUIRE(suspended);
  CHECK(suspended->empty());  // neither the services (deleted with the pods) nor the HPA
  auto pruned = plugin()->pruned_resources();
  REQUIRE(pruned.size() == 1);
  CHECK(pruned[0].group_resource() == "horizontalpodautoscalers.autoscaling");
}

TEST_CASE("pytorch: status with a Master: counts, selectors, Running then Succeeded") {
  auto p = plugin();
  Document job = defaulted(kSendRecv);
  std::vector<Document> pods;
  pods.push_back(pod_json("sendrecv-master-0", "master", 0, "Running"));
  pods.push_back(pod_json("sendrecv-worker-0", "worker", 0, "Running"));
  pods.push_back(pod_json("sendrecv-worker-1", "worker", 1, "Pending"));
  pods.push_back(pod_json("sendrecv-worker-2", "worker", 2, "Running", true));
  fw::Observed obs;
  for (auto& d : pods) obs.pods.push_back(&d.root());
  auto s = p->compute_status(job.root(), obs);
  CHECK(s.replica_statuses["Master"].active == 1);
  CHECK(s.replica_statuses["Master"].selector ==
        "training.kubeflow.org/job-name=sendrecv,training.kubeflow.org/operator-name=pytorchjob-controller,"
        "training.kubeflow.org/replica-type=master");
  CHECK(s.replica_statuses["Worker"].active == 1);
  CHECK(s.replica_statuses["Worker"].failed == 1);
  // A terminating running worker counts as failed, but 3 > 0 + 0 so the Worker proposes Restarting.
  REQUIRE(s.conditions.size() == 2);
  CHECK(s.conditions[0].type == "Running");
  CHECK(s.conditions[0].reason == "PyTorchJobRunning");
  CHECK(s.conditions[0].message == "PyTorchJob sendrecv is running.");
  CHECK(s.conditions[1].type == "Restarting");
  CHECK(s.conditions[1].reason == "PyTorchJobRestarting");
  CHECK(s.conditions[1].message == "PyTorchJob sendrecv is restarting because 1 Worker replica(s) failed.");
  CHECK_FALSE(s.set_completion_time);
  // upstream's UpdateJobStatus announces Restarting (Warning), never Running.
  REQUIRE(s.events.size() == 1);
  CHECK(s.events[0].type == "Warning");
  CHECK(s.events[0].reason == "PyTorchJobRestarting");
  CHECK(s.events[0].message == s.conditions[1].message);

  pods[0] = pod_json("sendrecv-master-0", "master", 0, "Succeeded");
  obs.pods.clear();
  for (auto& d : pods) obs.pods.push_back(&d.root());
  auto done = p->compute_status(job.root(), obs);
  REQUIRE(done.conditions.size() == 1);
  CHECK(done.conditions[0].type == "Succeeded");
  CHECK(done.conditions[0].reason == "PyTorchJobSucceeded");
  CHECK(done.conditions[0].message == "PyTorchJob sendrecv is successfully completed.");
  CHECK(done.set_completion_time);
  REQUIRE(done.events.size() == 1);
  CHECK(done.events[0].type == "Normal");
  CHECK(done.events[0].reason == "PyTorchJobSucceeded");
  CHECK(done.events[0].message == "PyTorchJob sendrecv is successfully completed.");
  CHECK(done.replica_statuses["Master"].succeeded == 1);
}

TEST_CASE("pytorch: status without a Master and with restartPolicy Never") {
  auto p = plugin();
  Document job = defaulted(R"(
metadata: {name: solo, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: Never
      template: {spec: {containers: [{name: pytorch, image: i}]}}
)");
  Document a = pod_json("solo-worker-0", "worker", 0, "Running");
  Document b = pod_json("solo-worker-1", "worker", 1, "Failed");
  Document dup = pod_json("solo-worker-1b", "worker", 1, "Running");
  fw::Observed obs;
  obs.pods = {&a.root(), &b.root()};
  auto s = p->compute_status(job.root(), obs);
  REQUIRE(s.conditions.size() == 2);
  CHECK(s.conditions[0].message == "PyTorchJob ml/solo is running.");
  CHECK(s.conditions[1].type == "Failed");
  CHECK(s.conditions[1].reason == "PyTorchJobFailed");
  CHECK(s.conditions[1].message == "PyTorchJob solo is failed because 1 Worker replica(s) failed.");
  CHECK(s.set_completion_time);
  REQUIRE(s.events.size() == 1);
  CHECK(s.events[0].type == "Normal");  // upstream records a failed PyTorchJob as Normal
  CHECK(s.events[0].reason == "PyTorchJobFailed");

  // Two pods on one index: neither counts.
  obs.pods = {&a.root(), &b.root(), &dup.root()};
  auto d = p->compute_status(job.root(), obs);
  CHECK(d.replica_statuses["Worker"].failed == 0);
  CHECK(d.replica_statuses["Worker"].active == 1);

  Document s0 = pod_json("solo-worker-0", "worker", 0, "Succeeded");
  Document s1 = pod_json("solo-worker-1", "worker", 1, "Succeeded");
  obs.pods = {&s0.root(), &s1.root()};
  auto ok = p->compute_status(job.root(), obs);
  REQUIRE(ok.conditions.size() == 1);
  CHECK(ok.conditions[0].type == "Succeeded");
  CHECK(ok.conditions[0].message == "PyTorchJob ml/solo successfully completed.");

  // Elastic: one succeeded worker finishes the job.
  REQUIRE(json::set_int(job, "/spec/elasticPolicy/minReplicas", 1));
  obs.pods = {&a.root(), &s1.root()};
  auto elastic = p->compute_status(job.root(), obs);
  REQUIRE(elastic.conditions.size() == 1);
  CHECK(elastic.conditions[0].type == "Succeeded");
}

TEST_CASE("pytorch: the upstream sendrecv example") {
  const std::filesystem::path path = std::string(UNITRAIN_REFERENCE_EXAMPLES) + "/pytorch/pytorch_job_sendrecv.yaml";
  if (!std::filesystem::exists(path)) {
    return skip("upstream example " + path.string() + " not found");
  }
  WARN("ran against the upstream example(s) in " << path);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto docs = json::parse_yaml(ss.str());
  REQUIRE(docs);
  Document job = (*docs)[0];
  auto p = plugin();
  CHECK(p->validate(nullptr, job.root()).ok());
  p->set_defaults(job);
  CHECK(p->pod_slots(job.root()).size() == 4);
  Document pod = Document::object();
  REQUIRE(json::set(pod, "/spec", json::clone(*json::find(job.root(), "/spec/pytorchReplicaSpecs/Worker/template/spec"), pod.alloc())));
  REQUIRE(p->decorate_pod(job.root(), {"Worker", 2}, pod));
  CHECK(env_names_values(*pod_field(pod, "/spec/containers/0")) ==
        std::vector<std::string>{"PYTHONUNBUFFERED=1", "MASTER_PORT=23456", "PET_MASTER_PORT=23456",
                                 "MASTER_ADDR=pytorch-dist-basic-sendrecv-master-0",
                                 "PET_MASTER_ADDR=pytorch-dist-basic-sendrecv-master-0", "WORLD_SIZE=4", "RANK=3",
                                 "PET_NODE_RANK=3", "PET_NPROC_PER_NODE=auto", "PET_NNODES=4"});
  auto objs = p->desired_objects(job.root(), {});
  REQUIRE(objs);
  CHECK(objs->size() == 4);
}

// Specs upstream accepts and then never runs (or runs wrongly): refused with field paths, the
// same at admission and in the controller. Where upstream's webhook already refuses a count it
// keeps its wording (Worker "must be at least 1"), and the field is not reported twice.
TEST_CASE("pytorch: nonsense specs are refused with their field paths") {
  auto p = plugin();
  const Document base = yaml(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: pt}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch, image: pt}]}}}
)");
  unitrain::testing::check_refusals(*p, base, {
      {{R"({"spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":-2}}}})"},
       {"spec.pytorchReplicaSpecs[Worker].replicas: Forbidden: must be at least 1"}},
      {{R"({"spec":{"pytorchReplicaSpecs":null}})", R"({"spec":{"pytorchReplicaSpecs":{}}})"},
       {"spec.pytorchReplicaSpecs: Required value: must have at least one replica spec"}},
      {{R"({"spec":{"runPolicy":{"activeDeadlineSeconds":-60,"backoffLimit":-1}}})"},
       {"spec.runPolicy.activeDeadlineSeconds: Invalid value: -60: must be greater than or equal to 0",
        "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0"}},
      {{R"({"spec":{"runPolicy":{"cleanPodPolicy":"all"}}})"},
       {R"(spec.runPolicy.cleanPodPolicy: Unsupported value: "all": supported values: "All", "None", "Running")"}},
      {{R"({"spec":{"elasticPolicy":{"minReplicas":3,"maxReplicas":2}}})"},
       {"spec.elasticPolicy.maxReplicas: Invalid value: 2: must be greater than or equal to minReplicas (3)"}},
      {{R"({"spec":{"elasticPolicy":{"minReplicas":0,"maxReplicas":2}}})"},
       {"spec.elasticPolicy.minReplicas: Invalid value: 0: must be greater than or equal to 1"}},
  });
}
