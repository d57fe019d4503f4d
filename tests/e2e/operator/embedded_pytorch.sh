#!/usr/bin/env bash
# operator --embedded-cluster + kubectl apply examples/pytorch.yaml -> Succeeded; /metrics and
# probes answer with the expected names; SIGTERM stops the process within 30 s.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 src=$2
require_tools kubectl curl
make_workdir
"$bin" --embedded-cluster --kubeconfig-out "$work/kubeconfig" --metrics-bind-address 127.0.0.1:0 \
  --health-probe-bind-address 127.0.0.1:0 >"$work/stdout" 2>"$work/stderr" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- operator stderr (tail)"; tail -30 "$work/stderr"; exit 1; }

for _ in $(seq 100); do grep -q '^kubeconfig ' "$work/stdout" && break; sleep 0.2; done
kc=$(sed -n 's/^kubeconfig //p' "$work/stdout")
[[ -n $kc && -f $kc ]] || fail "no 'kubeconfig <path>' line on stdout"
# Ports the kernel picked (fixed ones could clash with tests running in parallel).
metrics_port=$(logged_port --metrics-bind-address "$work/stderr" "$pid")
[[ -n $metrics_port ]] || fail "no '--metrics-bind-address serving on port' line in the log"
probe_port=$(logged_port --health-probe-bind-address "$work/stderr" "$pid")
[[ -n $probe_port ]] || fail "no '--health-probe-bind-address serving on port' line in the log"
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$probe_port/readyz" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$probe_port/healthz" >/dev/null || fail "/healthz not 200"
curl -sf "http://127.0.0.1:$probe_port/readyz" >/dev/null || fail "/readyz not 200 within 20 s"

kubectl --kubeconfig "$kc" apply -f "$src/examples/pytorch.yaml" || fail "kubectl apply"
start=$SECONDS
phase=
while (( SECONDS - start < 90 )); do
  phase=$(kubectl --kubeconfig "$kc" get pytorchjob pytorch-demo -n default \
          -o jsonpath='{.status.conditions[-1:].type}' 2>/dev/null)
  [[ $phase == Succeeded || $phase == Failed ]] && break
  sleep 0.3
done
[[ $phase == Succeeded ]] || fail "pytorch-demo ended as '$phase' after $((SECONDS - start)) s"
echo "pytorch-demo Succeeded in $((SECONDS - start)) s"

m=$(curl -sf "http://127.0.0.1:$metrics_port/metrics") || fail "/metrics not 200"
for name in controller_runtime_reconcile_total controller_runtime_reconcile_errors_total \
            controller_runtime_reconcile_time_seconds_bucket workqueue_depth workqueue_adds_total \
            workqueue_retries_total workqueue_queue_duration_seconds_bucket workqueue_work_duration_seconds_bucket \
            rest_client_requests_total \
            training_operator_jobs_created_total training_operator_jobs_successful_total; do
  grep -q "^$name" <<<"$m" || fail "/metrics lacks $name"
done
# controller-runtime exports the leader-election gauge only with leader election on.
! grep -q "leader_election_master_status" <<<"$m" || fail "/metrics has leader_election_master_status without --leader-elect"
grep -q 'training_operator_jobs_successful_total{job_namespace="default",framework="pytorch"} 1' <<<"$m" \
  || fail "jobs_successful_total for pytorch is not 1"

t0=$SECONDS
kill -TERM "$pid"
wait "$pid"; rc=$?
(( SECONDS - t0 <= 30 )) || fail "SIGTERM took $((SECONDS - t0)) s"
[[ $rc -eq 0 ]] || fail "exit code $rc after SIGTERM"
echo "stopped in $((SECONDS - t0)) s"
