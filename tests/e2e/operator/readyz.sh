#!/usr/bin/env bash
# /readyz follows the caches: with the MPIJob CRD missing, the operator is alive (/healthz 200)
# but not ready (/readyz 503 naming the framework whose cache cannot sync), whether it leads or
# follows; once the CRD is installed the informer's retry syncs it and /readyz turns 200.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 lc=$2 src=$3
require_tools kubectl curl
make_workdir
pids=()
# Operators first, so they release the lease to a live cluster.
trap 'for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; wait "${pids[i]}" 2>/dev/null; done; rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
"$lc" --listen 127.0.0.1:0 --kubeconfig-out "$work/kubeconfig" >"$work/cluster.out" 2>"$work/cluster.log" &
pids+=($!)
for _ in $(seq 100); do grep -q '^ready ' "$work/cluster.out" && break; sleep 0.1; done
k() { timeout 30 kubectl --kubeconfig "$work/kubeconfig" --request-timeout=20s "$@"; }
k apply --server-side -f "$src/manifests/crds/kubeflow.org_pytorchjobs.yaml" >/dev/null || { echo "FAIL: pytorchjobs CRD"; exit 1; }

declare -A probes
for n in a b; do
  "$bin" --enable-scheme pytorchjob,mpijob --leader-elect --leader-election-id readyz-e2e \
    --leader-election-namespace default --kubeconfig "$work/kubeconfig" --disable-webhooks \
    --metrics-bind-address 0 --health-probe-bind-address 127.0.0.1:0 >/dev/null 2>"$work/$n.log" &
  pids+=($!)
  probes[$n]=$(logged_port --health-probe-bind-address "$work/$n.log" "$!")
  [[ -n ${probes[$n]} ]] || { echo "FAIL: operator $n did not log its probe port"; tail -20 "$work/$n.log"; exit 1; }
done
code() { curl -s -o "$work/body" -w '%{http_code}' "http://127.0.0.1:${probes[$1]}$2"; }
# The 503 names the first framework whose caches have not synced: the PyTorchJob ones until they
# have (how long that takes depends on the machine's load), then the MPIJob ones for good.
not_ready_for_mpijob() { [[ $(code "$1" /readyz) == 503 ]] && grep -q 'mpijob' "$work/body"; }
for n in a b; do
  [[ $(code "$n" /healthz) == 200 ]] || fail "$n: /healthz not 200 while a CRD is missing"
  wait_until 60 not_ready_for_mpijob "$n" ||
    fail "$n: /readyz is $(code "$n" /readyz) with the MPIJob CRD missing, want 503 naming mpijob: $(cat "$work/body")"
done
(( fails == 0 )) && echo "ok: both replicas alive but not ready without the MPIJob CRD ($(cat "$work/body" | tr -d '\n'))"
k apply --server-side -f "$src/manifests/crds/kubeflow.org_mpijobs.yaml" >/dev/null || fail "mpijobs CRD"
t0=$SECONDS
for n in a b; do
  until [[ $(code "$n" /readyz) == 200 ]]; do
    (( SECONDS - t0 > 60 )) && { fail "$n: /readyz still $(code "$n" /readyz) 60 s after the CRD appeared"; break; }
    sleep 0.5
  done
done
(( fails == 0 )) && echo "ok: leader and follower ready $((SECONDS - t0)) s after the CRD was installed"
echo "$fails failure(s)"
exit $fails
