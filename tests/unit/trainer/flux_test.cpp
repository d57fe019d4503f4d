// The Flux ML policy: the broker settings, the command rewrite, the installer init container,
// volumes and mounts, the entrypoint ConfigMap and the CURVE Secret; Z85 and the key derivation.
#include <catch2/catch.hpp>

#include <array>

#include "core/base/base64.h"
#include "frameworks/trainer/build.h"
#include "frameworks/trainer/curve.h"
#include "frameworks/trainer/flux.h"
#include "tests/unit/trainer/fixtures.h"

namespace json = unitrain::json;
namespace tr = unitrain::frameworks::trainer;
using unitrain::testing::yaml;
using unitrain::testing::trainer::at;
using unitrain::testing::trainer::named;
using unitrain::testing::trainer::same_as_yaml;

namespace {

const char* kFluxRuntime = R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: flux-runtime}
spec:
  mlPolicy: {numNodes: 1, flux: {numProcPerNode: 2}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: runtime-image
                      command: [python3, run.py]
                      args: [--epochs, "3"]
                      env: [{name: FLUX_NETWORK_DEVICE, value: eth1}, {name: FLUX_QUEUE_POLICY, value: runtime}]
)";

json::Document flux_trainjob(std::string_view trainer) {
  return yaml(std::string("metadata: {name: fx, namespace: ns, uid: U1}\n"
                          "spec: {runtimeRef: {name: flux-runtime, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}, ") +
              std::string(trainer) + "}");
}

const json::Value* object_named(const tr::Built& b, std::string_view kind, std::string_view name) {
  for (const auto& o : b.objects) {
    if (json::string_at(o.root(), "/kind") == kind && json::string_at(o.root(), "/metadata/name") == name) return &o.root();
  }
  return nullptr;
}

}  // namespace

TEST_CASE("Z85: RFC 32's test vector, whole words only") {
  const std::array<uint8_t, 8> hello{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B};
  auto z = tr::z85_encode(hello);
  REQUIRE(z);
  CHECK(*z == "HelloWorld");
  const std::array<uint8_t, 3> odd{1, 2, 3};
  auto bad = tr::z85_encode(odd);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "Z85: 3 bytes is not a multiple of 4");
}

TEST_CASE("CURVE keys: SHA-256 of the UID as the X25519 secret key, the public key derived") {
  // Computed independently: sha256sum of the UID, `openssl pkey -pubout` of it as an X25519 key,
  // both Z85-encoded.
  auto keys = tr::curve_keys_for("U1");
  REQUIRE(keys);
  CHECK(keys->public_key == "t&akj>LFXYC=(k&YVx25AmGgggdaA:Ogl(I{Je2>");
  CHECK(keys->secret_key == "f(iJK*g3x2]1=s/aC*KK4d3q)PUUMU)>NMpmU<J>");
  auto other = tr::curve_keys_for("6b2a4d0e-9c1f-4f7e-8a55-0f3f1c2d9e77");
  REQUIRE(other);
  CHECK(other->public_key == "*smAZaspjQ?=h[S{jVWi2m/+je=!p&2{mM/WO4-U");
  CHECK(other->secret_key == "BqDIq!}>AXed[C/Qq:r}/GGn7W{puXkoOZ{R#Q2j");
  const std::string cert = tr::curve_certificate(*keys, "fx");
  CHECK(cert.find("curve\n    public-key = \"t&akj>LFXYC=(k&YVx25AmGgggdaA:Ogl(I{Je2>\"\n"
                  "    secret-key = \"f(iJK*g3x2]1=s/aC*KK4d3q)PUUMU)>NMpmU<J>\"\n") != std::string::npos);
}

TEST_CASE("Flux: settings from env (the TrainJob's win), defaults otherwise") {
  auto none = tr::flux_settings(nullptr);
  CHECK(none.view_image == "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy");
  CHECK(none.network_device == "eth0");
  CHECK(none.queue_policy == "fcfs");

  auto out = tr::build(flux_trainjob("trainer: {numNodes: 3, env: [{name: FLUX_QUEUE_POLICY, value: easy}]}").root(),
                       yaml(kFluxRuntime).root(), {});
  REQUIRE(out);
  const json::Value& rj = named(at(out->jobset.root(), "/spec/replicatedJobs"), "node");
  const json::Value& init = named(at(rj, "/template/spec/template/spec/initContainers"), "flux-installer");
  CHECK(json::string_at(init, "/image") == "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy");
  const json::Value* cm = object_named(*out, "ConfigMap", "fx-flux-entrypoint");
  REQUIRE(cm != nullptr);
  const std::string entrypoint = json::string_at(*cm, "/data/entrypoint.sh");
  CHECK(entrypoint.find("default_bind = \"tcp://eth1:%p\"") != std::string::npos);  // the runtime's
  CHECK(entrypoint.find("queue-policy = \"easy\"") != std::string::npos);           // the TrainJob's over the runtime's
}

