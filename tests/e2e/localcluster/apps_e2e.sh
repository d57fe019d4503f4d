#!/usr/bin/env bash
# kubectl v1.32 against build/bin/localcluster as a user drives a cluster: the operator's own
# standalone overlay applies server-side and its Deployment becomes Available; Deployment,
# StatefulSet and DaemonSet rollouts complete (`kubectl rollout status`); `kubectl get pods` shows
# the kubelet's columns (1/1 Running, Completed, Error, CrashLoopBackOff, ContainerCreating);
# `kubectl logs` (container=, --previous, --tail, -f until the container ends); `kubectl auth
# can-i`; PersistentVolumeClaims bound; `kubectl exec` says the containers are simulated.
# Usage: apps_e2e.sh LOCALCLUSTER_BINARY SOURCE_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
bin=${1:?usage: apps_e2e.sh LOCALCLUSTER_BINARY SOURCE_DIR}
src=${2:?usage: apps_e2e.sh LOCALCLUSTER_BINARY SOURCE_DIR}
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
# A short restart back-off keeps the CrashLoopBackOff step quick; its doubling is an integration test.
start_cluster "$bin" "$work" --restart-backoff 2s

step "the standalone overlay applies server-side and the operator Deployment becomes Available"
out=$(k apply --server-side -k "$src/manifests/overlays/standalone" 2>&1) || die "apply -k standalone: $out"
[[ $out == *"deployment.apps/training-operator serverside-applied"* ]] || die "apply -k standalone: $out"
out=$(k -n kubeflow rollout status deployment/training-operator --timeout=60s) ||
  die "rollout status of the operator: $out"
[[ $out == *"successfully rolled out"* ]] || die "rollout status: $out"
out=$(k -n kubeflow wait --for=condition=Available deployment/training-operator --timeout=30s) ||
  die "operator Deployment not Available: $out"

step "a Deployment rolls out, rolls out a new template, and its pods show 1/1 Running"
cat >"$work/web.yaml" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
YAML
k apply -f "$work/web.yaml" >/dev/null
out=$(k rollout status deployment/web --timeout=60s) && [[ $out == *"successfully rolled out"* ]] || die "web: $out"
out=$(k set image deployment/web nginx=nginx:1.28) || die "set image: $out"
out=$(k rollout status deployment/web --timeout=60s) && [[ $out == *"successfully rolled out"* ]] || die "web v2: $out"
images=$(k get pods -l app=web -o jsonpath='{range .items[?(@.metadata.deletionTimestamp)]}x{end}{range .items[*]}{.spec.containers[0].image} {end}')
out=$(k get deployment web) && [[ $out == *"2/2"* ]] || die "get deployment: $out"
out=$(k get pods -l app=web --no-headers)
running=$(grep -c ' 1/1 *Running ' <<<"$out" || true)
[[ $running -ge 2 ]] || die "web pods not 1/1 Running: $out ($images)"
[[ $(k get rs -l app=web --no-headers | wc -l) -eq 2 ]] || die "web should have two ReplicaSets"
out=$(k scale deployment web --replicas=3) || die "scale: $out"
out=$(k rollout status deployment/web --timeout=60s) && [[ $out == *"successfully rolled out"* ]] || die "web x3: $out"
out=$(k get deployment web --no-headers) && [[ $out == *" 3/3 "* ]] || die "web not 3/3 after scale: $out"

step "a StatefulSet and a DaemonSet roll out"
cat >"$work/sts.yaml" <<'YAML'
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
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests:
          storage: 1Gi
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
k apply -f "$work/sts.yaml" >/dev/null
# With the defaulted partition 0, kubectl reports a "partitioned" rollout, as on a real cluster.
out=$(k rollout status statefulset/db --timeout=60s) && [[ $out == *"roll out complete: 2 new pods have been updated"* ]] || die "db: $out"
out=$(k rollout status daemonset/agent --timeout=60s) && [[ $out == *"successfully rolled out"* ]] || die "agent: $out"
out=$(k get pvc data-db-0 --no-headers) && [[ $out == *Bound*standard* ]] || die "claim of db-0: $out"

step "a PersistentVolumeClaim is bound by the default StorageClass"
cat <<'YAML' | k apply -f - >/dev/null
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: workspace
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 10Gi
YAML
out=$(k wait --for=jsonpath='{.status.phase}'=Bound pvc/workspace --timeout=30s) || die "workspace not Bound: $out"
out=$(k get storageclass) && [[ $out == *"standard (default)"* ]] || die "storage classes: $out"

step "SelfSubjectAccessReview and SelfSubjectRulesReview allow everything; kubectl auth can-i"
out=$(cat <<'YAML' | k create -f - -o jsonpath='{.status.allowed}'
apiVersion: authorization.k8s.io/v1
kind: SelfSubjectAccessReview
spec:
  resourceAttributes: {verb: create, resource: pods, namespace: default}
YAML
) && [[ $out == true ]] || die "SelfSubjectAccessReview: $out"
out=$(printf 'apiVersion: authorization.k8s.io/v1\nkind: SelfSubjectRulesReview\nspec: {namespace: default}\n' |
      k create -f - -o jsonpath='{.status.resourceRules[0].verbs[0]}') && [[ $out == '*' ]] || die "SelfSubjectRulesReview: $out"
