#!/usr/bin/env bash
# Namespace scoping: `--namespace` repeats, and overrides $KUBEFLOW_NAMESPACE; the environment
# variable alone scopes the operator too. Jobs outside the scope get no pods.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 src=$2
require_tools kubectl
make_workdir
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

run() {  # label env... -- operator-args...: starts the operator, submits a job per namespace
  local label=$1; shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  rm -f "$work/kubeconfig" "$work/stdout"
  env "${envs[@]}" "$bin" --embedded-cluster --kubeconfig-out "$work/kubeconfig" --metrics-bind-address 0 \
    --health-probe-bind-address 0 "$@" >"$work/stdout" 2>"$work/$label.log" &
  pid=$!
  for _ in $(seq 150); do grep -q '^kubeconfig ' "$work/stdout" && break; sleep 0.2; done
  grep -q '^kubeconfig ' "$work/stdout" || { fail "$label: the operator did not start"; tail "$work/$label.log"; return; }
  for ns in alpha beta gamma; do
    # apply, not `kubectl create namespace`: that one sends protobuf, which the local cluster refuses.
    printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n' "$ns" \
      | kubectl --kubeconfig "$work/kubeconfig" apply -f - >/dev/null || fail "$label: namespace $ns"
    sed "s/namespace: default/namespace: $ns/" "$src/examples/pytorch.yaml" \
      | kubectl --kubeconfig "$work/kubeconfig" apply -f - >/dev/null || fail "$label: submit in $ns"
  done
}
pods_in() { kubectl --kubeconfig "$work/kubeconfig" get pods -n "$1" --no-headers 2>/dev/null | wc -l; }
expect_pods() {  # label: namespaces that get pods / namespaces that must not
  local label=$1 yes=$2 no=$3 t0=$SECONDS ns
  for ns in $yes; do
    until [[ $(pods_in "$ns") == 3 ]]; do
      (( SECONDS - t0 > 30 )) && { fail "$label: $ns has $(pods_in "$ns") pods, want 3"; break; }
      sleep 0.5
    done
  done
  sleep 2  # the out-of-scope job had as long as the in-scope ones, and then some
  for ns in $no; do [[ $(pods_in "$ns") == 0 ]] || fail "$label: $ns is out of scope but has $(pods_in "$ns") pods"; done
  kill -TERM "$pid"; wait "$pid"; pid=
}

run flags KUBEFLOW_NAMESPACE=gamma -- --namespace alpha --namespace beta
grep -q 'watching namespace(s) alpha, beta' "$work/flags.log" || fail "flags: no 'watching namespace(s) alpha, beta' log line"
expect_pods flags "alpha beta" "gamma"
(( fails == 0 )) && echo "ok: --namespace alpha --namespace beta (over KUBEFLOW_NAMESPACE=gamma) scopes to alpha and beta"

before=$fails
run env KUBEFLOW_NAMESPACE=gamma --
grep -q 'watching namespace(s) gamma' "$work/env.log" || fail "env: no 'watching namespace(s) gamma' log line"
expect_pods env "gamma" "alpha beta"
(( fails == before )) && echo "ok: KUBEFLOW_NAMESPACE=gamma scopes to gamma"
echo "$fails failure(s)"
exit $fails
