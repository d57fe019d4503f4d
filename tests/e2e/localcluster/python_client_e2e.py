#!/usr/bin/python3
"""python3-kubernetes (Debian's package) against build/bin/localcluster: list, create, patch,
watch from a resourceVersion, delete, options the server refuses. Usage: python_client_e2e.py LOCALCLUSTER_BINARY [--tls]"""
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
