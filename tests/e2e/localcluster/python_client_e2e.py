#!/usr/bin/python3
"""python3-kubernetes (Debian's package) against build/bin/localcluster: list, create, patch,
watch from a resourceVersion, delete, options the server refuses; a PVC bound, a Deployment available, a pod's log. Usage: python_client_e2e.py LOCALCLUSTER_BINARY [--tls]"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


try:
    from kubernetes import client, config, watch
except ImportError as e:  # the Debian package python3-kubernetes; without it the test cannot run
    print(f"SKIPPED: python3-kubernetes is not installed: {e}")
    sys.exit(77)  # ctest's SKIP_RETURN_CODE


def start(binary, work, extra):
    proc = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--kubeconfig-out", os.path.join(work, "kubeconfig")] + extra,
                            stdout=subprocess.PIPE, stderr=open(os.path.join(work, "stderr"), "w"), text=True)
    line = [None]

    def read():
        line[0] = proc.stdout.readline()

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(10)
    if not line[0] or not line[0].startswith("ready "):
        proc.kill()
        fail(f"no 'ready <url>' line within 10s (got {line[0]!r})")
    return proc, line[0].split()[1]


def eventually(what, pred, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.1)
    fail(f"{what} within {seconds}s")


def sdk_style_flow(core):
    """What the Kubeflow SDK does around a training job: a PVC for the workspace, a Deployment-run
    service, pods' logs."""
    pvc = client.V1PersistentVolumeClaim(
        metadata=client.V1ObjectMeta(name="workspace"),
        spec=client.V1PersistentVolumeClaimSpec(access_modes=["ReadWriteOnce"],
                                                resources=client.V1ResourceRequirements(requests={"storage": "2Gi"})))
    core.create_namespaced_persistent_volume_claim("default", pvc, _request_timeout=10)
    bound = eventually("the PVC Bound", lambda: (lambda c: c if c.status is not None and c.status.phase == "Bound" else None)(
        core.read_namespaced_persistent_volume_claim("workspace", "default", _request_timeout=10)))
    if bound.spec.storage_class_name != "standard" or not bound.spec.volume_name:
        fail(f"PVC bound without the default class or a volume: {bound.spec}")

    apps = client.AppsV1Api()
    labels = {"app": "py-web"}
    dep = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="py-web"),
        spec=client.V1DeploymentSpec(
            replicas=2, selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="web", image="nginx:1.27")]))))
    apps.create_namespaced_deployment("default", dep, _request_timeout=10)
    eventually("py-web available", lambda: (lambda d: d.status is not None and d.status.available_replicas == 2)(
        apps.read_namespaced_deployment_status("py-web", "default", _request_timeout=10)))

    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="trainer", annotations={"sim.unitrain.io/duration": "200ms",
                                                                   "sim.unitrain.io/log": "step 1\nstep 2"}),
        spec=client.V1PodSpec(restart_policy="Never", containers=[client.V1Container(
            name="main", image="pytorch:2",
            volume_mounts=[client.V1VolumeMount(name="ws", mount_path="/workspace")])],
            volumes=[client.V1Volume(name="ws", persistent_volume_claim=client.V1PersistentVolumeClaimVolumeSource(
                claim_name="workspace"))]))
    core.create_namespaced_pod("default", pod, _request_timeout=10)
    eventually("the trainer pod Succeeded", lambda: (lambda p: p.status is not None and p.status.phase == "Succeeded")(
        core.read_namespaced_pod("trainer", "default", _request_timeout=10)))
    log = core.read_namespaced_pod_log("trainer", "default", container="main", _request_timeout=10)
    if "step 2" not in log or "container main exited with code 0" not in log:
        fail(f"trainer log: {log!r}")
    try:
        core.read_namespaced_pod_log("trainer", "default", container="nope", _request_timeout=10)
        fail("log of an unknown container succeeded")
    except client.exceptions.ApiException as e:
        if e.status != 400 or "container nope is not valid for pod trainer" not in e.body:
            fail(f"log of an unknown container: {e.status} {e.body}")


def main():
    if len(sys.argv) < 2:
        fail("usage: python_client_e2e.py LOCALCLUSTER_BINARY [--tls]")
    work = tempfile.mkdtemp()
    proc, url = start(sys.argv[1], work, sys.argv[2:])
    signal.alarm(60)  # nothing below may hang the test run
    try:
        config.load_kube_config(config_file=os.path.join(work, "kubeconfig"))
        core = client.CoreV1Api()

        names = [n.metadata.name for n in core.list_namespace(_request_timeout=10).items]
        if "default" not in names or "kube-system" not in names:
            fail(f"namespaces default and kube-system expected, got {names}")

        listed = core.list_namespaced_config_map("default", _request_timeout=10)
        rv = listed.metadata.resource_version
        if not rv:
            fail("list has no metadata.resourceVersion")

        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py1", labels={"app": "py"}), data={"k": "1"})
        created = core.create_namespaced_config_map("default", body, _request_timeout=10)
        if not created.metadata.uid or not created.metadata.creation_timestamp:
            fail("create did not set uid and creationTimestamp")
        patched = core.patch_namespaced_config_map("py1", "default", {"data": {"k": "2"}}, _request_timeout=10)
        if patched.data.get("k") != "2":
            fail(f"patch not applied: {patched.data}")
        try:
            core.create_namespaced_config_map("default", body, _request_timeout=10)
            fail("second create succeeded")
        except client.exceptions.ApiException as e:
            if e.status != 409:
                fail(f"second create: expected 409, got {e.status}")
        core.delete_namespaced_config_map("py1", "default", _request_timeout=10)

        seen = []
        w = watch.Watch()
        for ev in w.stream(core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5,
                           label_selector="app=py", _request_timeout=10):
            seen.append((ev["type"], ev["object"].metadata.name))
            if ev["type"] == "DELETED":
                w.stop()
        want = [("ADDED", "py1"), ("MODIFIED", "py1"), ("DELETED", "py1")]
        if seen != want:
            fail(f"watch from resourceVersion {rv}: expected {want}, got {seen}")

        selected = core.list_namespaced_config_map("default", label_selector="app=py", _request_timeout=10)
        if selected.items:
            fail("py1 still listed after delete")

        # Options kube-apiserver refuses come back as ApiExceptions with its status and words.
        def refused(call, status, words):
            try:
                call()
            except client.exceptions.ApiException as e:
                if e.status != status or words not in (e.body or ""):
                    fail(f"expected {status} with {words!r}, got {e.status}: {e.body}")
                return
            fail(f"expected {status} with {words!r}, the call succeeded")

        refused(lambda: core.list_namespaced_config_map("default", resource_version="1", resource_version_match="Bogus",
                                                        _request_timeout=10),
                422, 'Unsupported value: \\"Bogus\\"')
        refused(lambda: core.list_namespaced_config_map("default", limit=1, _continue="bm90LWEtdG9rZW4",
                                                        _request_timeout=10),
                400, "invalid continue token")
        refused(lambda: core.create_namespaced_config_map("default", body, dry_run="Yes", _request_timeout=10),
                422, "dryRun: Unsupported value")
        sdk_style_flow(core)
        print("PASS")
    finally:
        signal.alarm(0)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            fail("localcluster did not stop within 5s of SIGTERM")
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
