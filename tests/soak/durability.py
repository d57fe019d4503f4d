#!/usr/bin/python3
"""Acknowledged writes survive kill -9: a --state-dir local cluster killed with SIGKILL while
writers create and update ConfigMaps, restarted on the same address, KILLS times.

Writers (fixed seed) create ConfigMaps and then bump their data.v with merge patches; a write
counts as acknowledged when the API server answered 2xx (or 409 AlreadyExists to a create that
is retried after a kill, which the first attempt's success explains). A write in flight at the
kill is not acknowledged and may go either way. After the last restart every acknowledged create
must exist and every ConfigMap's data.v must be at least its last acknowledged value. Prints the
counts and exits 1 when a write was lost, 77 when the binary is missing.

Usage: durability.py --bin-dir build/bin [--kills 10] [--seed 1] [--writers 4]
"""

import argparse
import http.client
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77
NS = "default"


class Cluster:
    def __init__(self, binary, work):
        self.binary, self.work = binary, work
        self.listen = "127.0.0.1:0"
        self.proc = None
        self.starts = 0

    def start(self):
        out = os.path.join(self.work, f"cluster{self.starts}.out")
        with open(out, "w") as o, open(os.path.join(self.work, f"cluster{self.starts}.log"), "w") as e:
            self.proc = subprocess.Popen([self.binary, "--listen", self.listen, "--state-dir",
                                          os.path.join(self.work, "state")], stdout=o, stderr=e)
        self.starts += 1
        for _ in range(600):
            with open(out) as f:
                m = re.search(r"^ready http://(\S+)", f.read(), re.M)
            if m:
                self.listen = m.group(1)  # the same address after every restart
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"localcluster exited {self.proc.returncode} at start")
            time.sleep(0.05)
        raise RuntimeError("localcluster did not print 'ready <url>'")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def request(address, method, path, body=None, content_type="application/json"):
    host, port = address.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        data = None if body is None else json.dumps(body).encode()
        conn.request(method, path, body=data, headers={"Content-Type": content_type} if data else {})
        r = conn.getresponse()
        return r.status, json.loads(r.read() or b"null")
    finally:
        conn.close()


class Writer(threading.Thread):
    def __init__(self, index, cluster, seed, stop):
        super().__init__(daemon=True)
        self.index, self.cluster, self.stop = index, cluster, stop
        self.rng = random.Random(seed * 100 + index)
        self.created = set()  # acknowledged creates
        self.acked = {}  # name -> last acknowledged data.v
        self.acknowledged = 0
        self.unexpected = []

    def call(self, method, path, body, content_type="application/json"):
        """Until an answer arrives; None when stopping first."""
        while not self.stop.is_set():
            try:
                return request(self.cluster.listen, method, path, body, content_type)
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.05)  # the cluster is down or restarting
        return None

    def run(self):
        n = 0
        names = []
        while not self.stop.is_set():
            if not names or self.rng.random() < 0.3:
                name = f"w{self.index}-{n}"
                n += 1
                body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": "0"}}
                r = self.call("POST", f"/api/v1/namespaces/{NS}/configmaps", body)
                if r is None:
                    return
                # 409 AlreadyExists: an earlier attempt of this create was applied before a kill.
                if r[0] in (201, 409):
                    self.created.add(name)
                    self.acked.setdefault(name, 0)
                    self.acknowledged += 1
                    names.append(name)
                else:
                    self.unexpected.append(f"create {name}: {r[0]}")
            else:
                name = self.rng.choice(names)
                v = self.acked[name] + 1
                r = self.call("PATCH", f"/api/v1/namespaces/{NS}/configmaps/{name}", {"data": {"v": str(v)}},
                              "application/merge-patch+json")
                if r is None:
                    return
                if r[0] == 200:
                    self.acked[name] = v
                    self.acknowledged += 1
                else:
                    self.unexpected.append(f"patch {name}: {r[0]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--writers", type=int, default=4)
    args = ap.parse_args()
    binary = os.path.join(args.bin_dir, "localcluster")
    if not os.access(binary, os.X_OK):
        print(f"SKIPPED: {binary} is not built")
        return SKIP
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="unitrain-durability-")
    cluster = Cluster(binary, work)
    stop = threading.Event()
    try:
        cluster.start()
        writers = [Writer(i, cluster, args.seed, stop) for i in range(args.writers)]
        for w in writers:
            w.start()
        for _ in range(args.kills):
            time.sleep(rng.uniform(1.0, 3.0))
            cluster.kill()
            cluster.start()
        time.sleep(rng.uniform(1.0, 3.0))
        stop.set()
        for w in writers:
            w.join(timeout=30)
        # What a fresh start reads back from the state directory.
        cluster.kill()
        cluster.start()
        status, lst = request(cluster.listen, "GET", f"/api/v1/namespaces/{NS}/configmaps")
        if status != 200:
            raise RuntimeError(f"listing ConfigMaps: {status}")
        stored = {i["metadata"]["name"]: int(i.get("data", {}).get("v", "-1")) for i in lst["items"]}
        lost = []
        for w in writers:
            for name in sorted(w.created):
                if name not in stored:
                    lost.append(f"{name}: acknowledged create missing")
                elif stored[name] < w.acked[name]:
                    lost.append(f"{name}: data.v {stored[name]}, acknowledged {w.acked[name]}")
        acknowledged = sum(w.acknowledged for w in writers)
        unexpected = [u for w in writers for u in w.unexpected]
        print(f"durability seed {args.seed}: {args.kills} kill -9 of a --state-dir cluster, {args.writers} writers")
        print(f"acknowledged writes: {acknowledged} ({sum(len(w.created) for w in writers)} creates)")
        print(f"acknowledged writes lost: {len(lost)}")
        print(f"unexpected answers: {len(unexpected)}")
        for item in (lost + unexpected)[:20]:
            print(f"  {item}")
        if lost or unexpected:
            print(f"FAIL (state kept in {work})")
            return 1
        print("PASS")
        shutil.rmtree(work, ignore_errors=True)
        return 0
    finally:
        stop.set()
        if cluster.proc and cluster.proc.poll() is None:
            cluster.proc.kill()
            cluster.proc.wait()


if __name__ == "__main__":
    sys.exit(main())
