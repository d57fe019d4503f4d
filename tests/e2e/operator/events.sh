#!/usr/bin/env bash
# `kubectl get events` after a PyTorchJob, a TFJob, an MPIJob v1 and an MPIJob v2beta1 ran to
# success and to failure lists, for each job, exactly the events its reference operator records
# (training-operator v1.8/v1.9 for the first three, mpi-operator v0.8 for v2beta1): the same
# types, reasons and messages (the table below), nothing more.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 src=$2
require_tools kubectl python3
make_workdir
"$bin" --embedded-cluster --enable-scheme '*' --kubeconfig-out "$work/kubeconfig" --crd-dir "$src/manifests/crds" \
  --metrics-bind-address 0 --health-probe-bind-address 0 >"$work/stdout" 2>"$work/stderr" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; tail -20 "$work/stderr"; exit 1; }
for _ in $(seq 300); do grep -q '^kubeconfig ' "$work/stdout" && break; sleep 0.2; done
grep -q '^kubeconfig ' "$work/stdout" || fail "the operator did not start"
k() { timeout 30 kubectl --kubeconfig "$work/kubeconfig" --request-timeout=20s "$@"; }

# pod template: name container duration exit-code [restartPolicy]
template() {
  cat <<YAML
      replicas: 1
      restartPolicy: ${5:-Never}
      template:
        metadata:
          annotations:
            sim.unitrain.io/duration: "$3"
            sim.unitrain.io/exit-code: "$4"
        spec:
          containers:
            - name: $2
              image: docker.io/library/busybox:1.36
YAML
}
job() {  # apiVersion kind name replica-specs-field run-policy [Type name container duration exit-code]...
  local api=$1 kind=$2 name=$3 field=$4 policy=$5; shift 5
  printf 'apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n  namespace: default\nspec:\n  runPolicy: %s\n  %s:\n' \
    "$api" "$kind" "$name" "$policy" "$field"
  while (( $# )); do
    printf '    %s:\n' "$1"
    template "$1" "$2" "$3" "$4" "${5:-}"
    shift 5
  done
  echo ---
}
{
  job kubeflow.org/v1 PyTorchJob pt-ok pytorchReplicaSpecs '{}' Master pytorch 4s 0 OnFailure Worker pytorch 1s 0 OnFailure
  job kubeflow.org/v1 PyTorchJob pt-fail pytorchReplicaSpecs '{}' Master pytorch 1s 3 Never
  job kubeflow.org/v1 TFJob tf-ok tfReplicaSpecs '{}' Worker tensorflow 1s 0 Never
  job kubeflow.org/v1 TFJob tf-fail tfReplicaSpecs '{}' Worker tensorflow 1s 2 Never
  job kubeflow.org/v1 MPIJob mv1-ok mpiReplicaSpecs '{cleanPodPolicy: Running}' Launcher mpi 4s 0 Never Worker mpi 600s 0 Never
  job kubeflow.org/v1 MPIJob mv1-fail mpiReplicaSpecs '{cleanPodPolicy: Running}' Launcher mpi 4s 1 Never Worker mpi 600s 0 Never
  job kubeflow.org/v2beta1 MPIJob mv2-ok mpiReplicaSpecs '{cleanPodPolicy: Running}' Launcher launcher 4s 0 Never Worker worker 600s 0 Never
  job kubeflow.org/v2beta1 MPIJob mv2-fail mpiReplicaSpecs '{cleanPodPolicy: Running, backoffLimit: 0}' Launcher launcher 4s 1 Never Worker worker 600s 0 Never
} >"$work/jobs.yaml"
k apply -f "$work/jobs.yaml" >/dev/null || { cat "$work/jobs.yaml"; fail "kubectl apply"; }

state() { k get "$1" "$2" -o jsonpath='{.status.conditions[?(@.status=="True")].type}' 2>/dev/null; }
t0=$SECONDS
for j in pytorchjob/pt-ok pytorchjob/pt-fail tfjob/tf-ok tfjob/tf-fail mpijobs.v1.kubeflow.org/mv1-ok \
         mpijobs.v1.kubeflow.org/mv1-fail mpijob/mv2-ok mpijob/mv2-fail; do
  until [[ $(state "${j%/*}" "${j#*/}") =~ (Succeeded|Failed) ]]; do
    (( SECONDS - t0 > 120 )) && fail "$j did not finish: $(state "${j%/*}" "${j#*/}")"
    sleep 1
  done
done

# The reference operators' events, per job: "Type Reason Message".
cat >"$work/expected.txt" <<'TABLE'
PyTorchJob pt-ok|Normal SuccessfulCreatePod Created pod: pt-ok-master-0
PyTorchJob pt-ok|Normal SuccessfulCreatePod Created pod: pt-ok-worker-0
PyTorchJob pt-ok|Normal SuccessfulCreateService Created service: pt-ok-master-0
PyTorchJob pt-ok|Normal SuccessfulCreateService Created service: pt-ok-worker-0
PyTorchJob pt-ok|Normal ExitedWithCode Pod: default.pt-ok-worker-0 exited with code 0
PyTorchJob pt-ok|Normal ExitedWithCode Pod: default.pt-ok-master-0 exited with code 0
PyTorchJob pt-ok|Normal PyTorchJobSucceeded PyTorchJob pt-ok is successfully completed.
PyTorchJob pt-fail|Normal SuccessfulCreatePod Created pod: pt-fail-master-0
PyTorchJob pt-fail|Normal SuccessfulCreateService Created service: pt-fail-master-0
PyTorchJob pt-fail|Normal ExitedWithCode Pod: default.pt-fail-master-0 exited with code 3
PyTorchJob pt-fail|Normal PyTorchJobFailed PyTorchJob pt-fail is failed because 1 Master replica(s) failed.
TFJob tf-ok|Normal SuccessfulCreatePod Created pod: tf-ok-worker-0
TFJob tf-ok|Normal SuccessfulCreateService Created service: tf-ok-worker-0
TFJob tf-ok|Normal ExitedWithCode Pod: default.tf-ok-worker-0 exited with code 0
TFJob tf-ok|Normal TFJobSucceeded TFJob default/tf-ok successfully completed.
TFJob tf-fail|Normal SuccessfulCreatePod Created pod: tf-fail-worker-0
TFJob tf-fail|Normal SuccessfulCreateService Created service: tf-fail-worker-0
TFJob tf-fail|Normal ExitedWithCode Pod: default.tf-fail-worker-0 exited with code 2
TFJob tf-fail|Normal TFJobFailed TFJob default/tf-fail has failed because 1 Worker replica(s) failed.
MPIJob mv1-ok|Normal SuccessfulCreatePod Created worker pod: mv1-ok-worker-0
MPIJob mv1-ok|Normal MPIJobRunning launcher pod created success: mv1-ok-launcher
MPIJob mv1-ok|Normal MPIJobRunning MPIJob default/mv1-ok is running
MPIJob mv1-ok|Normal mpijobsSucceeded MPIJob default/mv1-ok successfully completed.
MPIJob mv1-ok|Normal MPIJobSucceeded MPIJob mv1-ok is successfully completed.
MPIJob mv1-ok|Normal SuccessfulDeletePod Deleted pod: mv1-ok-worker-0
MPIJob mv1-fail|Normal SuccessfulCreatePod Created worker pod: mv1-fail-worker-0
MPIJob mv1-fail|Normal MPIJobRunning launcher pod created success: mv1-fail-launcher
MPIJob mv1-fail|Normal MPIJobRunning MPIJob default/mv1-fail is running
MPIJob mv1-fail|Warning MPIJobFailed MPIJob default/mv1-fail has failed
MPIJob mv1-fail|Normal MPIJobFailed MPIJob mv1-fail is failed because 1 Launcher replica(s) failed.
MPIJob mv1-fail|Normal SuccessfulDeletePod Deleted pod: mv1-fail-worker-0
MPIJob mv2-ok|Normal MPIJobCreated MPIJob default/mv2-ok is created.
MPIJob mv2-ok|Normal MPIJobRunning MPIJob default/mv2-ok is running
MPIJob mv2-ok|Normal MPIJobSucceeded MPIJob default/mv2-ok successfully completed.
MPIJob mv2-fail|Normal MPIJobCreated MPIJob default/mv2-fail is created.
MPIJob mv2-fail|Normal MPIJobRunning MPIJob default/mv2-fail is running
MPIJob mv2-fail|Warning BackoffLimitExceeded/ Job has reached the specified backoff limit: 
TABLE

# Events are written asynchronously: wait for the whole table, then nothing else may be there.
compare() {
  k get events -n default -o json >"$work/events.json" || return 2
  python3 - "$work/events.json" "$work/expected.txt" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["items"]
want = set(l.rstrip("\n") for l in open(sys.argv[2]) if l.strip())
jobs = {w.split("|")[0] for w in want}
have = set()
for e in events:
    o = e["involvedObject"]
    key = f'{o.get("kind")} {o.get("name")}'
    if key in jobs:
        have.add(f'{key}|{e["type"]} {e["reason"]} {e.get("message", "")}')
missing, extra = sorted(want - have), sorted(have - want)
for m in missing: print("missing:", m)
for x in extra: print("extra:  ", x)
sys.exit(0 if not missing and not extra else (1 if missing else 3))
PY
}
t0=$SECONDS
while :; do
  compare >"$work/diff"; rc=$?
  (( rc == 0 || rc == 3 || SECONDS - t0 > 30 )) && break  # 3: an extra event, which waiting cannot remove
  sleep 1
done
if (( rc != 0 )); then
  echo "FAIL: events differ from the reference operators' (rc $rc):"; cat "$work/diff"
  exit 1
fi
echo "ok: $(wc -l <"$work/expected.txt") events of 8 jobs are the reference operators', nothing more"
