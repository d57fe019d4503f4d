#!/usr/bin/env bash
# kubectl v1.32 against build/bin/localcluster with its controllers: a batch/v1 Job whose pods
# fail twice (sim.unitrain.io/fail-times: "2") completes with backoffLimit 3 and ends Failed with
# reason BackoffLimitExceeded with backoffLimit 1; a restart of the cluster with --state-dir
# (SIGHUP, then POST /unitrain/restart) keeps both Jobs and their status; an Indexed Job
# (kubectl create -f, kubectl wait --for=condition=complete) with its per-index pods; kube-apiserver's
# refusal of invalid Jobs.
# Usage: batch_job_e2e.sh LOCALCLUSTER_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
bin=${1:?usage: batch_job_e2e.sh LOCALCLUSTER_BINARY}
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
start_cluster "$bin" "$work" --state-dir "$work/state"

job() {  # job NAME BACKOFF_LIMIT
  cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
spec:
  backoffLimit: $2
  template:
    metadata:
      annotations:
        sim.unitrain.io/fail-times: "2"
        sim.unitrain.io/duration: 200ms
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox:1.36
YAML
}

step "a Job failing twice completes within backoffLimit 3"
# Outputs are captured before they are matched: under pipefail, `kubectl ... | grep -q` fails when
# grep leaves at its match before kubectl has written everything (SIGPIPE).
out=$(job flaky 3 | k apply -f -) && [[ $out == *"job.batch/flaky created"* ]] || die "apply of flaky: $out"
out=$(k wait --for=condition=Complete job/flaky --timeout=60s) && [[ $out == *"condition met"* ]] || die "flaky did not complete: $out"
got=$(k get job flaky -o jsonpath='{.status.succeeded}/{.status.failed}')
[[ $got == 1/2 ]] || die "flaky succeeded/failed = $got, want 1/2"
pods=$(k get pods -l batch.kubernetes.io/job-name=flaky -o jsonpath='{range .items[*]}{.status.phase}{" "}{end}')
[[ $(wc -w <<<"$pods") -eq 3 ]] || die "flaky should have made 3 pods, has: $pods"
[[ $(grep -o Failed <<<"$pods" | wc -l) -eq 2 && $(grep -o Succeeded <<<"$pods" | wc -l) -eq 1 ]] ||
  die "flaky pod phases: $pods"
names=$(k get pods -l job-name=flaky -o name)
[[ -n $names ]] && ! grep -Evq '^pod/flaky-[a-z0-9]{5}$' <<<"$names" || die "pod names are not <job>-<5 chars>: $names"

step "a Job failing twice with backoffLimit 1 ends Failed/BackoffLimitExceeded"
job doomed 1 | k apply -f - >/dev/null
out=$(k wait --for=condition=Failed job/doomed --timeout=60s) && [[ $out == *"condition met"* ]] || die "doomed did not fail: $out"
reason=$(k get job doomed -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}')
[[ $reason == BackoffLimitExceeded ]] || die "doomed Failed reason = '$reason'"
msg=$(k get job doomed -o jsonpath='{.status.conditions[?(@.type=="Failed")].message}')
[[ $msg == "Job has reached the specified backoff limit" ]] || die "doomed Failed message = '$msg'"
[[ -z $(k get job doomed -o jsonpath='{.status.conditions[?(@.type=="Complete")].type}') ]] ||
  die "doomed is both Failed and Complete"
[[ $(k get job doomed -o jsonpath='{.status.failed}') == 2 ]] || die "doomed status.failed is not 2"

step "kubectl get jobs shows both"
jobs=$(k get jobs)
echo "$jobs"
grep -Eq '^flaky +(Complete +)?1/1 ' <<<"$jobs" || die "get jobs row for flaky: $jobs"
grep -Eq '^doomed +(Failed +)?0/1 ' <<<"$jobs" || die "get jobs row for doomed: $jobs"

step "an Indexed Job from kubectl create -f completes with one pod per index"
cat >"$work/indexed.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: indexed
spec:
  completionMode: Indexed
  completions: 3
  parallelism: 3
  template:
    metadata:
      annotations:
        sim.unitrain.io/duration: 200ms
    spec:
      restartPolicy: Never
      subdomain: indexed
      containers:
      - name: main
        image: busybox:1.36
