#!/usr/bin/env bash
# Events do not slow object writes: N PyTorchJobs (default 1000, one Master each) wait in a local
# cluster when the operator starts at the default --kube-api-qps 20; the operator creates their
# pods and services and writes their status, and records two events per job. Measured twice:
# with events on their own budget (--events-qps 20, the default) and with events starved
# (--events-qps 0.001, nearly none written). Pods per second must be the same; the dropped events
# are counted (unitrain_events_dropped_total). Run by hand (not in ctest):
#   tests/bench/events_budget/events_budget.sh build/bin/training-operator build/bin/localcluster . [N]
# With BEFORE_BIN=<an operator built before events had their own client>, a third run shows that
# one, whose events take the object writes' budget.
set -u
bin=$1 lc=$2 src=$3 jobs=${4:-1000}
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$work"' EXIT
k() { timeout 120 kubectl --kubeconfig "$work/kubeconfig" --request-timeout=100s "$@"; }
now() { date +%s.%N; }

for i in $(seq "$jobs"); do
  cat <<YAML
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: job-$i, namespace: default}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: pytorch, image: docker.io/library/python:3.11-slim}]}}
---
YAML
done >"$work/jobs.yaml"

run() {  # label binary operator-flags...
  local label=$1 op_bin=$2; shift 2
  rm -f "$work/kubeconfig"
  # Pods stay Pending (no kubelet): the writes measured are the operator's alone.
  "$lc" --listen 127.0.0.1:0 --kubeconfig-out "$work/kubeconfig" --kubelet manual >"$work/cluster.out" 2>"$work/cluster.log" &
  local cluster=$!; pids+=($cluster)
  for _ in $(seq 100); do grep -q '^ready ' "$work/cluster.out" && break; sleep 0.1; done
  k apply --server-side -f "$src/manifests/crds/kubeflow.org_pytorchjobs.yaml" >/dev/null
  for _ in $(seq 50); do k get pytorchjobs >/dev/null 2>&1 && break; sleep 0.2; done
  k create -f "$work/jobs.yaml" >/dev/null
  local t0; t0=$(now)
  "$op_bin" --kubeconfig "$work/kubeconfig" --enable-scheme pytorchjob --disable-webhooks "$@" \
    --health-probe-bind-address 0 --metrics-bind-address 127.0.0.1:0 >/dev/null 2>"$work/op.log" &
  local op=$!; pids+=($op)
  local port=
  for _ in $(seq 100); do port=$(sed -n 's/.*--metrics-bind-address serving on port \([0-9]*\).*/\1/p' "$work/op.log"); [[ -n $port ]] && break; sleep 0.1; done
  local pods=0 t_last
  until (( pods >= jobs )); do
    sleep 2
    pods=$(k get pods --no-headers 2>/dev/null | wc -l)
    (( $(echo "$(now) - $t0 > 1200" | bc) )) && { echo "$label: only $pods pods after 1200 s"; break; }
  done
  t_last=$(now)
  curl -s "http://127.0.0.1:$port/metrics" >"$work/metrics"
  local written dropped writes
  written=$(awk '/^unitrain_events_written_total/{s+=$2} END{print s+0}' "$work/metrics")
  dropped=$(awk '/^unitrain_events_dropped_total/{s+=$2} END{print s+0}' "$work/metrics")
  writes=$(awk '/^rest_client_requests_total\{.*method="(POST|PUT|PATCH|DELETE)"/{s+=$2} END{print s+0}' "$work/metrics")
  printf '%-34s %5d pods in %6.1f s = %5.2f pods/s; %5d writes (events included); events written %5d, dropped %5d\n' \
    "$label" "$pods" "$(echo "$t_last - $t0" | bc)" "$(echo "$pods / ($t_last - $t0)" | bc -l)" "$writes" "$written" "$dropped"
  kill "$op" "$cluster"; wait "$op" "$cluster" 2>/dev/null
}

echo "$jobs PyTorchJobs, --kube-api-qps 20 (default):"
run "events on their own budget (20 qps)" "$bin" --events-qps 20
run "events starved (0.001 qps)" "$bin" --events-qps 0.001 --events-burst 1
if [[ -n ${BEFORE_BIN:-} ]]; then run "events sharing the writes' budget" "$BEFORE_BIN"; fi
