#!/usr/bin/env bash
# The flags of training-operator v1.8.1 and v1.9.0 (cmd/training-operator.v1/main.go, plus the
# --kubeconfig controller-runtime adds) and the mpi-operator v0.8.0 flags that map one to one are
# accepted with the same meaning; Go's one-dash spelling too. docs/operator.md lists them all.
#  - each flag, with a value of its kind, passes parsing (the run then stops at an unreadable
#    kubeconfig, exit 1, not the usage error's 2);
#  - --enable-scheme: every kind, case-insensitive, the bare MPIJob is kubeflow.org/v1;
#  - mpi-operator's --kubeConfig, --threadiness and --gang-scheduling set what their
#    training-operator names set (the debug configuration line says so);
#  - --pytorch-init-container-template-file: the workers of a PyTorchJob get the template's init
#    containers with its fields filled in.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 src=$2
require_tools kubectl
make_workdir
op=
trap '[[ -n $op ]] && kill "$op" 2>/dev/null && wait "$op" 2>/dev/null; rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
bad_kc=$work/unreadable-kubeconfig
echo 'apiVersion: [' >"$bad_kc"
off=(--metrics-bind-address 0 --health-probe-bind-address 0)

# accepted ARGS...: parsing succeeds; prints the log. (The kubeconfig stops the run before any
# endpoint binds.)
accepted() {
  local out rc
  out=$("$bin" "$@" --kubeconfig "$bad_kc" --zap-log-level debug 2>&1); rc=$?
  if [[ $rc -ne 1 || $out == *"Run with --help"* ]]; then
    fail "$* was not accepted (exit $rc): $(head -n3 <<<"$out")"
    return 1
  fi
  printf '%s\n' "$out"
}
template=$work/initContainer.yaml
printf -- '- name: wait\n  image: {{.InitContainerImage}}\n' >"$template"
# Every flag of both releases with a value of its kind (the --zap-* ones are controller-runtime's).
upstream=(
  --metrics-bind-address=:0 --health-probe-bind-address=:0 --leader-elect --leader-elect=false
  --leader-election-id=1ca428e5.training-operator.kubeflow.org --enable-scheme=tfjob
  --gang-scheduler-name=volcano --namespace=kubeflow --controller-threads=2
  --pytorch-init-container-image=alpine:3.10 "--pytorch-init-container-template-file=$template"
  --pytorch-init-container-max-tries=100 --mpi-kubectl-delivery-image=kubeflow/kubectl-delivery:latest
  --webhook-server-port=9443 --webhook-service-name=training-operator
  --webhook-secret-name=training-operator-webhook-cert --kubeconfig="$bad_kc"
  --zap-devel --zap-devel=false --zap-encoder=console --zap-log-level=info --zap-stacktrace-level=error
  --zap-time-encoding=iso8601
)
for flag in "${upstream[@]}"; do
  accepted "$flag" >/dev/null && echo "ok: $flag"
done
# Go's flag package: one dash, and a separate value.
accepted -enable-scheme=pytorchjob -namespace kubeflow -controller-threads 3 >/dev/null &&
  echo "ok: -enable-scheme=pytorchjob -namespace kubeflow -controller-threads 3"
# A flag given twice: the last value counts, as with Go's flag package.
out=$(accepted --controller-threads 2 --controller-threads 5) &&
  { grep -q 'controller-threads=5 ' <<<"$out" && echo "ok: --controller-threads 2 --controller-threads 5 -> 5" ||
      fail "a repeated flag: $(grep 'controller-threads=' <<<"$out")"; }
# A value that starts with a dash stays a value (a removal in --enable-scheme).
out=$(accepted --enable-scheme=tfjob,pytorchjob --enable-scheme -tfjob) &&
  { grep -q 'enabled frameworks: kubeflow.org/pytorchjob$' <<<"$out" && echo "ok: --enable-scheme -tfjob stays a value" ||
      fail "--enable-scheme -tfjob: $(grep 'enabled frameworks' <<<"$out")"; }

