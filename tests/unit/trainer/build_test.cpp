// TrainJob + runtime -> JobSet, checked field by field against what Kubeflow Trainer v2.3.0
// builds for the same input (names, env, labels, ports, DNS, objects).
#include <catch2/catch.hpp>

#include "core/api/quantity.h"
#include "frameworks/trainer/build.h"
#include "tests/unit/trainer/fixtures.h"

namespace json = unitrain::json;
namespace tr = unitrain::frameworks::trainer;
using unitrain::testing::yaml;
using unitrain::testing::trainer::at;
using unitrain::testing::trainer::named;
using unitrain::testing::trainer::shipped_runtime;

namespace {

unitrain::Result<tr::BuildInput::SshKeys> fixed_keys() {
  return tr::BuildInput::SshKeys{"-----BEGIN EC PRIVATE KEY-----\nX\n-----END EC PRIVATE KEY-----\n",
                                 "ecdsa-sha2-nistp521 AAAA\n"};
}

tr::Built built(const json::Document& trainjob, const json::Document& runtime, tr::BuildInput input = {}) {
  if (input.generate_ssh_keys == nullptr) input.generate_ssh_keys = &fixed_keys;
  auto out = tr::build(trainjob.root(), runtime.root(), input);
  INFO((out ? std::string() : out.error().message));
  REQUIRE(out);
  return std::move(*out);
}

bool same(const json::Value& actual, std::string_view expected_yaml) {
  json::Document expected = yaml(expected_yaml);
  INFO("actual:   " << json::dump(actual) << "\nexpected: " << expected.dump());
  CHECK(json::equal(actual, expected.root()));
  return json::equal(actual, expected.root());
}

const json::Value& rjob(const json::Document& jobset, std::string_view name) {
  return named(at(jobset.root(), "/spec/replicatedJobs"), name);
}
const json::Value& container(const json::Value& rj, std::string_view name) {
  return named(at(rj, "/template/spec/template/spec/containers"), name);
}

}  // namespace

