#!/usr/bin/python3
"""Chaos soak: mixed training jobs against a standalone local cluster under injected faults.

Runs build/bin/localcluster (with --state-dir, so an API-server restart keeps everything) and
two training-operator processes with leader election, submits JOBS jobs of every kind (TFJob,
PyTorchJob, MXJob, XGBoostJob, PaddleJob, MPIJob v1 and v2beta1: one two-version CRD stored as
v2beta1) in a seeded mix of scenarios, and meanwhile:
  - injects ~5% 500s, ~5% 429s and ~10% 409s on every write, cuts every watch after a few
    events and answers watch resumes with 410 (the local cluster's /unitrain/faults);
  - restarts the API server (SIGHUP: every connection and watch ends, the store is kept);
  - kills the leading operator with SIGKILL and starts a new one;
  - stops the leading operator with SIGTERM (a hand-over: it releases the lease);
  - resumes suspended jobs and deletes running ones;
  - replaces an operator that exits on its own (it loses its lease when the API server is too
    slow to renew it), as a Deployment would.
Every operator serves the webhooks, as every replica of a Deployment does; the cluster reaches the
Service training-operator.kubeflow:443 (the MPIJob CRD's conversion webhook) at each operator's
port (--service-endpoint given once per port) and skips a port nobody listens on any more, as a
Service routes to the replicas that are up. So MPIJob v1, which every read and write converts,
is served through the leader's kill -9 by the other operator. (No admission webhooks are
registered: v1 jobs name their module in spec.runPolicy.managedBy, which the defaulting webhook
would fill in.)
Then it waits (bounded) for every job to settle and prints one line per count:
  jobs in expected state, duplicate pods, unexpected re-creations, orphans, lost statuses,
  crashes, MPIJob v1 lists the conversion webhook refused -- and exits 1 when any of them is
  wrong, 77 when a tool it needs is missing. Operator processes that exit 1 on purpose (lease
  lost, graceful stop ran out) are listed as unclean stops without failing the run.

Pod creations are counted from a pod watch the soak keeps open the whole time (resumed from its
last resourceVersion after a cut, relisted after a 410): a creation is a pod uid seen for the
first time.

Usage: soak.py --bin-dir build/bin --source . [--jobs 200] [--seed 1] [--scenarios a,b]
               [--duration 600]
Scenarios: success, fail, fail-once-onfailure, fail-once-exitcode, deadline, backoff,
backoff-exitcode, suspend, delete.
"""

import argparse
import base64
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import yaml

SKIP = 77
NS = "soak"
WEBHOOK_NS = "kubeflow"  # the Service the MPIJob CRD's conversion names: training-operator.kubeflow
WEBHOOK_SECRET = "training-operator-webhook-cert"  # the operator's default --webhook-secret-name
LEASE = "soak.unitrain.io"

# kind -> (example file, plural, replica-spec key)
KINDS = {
    "TFJob": ("tensorflow.yaml", "tfjobs", "tfReplicaSpecs"),
    "PyTorchJob": ("pytorch.yaml", "pytorchjobs", "pytorchReplicaSpecs"),
    "MXJob": ("mxnet.yaml", "mxjobs", "mxReplicaSpecs"),
    "XGBoostJob": ("xgboost.yaml", "xgboostjobs", "xgbReplicaSpecs"),
    "PaddleJob": ("paddle.yaml", "paddlejobs", "paddleReplicaSpecs"),
    "MPIJob": ("mpi-v2.yaml", "mpijobs", "mpiReplicaSpecs"),
    "MPIJobV1": ("mpi-v1.yaml", "mpijobs", "mpiReplicaSpecs"),  # kind MPIJob at kubeflow.org/v1
}
API_VERSION = {"MPIJob": "kubeflow.org/v2beta1"}
MPI_KINDS = {"MPIJob", "MPIJobV1"}
# Webhook ports: two operators run at a time, and a hand-over starts the new one before the old
# one stops.
WEBHOOK_SLOTS = 3

SCENARIOS = ["success", "fail", "fail-once-onfailure", "fail-once-exitcode", "deadline", "backoff",
             "backoff-exitcode", "suspend", "delete"]