# kubectl auth can-i posts its review as protobuf.
out=$(k auth can-i create pods 2>&1) && [[ $out == yes ]] || die "auth can-i create pods: $out"
out=$(k auth can-i '*' '*' --all-namespaces 2>&1) && [[ $out == yes ]] || die "auth can-i '*': $out"

step "get pods shows Completed, Error, CrashLoopBackOff and ContainerCreating"
pod() {  # pod NAME RESTART_POLICY ANNOTATIONS...
  local name=$1 policy=$2
  shift 2
  printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  annotations:\n' "$name"
  for a in "$@"; do printf '    %s\n' "$a"; done
  printf 'spec:\n  restartPolicy: %s\n  containers:\n  - name: main\n    image: busybox:1.36\n' "$policy"
}
pod done Never 'sim.unitrain.io/duration: 100ms' | k apply -f - >/dev/null
pod broken Never 'sim.unitrain.io/duration: 100ms' 'sim.unitrain.io/exit-code: "3"' | k apply -f - >/dev/null
pod crash Always 'sim.unitrain.io/duration: 100ms' 'sim.unitrain.io/exit-code: "1"' | k apply -f - >/dev/null
pod pulling Never 'sim.unitrain.io/start-delay: 1h' | k apply -f - >/dev/null
status_of() { k get pod "$1" --no-headers | awk '{print $2 " " $3}'; }
wait_status() {  # wait_status POD "READY STATUS"
  local got=""
  for _ in $(seq 1 200); do
    got=$(status_of "$1")
    [[ $got == "$2" ]] && return 0
    sleep 0.1
  done
  die "pod $1 shows '$got', want '$2'"
}
wait_status done "0/1 Completed"
wait_status broken "0/1 Error"
wait_status crash "0/1 CrashLoopBackOff"
wait_status pulling "0/1 ContainerCreating"
out=$(k get pod done -o json)
[[ $out != *'"terminated": null'* && $out != *'"running": null'* ]] || die "null container states: $out"
events=$(k get events --field-selector involvedObject.name=crash -o jsonpath='{range .items[*]}{.reason} {end}')
for want in Scheduled Pulling Pulled Created Started BackOff; do
  [[ " $events " == *" $want "* ]] || die "events of crash lack $want: $events"
done

step "kubectl logs: annotation lines, container=, --previous, --tail, -f until the container ends"
cat <<'YAML' | k apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: talker
  annotations:
    sim.unitrain.io/duration: 1h
    sim.unitrain.io/log: |-
      epoch 1 loss 0.9
      epoch 2 loss 0.5
spec:
  restartPolicy: Never
  containers:
  - name: trainer
    image: busybox:1.36
  - name: sidecar
    image: busybox:1.36
YAML
for _ in $(seq 1 100); do [[ $(k get pod talker -o jsonpath='{.status.phase}') == Running ]] && break; sleep 0.1; done
out=$(k logs talker -c trainer) && [[ $out == *"epoch 2 loss 0.5"* ]] || die "logs -c trainer: $out"
out=$(k logs talker -c trainer --tail=1) && [[ $out == "epoch 2 loss 0.5" ]] || die "logs --tail=1: $out"
# kubectl picks a container itself; the API's own answer without one:
out=$(k get --raw /api/v1/namespaces/default/pods/talker/log 2>&1) && die "log without container= succeeded: $out"
[[ $out == *"a container name must be specified for pod talker, choose one of: [trainer sidecar]"* ]] || die "log without container=: $out"
out=$(k logs talker -c nope 2>&1) && die "logs -c nope succeeded: $out"
[[ $out == *"container nope is not valid for pod talker"* ]] || die "logs -c nope: $out"
pod streamer Never 'sim.unitrain.io/duration: 3s' 'sim.unitrain.io/log: "hello"' | k apply -f - >/dev/null
for _ in $(seq 1 100); do [[ $(k get pod streamer -o jsonpath='{.status.phase}') != Pending ]] && break; sleep 0.1; done
out=$(timeout 30 kubectl logs -f streamer) || die "logs -f: $out"
[[ $out == *hello*"container main exited with code 0"* ]] || die "logs -f did not stream to the container's end: $out"
[[ $(k get pod streamer -o jsonpath='{.status.phase}') == Succeeded ]] || die "logs -f ended before the container"
out=$(k logs crash --previous) && [[ $out == *"container main exited with code 1"* ]] || die "logs --previous: $out"
out=$(k logs done --previous 2>&1) && die "logs --previous of a pod that never restarted succeeded: $out"
[[ $out == *'previous terminated container "main" in pod "done" not found'* ]] || die "logs --previous: $out"

step "exec, attach, port-forward and cp say the containers are simulated"
out=$(timeout 30 kubectl exec db-0 -- ls 2>&1) && die "exec succeeded: $out"
[[ $out == *"simulates containers"* ]] || die "exec: $out"
out=$(timeout 30 kubectl port-forward pod/db-0 0:80 2>&1) && die "port-forward succeeded: $out"
[[ $out == *"simulates containers"* ]] || die "port-forward: $out"
stop_cluster

step "--gang-scheduler installs that scheduler's PodGroup CRD only"
start_cluster "$bin" "$work" --gang-scheduler scheduler-plugins-scheduler
out=$(k get crd podgroups.scheduling.x-k8s.io -o name) || die "no scheduler-plugins PodGroup CRD: $out"
out=$(k get crd podgroups.scheduling.volcano.sh 2>&1) && die "Volcano's CRD installed too: $out"
echo "PASS"
