#!/usr/bin/env bash
# /metrics after jobs ran: every metric docs/operator.md lists is present with its type and label
# names, the counters count what happened (jobs created, succeeded, failed, deleted by
# ttlSecondsAfterFinished, as upstream counts only those; mpi-operator's for the MPIJob), the
# exposition is valid Prometheus text format (check_metrics.py), and every metric the Grafana
# dashboard and the PrometheusRule in manifests/monitoring use is served (check_monitoring.py).
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 src=$2
here=$(cd "$(dirname "$0")" && pwd)
require_tools kubectl curl python3
make_workdir
"$bin" --embedded-cluster --kubeconfig-out "$work/kubeconfig" --leader-elect --leader-election-id metrics-e2e \
  --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 >"$work/stdout" 2>"$work/stderr" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; tail -20 "$work/stderr"; exit 1; }
for _ in $(seq 150); do grep -q '^kubeconfig ' "$work/stdout" && break; sleep 0.2; done
port=$(logged_port --metrics-bind-address "$work/stderr" "$pid")
[[ -n $port ]] || fail "the operator did not start"
k() { timeout 30 kubectl --kubeconfig "$work/kubeconfig" --request-timeout=20s "$@"; }
phase() { k get pytorchjob "$1" -o jsonpath='{.status.conditions[-1:].type}' 2>/dev/null; }

k apply -f "$src/examples/pytorch.yaml" >/dev/null || fail "apply examples/pytorch.yaml"
k apply -f "$src/examples/mpi-v2.yaml" >/dev/null || fail "apply examples/mpi-v2.yaml"
k apply -f - >/dev/null <<'YAML' || fail "apply the failing job"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: fails
  namespace: default
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        metadata:
          annotations:
            sim.unitrain.io/duration: "1s"
            sim.unitrain.io/exit-code: "3"
        spec:
          containers:
            - name: pytorch
              image: docker.io/library/python:3.11-slim
YAML
sed -e 's/name: pytorch-demo/name: ttl-job/' -e 's/cleanPodPolicy: None/cleanPodPolicy: None\n    ttlSecondsAfterFinished: 1/' \
  "$src/examples/pytorch.yaml" | k apply -f - >/dev/null || fail "apply ttl-job"
t0=$SECONDS
mpi_phase() { k get mpijob mpi-demo -o jsonpath='{.status.conditions[-1:].type}' 2>/dev/null; }
until [[ $(phase pytorch-demo) == Succeeded && $(phase fails) == Failed && $(mpi_phase) == Succeeded ]]; do
  (( SECONDS - t0 > 90 )) && fail "jobs ended as pytorch-demo=$(phase pytorch-demo) fails=$(phase fails) mpi-demo=$(mpi_phase)"
  sleep 1
done
scrape() { curl -sf "http://127.0.0.1:$port/metrics" >"$work/metrics"; }
value() { sed -n "s/^$1 //p" "$work/metrics"; }
jobs='{job_namespace="default",framework="pytorch"}'
t0=$SECONDS
until scrape && [[ $(value "training_operator_jobs_deleted_total$jobs") == 1 ]]; do
  (( SECONDS - t0 > 30 )) && fail "jobs_deleted_total is '$(value "training_operator_jobs_deleted_total$jobs")', want 1"
  sleep 0.2
done