# --enable-scheme: training-operator's kinds, any case; MPIJob means kubeflow.org/v1.
check_scheme() {  # value canonical-names
  local out
  out=$(accepted --enable-scheme "$1") || return
  grep -qx ".*enabled frameworks: $2" <<<"$out" || { fail "--enable-scheme $1: $(grep 'enabled frameworks' <<<"$out")"; return; }
  echo "ok: --enable-scheme $1 -> $2"
}
for v in tfjob TFJob; do check_scheme "$v" kubeflow.org/tfjob; done
for v in pytorchjob PyTorchJob; do check_scheme "$v" kubeflow.org/pytorchjob; done
for v in mxjob MXJob; do check_scheme "$v" kubeflow.org/mxjob; done
for v in xgboostjob XGBoostJob; do check_scheme "$v" kubeflow.org/xgboostjob; done
for v in paddlejob PaddleJob; do check_scheme "$v" kubeflow.org/paddlejob; done
for v in mpijob MPIJob MPIJOB; do check_scheme "$v" kubeflow.org/mpijob@v1; done
for v in mpijob-v2 mpijobv2 kubeflow.org/mpijob@v2beta1; do check_scheme "$v" kubeflow.org/mpijob@v2beta1; done
# Whatever --mpi-default-version says: that only picks the default set and unset managedBy's owner.
out=$(accepted --mpi-default-version v2beta1 --enable-scheme MPIJob) &&
  { grep -q 'enabled frameworks: kubeflow.org/mpijob@v1$' <<<"$out" && echo "ok: MPIJob is v1 with --mpi-default-version v2beta1" ||
      fail "--enable-scheme MPIJob with --mpi-default-version v2beta1: $(grep 'enabled frameworks' <<<"$out")"; }

# mpi-operator v0.8.0's one-to-one flags.
out=$(accepted --threadiness 4 --gang-scheduling volcano --enable-scheme mpijob-v2) &&
  { grep -q 'controller-threads=4 .*gang-scheduler-name="volcano"' <<<"$out" &&
      echo "ok: --threadiness 4 --gang-scheduling volcano" ||
      fail "--threadiness/--gang-scheduling: $(grep 'controller-threads' <<<"$out")"; }
out=$("$bin" --kubeConfig "$bad_kc" 2>&1); rc=$?
[[ $rc -eq 1 && $out == *"$bad_kc"* ]] && echo "ok: --kubeConfig is --kubeconfig" ||
  fail "--kubeConfig: exit $rc: $(tail -n1 <<<"$out")"

# --pytorch-init-container-template-file, end to end: the workers of examples/pytorch.yaml get
# the template's containers, with the image and master address filled in.
cat >"$template" <<'EOF'
- name: wait-for-master
  image: {{.InitContainerImage}}
  command: ["sh", "-c", "for i in $(seq {{.MaxTries}}); do nslookup {{.MasterAddr}} && exit 0; sleep 2; done; exit 1"]
EOF
"$bin" --embedded-cluster --kubeconfig-out "$work/kubeconfig" "${off[@]}" --enable-scheme pytorchjob \
  --pytorch-init-container-template-file "$template" --pytorch-init-container-image busybox:e2e \
  --pytorch-init-container-max-tries 5 >"$work/stdout" 2>"$work/stderr" &
op=$!
wait_until 30 grep -q '^kubeconfig ' "$work/stdout" || { echo "FAIL: the embedded cluster did not start"; tail "$work/stderr"; exit 1; }
k() { timeout 30 kubectl --kubeconfig "$work/kubeconfig" --request-timeout=20s "$@"; }
wait_until 30 k get pytorchjobs >/dev/null 2>&1
k apply -f "$src/examples/pytorch.yaml" >/dev/null || fail "kubectl apply examples/pytorch.yaml"
init() { k get pod pytorch-demo-worker-0 -n default -o jsonpath='{.spec.initContainers[*].name} {.spec.initContainers[0].image} {.spec.initContainers[0].command[2]}' 2>/dev/null; }
wait_until 30 init >/dev/null
want='wait-for-master busybox:e2e for i in $(seq 5); do nslookup pytorch-demo-master-0 && exit 0; sleep 2; done; exit 1'
[[ $(init) == "$want" ]] && echo "ok: --pytorch-init-container-template-file: worker-0 waits with the template's container" ||
  fail "worker-0's init containers: '$(init)', want '$want'"
master=$(k get pod pytorch-demo-master-0 -n default -o jsonpath='{.spec.initContainers}' 2>&1)
[[ -z $master ]] || fail "the master has init containers: $master"

echo "$fails failure(s)"
exit $fails
