#!/usr/bin/env bash
# SIGTERM stops the operator within a few seconds (exit 0) whatever it is doing:
#  1. a cache that never syncs (the PodGroup CRD of --gang-scheduler-name volcano is missing) while
#     jobs wait in the queue: there is nothing to drain, since the workers never take a key;
#  2. a candidate retrying for a Lease another holder has, its webhooks serving (a missing Secret
#     namespace no longer retries: tests/e2e/operator/out_of_cluster.sh);
#  3. the API server gone while jobs wait in the queue: requests are no longer retried.
# Without those, 1 and 3 waited out the 30 s graceful-stop bound (and exited 1). And a leader whose
# Lease is taken over stops everything and exits 1.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 lc=$2 src=$3
command -v kubectl >/dev/null || { echo "FAIL: kubectl is not installed"; exit 1; }
work=$(mktemp -d)
pids=()
trap 'for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -KILL "${pids[i]}" 2>/dev/null; wait "${pids[i]}" 2>/dev/null; done; rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; tail -${TAIL:-5} "$work/op.log"; fails=$((fails+1)); }
"$lc" --listen 127.0.0.1:0 --kubeconfig-out "$work/kubeconfig" >"$work/cluster.out" 2>"$work/cluster.log" &
cluster=$!
pids+=($cluster)
for _ in $(seq 100); do grep -q '^ready ' "$work/cluster.out" && break; sleep 0.1; done
k() { timeout 30 kubectl --kubeconfig "$work/kubeconfig" --request-timeout=20s "$@"; }
k apply --server-side -f "$src/manifests/crds/kubeflow.org_pytorchjobs.yaml" >/dev/null || { echo "FAIL: CRD"; exit 1; }
for _ in $(seq 50); do k get pytorchjobs >/dev/null 2>&1 && break; sleep 0.2; done
for i in 1 2 3; do sed "s/name: pytorch-demo/name: stop-$i/" "$src/examples/pytorch.yaml"; echo "---"; done >"$work/jobs.yaml"
k apply -f "$work/jobs.yaml" >/dev/null || { echo "FAIL: submitting jobs"; exit 1; }

op=
start() {  # operator flags...
  "$bin" --enable-scheme pytorchjob --kubeconfig "$work/kubeconfig" --metrics-bind-address 127.0.0.1:0 \
    --health-probe-bind-address 0 ${OP_FLAGS:-} "$@" >/dev/null 2>"$work/op.log" &
  op=$!
  pids+=($op)
  port=$(logged_port --metrics-bind-address "$work/op.log" "$op")
  [[ -n $port ]] || fail "the operator did not start"
}
depth() { curl -sf "http://127.0.0.1:$port/metrics" | sed -n 's/^workqueue_depth{name="pytorchjob-controller"} //p'; }
wait_queued() {
  for _ in $(seq 100); do [[ $(depth) -gt 0 ]] 2>/dev/null && return 0; sleep 0.05; done
  fail "the queue never held a job"
}
term() {  # what
  local t0 rc ms
  t0=$(date +%s%3N)
  kill -TERM "$op"; wait "$op"; rc=$?
  ms=$(($(date +%s%3N) - t0))
  [[ $rc == 0 ]] || { fail "$1: exit $rc after SIGTERM (in $ms ms)"; return; }
  (( ms <= 5000 )) || { fail "$1: stopped in $ms ms, want at most 5 s"; return; }
  echo "ok: $1: stopped in $ms ms"
}

start --disable-webhooks --gang-scheduler-name volcano
wait_queued
term "caches never synced, jobs queued"

# A candidate that keeps trying for a Lease another holder renews (for an hour, as far as it knows).
k apply -f - >/dev/null <<LEASE || fail "creating the held Lease"
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: stop-held, namespace: default}
spec: {holderIdentity: elsewhere, leaseDurationSeconds: 3600, renewTime: "$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)"}
LEASE
start --webhook-server-port 0 --webhook-namespace default --leader-elect --leader-election-id stop-held \
  --leader-election-namespace default --leader-elect-retry-period 1s
for _ in $(seq 100); do grep -q 'leader is now elsewhere' "$work/op.log" && break; sleep 0.1; done
grep -q 'leader is now elsewhere' "$work/op.log" || fail "the candidate never saw the other holder"
term "candidate for a held Lease, webhooks serving"

# A leader whose Lease another holder took stops everything and exits 1 once its renew deadline passed.
lease=(--leader-elect --leader-election-id stop-e2e --leader-election-namespace default
       --leader-elect-lease-duration 4s --leader-elect-renew-deadline 3s --leader-elect-retry-period 1s)
start --disable-webhooks "${lease[@]}"
for _ in $(seq 100); do grep -q 'started pytorchjob-controller workers' "$work/op.log" && break; sleep 0.1; done
k patch lease stop-e2e -n default --type merge -p '{"spec":{"holderIdentity":"intruder"}}' >/dev/null \
  || fail "taking the lease over"
t0=$(date +%s%3N)
for _ in $(seq 150); do kill -0 "$op" 2>/dev/null || break; sleep 0.1; done
kill -0 "$op" 2>/dev/null && fail "the leader still runs 15 s after losing its lease"
wait "$op"; rc=$?
ms=$(($(date +%s%3N) - t0))
if [[ $rc == 1 ]] && grep -q 'leader election lost' "$work/op.log"; then
  echo "ok: lease lost: exit 1 in $ms ms (renew deadline 3 s)"
else
  fail "lease lost: exit $rc after $ms ms, want 1 and 'leader election lost'"
fi

k delete pytorchjobs --all >/dev/null
k apply -f "$work/jobs.yaml" >/dev/null
start --disable-webhooks --kube-api-qps 10 --kube-api-burst 1
wait_queued
kill -KILL "$cluster"; wait "$cluster" 2>/dev/null
term "API server gone, jobs queued"
echo "$fails failure(s)"
exit $fails