TEST_CASE("Flux: command rewrite, installer, volumes, mounts, entrypoint ConfigMap and CURVE Secret") {
  auto out = tr::build(flux_trainjob("trainer: {numNodes: 3, resourcesPerNode: {limits: {nvidia.com/gpu: 2}}, "
                                     "env: [{name: FLUX_VIEW_IMAGE, value: my/view:1}]}")
                           .root(),
                       yaml(kFluxRuntime).root(), {});
  REQUIRE(out);
  const json::Value& rj = named(at(out->jobset.root(), "/spec/replicatedJobs"), "node");
  CHECK(json::get_int(rj, "/template/spec/parallelism") == 3);
  const json::Value& pod = at(rj, "/template/spec/template/spec");
  const json::Value& node = named(at(pod, "/containers"), "node");
  same_as_yaml(at(node, "/command"), R"(["/bin/bash", "/etc/flux-config/entrypoint.sh", "python3 run.py --epochs 3"])");
  CHECK(at(node, "/args").IsNull());
  same_as_yaml(at(pod, "/initContainers"), R"(
- name: flux-installer
  image: my/view:1
  command: [/bin/bash, /etc/flux-config/init.sh]
  volumeMounts:
    - {name: flux-install, mountPath: /mnt/flux}
    - {name: fx-flux-entrypoint, mountPath: /etc/flux-config, readOnly: true}
)");
  same_as_yaml(at(pod, "/volumes"), R"(
- {name: spack-install, emptyDir: {}}
- {name: flux-install, emptyDir: {}}
- {name: fx-flux-entrypoint, configMap: {name: fx-flux-entrypoint, defaultMode: 493}}
- {name: shared-memory, emptyDir: {medium: Memory}}
- {name: flux-curve, secret: {secretName: fx-flux-curve, defaultMode: 256}}
)");
  same_as_yaml(at(node, "/volumeMounts"), R"(
- {name: flux-install, mountPath: /mnt/flux}
- {name: spack-install, mountPath: /opt/software}
- {name: fx-flux-entrypoint, mountPath: /etc/flux-config, readOnly: true}
- {name: flux-curve, mountPath: /curve, readOnly: true}
- {name: shared-memory, mountPath: /dev/shm, readOnly: true}
)");

  REQUIRE(out->objects.size() == 2);
  CHECK(json::string_at(out->objects[0].root(), "/kind") == "ConfigMap");  // Flux's objects in build order
  const json::Value* cm = object_named(*out, "ConfigMap", "fx-flux-entrypoint");
  REQUIRE(cm != nullptr);
  CHECK(json::string_at(*cm, "/metadata/namespace") == "ns");
  const std::string entrypoint = json::string_at(*cm, "/data/entrypoint.sh");
  CHECK(entrypoint.rfind("#!/bin/bash\n", 0) == 0);
  CHECK(entrypoint.find("hosts = [ { host = \"fx-node-0-[0-2]\" } ]") != std::string::npos);
  CHECK(entrypoint.find("default_connect = \"tcp://%h.fx:%p\"") != std::string::npos);
  CHECK(entrypoint.find("curve_cert = \"/curve/curve.cert\"") != std::string::npos);
  // numProcPerNode 2 from the policy: 2 x 3 tasks, and the GPUs.
  CHECK(entrypoint.find("flux run -N 3 -n 6 -g 2 /bin/bash -c") != std::string::npos);
  CHECK(entrypoint.find('@') == std::string::npos);  // every placeholder filled
  CHECK(json::string_at(*cm, "/data/init.sh").find("cp -aL /opt/view/. /mnt/flux/view/") != std::string::npos);

  const json::Value* secret = object_named(*out, "Secret", "fx-flux-curve");
  REQUIRE(secret != nullptr);
  auto cert = unitrain::base64_decode(json::string_at(*secret, "/data/curve.cert"));
  REQUIRE(cert);
  auto keys = tr::curve_keys_for("U1");
  REQUIRE(keys);
  CHECK(*cert == tr::curve_certificate(*keys, "fx"));
}

TEST_CASE("Flux: the TrainJob's numProcPerNode wins, no GPU flag without GPUs, the hostlist follows numNodes") {
  tr::FluxLayout layout{.trainjob = "j", .subdomain = "j", .nodes = 1, .tasks_per_node = 4, .gpus = 0};
  CHECK(tr::flux_hostlist(layout) == "j-node-0-[0-0]");
  CHECK(tr::flux_task_flags(layout) == "-N 1 -n 4");
  auto out = tr::build(flux_trainjob("trainer: {numNodes: 2, numProcPerNode: 5, command: [mpirun], args: [a.out]}").root(),
                       yaml(kFluxRuntime).root(), {});
  REQUIRE(out);
  const json::Value& rj = named(at(out->jobset.root(), "/spec/replicatedJobs"), "node");
  const json::Value& node = named(at(rj, "/template/spec/template/spec/containers"), "node");
  same_as_yaml(at(node, "/command"), R"(["/bin/bash", "/etc/flux-config/entrypoint.sh", "mpirun a.out"])");
  CHECK(at(node, "/args").IsNull());
  const std::string entrypoint = json::string_at(*object_named(*out, "ConfigMap", "fx-flux-entrypoint"), "/data/entrypoint.sh");
  CHECK(entrypoint.find("flux run -N 2 -n 10 /bin/bash -c") != std::string::npos);
  CHECK(entrypoint.find("fx-node-0-[0-1]") != std::string::npos);
}

TEST_CASE("Flux: without spec.trainer.numNodes the build fails with a clear error (upstream dereferences nil)") {
  for (const char* trainer : {"suspend: false", "trainer: {image: x}"}) {
    auto out = tr::build(flux_trainjob(trainer).root(), yaml(kFluxRuntime).root(), {});
    REQUIRE_FALSE(out);
    CHECK(out.error().message == "Flux runtime: spec.trainer.numNodes is required (the brokers' host list is built from it)");
  }
}