TEST_CASE("torch-distributed: the JobSet of upstream's worked example") {
  auto tj = yaml(R"(
metadata: {name: demo, namespace: ns, uid: U}
spec:
  runtimeRef: {name: torch-distributed, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}
  trainer:
    numNodes: 2
    command: [torchrun, train.py]
    resourcesPerNode: {limits: {nvidia.com/gpu: 4}}
  suspend: false
)");
  auto out = built(tj, shipped_runtime("torch-distributed.yaml"));
  const json::Value& js = out.jobset.root();
  CHECK(json::string_at(js, "/apiVersion") == "jobset.x-k8s.io/v1alpha2");
  CHECK(json::string_at(js, "/kind") == "JobSet");
  CHECK(json::string_at(js, "/metadata/name") == "demo");
  CHECK(json::string_at(js, "/metadata/namespace") == "ns");
  CHECK(json::find(js, "/metadata/labels") == nullptr);  // runtime object labels go nowhere
  CHECK(json::get_bool(js, "/spec/suspend") == false);
  const json::Value& node = rjob(out.jobset, "node");
  CHECK(json::get_int(node, "/replicas") == 1);
  CHECK(json::string_at(node, "/template/metadata/labels/trainer.kubeflow.org~1trainjob-ancestor-step") == "trainer");
  CHECK(json::get_int(node, "/template/spec/parallelism") == 2);
  CHECK(json::get_int(node, "/template/spec/completions") == 2);
  const json::Value& c = container(node, "node");
  CHECK(json::string_at(c, "/image") == "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime");
  same(at(c, "/command"), "[torchrun, train.py]");
  same(at(c, "/resources"), "{limits: {nvidia.com/gpu: 4}}");
  same(at(c, "/env"), R"(
- {name: PET_NNODES, value: "2"}
- {name: PET_NPROC_PER_NODE, value: auto}
- name: PET_NODE_RANK
  valueFrom: {fieldRef: {fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}
- {name: PET_MASTER_ADDR, value: demo-node-0-0.demo}
- {name: PET_MASTER_PORT, value: "29500"}
)");
  same(at(c, "/ports"), "[{containerPort: 29500}]");
  // JobSet's webhook defaults, written explicitly (docs/compatibility.md).
  same(at(js, "/spec/network"), "{enableDNSHostnames: true, publishNotReadyAddresses: true}");
  same(at(js, "/spec/successPolicy"), "{operator: All}");
  same(at(js, "/spec/startupPolicy"), "{startupPolicyOrder: AnyOrder}");
  CHECK(json::string_at(node, "/template/spec/completionMode") == "Indexed");
  CHECK(json::string_at(node, "/template/spec/template/spec/restartPolicy") == "OnFailure");
  CHECK(out.objects.empty());
}

TEST_CASE("torch: processes per node from CPUs (rounded up), an explicit count, and no trainer at all") {
  auto runtime = shipped_runtime("torch-distributed.yaml");
  auto env_of = [&](std::string_view trainer_yaml) {
    auto tj = yaml(std::string("metadata: {name: t, namespace: ns}\nspec:\n  runtimeRef: {name: torch-distributed}\n") +
                   std::string(trainer_yaml));
    auto out = built(tj, runtime);
    return json::Document::copy_of(at(container(rjob(out.jobset, "node"), "node"), "/env"));
  };
  CHECK(json::string_at(named(env_of("  trainer: {resourcesPerNode: {requests: {cpu: 2500m}}}").root(), "PET_NPROC_PER_NODE"), "/value") == "3");
  CHECK(json::string_at(named(env_of("  trainer: {resourcesPerNode: {limits: {cpu: 700m}}}").root(), "PET_NPROC_PER_NODE"), "/value") == "1");
  CHECK(json::string_at(named(env_of("  trainer: {numProcPerNode: 4}").root(), "PET_NPROC_PER_NODE"), "/value") == "4");
  CHECK(json::string_at(named(env_of("  trainer: {}").root(), "PET_NNODES"), "/value") == "1");
  // TrainJob env first (new names appended after the runtime's), then the plugin's.
  auto env = env_of("  trainer: {env: [{name: A, value: a}]}");
  CHECK(json::string_at(env.root(), "/0/name") == "A");
  CHECK(json::string_at(env.root(), "/1/name") == "PET_NNODES");
  // Without spec.trainer the trainer container is left alone (upstream quirk kept).
  CHECK(env_of("  suspend: false").root().IsNull());
}

TEST_CASE("torch envInjection: PET env in named side containers, a missing target fails the build") {
  auto runtime = shipped_runtime("torch-distributed.yaml");
  REQUIRE(unitrain::testing::trainer::set_yaml(runtime, "/spec/mlPolicy/torch", "{envInjection: {targets: [{jobName: node, containerNames: [sidecar]}]}}"));
  auto tj = yaml("metadata: {name: t, namespace: ns}\nspec: {runtimeRef: {name: torch-distributed}, trainer: {numNodes: 3}}");
  auto failed = tr::build(tj.root(), runtime.root(), {});
  REQUIRE_FALSE(failed);
  CHECK(failed.error().message == "envInjection target podSet \"node\" container \"sidecar\" not found in runtime template");

  REQUIRE(unitrain::testing::trainer::set_yaml(runtime, "/spec/template/spec/replicatedJobs/0/template/spec/template/spec/initContainers", "[{name: sidecar, image: s}]"));
  auto out = built(tj, runtime);
  const json::Value& init = named(at(rjob(out.jobset, "node"), "/template/spec/template/spec/initContainers"), "sidecar");
  CHECK(json::string_at(named(at(init, "/env"), "PET_NNODES"), "/value") == "3");
  CHECK(json::string_at(named(at(init, "/env"), "PET_MASTER_ADDR"), "/value") == "t-node-0-0.t");
}

TEST_CASE("deepspeed-distributed: upstream's MPI worked example (hostfile, slots, Secret, mounts, env)") {
  auto tj = yaml(R"(
metadata: {name: demo, namespace: ns, uid: U}
spec:
  runtimeRef: {name: deepspeed-distributed, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}
  trainer:
    numNodes: 3
    image: my/img
    command: [mpirun, python, train.py]
    env: [{name: E, value: e}]
    resourcesPerNode: {limits: {nvidia.com/gpu: 2}}
)");
  auto out = built(tj, shipped_runtime("deepspeed-distributed.yaml"));
  const json::Value& node = rjob(out.jobset, "node");
  CHECK(json::get_int(node, "/template/spec/parallelism") == 2);
  CHECK(json::get_int(node, "/template/spec/completions") == 2);
  const json::Value& nc = container(node, "node");
  same(at(nc, "/command"), "[/usr/sbin/sshd]");
  CHECK(json::string_at(nc, "/image") == "ghcr.io/kubeflow/trainer/deepspeed-runtime");
  same(at(nc, "/resources"), "{limits: {nvidia.com/gpu: 2}}");
  same(at(nc, "/volumeMounts"), "[{name: mpi-ssh-auth, mountPath: /home/mpiuser/.ssh}]");
  same(at(nc, "/env"), "[{name: E, value: e}]");
  same(named(at(node, "/template/spec/template/spec/volumes"), "mpi-ssh-auth"), R"(
name: mpi-ssh-auth
secret:
  secretName: demo-mpi-ssh-auth
  items:
    - {key: ssh-privatekey, path: id_rsa, mode: 416}
    - {key: ssh-publickey, path: id_rsa.pub, mode: 420}
    - {key: ssh-publickey, path: authorized_keys, mode: 420}
  defaultMode: 256
)");

  const json::Value& launcher = rjob(out.jobset, "launcher");
  CHECK(json::get_int(launcher, "/replicas") == 1);
  CHECK(json::get_int(launcher, "/template/spec/parallelism") == 1);
  same(at(launcher, "/dependsOn"), "[{name: node, status: Ready}]");
  const json::Value& lc = container(launcher, "node");
  CHECK(json::string_at(lc, "/image") == "my/img");
  same(at(lc, "/command"), "[mpirun, python, train.py]");
  same(at(lc, "/resources"), "{limits: {nvidia.com/gpu: 2}}");
  same(at(lc, "/volumeMounts"), "[{name: mpi-ssh-auth, mountPath: /home/mpiuser/.ssh}, {name: mpi-hostfile, mountPath: /etc/mpi}]");
  same(at(lc, "/env"), R"(
- {name: OMPI_MCA_orte_default_hostfile, value: /etc/mpi/hostfile}
- {name: OMPI_MCA_orte_keep_fqdn_hostnames, value: "true"}
- {name: OMPI_MCA_orte_set_default_slots, value: "2"}
- {name: OMPI_MCA_plm_rsh_args, value: -o ConnectionAttempts=10}
- {name: E, value: e}
)");
  same(named(at(launcher, "/template/spec/template/spec/volumes"), "mpi-hostfile"),
       "{name: mpi-hostfile, configMap: {name: demo-mpi-hostfile, items: [{key: hostfile, path: hostfile, mode: 292}]}}");
  const json::Value& spec = at(out.jobset.root(), "/spec");
  same(at(spec, "/network"), "{publishNotReadyAddresses: true, enableDNSHostnames: true}");
  same(at(spec, "/successPolicy"), "{operator: All, targetReplicatedJobs: [launcher]}");

  REQUIRE(out.objects.size() == 2);
  const json::Value& secret = out.objects[0].root();
  CHECK(json::string_at(secret, "/kind") == "Secret");
  CHECK(json::string_at(secret, "/metadata/name") == "demo-mpi-ssh-auth");
  CHECK(json::string_at(secret, "/type") == "kubernetes.io/ssh-auth");
  CHECK(json::get_bool(secret, "/immutable") == true);
  CHECK(json::string_at(secret, "/data/ssh-publickey") == "ZWNkc2Etc2hhMi1uaXN0cDUyMSBBQUFBCg==");
  const json::Value& hostfile = out.objects[1].root();
  CHECK(json::string_at(hostfile, "/metadata/name") == "demo-mpi-hostfile");
  CHECK(json::string_at(hostfile, "/data/hostfile") ==
        "demo-node-0-0.demo slots=2\ndemo-node-0-1.demo slots=2\ndemo-launcher-0-0.demo slots=2\n");

  // The Secret is created once and never rewritten.
  auto again = built(tj, shipped_runtime("deepspeed-distributed.yaml"), {.ssh_secret_exists = true});
  REQUIRE(again.objects.size() == 1);
  CHECK(json::string_at(again.objects[0].root(), "/kind") == "ConfigMap");
}

TEST_CASE("MPI: slots from numProcPerNode, and an unsupported implementation fails the build") {
  auto runtime = shipped_runtime("deepspeed-distributed.yaml");
  auto tj = yaml("metadata: {name: m, namespace: ns}\nspec: {runtimeRef: {name: deepspeed-distributed}, trainer: {numNodes: 1, numProcPerNode: 8}}");
  auto out = built(tj, runtime);
  // numNodes 1 with the launcher as a node: one sshd node still runs (max(n-1, 1)).
  CHECK(json::string_at(out.objects[1].root(), "/data/hostfile") == "m-node-0-0.m slots=8\nm-launcher-0-0.m slots=8\n");
  REQUIRE(json::set_string(runtime, "/spec/mlPolicy/mpi/mpiImplementation", ""));
  auto failed = tr::build(tj.root(), runtime.root(), {.generate_ssh_keys = &fixed_keys});
  REQUIRE_FALSE(failed);
  CHECK(failed.error().message == "MPI implementation for \"\" doesn't supported");
}

TEST_CASE("jax-distributed and xgboost-distributed: coordinator env and process counts") {
  auto tj = yaml("metadata: {name: j, namespace: ns}\nspec: {runtimeRef: {name: jax-distributed}, trainer: {numNodes: 3}}");
  auto out = built(tj, shipped_runtime("jax-distributed.yaml"));
  const json::Value& c = container(rjob(out.jobset, "node"), "node");
  same(at(c, "/env"), R"(
- {name: JAX_NUM_PROCESSES, value: "3"}
- name: JAX_PROCESS_ID
  valueFrom: {fieldRef: {fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}
- {name: JAX_COORDINATOR_ADDRESS, value: "j-node-0-0.j:29500"}
)");
  same(at(c, "/ports"), "[{containerPort: 29500}]");
  CHECK(json::get_int(rjob(out.jobset, "node"), "/template/spec/parallelism") == 3);

  auto xtj = yaml(R"(
metadata: {name: x, namespace: ns}
spec:
  runtimeRef: {name: xgboost-distributed}
  trainer: {numNodes: 2, env: [{name: U, value: u}], resourcesPerNode: {limits: {nvidia.com/gpu: 4}}}
)");
  auto xout = built(xtj, shipped_runtime("xgboost-distributed.yaml"));
  same(at(container(rjob(xout.jobset, "node"), "node"), "/env"), R"(
- {name: U, value: u}
- {name: DMLC_TRACKER_URI, value: x-node-0-0.x}
- {name: DMLC_TRACKER_PORT, value: "29500"}
- name: DMLC_TASK_ID
  valueFrom: {fieldRef: {fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}
- {name: DMLC_NUM_WORKER, value: "8"}
)");
}

TEST_CASE("plain ML (no policy): numNodes and env reach the trainer container only") {
  auto runtime = yaml(R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: plain, namespace: ns}
spec:
  template:
    metadata: {labels: {team: a}, annotations: {note: n}}
    spec:
      replicatedJobs:
        - name: trainer
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              parallelism: 5
              template: {spec: {containers: [{name: node, image: i, env: [{name: A, value: runtime}]}]}}
)");
  auto tj = yaml("metadata: {name: p, namespace: ns}\nspec: {runtimeRef: {name: plain, kind: TrainingRuntime}, trainer: {numNodes: 4, env: [{name: B, value: b}, {name: A, value: job}]}}");
  auto out = built(tj, runtime);
  const json::Value& r = rjob(out.jobset, "trainer");
  CHECK(json::get_int(r, "/template/spec/parallelism") == 4);
  same(at(container(r, "node"), "/env"), "[{name: A, value: job}, {name: B, value: b}]");
  same(at(out.jobset.root(), "/metadata/labels"), "{team: a}");
  same(at(out.jobset.root(), "/metadata/annotations"), "{note: n}");
  // Without an ML policy the count comes from the Job template's parallelism.
  auto no_nodes = yaml("metadata: {name: p, namespace: ns}\nspec: {runtimeRef: {name: plain, kind: TrainingRuntime}}");
  CHECK(json::get_int(rjob(built(no_nodes, runtime).jobset, "trainer"), "/template/spec/parallelism") == 5);
}

TEST_CASE("torchtune: model from the runtime name, recipe and config, the rewritten command") {
  CHECK(tr::torchtune_model("torchtune-llama3.2-1b") == "llama3_2/1B");
  CHECK(tr::torchtune_model("torchtune-qwen2.5-1.5b") == "qwen2_5/1.5B");
  CHECK(tr::torchtune_model("torch-distributed") == "");
  auto args = yaml("['model.lora_attn_modules=[q_proj]', 'model.quantize_base= True ']");
  CHECK(tr::torchtune_recipe(&args.root(), 1, "1", 0).config_suffix == "_qlora_single_device");
  CHECK(tr::torchtune_recipe(&args.root(), 1, "auto", 2).recipe == "lora_finetune_distributed");
  CHECK(tr::torchtune_recipe(&args.root(), 1, "auto", 2).config_suffix == "_qlora");
  auto dora = yaml("['model.lora_attn_modules=[q_proj]', model.quantize_base=true, model.use_dora=true]");
  CHECK(tr::torchtune_recipe(&dora.root(), 1, "auto", 2).config_suffix == "_lora");
  CHECK(tr::torchtune_recipe(nullptr, 2, "auto", 2).config_suffix == "_full_multinode");
  CHECK(tr::torchtune_recipe(nullptr, 1, "auto", 2).config_suffix == "_full");

  auto tj = yaml(R"(
metadata: {name: tune, namespace: ns}
spec:
  runtimeRef: {name: torchtune-llama3.2-1b}
  trainer: {command: [tune, run], args: [batch_size=2]}
  initializer:
    dataset: {storageUri: "hf://me/data", env: [{name: X, value: x}], secretRef: {name: hf-token}}
)");
  auto out = built(tj, shipped_runtime("torchtune-llama3.2-1b.yaml"));
  const json::Value& c = container(rjob(out.jobset, "node"), "node");
  // The runtime's GPU limit (2) keeps nproc "auto", so the rendezvous endpoint is set.
  same(at(c, "/command"), R"(
[tune, run, "--rdzv_endpoint=tune-node-0-0.tune:29500", full_finetune_distributed, --config, llama3_2/1B_full,
 output_dir=/workspace/output, tokenizer.path=/workspace/model/original/tokenizer.model,
 checkpointer.checkpoint_dir=/workspace/model]
)");
  same(at(c, "/args"), "[batch_size=2]");
  CHECK(named(at(c, "/env"), "PET_MASTER_ADDR").IsNull());
  CHECK(json::string_at(named(at(c, "/env"), "PET_NPROC_PER_NODE"), "/value") == "auto");
  // Initializers: one replica, STORAGE_URI and env upserted, the secret appended as envFrom.
  const json::Value& ds = rjob(out.jobset, "dataset-initializer");
  CHECK(json::get_int(ds, "/replicas") == 1);
  CHECK(json::get_int(ds, "/template/spec/parallelism") == 1);
  const json::Value& dsc = container(ds, "dataset-initializer");
  same(at(dsc, "/env"), R"([{name: STORAGE_URI, value: "hf://me/data"}, {name: X, value: x}])");
  same(at(dsc, "/envFrom"), "[{secretRef: {name: hf-token}}]");
  same(at(container(rjob(out.jobset, "model-initializer"), "model-initializer"), "/env"),
       "[{name: STORAGE_URI, value: \"hf://meta-llama/Llama-3.2-1B-Instruct\"}]");
  // Runtime order kept, volumeClaimPolicies passed through.
  CHECK(json::string_at(out.jobset.root(), "/spec/replicatedJobs/0/name") == "dataset-initializer");
  CHECK(json::string_at(out.jobset.root(), "/spec/volumeClaimPolicies/0/templates/0/metadata/name") == "initializer");
}

TEST_CASE("runtimePatches: strategic merge by upstream's keys, applied in order, runtime order restored") {
  auto runtime = shipped_runtime("torchtune-llama3.2-1b.yaml");
  auto tj = yaml(R"(
metadata: {name: k, namespace: ns}
spec:
  runtimeRef: {name: torchtune-llama3.2-1b}
  runtimePatches:
    - manager: kueue.x-k8s.io/manager
      trainingRuntimeSpec:
        template:
          metadata: {labels: {a: "1"}, annotations: {scheduling.volcano.sh/queue-name: q}}
          spec:
            replicatedJobs:
              - name: node
                template:
                  metadata: {labels: {rj: x}}
                  spec:
                    template:
                      metadata: {annotations: {pod: y}}
                      spec:
                        nodeSelector: {zone: a}
                        tolerations: [{key: k1, operator: Exists}]
                        containers:
                          - name: node
                            volumeMounts: [{name: other, mountPath: /workspace}, {name: cache, mountPath: /cache}]
                        volumes: [{name: cache, emptyDir: {}}]
              - name: dataset-initializer
                template: {spec: {template: {spec: {nodeSelector: {zone: b}}}}}
    - manager: example.com/second
      trainingRuntimeSpec:
        template:
          metadata: {labels: {a: "2"}}
          spec:
            replicatedJobs:
              - name: node
                template:
                  spec:
                    template:
                      spec:
                        tolerations: [{key: k2, operator: Exists}]
)");
  auto out = built(tj, runtime);
  same(at(out.jobset.root(), "/metadata/labels"), "{a: \"2\"}");
  same(at(out.jobset.root(), "/metadata/annotations"), "{scheduling.volcano.sh/queue-name: q}");
  CHECK(json::string_at(out.jobset.root(), "/spec/replicatedJobs/0/name") == "dataset-initializer");
  CHECK(json::string_at(out.jobset.root(), "/spec/replicatedJobs/1/name") == "model-initializer");
  CHECK(json::string_at(out.jobset.root(), "/spec/replicatedJobs/2/name") == "node");
  const json::Value& node = rjob(out.jobset, "node");
  same(at(node, "/template/metadata/labels"), "{trainer.kubeflow.org/trainjob-ancestor-step: trainer, rj: x}");
  same(at(node, "/template/spec/template/metadata"), "{annotations: {pod: y}}");
  const json::Value& spec = at(node, "/template/spec/template/spec");
  same(at(spec, "/nodeSelector"), "{zone: a}");
  same(at(spec, "/tolerations"), "[{key: k2, operator: Exists}]");  // replaced, not merged
  same(at(spec, "/volumes"), "[{name: cache, emptyDir: {}}]");
  // Mounts merge by mountPath: /workspace is renamed in place, /cache appended.
  same(at(container(node, "node"), "/volumeMounts"), "[{name: other, mountPath: /workspace}, {name: cache, mountPath: /cache}]");
  same(at(rjob(out.jobset, "dataset-initializer"), "/template/spec/template/spec/nodeSelector"), "{zone: b}");
}

TEST_CASE("resourcesPerNode merges into the runtime's node resources per resource name") {
  auto tj = yaml(R"(
metadata: {name: r, namespace: ns}
spec:
  runtimeRef: {name: torchtune-llama3.2-1b}
  trainer: {resourcesPerNode: {requests: {memory: 8Gi}, limits: {cpu: "4"}}}
)");
  auto out = built(tj, shipped_runtime("torchtune-llama3.2-1b.yaml"));
  same(at(container(rjob(out.jobset, "node"), "node"), "/resources"),
       "{limits: {nvidia.com/gpu: 2, cpu: \"4\"}, requests: {memory: 8Gi}}");
  // The process count reads the raw TrainJob value (upstream bug kept: no GPU there -> CPUs).
  CHECK(json::string_at(named(at(container(rjob(out.jobset, "node"), "node"), "/env"), "PET_NPROC_PER_NODE"), "/value") == "4");
}

TEST_CASE("coscheduling and Volcano: pod metadata on every replicated Job, PodGroups summed over PodSets") {
  auto runtime = yaml(R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: gang}
spec:
  mlPolicy: {numNodes: 2, torch: {}}
  podGroupPolicy: {coscheduling: {scheduleTimeoutSeconds: 90}, volcano: {networkTopology: {mode: soft, highestTierAllowed: 2}}}
  template:
    metadata: {annotations: {scheduling.volcano.sh/queue-name: research}}
    spec:
      replicatedJobs:
        - name: dataset-initializer
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer}}
            spec: {template: {spec: {containers: [{name: dataset-initializer, resources: {requests: {cpu: 250m, memory: 512Mi}}}]}}}
        - name: node
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              template:
                spec:
                  priorityClassName: high
                  containers: [{name: node, resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {nvidia.com/gpu: 1}}}]
)");
  auto tj = yaml("metadata: {name: g, namespace: ns}\nspec: {runtimeRef: {name: gang}}");
  auto out = built(tj, runtime);
  for (auto name : {"dataset-initializer", "node"}) {
    const json::Value& meta = at(rjob(out.jobset, name), "/template/spec/template/metadata");
    CHECK(json::string_at(meta, "/labels/scheduling.x-k8s.io~1pod-group") == "g");
    CHECK(json::string_at(meta, "/annotations/scheduling.k8s.io~1group-name") == "g");
  }
  REQUIRE(out.objects.size() == 2);
  const json::Value& cos = out.objects[0].root();
  CHECK(json::string_at(cos, "/apiVersion") == "scheduling.x-k8s.io/v1alpha1");
  CHECK(json::get_int(cos, "/spec/minMember") == 3);
  CHECK(json::get_int(cos, "/spec/scheduleTimeoutSeconds") == 90);
  auto q = [](const json::Value& v, std::string_view p) { return *unitrain::api::Quantity::parse(json::string_at(v, p)); };
  CHECK(q(cos, "/spec/minResources/cpu") == *unitrain::api::Quantity::parse("1.25"));
  CHECK(q(cos, "/spec/minResources/memory") == *unitrain::api::Quantity::parse("2.5Gi"));
  CHECK(json::find(cos, "/spec/minResources/nvidia.com~1gpu") == nullptr);  // limits do not count
  const json::Value& vol = out.objects[1].root();
  CHECK(json::string_at(vol, "/apiVersion") == "scheduling.volcano.sh/v1beta1");
  CHECK(json::string_at(vol, "/spec/queue") == "research");
  CHECK(json::string_at(vol, "/spec/priorityClassName") == "high");
  same(at(vol, "/spec/networkTopology"), "{mode: soft, highestTierAllowed: 2}");
  // Once it exists, a running TrainJob's PodGroup is never rewritten; a suspended one's is.
  CHECK(built(tj, runtime, {.pod_group_exists = true}).objects.empty());
  REQUIRE(json::set_bool(tj, "/spec/suspend", true));
  CHECK(built(tj, runtime, {.pod_group_exists = true}).objects.size() == 2);
}

TEST_CASE("the JobSet is rebuilt only while it or the TrainJob is suspended") {
  auto runtime = shipped_runtime("torch-distributed.yaml");
  auto tj = yaml("metadata: {name: s, namespace: ns}\nspec: {runtimeRef: {name: torch-distributed}, suspend: false, trainer: {}}");
  auto running = yaml("spec: {suspend: false}");
  auto suspended = yaml("spec: {suspend: true}");
  CHECK(built(tj, runtime, {.existing_jobset = &running.root()}).jobset.root().IsNull());
  auto resumed = built(tj, runtime, {.existing_jobset = &suspended.root()});
  REQUIRE(resumed.jobset.root().IsObject());
  CHECK(json::get_bool(resumed.jobset.root(), "/spec/suspend") == false);
  REQUIRE(json::set_bool(tj, "/spec/suspend", true));
  auto suspending = built(tj, runtime, {.existing_jobset = &running.root()});
  CHECK(json::get_bool(suspending.jobset.root(), "/spec/suspend") == true);
}