# MPIJob v2beta1 has no per-replica restart policies of training-operator's kind (its launcher is
# a batch Job): the restart-policy scenarios are for the other kubeflow.org/v1 kinds. MPIJob v1
# ends with its launcher pod alone (its workers run until then) and is left out of them too.
V1_ONLY = {"fail-once-onfailure", "fail-once-exitcode", "backoff", "backoff-exitcode"}
EXPECTED = {"success": "Succeeded", "fail": "Failed", "fail-once-onfailure": "Succeeded",
            "fail-once-exitcode": "Succeeded", "deadline": "Failed", "backoff": "Failed",
            "backoff-exitcode": "Failed", "suspend": "Succeeded", "delete": "Deleted"}
BACKOFF_LIMIT = 2

FAULTS = {"rules": [{"verbs": ["write"], "error500": 0.05, "error429": 0.05, "retryAfterSeconds": 1,
                     "error409": 0.10}],
          "watchCutAfterEvents": 25, "watchExpireResumes": 3, "watchExpireProbability": 0.1}


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Api:
    """The local cluster's REST API over plain HTTP, retrying what the injected faults refuse."""

    def __init__(self, base):
        self.base = base

    def call(self, method, path, body=None, content_type="application/json", ok=(200, 201, 202), tries=30):
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        last = None
        for _ in range(tries):
            req = urllib.request.Request(self.base + path, data=data, method=method)
            if data is not None:
                req.add_header("Content-Type", content_type)
            try:
                with urllib.request.urlopen(req, timeout=20) as r:
                    return r.status, json.loads(r.read() or b"null")
            except urllib.error.HTTPError as e:
                payload = e.read()
                try:
                    status = json.loads(payload)
                except ValueError:
                    status = {}
                # Injected 500/429/409 and the restart window: the caller's write never happened.
                if e.code in (500, 429, 503) or (e.code == 409 and status.get("reason") == "Conflict"):
                    last = f"{e.code} {status.get('message', '')}"
                    time.sleep(0.2)
                    continue
                if e.code in ok:
                    return e.code, status
                raise RuntimeError(f"{method} {path}: {e.code} {status.get('message', payload[:200])}")
            except (urllib.error.URLError, ConnectionError, http.client.HTTPException, TimeoutError) as e:
                last = str(e)
                time.sleep(0.3)
        raise RuntimeError(f"{method} {path}: still failing after {tries} tries: {last}")


class V1Reader:
    """Lists MPIJobs at kubeflow.org/v1 twice a second, as a user would, and counts the reads the
    conversion webhook failed (a 500 naming it); other failures (the API server's restart) are
    not the webhook's."""

    def __init__(self, base):
        self.base = base
        self.ok = 0
        self.failures = []
        self.stopping = False
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stopping:
            try:
                with urllib.request.urlopen(f"{self.base}/apis/kubeflow.org/v1/namespaces/{NS}/mpijobs", timeout=40):
                    self.ok += 1
            except urllib.error.HTTPError as e:
                body = e.read().decode(errors="replace")
                if e.code == 500 and "conversion webhook" in body:
                    self.failures.append(f"{time.strftime('%H:%M:%S')} {body[:300]}")
            except (urllib.error.URLError, ConnectionError, http.client.HTTPException, TimeoutError):
                pass
            time.sleep(0.5)


