#!/usr/bin/env bash
# The Kubeflow-SDK-style flow against `training-operator --embedded-cluster` with a gang
# scheduler: the embedded cluster installs Volcano's PodGroup CRD for --gang-scheduler-name volcano,
# a PVC is bound, a PyTorchJob mounting it runs gang-scheduled to Succeeded, and `kubectl logs`
# shows its master's output (the sim.unitrain.io/log lines).
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 src=$2
require_tools kubectl
make_workdir
"$bin" --embedded-cluster --kubeconfig-out "$work/kubeconfig" --metrics-bind-address 0 \
  --health-probe-bind-address 0 --gang-scheduler-name volcano >"$work/stdout" 2>"$work/stderr" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- operator stderr (tail)"; tail -30 "$work/stderr"; exit 1; }
for _ in $(seq 150); do grep -q '^kubeconfig ' "$work/stdout" && break; sleep 0.2; done
kc=$(sed -n 's/^kubeconfig //p' "$work/stdout")
[[ -n $kc && -f $kc ]] || fail "no 'kubeconfig <path>' line on stdout"
k() { timeout 30 kubectl --kubeconfig "$kc" --request-timeout=20s "$@"; }

k get crd podgroups.scheduling.volcano.sh >/dev/null 2>&1 || fail "no Volcano PodGroup CRD in the embedded cluster"
k get crd podgroups.scheduling.x-k8s.io >/dev/null 2>&1 && fail "scheduler-plugins' PodGroup CRD installed for volcano"
cat <<'YAML' | k apply -f - >/dev/null || fail "PVC"
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: workspace
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 5Gi
YAML
out=$(k wait --for=jsonpath='{.status.phase}'=Bound pvc/workspace --timeout=30s) || fail "PVC not Bound: $out"
cat <<'YAML' | k apply -f - >/dev/null || fail "PyTorchJob"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: sdk-train
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata:
          annotations:
            sim.unitrain.io/duration: 500ms
            sim.unitrain.io/log: "train loss 0.42"
        spec:
          containers:
          - name: pytorch
            image: pytorch:2
            volumeMounts: [{name: ws, mountPath: /workspace}]
          volumes:
          - name: ws
            persistentVolumeClaim: {claimName: workspace}
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata:
          annotations:
            sim.unitrain.io/duration: 500ms
        spec:
          containers:
          - name: pytorch
            image: pytorch:2
YAML
start=$SECONDS
phase=
while (( SECONDS - start < 60 )); do
  phase=$(k get pytorchjob sdk-train -o jsonpath='{.status.conditions[-1:].type}' 2>/dev/null)
  [[ $phase == Succeeded || $phase == Failed ]] && break
  sleep 0.3
done
[[ $phase == Succeeded ]] || fail "sdk-train ended as '$phase'"
# The PodGroup is removed with the finished job; its pods show they went through it.
sched=$(k get pod sdk-train-master-0 -o jsonpath='{.spec.schedulerName} {.metadata.annotations.scheduling\.k8s\.io/group-name}')
[[ $sched == "volcano sdk-train" ]] || fail "master pod: scheduler and PodGroup '$sched', want 'volcano sdk-train'"
events=$(k get events --field-selector involvedObject.name=sdk-train-master-0 -o jsonpath='{range .items[*]}{.reason}/{.source.component} {end}')
[[ $events == *"Scheduled/volcano"* ]] || fail "master pod not scheduled by the volcano emulation: $events"
out=$(k logs sdk-train-master-0) || fail "kubectl logs: $out"
[[ $out == *"train loss 0.42"* ]] || fail "master log lacks the job's output: $out"
echo "PASS"