cat >"$work/expected.json" <<'JSON'
{
  "controller_runtime_reconcile_total": {"type": "counter", "labels": ["controller", "result"]},
  "controller_runtime_reconcile_errors_total": {"type": "counter", "labels": ["controller"]},
  "controller_runtime_reconcile_time_seconds": {"type": "histogram", "labels": ["controller"]},
  "workqueue_depth": {"type": "gauge", "labels": ["name"]},
  "workqueue_adds_total": {"type": "counter", "labels": ["name"]},
  "workqueue_retries_total": {"type": "counter", "labels": ["name"]},
  "workqueue_queue_duration_seconds": {"type": "histogram", "labels": ["name"]},
  "workqueue_work_duration_seconds": {"type": "histogram", "labels": ["name"]},
  "workqueue_unfinished_work_seconds": {"type": "gauge", "labels": ["name"]},
  "workqueue_longest_running_processor_seconds": {"type": "gauge", "labels": ["name"]},
  "controller_runtime_active_workers": {"type": "gauge", "labels": ["controller"]},
  "controller_runtime_max_concurrent_reconciles": {"type": "gauge", "labels": ["controller"]},
  "controller_runtime_webhook_requests_total": {"type": "counter", "labels": ["webhook", "code"]},
  "controller_runtime_webhook_requests_in_flight": {"type": "gauge", "labels": ["webhook"]},
  "controller_runtime_webhook_latency_seconds": {"type": "histogram", "labels": ["webhook"]},
  "rest_client_requests_total": {"type": "counter", "labels": ["code", "method", "host"]},
  "rest_client_request_duration_seconds": {"type": "histogram", "labels": ["verb", "host"]},
  "leader_election_master_status": {"type": "gauge", "labels": ["name"]},
  "process_cpu_seconds_total": {"type": "counter", "labels": []},
  "process_resident_memory_bytes": {"type": "gauge", "labels": []},
  "process_virtual_memory_bytes": {"type": "gauge", "labels": []},
  "process_virtual_memory_max_bytes": {"type": "gauge", "labels": []},
  "process_open_fds": {"type": "gauge", "labels": []},
  "process_max_fds": {"type": "gauge", "labels": []},
  "process_start_time_seconds": {"type": "gauge", "labels": []},
  "mpi_operator_jobs_created_total": {"type": "counter", "labels": []},
  "mpi_operator_jobs_successful_total": {"type": "counter", "labels": []},
  "mpi_operator_jobs_failed_total": {"type": "counter", "labels": []},
  "mpi_operator_job_info": {"type": "gauge", "labels": ["launcher", "namespace"]},
  "mpi_operator_is_leader": {"type": "gauge", "labels": []},
  "unitrain_events_dropped_total": {"type": "counter", "labels": ["controller", "reason"]},
  "unitrain_events_written_total": {"type": "counter", "labels": ["controller", "operation"]},
  "unitrain_job_confirmations_total": {"type": "counter", "labels": ["controller", "result"]},
  "unitrain_webhook_certificate_expiration_timestamp_seconds": {"type": "gauge", "labels": []},
  "training_operator_jobs_created_total": {"type": "counter", "labels": ["job_namespace", "framework"]},
  "training_operator_jobs_deleted_total": {"type": "counter", "labels": ["job_namespace", "framework"]},
  "training_operator_jobs_successful_total": {"type": "counter", "labels": ["job_namespace", "framework"]},
  "training_operator_jobs_failed_total": {"type": "counter", "labels": ["job_namespace", "framework"]},
  "training_operator_jobs_restarted_total": {"type": "counter", "labels": ["job_namespace", "framework"]}
}
JSON
fails=0
python3 "$here/check_metrics.py" "$work/metrics" "$work/expected.json" || fails=$((fails+1))
expect() {  # series value
  local got; got=$(value "$1")
  [[ $got == "$2" ]] && echo "ok: $1 $got" || { echo "FAIL: $1 is '$got', want $2"; fails=$((fails+1)); }
}
expect "training_operator_jobs_created_total$jobs" 3
expect "training_operator_jobs_successful_total$jobs" 2  # pytorch-demo, ttl-job
expect "training_operator_jobs_failed_total$jobs" 1
expect "training_operator_jobs_deleted_total$jobs" 1
expect "training_operator_jobs_restarted_total$jobs" 0
expect 'leader_election_master_status{name="metrics-e2e"}' 1
expect mpi_operator_jobs_created_total 1
expect mpi_operator_jobs_successful_total 1
expect mpi_operator_jobs_failed_total 0
expect mpi_operator_is_leader 1
expect 'mpi_operator_job_info{launcher="mpi-demo-launcher",namespace="default"}' 1
expect 'controller_runtime_max_concurrent_reconciles{controller="pytorchjob-controller"}' 1
expect 'unitrain_events_dropped_total{controller="pytorchjob-controller",reason="queue_full"}' 0
# No job of this run lost children it had: none was read back before a create.
expect 'unitrain_job_confirmations_total{controller="pytorchjob-controller",result="live"}' 0
expect 'unitrain_job_confirmations_total{controller="pytorchjob-controller",result="stale"}' 0
grep -q '^unitrain_events_written_total{controller="pytorchjob-controller",operation="create"} [1-9]' "$work/metrics" \
  || { echo "FAIL: no event written for pytorchjob-controller"; fails=$((fails+1)); }
grep -q '^rest_client_request_duration_seconds_count{verb="POST",host="127.0.0.1:[0-9]*"} [1-9]' "$work/metrics" \
  || { echo "FAIL: no POST latency observed"; fails=$((fails+1)); }
grep -q '^controller_runtime_webhook_requests_total{webhook="/validate-kubeflow-org-v1-pytorchjob",code="200"} [1-9]' "$work/metrics" \
  || { echo "FAIL: no admission request counted for the PyTorchJob webhook"; fails=$((fails+1)); }
expiry=$(value unitrain_webhook_certificate_expiration_timestamp_seconds)
[[ -n $expiry ]] && python3 -c "import sys,time; sys.exit(0 if float('$expiry') > time.time() + 86400 else 1)" \
  || { echo "FAIL: the webhook certificate's expiry is '$expiry'"; fails=$((fails+1)); }
python3 "$here/check_monitoring.py" "$work/metrics" "$src/manifests/monitoring/grafana-dashboard.json" \
  "$src/manifests/monitoring/prometheus-rule.yaml" || fails=$((fails+1))
grep -q '^rest_client_requests_total{code="201",method="POST",host="127.0.0.1:[0-9]*"} [1-9]' "$work/metrics" \
  || { echo "FAIL: no successful POST counted"; fails=$((fails+1)); }
grep -q '^controller_runtime_reconcile_total{controller="pytorchjob-controller",result="success"} [1-9]' "$work/metrics" \
  || { echo "FAIL: no successful pytorchjob reconcile counted"; fails=$((fails+1)); }
grep -q '^workqueue_adds_total{name="pytorchjob-controller"} [1-9]' "$work/metrics" \
  || { echo "FAIL: no workqueue adds for pytorchjob-controller"; fails=$((fails+1)); }

# The checker has teeth: a histogram without +Inf and a sample without TYPE are refused.
printf '# HELP h x\n# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\nstray 1\n' >"$work/broken"
if python3 "$here/check_metrics.py" "$work/broken" >/dev/null; then
  echo "FAIL: check_metrics.py accepted a broken exposition"; fails=$((fails+1))
fi
echo "$fails failure(s)"
exit $fails
