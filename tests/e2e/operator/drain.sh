#!/usr/bin/env bash
# SIGTERM with jobs still queued (a low --kube-api-qps keeps the worker busy): the operator stops
# at once and exits 0 (the pass in hand is cut short, the queued jobs are not drained: a backlog
# could outlast the 30 s graceful stop), and no job is lost: the next operator finishes every
# one, each with exactly its 3 pods.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 lc=$2 src=$3
require_tools kubectl curl
make_workdir
pids=()
trap 'for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; wait "${pids[i]}" 2>/dev/null; done; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; tail -5 "$work/op.log"; exit 1; }
"$lc" --listen 127.0.0.1:0 --kubeconfig-out "$work/kubeconfig" >"$work/cluster.out" 2>"$work/cluster.log" &
pids+=($!)
for _ in $(seq 100); do grep -q '^ready ' "$work/cluster.out" && break; sleep 0.1; done
k() { timeout 30 kubectl --kubeconfig "$work/kubeconfig" --request-timeout=20s "$@"; }
k apply --server-side -f "$src/manifests/crds/kubeflow.org_pytorchjobs.yaml" >/dev/null || fail "pytorchjobs CRD"
jobs=4
for i in $(seq $jobs); do
  sed "s/name: pytorch-demo/name: drain-$i/" "$src/examples/pytorch.yaml"; echo "---"
done >"$work/jobs.yaml"
k apply -f "$work/jobs.yaml" >/dev/null || fail "submitting $jobs jobs"

"$bin" --enable-scheme pytorchjob --kubeconfig "$work/kubeconfig" --disable-webhooks --kube-api-qps 10 --kube-api-burst 1 \
  --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 0 >/dev/null 2>"$work/op.log" &
op=$!
pids+=($op)
port=$(logged_port --metrics-bind-address "$work/op.log" "$op")
[[ -n $port ]] || fail "the operator did not start"
depth=0
for _ in $(seq 100); do
  depth=$(curl -sf "http://127.0.0.1:$port/metrics" | sed -n 's/^workqueue_depth{name="pytorchjob-controller"} //p')
  [[ -n $depth && $depth -gt 0 ]] && break; sleep 0.05
done
[[ -n $depth && $depth -gt 0 ]] || fail "the queue never held a job (depth '$depth')"
t0=$(date +%s%3N)
kill -TERM "$op"
wait "$op"; rc=$?
ms=$(($(date +%s%3N) - t0))
[[ $rc == 0 ]] || fail "exit $rc after SIGTERM (1: the 30 s graceful-stop bound ran out)"
(( ms <= 5000 )) || fail "stopped in $ms ms with $depth job(s) queued, want at most 5 s"
echo "ok: SIGTERM with $depth job(s) queued; stopped in $ms ms"

"$bin" --enable-scheme pytorchjob --kubeconfig "$work/kubeconfig" --disable-webhooks \
  --metrics-bind-address 0 --health-probe-bind-address 0 >/dev/null 2>"$work/op2.log" &
pids+=($!)
for i in $(seq $jobs); do
  n=0
  for _ in $(seq 300); do
    n=$(k get pods -l "training.kubeflow.org/job-name=drain-$i" --no-headers 2>/dev/null | wc -l)
    [[ $n -ge 3 ]] && break; sleep 0.1
  done
  [[ $n == 3 ]] || fail "drain-$i has $n pods after the next operator started, want 3"
done
echo "ok: the next operator gave every job left queued its 3 pods, no more"
