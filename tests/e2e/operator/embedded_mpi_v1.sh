#!/usr/bin/env bash
# --mpi-default-version v1 without --enable-scheme enables PyTorchJob and MPIJob v1 (not v2beta1),
# installs the v1-only MPIJob CRD, and kubectl apply examples/mpi-v1.yaml runs to Succeeded with
# the launcher Pod, its RBAC and the hostfile ConfigMap.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 src=$2
require_tools kubectl
make_workdir
"$bin" --embedded-cluster --kubeconfig-out "$work/kubeconfig" --metrics-bind-address 0 --health-probe-bind-address 0 \
  --mpi-default-version v1 --mpi-kubectl-delivery-image example.com/kubectl-delivery:e2e >"$work/stdout" 2>"$work/stderr" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- operator stderr (tail)"; tail -30 "$work/stderr"; exit 1; }

for _ in $(seq 150); do grep -q '^kubeconfig ' "$work/stdout" && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
kc=$(sed -n 's/^kubeconfig //p' "$work/stdout")
[[ -n $kc && -f $kc ]] || fail "no 'kubeconfig <path>' line on stdout"
enabled=$(grep 'enabled frameworks' "$work/stderr")
[[ $enabled == *'kubeflow.org/pytorchjob'* && $enabled == *'kubeflow.org/mpijob@v1'* && $enabled != *'mpijob@v2beta1'* ]] \
  || fail "expected PyTorchJob and MPIJob v1 enabled: $(grep 'enabled frameworks' "$work/stderr")"
k() { kubectl --kubeconfig "$kc" "$@"; }
[[ $(k get crd mpijobs.kubeflow.org -o jsonpath='{.spec.versions[*].name}') == v1 ]] || fail "the MPIJob CRD does not serve v1 alone"

k apply -f "$src/examples/mpi-v1.yaml" || fail "kubectl apply"
start=$SECONDS
phase=
while (( SECONDS - start < 90 )); do
  phase=$(k get mpijobs.v1.kubeflow.org mpi-v1-demo -n default -o jsonpath='{.status.conditions[-1:].type}' 2>/dev/null)
  [[ $phase == Succeeded || $phase == Failed ]] && break
  sleep 0.3
done
[[ $phase == Succeeded ]] || fail "mpi-v1-demo ended as '$phase' after $((SECONDS - start)) s"
echo "mpi-v1-demo Succeeded in $((SECONDS - start)) s"

[[ $(k get pod mpi-v1-demo-launcher -o jsonpath='{.spec.initContainers[0].image}') == example.com/kubectl-delivery:e2e ]] \
  || fail "launcher init container image is not the --mpi-kubectl-delivery-image value"
[[ $(k get pod mpi-v1-demo-launcher -o jsonpath='{.spec.serviceAccountName}') == mpi-v1-demo-launcher ]] || fail "launcher ServiceAccount"
[[ $(k get role mpi-v1-demo-launcher -o jsonpath='{.rules[1].resourceNames}') == '["mpi-v1-demo-worker-0","mpi-v1-demo-worker-1"]' ]] \
  || fail "Role resourceNames: $(k get role mpi-v1-demo-launcher -o jsonpath='{.rules[1].resourceNames}')"
k get rolebinding mpi-v1-demo-launcher >/dev/null || fail "no RoleBinding"
k get serviceaccount mpi-v1-demo-launcher >/dev/null || fail "no ServiceAccount"
[[ $(k get configmap mpi-v1-demo-config -o jsonpath='{.data.hostfile}') == $'mpi-v1-demo-worker-0 slots=1\nmpi-v1-demo-worker-1 slots=1' ]] \
  || fail "hostfile: $(k get configmap mpi-v1-demo-config -o jsonpath='{.data.hostfile}')"
[[ -z $(k get jobs.batch -o name) ]] || fail "an MPIJob v1 made a batch Job"
echo "ok"