class PodLedger:
    """Every pod creation (uid) and deletion seen by a pod watch that survives cuts and 410s."""

    def __init__(self, base):
        self.host, self.port = base.replace("http://", "").split(":")
        self.lock = threading.Lock()
        self.uids = {}  # name -> [uid, ...] in creation order
        self.owner = {}  # uid -> controller owner uid
        self.live = {}  # uid -> pod name, while it exists
        self.stopping = False
        self.rv = ""
        self.thread = threading.Thread(target=self.run, daemon=True)

    def see(self, kind, pod):
        meta = pod.get("metadata", {})
        uid, name = meta.get("uid"), meta.get("name")
        if not uid:
            return
        with self.lock:
            if uid not in self.owner:
                self.uids.setdefault(name, []).append(uid)
                refs = [r for r in meta.get("ownerReferences", []) if r.get("controller")]
                self.owner[uid] = refs[0]["uid"] if refs else ""
            if kind == "DELETED":
                self.live.pop(uid, None)
            else:
                self.live[uid] = name

    def relist(self):
        conn = http.client.HTTPConnection(self.host, int(self.port), timeout=30)
        conn.request("GET", f"/api/v1/namespaces/{NS}/pods")
        r = conn.getresponse()
        body = r.read()
        conn.close()
        if r.status != 200:
            raise ConnectionError(f"list pods: {r.status}")
        lst = json.loads(body)
        current = set()
        for p in lst.get("items", []):
            self.see("ADDED", p)
            current.add(p["metadata"]["uid"])
        with self.lock:
            for uid in list(self.live):
                if uid not in current:
                    del self.live[uid]
        self.rv = lst["metadata"]["resourceVersion"]

    def run(self):
        while not self.stopping:
            try:
                if not self.rv:
                    self.relist()
                conn = http.client.HTTPConnection(self.host, int(self.port), timeout=60)
                conn.request("GET", f"/api/v1/namespaces/{NS}/pods?watch=1&allowWatchBookmarks=true"
                                    f"&resourceVersion={self.rv}")
                r = conn.getresponse()
                if r.status != 200:
                    r.read()
                    conn.close()
                    self.rv = "" if r.status == 410 else self.rv
                    time.sleep(0.1)
                    continue
                while not self.stopping:
                    line = r.readline()
                    if not line:
                        break
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        break  # a malformed event: resume from the last good resourceVersion
                    if ev.get("type") == "ERROR":
                        if ev.get("object", {}).get("code") == 410:
                            self.rv = ""
                        break
                    obj = ev.get("object", {})
                    if ev.get("type") != "BOOKMARK":
                        self.see(ev.get("type"), obj)
                    self.rv = obj.get("metadata", {}).get("resourceVersion", self.rv)
                conn.close()
            except (OSError, http.client.HTTPException, ValueError, KeyError):
                time.sleep(0.2)

    def snapshot(self):
        with self.lock:
            return {n: list(u) for n, u in self.uids.items()}, dict(self.owner), dict(self.live)


