#!/usr/bin/env bash
# kubectl v1.32 against build/bin/localcluster for what the controllers keep beyond a rollout:
# `kubectl rollout history` and `rollout undo` of a Deployment (ReplicaSet revisions and
# kubernetes.io/change-cause), a StatefulSet and a DaemonSet (ControllerRevisions);
# progressDeadlineSeconds failing `rollout status`; a PodDisruptionBudget's status and `kubectl
# drain` refused by it (429) until the budget allows the eviction; LimitRange refusals worded as
# kube-apiserver words them; a claim bound to a static PersistentVolume.
# Usage: rollout_e2e.sh LOCALCLUSTER_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
bin=${1:?usage: rollout_e2e.sh LOCALCLUSTER_BINARY}
require_tools kubectl
make_workdir
cleanup() {
  local rc=$?
  stop_cluster || rc=1
  if [[ $rc -ne 0 ]]; then echo "--- localcluster stderr (tail)"; tail -n 30 "$work/stderr" 2>/dev/null || true; fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
start_cluster "$bin" "$work" --nodes 2
rolled_out() { # rolled_out KIND/NAME
  local out
  out=$(k rollout status "$1" --timeout=60s 2>&1) || die "rollout status $1: $out"
}
history_of() { k rollout history "$1" | awk '$1 ~ /^[0-9]+$/ {print $1 ":" $2}' | tr '\n' ' '; }

step "Deployment: rollout history with change-cause, rollout undo reuses revision 1 as 3"
k create deployment web --image=nginx:1.27 --replicas=2 >/dev/null
rolled_out deployment/web
k set image deployment/web nginx=nginx:1.28 >/dev/null
k annotate deployment/web kubernetes.io/change-cause="nginx 1.28" >/dev/null
rolled_out deployment/web
got=$(history_of deployment/web)
[[ $got == "1:<none> 2:nginx " ]] || die "history before undo: '$got' ($(k rollout history deployment/web))"
out=$(k rollout undo deployment/web) && [[ $out == *"deployment.apps/web rolled back"* ]] || die "undo: $out"
rolled_out deployment/web
got=$(history_of deployment/web)
[[ $got == "2:nginx 3:<none> " ]] || die "history after undo: '$got' ($(k rollout history deployment/web))"
out=$(k rollout history deployment/web --revision=3) && [[ $out == *"nginx:1.27"* ]] || die "revision 3: $out"
[[ $(k get rs -l app=web --no-headers | wc -l) -eq 2 ]] || die "undo made a third ReplicaSet: $(k get rs -l app=web)"
out=$(k get deployment web -o jsonpath='{.spec.template.spec.containers[0].image}') && [[ $out == nginx:1.27 ]] ||
  die "image after undo: $out"

step "StatefulSet and DaemonSet: ControllerRevisions, rollout history and undo"
cat <<'YAML' | k apply -f - >/dev/null
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 2
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: postgres:16
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - name: agent
        image: fluentbit:3
YAML
rolled_out statefulset/db
k set image statefulset/db db=postgres:17 >/dev/null
rolled_out statefulset/db
got=$(history_of statefulset/db)
[[ $got == "1:<none> 2:<none> " ]] || die "statefulset history: '$got'"
out=$(k rollout undo statefulset/db) && [[ $out == *"statefulset.apps/db rolled back"* ]] || die "undo db: $out"
rolled_out statefulset/db
got=$(history_of statefulset/db)
[[ $got == "2:<none> 3:<none> " ]] || die "statefulset history after undo: '$got'"
out=$(k get pod db-1 -o jsonpath='{.spec.containers[0].image}') && [[ $out == postgres:16 ]] || die "db-1 after undo: $out"
out=$(k get controllerrevisions -l app=db --no-headers | wc -l) && [[ $out -eq 2 ]] || die "db revisions: $out"
rolled_out daemonset/agent
k set image daemonset/agent agent=fluentbit:4 >/dev/null
rolled_out daemonset/agent
got=$(history_of daemonset/agent)
[[ $got == "1:<none> 2:<none> " ]] || die "daemonset history: '$got'"

step "progressDeadlineSeconds: rollout status fails with the deadline exceeded"
cat <<'YAML' | k apply -f - >/dev/null
apiVersion: apps/v1
kind: Deployment
metadata:
  name: stuck
spec:
  replicas: 1
  progressDeadlineSeconds: 2
  selector:
    matchLabels: {app: stuck}
  template:
    metadata:
      labels: {app: stuck}
      annotations: {sim.unitrain.io/ready-after: 1h}
    spec:
      containers:
      - name: main
        image: busybox:1.36
YAML
out=$(k rollout status deployment/stuck --timeout=30s 2>&1) && die "rollout of stuck succeeded: $out"
[[ $out == *'deployment "stuck" exceeded its progress deadline'* ]] || die "rollout status of stuck: $out"

step "PodDisruptionBudget: status, eviction refused with 429, kubectl drain honours it"
k create deployment solo --image=nginx:1.27 --replicas=1 >/dev/null
rolled_out deployment/solo
k create poddisruptionbudget solo --selector=app=solo --min-available=1 >/dev/null
for _ in $(seq 1 100); do
  [[ $(k get pdb solo -o jsonpath='{.status.currentHealthy}/{.status.desiredHealthy}/{.status.disruptionsAllowed}') == 1/1/0 ]] && break
  sleep 0.1
done
out=$(k get pdb solo --no-headers) && [[ $out == *" 1 "*" N/A "*" 0 "* ]] || die "get pdb solo: $out"
pod=$(k get pods -l app=solo -o jsonpath='{.items[0].metadata.name}')
node=$(k get pods -l app=solo -o jsonpath='{.items[0].spec.nodeName}')
printf '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"%s","namespace":"default"}}' "$pod" >"$work/eviction.json"
out=$(k create --raw "/api/v1/namespaces/default/pods/$pod/eviction" -f "$work/eviction.json" 2>&1) && die "eviction passed: $out"
[[ $out == *"Cannot evict pod as it would violate the pod's disruption budget."* ]] || die "eviction: $out"
out=$(timeout 60 kubectl drain "$node" --pod-selector=app=solo --timeout=6s 2>&1) && die "drain passed the budget: $out"
[[ $out == *"Cannot evict pod as it would violate the pod's disruption budget."* ]] || die "drain: $out"
k get pod "$pod" >/dev/null || die "drain evicted $pod against the budget"
k patch pdb solo --type=merge -p '{"spec":{"minAvailable":null,"maxUnavailable":1}}' >/dev/null
for _ in $(seq 1 100); do
  [[ $(k get pdb solo -o jsonpath='{.status.disruptionsAllowed}') == 1 ]] && break
  sleep 0.1
done
out=$(timeout 60 kubectl drain "$node" --pod-selector=app=solo --timeout=30s 2>&1) || die "drain: $out"
[[ $out == *"evicted"* && $out == *"node/$node drained"* ]] || die "drain: $out"
rolled_out deployment/solo
# The replacement (the pod not being deleted) runs on the other node: the drained one is cordoned.
out=$(k get pods -l app=solo -o jsonpath='{range .items[*]}{.metadata.deletionTimestamp}|{.spec.nodeName}{"\n"}{end}' | grep '^|')
[[ -n $out && $out != *"|$node"* ]] || die "the replacement went to the cordoned node: $out"

step "LimitRange: min, max and ratio refusals as kube-apiserver words them"
cat <<'YAML' | k apply -f - >/dev/null
apiVersion: v1
kind: LimitRange
metadata:
  name: bounds
spec:
  limits:
  - type: Container
    min: {cpu: 100m}
    max: {memory: 1Gi}
    maxLimitRequestRatio: {cpu: "2"}
YAML
limited_pod() {  # limited_pod NAME RESOURCES_JSON
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"containers":[{"name":"main","image":"x","resources":%s}]}}' "$1" "$2"
}
out=$(limited_pod tiny '{"requests":{"cpu":"50m"},"limits":{"cpu":"100m","memory":"1Gi"}}' | k apply -f - 2>&1) && die "tiny created: $out"
[[ $out == *'pods "tiny" is forbidden: minimum cpu usage per Container is 100m, but request is 50m'* ]] || die "tiny: $out"
out=$(limited_pod big '{"requests":{"cpu":"100m"},"limits":{"cpu":"100m","memory":"2Gi"}}' | k apply -f - 2>&1) && die "big created: $out"
[[ $out == *'pods "big" is forbidden: maximum memory usage per Container is 1Gi, but limit is 2Gi'* ]] || die "big: $out"
out=$(limited_pod spiky '{"requests":{"cpu":"100m"},"limits":{"cpu":"1","memory":"1Gi"}}' | k apply -f - 2>&1) && die "spiky created: $out"
[[ $out == *'pods "spiky" is forbidden: cpu max limit to request ratio per Container is 2, but provided ratio is 10.000000'* ]] ||
  die "spiky: $out"
out=$(limited_pod unbounded '{"requests":{"cpu":"100m"},"limits":{"cpu":"200m"}}' | k apply -f - 2>&1) && die "unbounded created: $out"
[[ $out == *'maximum memory usage per Container is 1Gi.  No limit is specified'* ]] || die "unbounded: $out"
k delete limitrange bounds >/dev/null

step "a claim with storageClassName \"\" binds to a static PersistentVolume"
cat <<'YAML' | k apply -f - >/dev/null
apiVersion: v1
kind: PersistentVolume
metadata:
  name: shelf
spec:
  capacity: {storage: 8Gi}
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: /data/shelf}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: shared
spec:
  storageClassName: ""
  accessModes: [ReadWriteMany]
  resources:
    requests: {storage: 2Gi}
YAML
out=$(k wait --for=jsonpath='{.status.phase}'=Bound pvc/shared --timeout=30s) || die "shared not Bound: $out"
out=$(k get pvc shared --no-headers) && [[ $out == *"shelf"*"8Gi"*"RWX"* ]] || die "get pvc shared: $out"
out=$(k get pv shelf --no-headers) && [[ $out == *"Bound"*"default/shared"* ]] || die "get pv shelf: $out"
echo "PASS"