YAML
out=$(k create -f "$work/indexed.yaml") && [[ $out == *"job.batch/indexed created"* ]] || die "create of indexed: $out"
out=$(k wait --for=condition=complete job/indexed --timeout=60s) && [[ $out == *"condition met"* ]] ||
  die "indexed did not complete: $out"
got=$(k get job indexed -o jsonpath='{.status.completedIndexes}/{.status.succeeded}')
[[ $got == 0-2/3 ]] || die "indexed completedIndexes/succeeded = $got, want 0-2/3"
hosts=$(k get pods -l batch.kubernetes.io/job-name=indexed \
  -o jsonpath='{range .items[*]}{.metadata.labels.batch\.kubernetes\.io/job-completion-index}={.metadata.annotations.batch\.kubernetes\.io/job-completion-index}={.spec.hostname}.{.spec.subdomain}{"\n"}{end}' | sort | tr '\n' ' ')
[[ $hosts == "0=0=indexed-0.indexed 1=1=indexed-1.indexed 2=2=indexed-2.indexed " ]] ||
  die "indexed pods' index label=annotation=hostname.subdomain: $hosts"
env_ref=$(k get pods -l batch.kubernetes.io/job-name=indexed \
  -o jsonpath='{.items[0].spec.containers[0].env[?(@.name=="JOB_COMPLETION_INDEX")].valueFrom.fieldRef.fieldPath}')
[[ $env_ref == "metadata.labels['batch.kubernetes.io/job-completion-index']" ]] || die "JOB_COMPLETION_INDEX from: '$env_ref'"
names=$(k get pods -l job-name=indexed -o name)
[[ -n $names ]] && ! grep -Evq '^pod/indexed-[0-2]-[a-z0-9]{5}$' <<<"$names" || die "pod names are not <job>-<index>-<5 chars>: $names"

step "kube-apiserver's refusals: Indexed without completions, podFailurePolicy without restartPolicy Never"
out=$(k create -f - 2>&1 <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: bad
spec:
  completionMode: Indexed
  parallelism: 2
  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes: {operator: In, values: [42]}
  template:
    spec:
      restartPolicy: OnFailure
      containers:
      - name: main
        image: busybox:1.36
YAML
) && die "an invalid Job was accepted: $out"
[[ $out == *'The Job "bad" is invalid'* && $out == *'spec.completions: Required value: when completion mode is Indexed'* &&
   $out == *'spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified'* ]] ||
  die "refusal of bad: $out"

step "a restart (SIGHUP) with --state-dir keeps the Jobs and their status"
kill -HUP "$CLUSTER_PID"
for _ in $(seq 1 50); do
  grep -q "restarted at" "$work/stderr" && break
  sleep 0.1
done
grep -q "restarted at" "$work/stderr" || die "no restart within 5s of SIGHUP"
[[ $(k get job flaky -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}') == True ]] ||
  die "flaky lost its Complete condition across the restart"
[[ $(k get job doomed -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}') == BackoffLimitExceeded ]] ||
  die "doomed lost its Failed condition across the restart"

step "POST /unitrain/restart restarts it at runtime, state kept"
out=$(k create --raw /unitrain/restart -f - <<<'{}') && [[ $out == *'"restarting":true'* ]] ||
  die "POST /unitrain/restart was not accepted: $out"
for _ in $(seq 1 50); do
  [[ $(grep -c "restarted at" "$work/stderr") -ge 2 ]] && break
  sleep 0.1
done
[[ $(grep -c "restarted at" "$work/stderr") -ge 2 ]] || die "no restart within 5s of POST /unitrain/restart"
[[ $(k get job doomed -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}') == BackoffLimitExceeded ]] ||
  die "doomed lost its Failed condition across the runtime restart"

step "deleting a Job removes its pods (background propagation, the garbage collector)"
k delete job flaky --cascade=background >/dev/null
for _ in $(seq 1 100); do
  [[ -z $(k get pods -l job-name=flaky -o name) ]] && break
  sleep 0.1
done
[[ -z $(k get pods -l job-name=flaky -o name) ]] || die "flaky's pods outlived the job"
echo "PASS"