def wait_ca_announced(api, seconds=60):
    """Waits (bounded) until the MPIJob CRD's conversion caBundle holds the webhook Secret's CA."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        _, secret = api.call("GET", f"/api/v1/namespaces/{WEBHOOK_NS}/secrets/{WEBHOOK_SECRET}", ok=(200, 404))
        _, crd = api.call("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/mpijobs.kubeflow.org")
        ca = ((secret or {}).get("data") or {}).get("ca.crt")
        client_config = (((crd or {}).get("spec") or {}).get("conversion") or {}).get("webhook") or {}
        bundle = (client_config.get("clientConfig") or {}).get("caBundle")
        if ca and bundle and base64.b64decode(ca) in base64.b64decode(bundle):
            return
        time.sleep(0.1)
    raise RuntimeError(f"the webhook CA was not in the MPIJob CRD's conversion webhook within {seconds} s")


class Operators:
    """training-operator processes with leader election; knows which ones it stopped on purpose."""

    def __init__(self, binary, kubeconfig, work, webhook_ports):
        self.binary, self.kubeconfig, self.work = binary, kubeconfig, work
        self.webhook_ports = webhook_ports
        self.port_of = {}  # name -> webhook port
        self.procs = {}  # name -> Popen
        self.stopped = set()  # stopped by the soak, or replaced after exiting on their own
        self.exited_alone = []
        self.count = 0

    def start(self):
        name = f"op{self.count}"
        self.count += 1
        busy = {self.port_of[n] for n, p in self.procs.items() if p.poll() is None}
        port = next(p for p in self.webhook_ports if p not in busy)
        self.port_of[name] = port
        err = open(os.path.join(self.work, f"{name}.log"), "w")
        self.procs[name] = subprocess.Popen(
            [self.binary, "--leader-elect", "--leader-election-id", LEASE, "--leader-election-namespace", "default",
             "--leader-elect-lease-duration", "6s", "--leader-elect-renew-deadline", "5s",
             "--leader-elect-retry-period", "1s", "--kubeconfig", self.kubeconfig, "--enable-scheme=*",
             "--webhook-bind-address", f"127.0.0.1:{port}", "--webhook-namespace", WEBHOOK_NS,
             "--metrics-bind-address", "0", "--health-probe-bind-address", "0"],
            stdout=subprocess.DEVNULL, stderr=err)
        return name

    def identity(self, name):
        with open(os.path.join(self.work, f"{name}.log")) as f:
            m = re.search(r"campaigning for lease \S+ as (\S+)", f.read())
        return m.group(1) if m else None

    def leader(self, api):
        _, lease = api.call("GET", f"/apis/coordination.k8s.io/v1/namespaces/default/leases/{LEASE}", ok=(200, 404))
        holder = (lease or {}).get("spec", {}).get("holderIdentity")
        for name, p in self.procs.items():
            if p.poll() is None and name not in self.stopped and holder and self.identity(name) == holder:
                return name
        return None

    def stop(self, name, sig):
        self.stopped.add(name)
        self.procs[name].send_signal(sig)
        try:
            self.procs[name].wait(timeout=40)
        except subprocess.TimeoutExpired:
            self.procs[name].kill()
            self.procs[name].wait()
        return self.procs[name].returncode

    def log_text(self, name):
        with open(os.path.join(self.work, f"{name}.log"), errors="replace") as f:
            return f.read()

    def exits(self):
        """(crashes, unclean stops) of every operator process.

        A crash: a process that died of a signal nobody sent, exited with a status the operator
        never uses, or printed a sanitizer, abort or panic report. An unclean stop: exit 1 after
        the 30 s graceful stop ran out (the process then exits on purpose, as controller-runtime
        does), or after losing the lease (controller-runtime exits too) -- reported, not failed,
        since both follow from an API server too slow to answer within a renew deadline or a
        request timeout, which a busy machine produces.
        """
        crashes, unclean = [], []
        for n, p in self.procs.items():
            text = self.log_text(n)
            for marker in ("AddressSanitizer", "runtime error:", "terminate called", "Segmentation fault", "panic"):
                if marker in text:
                    crashes.append(f"{n}: '{marker}' in its log")
            rc = p.poll()
            if rc is None or (n in self.stopped and n not in self.exited_alone and rc in (0, -signal.SIGKILL)):
                continue
            if rc == 1 and "did not stop within the graceful stop" in text:
                what = (re.findall(r"training-operator (.+? did not stop within the graceful stop \(\d+ ms\))", text)
                        or ["the graceful stop ran out"])[-1]
                unclean.append(f"{n}: {what} " + ("after losing the lease" if n in self.exited_alone else "after SIGTERM"))
            elif rc == 1 and "leader election lost" in text:
                unclean.append(f"{n}: exited 1 after losing the lease")
            else:
                crashes.append(f"{n} exited {rc}")
        return crashes, unclean

    def serving(self, name):
        return "webhook server serving a certificate" in self.log_text(name)

    def wait_all_serving(self, seconds=60):
        """Waits (bounded) until every running operator serves its webhooks -- is Ready, as a
        Deployment's pods are before a rolling update or an admin touches the next one; replaces
        the ones that exited meanwhile."""
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            self.supervise()
            live = [n for n, p in self.procs.items() if p.poll() is None and n not in self.stopped]
            if all(self.serving(n) for n in live):
                return True
            time.sleep(0.2)
        return False

    def supervise(self):
        """Replaces operators that exited on their own, as a Deployment's kubelet restarts them."""
        for n, p in list(self.procs.items()):
            if n not in self.stopped and p.poll() is not None:
                self.stopped.add(n)
                self.exited_alone.append(n)
                log(f"{n} exited {p.returncode} on its own; a replacement starts")
                self.start()

    def kill_all(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()


def free_ports(count):
    """Loopback ports the kernel picked for sockets closed again (the operators bind them later)."""
    socks = []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def job_object(source, kind, name, scenario):
    example, _, specs_key = KINDS[kind]
    with open(os.path.join(source, "examples", example)) as f:
        job = yaml.safe_load(f)
    job["metadata"] = {"name": name, "namespace": NS, "labels": {"soak.unitrain.io/scenario": scenario}}
    spec = job["spec"]
    run = spec.setdefault("runPolicy", {})
    run["cleanPodPolicy"] = "None" if kind not in MPI_KINDS else "Running"
    if kind == "MPIJob":
        run["backoffLimit"] = 0
    if kind == "MPIJobV1":
        run["managedBy"] = "kubeflow.org/training-operator"

    def replicas(fn):
        for rtype, rs in spec[specs_key].items():
            tmpl = rs.setdefault("template", {})
            ann = tmpl.setdefault("metadata", {}).setdefault("annotations", {})
            fn(rtype, rs, ann)

    def behave(restart=None, duration=None, **sim):
        def fn(rtype, rs, ann):
            if restart is not None and kind not in MPI_KINDS:
                rs["restartPolicy"] = restart
            if duration is not None:
                # MPI workers run until the launcher ends; they never end a job themselves.
                if not (kind in MPI_KINDS and rtype == "Worker"):
                    ann["sim.unitrain.io/duration"] = duration
            for k, v in sim.items():
                if not (kind in MPI_KINDS and rtype == "Worker"):
                    ann["sim.unitrain.io/" + k.replace("_", "-")] = str(v)
        replicas(fn)

    if scenario in ("success", "suspend"):
        behave(duration="2s")
        if scenario == "suspend":
            run["suspend"] = True
    elif scenario == "fail":
        behave(restart="Never", duration="1s", exit_code=1)
    elif scenario == "fail-once-onfailure":
        behave(restart="OnFailure", duration="1s", fail_times=1)
    elif scenario == "fail-once-exitcode":
        behave(restart="ExitCode", duration="1s", fail_times=1, fail_exit_code=137)
    elif scenario == "deadline":
        behave(duration="1h")
        run["activeDeadlineSeconds"] = 4
    elif scenario == "backoff":
        behave(restart="OnFailure", duration="300ms", fail_times=1000)
        run["backoffLimit"] = BACKOFF_LIMIT
    elif scenario == "backoff-exitcode":
        behave(restart="ExitCode", duration="300ms", fail_times=1000, fail_exit_code=137)
        run["backoffLimit"] = BACKOFF_LIMIT
    elif scenario == "delete":
        behave(duration="1h")
    job["apiVersion"] = API_VERSION.get(kind, "kubeflow.org/v1")
    return job


def expected_pod_names(job, kind):
    _, _, specs_key = KINDS[kind]
    name = job["metadata"]["name"]
    out = set()
    for rtype, rs in job["spec"][specs_key].items():
        if kind == "MPIJob" and rtype == "Launcher":
            continue  # a batch Job's pod, named from generateName
        if kind == "MPIJobV1" and rtype == "Launcher":
            out.add(f"{name}-launcher")  # a pod of its own
            continue
        for i in range(rs.get("replicas", 1)):
            out.add(f"{name}-{rtype.lower()}-{i}")
    return out


def terminal(obj):
    for c in obj.get("status", {}).get("conditions", []) or []:
        if c.get("status") == "True" and c.get("type") in ("Succeeded", "Failed"):
            return c["type"]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--duration", type=int, default=600, help="seconds the jobs get to settle, at most")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    args = ap.parse_args()
    scenarios = args.scenarios.split(",")
    for s in scenarios:
        if s not in SCENARIOS:
            ap.error(f"unknown scenario {s}")
    localcluster = os.path.join(args.bin_dir, "localcluster")
    operator = os.path.join(args.bin_dir, "training-operator")
    for tool in (localcluster, operator):
        if not os.access(tool, os.X_OK):
            print(f"SKIPPED: {tool} is not built")
            return SKIP
    if shutil.which("kubectl") is None:
        print("SKIPPED: kubectl is not installed")
        return SKIP

    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="unitrain-soak-")
    cluster = None
    ops = None
    ledger = None
    try:
        state = os.path.join(work, "state")
        kubeconfig = os.path.join(work, "kubeconfig")
        cluster_out = open(os.path.join(work, "cluster.out"), "w")
        cluster_err = open(os.path.join(work, "cluster.log"), "w")
        webhook_ports = free_ports(WEBHOOK_SLOTS)
        endpoints = [a for p in webhook_ports
                     for a in ("--service-endpoint", f"{WEBHOOK_NS}/training-operator:443=127.0.0.1:{p}")]
        cluster = subprocess.Popen([localcluster, "--listen", "127.0.0.1:0", "--kubeconfig-out", kubeconfig,
                                    "--state-dir", state] + endpoints, stdout=cluster_out, stderr=cluster_err)
        base = None
        for _ in range(300):
            with open(os.path.join(work, "cluster.out")) as f:
                m = re.search(r"^ready (\S+)", f.read(), re.M)
            if m:
                base = m.group(1)
                break
            time.sleep(0.1)
        if base is None:
            raise RuntimeError("localcluster did not print 'ready <url>'")
        api = Api(base)
        subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "apply", "--server-side", "-k",
                        os.path.join(args.source, "manifests", "crds")], check=True, stdout=subprocess.DEVNULL)
        for ns in (NS, WEBHOOK_NS):
            api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                     ok=(201, 409))
        for kind, (_, plural, _) in KINDS.items():
            version = API_VERSION.get(kind, "kubeflow.org/v1")
            if kind == "MPIJobV1":
                continue  # converted by the operators' webhook: waited for once they run
            for _ in range(100):
                if api.call("GET", f"/apis/{version}/namespaces/{NS}/{plural}", ok=(200, 404))[0] == 200:
                    break
                time.sleep(0.1)

        ledger = PodLedger(base)
        ledger.thread.start()
        v1_reader = V1Reader(base)
        ops = Operators(operator, kubeconfig, work, webhook_ports)
        ops.start()
        ops.start()
        # MPIJob v1 is served once an operator has put its CA into the CRD's conversion webhook.
        for _ in range(600):
            try:
                api.call("GET", f"/apis/kubeflow.org/v1/namespaces/{NS}/mpijobs", tries=1)
                break
            except RuntimeError:
                time.sleep(0.1)
        else:
            raise RuntimeError("MPIJob v1 is not served: no operator answers the CRD's conversion webhook")
        # As a Service lists only Ready pods: the reader starts once both replicas serve their
        # webhooks (a replica still without the shared certificate fails the handshake).
        ops.wait_all_serving()
        # The install is complete once the CA is in the CRD's conversion webhook: a replica serves
        # its first certificate a moment before it announces the CA (faults may delay that write),
        # and a list needing conversion before then fails verification -- install time, not chaos.
        wait_ca_announced(api)

        # The mix: scenarios round-robin over a seeded shuffle, kinds likewise (MPIJob only where it applies).
        plan = []
        kinds = list(KINDS)
        for i in range(args.jobs):
            scenario = scenarios[i % len(scenarios)]
            choices = [k for k in kinds if not (k in MPI_KINDS and scenario in V1_ONLY)]
            kind = rng.choice(choices)
            plan.append((f"j{i:03d}-{scenario}", kind, scenario))
        rng.shuffle(plan)
        jobs = {}  # name -> (kind, scenario, object)
        for name, kind, scenario in plan:
            jobs[name] = (kind, scenario, job_object(args.source, kind, name, scenario))

        v1_reader.thread.start()
        faults = dict(FAULTS, seed=args.seed)
        api.call("PUT", "/unitrain/faults", faults)
        log(f"seed {args.seed}: {len(jobs)} jobs, faults on: {json.dumps(FAULTS)}")

        # The timeline, as fractions of the submission phase; chaos events interleave with submissions.
        submit_phase = max(20.0, len(jobs) * 0.15)
        events = [(0.3, "restart-apiserver"), (0.5, "kill-leader"), (0.75, "handover")]
        actions = []  # (time, what, job)
        for name, (kind, scenario, _) in jobs.items():
            if scenario == "suspend":
                actions.append((rng.uniform(4, 10), "resume", name))
            if scenario == "delete":
                actions.append((rng.uniform(3, 8), "delete", name))
        t0 = time.monotonic()
        submitted_at = {}
        restarts = 0
        pending = sorted(events)
        created = 0
        names = list(jobs)
        chaos_log = []

        def find_leader():
            # Bounded: leadership can be in flux for a while after a restart or a kill.
            until = time.monotonic() + 30
            while time.monotonic() < until:
                leader = ops.leader(api)
                if leader:
                    return leader
                time.sleep(0.2)
            return None

        def do_event(what):
            nonlocal restarts
            if what == "restart-apiserver":
                cluster.send_signal(signal.SIGHUP)
                restarts += 1
                chaos_log.append("API server restarted (SIGHUP)")
            elif what == "kill-leader":
                # Both replicas Ready first (one that exited on its own is replaced): the other one
                # keeps serving the conversion through the kill.
                ops.wait_all_serving()
                leader = find_leader()
                if leader:
                    ops.stopped.add(leader)
                    ops.procs[leader].kill()
                    ops.procs[leader].wait()
                    ops.start()
                    chaos_log.append(f"leader {leader} killed (SIGKILL), a new follower started")
                else:
                    chaos_log.append("kill-leader: no leader found")
            elif what == "handover":
                ops.wait_all_serving()
                leader = find_leader()
                if leader:
                    # As a rolling update: the new replica is Ready before the old one stops.
                    ops.start()
                    ops.wait_all_serving()
                    rc = ops.stop(leader, signal.SIGTERM)
                    chaos_log.append(f"leader {leader} stopped (SIGTERM, exit {rc}), lease handed over")
                else:
                    chaos_log.append("handover: no leader found")
            log(chaos_log[-1])

        while created < len(names) or pending or actions:
            ops.supervise()
            now = time.monotonic() - t0
            if created < len(names) and now >= created * submit_phase / len(names):
                name = names[created]
                kind, scenario, obj = jobs[name]
                plural = KINDS[kind][1]
                status, body = api.call("POST", f"/apis/{obj['apiVersion']}/namespaces/{NS}/{plural}", obj,
                                        ok=(201, 409))
                if status == 409 and body.get("reason") != "AlreadyExists":
                    raise RuntimeError(f"creating {name}: {body}")
                submitted_at[name] = now
                created += 1
                continue
            if pending and now >= pending[0][0] * submit_phase:
                do_event(pending.pop(0)[1])
                continue
            due = [a for a in actions if a[2] in submitted_at and now >= submitted_at[a[2]] + a[0]]
            for a in due:
                actions.remove(a)
                kind, _, obj = jobs[a[2]]
                path = f"/apis/{obj['apiVersion']}/namespaces/{NS}/{KINDS[kind][1]}/{a[2]}"
                if a[1] == "resume":
                    api.call("PATCH", path, {"spec": {"runPolicy": {"suspend": False}}},
                             content_type="application/merge-patch+json")
                else:
                    api.call("DELETE", path, {"propagationPolicy": "Background"}, ok=(200, 202, 404))
            ops.supervise()
            time.sleep(0.05)
        log(f"all {len(jobs)} jobs submitted; chaos done; waiting up to {args.duration} s for them to settle")

        # Settle: every job terminal (or gone, for the deleted ones); statuses watched for regressions.
        ever_terminal = {}
        lost = []
        deadline = time.monotonic() + args.duration
        final = {}
        while True:
            final = {}
            for kind, (_, plural, _) in KINDS.items():
                version = API_VERSION.get(kind, "kubeflow.org/v1")
                _, lst = api.call("GET", f"/apis/{version}/namespaces/{NS}/{plural}")
                for item in lst.get("items", []):
                    n = item["metadata"]["name"]
                    if n in jobs and jobs[n][0] == kind:
                        final[n] = item
            settled = 0
            for n, (kind, scenario, _) in jobs.items():
                state_now = terminal(final[n]) if n in final else "Deleted"
                if n in ever_terminal and state_now != ever_terminal[n] and (n, "regressed") not in lost:
                    lost.append((n, "regressed"))
                    log(f"{n}: was {ever_terminal[n]}, now {state_now}")
                if state_now:
                    ever_terminal.setdefault(n, state_now)
                if state_now == EXPECTED[scenario] or (state_now and EXPECTED[scenario] != "Deleted"):
                    settled += 1
            if settled == len(jobs) or time.monotonic() > deadline:
                break
            ops.supervise()
            time.sleep(1)
        api.call("PUT", "/unitrain/faults", {"seed": args.seed, "rules": []})
        # Pods of deleted jobs, and of finished jobs with a cleanPodPolicy, go away through the
        # garbage collector and the operator: give them a bounded while before counting orphans.
        orphans = []
        for _ in range(60):
            _, pods = api.call("GET", f"/api/v1/namespaces/{NS}/pods")
            _, batch_jobs = api.call("GET", f"/apis/batch/v1/namespaces/{NS}/jobs")
            owners = {o["metadata"]["uid"] for o in final.values()}
            owners |= {j["metadata"]["uid"] for j in batch_jobs.get("items", [])}
            # A pod whose controller is gone (or that never had one) is an orphan.
            orphans = [p["metadata"]["name"] for p in pods.get("items", [])
                       if not any(r.get("controller") and r["uid"] in owners
                                  for r in p["metadata"].get("ownerReferences", []))]
            if not orphans:
                break
            time.sleep(0.5)
        time.sleep(1)
        ledger.stopping = True
        v1_reader.stopping = True
        uids, owner, _ = ledger.snapshot()

        # Counts.
        in_expected = 0
        wrong = []
        for n, (kind, scenario, _) in jobs.items():
            got = terminal(final[n]) if n in final else "Deleted"
            if got == EXPECTED[scenario]:
                in_expected += 1
            else:
                wrong.append(f"{n} ({kind}, {scenario}): {got or 'not finished'}, want {EXPECTED[scenario]}")
        for n, obj in final.items():
            state_now = terminal(obj)
            st = obj.get("status", {})
            # A job can fail (backoffLimit, deadline) in the first pass whose status write succeeds,
            # before any replica counts were on the server (upstream too); a success cannot.
            if state_now == "Succeeded" and not st.get("replicaStatuses"):
                lost.append((n, "Succeeded without replicaStatuses"))
            if state_now == "Succeeded" and not st.get("completionTime"):
                lost.append((n, "Succeeded without completionTime"))
            if state_now and not st.get("startTime") and jobs[n][1] != "suspend":
                lost.append((n, "terminal without startTime"))

        duplicates = []
        recreations = []
        for n, (kind, scenario, obj) in jobs.items():
            expected_names = expected_pod_names(obj, kind)
            job_pods = {pn: u for pn, u in uids.items() if pn.startswith(n + "-")}
            for pn, us in job_pods.items():
                if kind == "MPIJob" and pn.startswith(n + "-launcher-"):
                    continue
                if pn not in expected_names:
                    duplicates.append(f"{pn} ({len(us)}x, not a pod of {n})")
                    continue
                # In-place restarts (OnFailure) never re-create a pod; ExitCode re-creates it once per
                # retryable failure, up to backoffLimit; an API-server restart restarts the simulated
                # kubelet, which forgets how often a pod already failed (one more failure each).
                allowed = {"fail-once-exitcode": 2 + restarts, "backoff-exitcode": 1 + BACKOFF_LIMIT}.get(scenario, 1)
                if len(us) > allowed:
                    recreations.append(f"{pn}: created {len(us)} times, at most {allowed} expected ({scenario})")
            if kind == "MPIJob":
                launchers = sum(len(u) for pn, u in job_pods.items() if pn.startswith(n + "-launcher-"))
                if launchers > 1 + restarts:
                    duplicates.append(f"{n}: {launchers} launcher pods")

        crashes, unclean = ops.exits()
        if cluster.poll() is not None:
            crashes.append(f"localcluster exited {cluster.returncode}")
        with open(os.path.join(work, "cluster.log"), errors="replace") as f:
            text = f.read()
        for marker in ("AddressSanitizer", "runtime error:", "terminate called", "Segmentation fault"):
            if marker in text:
                crashes.append(f"localcluster: '{marker}' in its log")

        _, describe = api.call("GET", "/unitrain/faults")
        pods_created = sum(len(u) for u in uids.values())
        per_kind = {}
        for kind, _, _ in jobs.values():
            per_kind[kind] = per_kind.get(kind, 0) + 1
        print(f"soak seed {args.seed}: {len(jobs)} jobs ({', '.join(scenarios)}), {pods_created} pods created")
        print("kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(per_kind.items())))
        print(f"chaos: {'; '.join(chaos_log)}")
        print(f"faults injected: {json.dumps(describe.get('injected', {}))}")
        print(f"jobs in expected state: {in_expected}/{len(jobs)}")
        print(f"duplicate pods: {len(duplicates)}")
        print(f"unexpected re-creations: {len(recreations)}")
        print(f"orphans: {len(orphans)}")
        print(f"lost statuses: {len(lost)}")
        print(f"crashes: {len(crashes)}")
        print(f"MPIJob v1 lists refused by the conversion webhook: {len(v1_reader.failures)} "
              f"(of {v1_reader.ok + len(v1_reader.failures)}, twice a second from the first submission)")
        print(f"unclean operator stops (reported, not failed): {len(unclean)}")
        for what, items in (("not in expected state", wrong), ("duplicate", duplicates), ("re-created", recreations),
                            ("orphan", orphans), ("lost status", [f"{a}: {b}" for a, b in lost]), ("crash", crashes),
                            ("unclean stop", unclean), ("conversion", v1_reader.failures)):
            for item in items[:20]:
                print(f"  {what}: {item}")
        bad = wrong or duplicates or recreations or orphans or lost or crashes or v1_reader.failures
        if bad:
            args.keep = True
            print(f"FAIL (logs kept in {work})")
            return 1
        print("PASS")
        return 0
    finally:
        if ledger:
            ledger.stopping = True
        if ops:
            ops.kill_all()
        if cluster and cluster.poll() is None:
            cluster.kill()
            cluster.wait()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
