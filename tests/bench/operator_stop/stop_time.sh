#!/usr/bin/env bash
# How long build/bin/training-operator takes to exit after SIGTERM, in the situations an admin
# meets: follower and leader, idle and with jobs running or queued, webhooks retrying their
# certificate Secret in a namespace that does not exist, a cache that never syncs while jobs
# queue up, and the API server gone. Run by hand (not in ctest):
#   tests/bench/operator_stop/stop_time.sh build/bin/training-operator build/bin/localcluster .
# Prints one line per situation: milliseconds from SIGTERM to exit, and the exit code.
set -u
bin=$1 lc=$2 src=$3
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; wait 2>/dev/null; [[ -n ${KEEP:-} ]] && cp -r "$work" /tmp/stopbench; rm -rf "$work"' EXIT
now_ms() { date +%s%3N; }
k() { timeout 30 kubectl --kubeconfig "$work/kubeconfig" --request-timeout=20s "$@"; }
port_of() {  # flag log pid
  for _ in $(seq 150); do
    p=$(sed -n "s/.*$1 serving on port \([0-9]*\).*/\1/p" "$2"); [[ -n $p ]] && { echo "$p"; return; }
    kill -0 "$3" 2>/dev/null || return 1; sleep 0.1
  done
}
ready() { [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/readyz") == 200 ]]; }
wait_ready() { for _ in $(seq 300); do ready "$1" && return 0; sleep 0.1; done; return 1; }
start_cluster() {
  "$lc" --listen 127.0.0.1:0 --kubeconfig-out "$work/kubeconfig" >"$work/cluster.out" 2>"$work/cluster.log" &
  cluster=$!; pids+=($cluster)
  for _ in $(seq 100); do grep -q '^ready ' "$work/cluster.out" && break; sleep 0.1; done
  k apply --server-side -f "$src/manifests/crds/kubeflow.org_pytorchjobs.yaml" >/dev/null
  for _ in $(seq 50); do k get pytorchjobs >/dev/null 2>&1 && break; sleep 0.2; done
}
start_op() {  # name flags...
  local n=$1; shift
  "$bin" --kubeconfig "$work/kubeconfig" --metrics-bind-address 0 --health-probe-bind-address 127.0.0.1:0 ${OP_FLAGS:-} "$@" \
    >/dev/null 2>"$work/$n.log" &
  pid_of[$n]=$!; pids+=($!)
  probe_of[$n]=$(port_of --health-probe-bind-address "$work/$n.log" "${pid_of[$n]}")
}
term() {  # name label
  local t0 rc; t0=$(now_ms)
  kill -TERM "${pid_of[$1]}"; wait "${pid_of[$1]}"; rc=$?
  printf '%-58s %6d ms  exit %d\n' "$2" $(($(now_ms) - t0)) "$rc"
}
submit() {  # count seconds-per-pod prefix
  for i in $(seq "$1"); do
    sed -e "s/name: pytorch-demo/name: $3-$i/" -e "s/sim.unitrain.io\/duration: \"2s\"/sim.unitrain.io\/duration: \"$2s\"/" \
      "$src/examples/pytorch.yaml"; echo ---
  done | k apply -f - >/dev/null
}
declare -A pid_of probe_of
elect=(--enable-scheme pytorchjob --disable-webhooks --leader-elect --leader-election-id stop-bench --leader-election-namespace default)

start_cluster
start_op leader "${elect[@]}"; wait_ready "${probe_of[leader]}"
start_op follower "${elect[@]}"; wait_ready "${probe_of[follower]}"
sleep 1
term follower "follower, idle"
term leader "leader, idle"

start_op leader "${elect[@]}"; wait_ready "${probe_of[leader]}"
start_op follower "${elect[@]}"; wait_ready "${probe_of[follower]}"
submit 5 60 running
for _ in $(seq 100); do [[ $(k get pods --no-headers 2>/dev/null | grep -c Running) -ge 15 ]] && break; sleep 0.2; done
term follower "follower, 5 jobs running"
term leader "leader, 5 jobs running (15 pods)"
k delete pytorchjobs --all --wait=false >/dev/null

start_op leader --enable-scheme pytorchjob --disable-webhooks --kube-api-qps 5 --kube-api-burst 1
wait_ready "${probe_of[leader]}"
submit 4 60 queued
sleep 0.5
term leader "leader, 4 jobs queued at --kube-api-qps 5 (drained)"

start_op leader --enable-scheme pytorchjob --disable-webhooks
wait_ready "${probe_of[leader]}"
submit 10 60 burst
sleep 0.3
term leader "leader, 10 jobs just submitted (default QPS)"

start_op webhooks --enable-scheme pytorchjob --webhook-server-port 0
sleep 5
term webhooks "webhooks on, Secret namespace 'kubeflow' missing"

start_op volcano --enable-scheme pytorchjob --disable-webhooks --gang-scheduler-name volcano
sleep 2
submit 3 60 gang
sleep 2
term volcano "PodGroup CRD missing (never synced), 3 jobs queued"

start_op gone "${elect[@]}"; wait_ready "${probe_of[gone]}"
kill -KILL "$cluster"; wait "$cluster" 2>/dev/null
sleep 1
term gone "leader, API server gone"
