#!/usr/bin/env bash
# Every YAML in examples/ is accepted by build/bin/localcluster once manifests/crds is installed
# (schema validation of the CRDs included). The loop picks up examples added later on its own.
set -u
source "$(dirname "$0")/lib.sh"
lc=$1 src=$2
require_tools kubectl
make_workdir
"$lc" --listen 127.0.0.1:0 --kubeconfig-out "$work/kubeconfig" >"$work/out" 2>"$work/log" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q '^ready ' "$work/out" && break; sleep 0.1; done
grep -q '^ready ' "$work/out" || { echo "FAIL: localcluster did not start"; cat "$work/log"; exit 1; }
k() { timeout 30 kubectl --kubeconfig "$work/kubeconfig" --request-timeout=20s "$@"; }
k apply --server-side -k "$src/manifests/crds" >/dev/null || { echo "FAIL: installing manifests/crds"; exit 1; }
# TrainJob examples name the shipped runtimes.
k apply --server-side -k "$src/manifests/runtimes" >/dev/null || { echo "FAIL: installing manifests/runtimes"; exit 1; }
fails=0 n=0
check() {  # file
  local out="" objs=""
  n=$((n+1))
  if out=$(k apply -f "$1" 2>&1) && objs=$(k get -f "$1" -o name 2>&1); then
    echo "ok: $(basename "$1"): $(tr '\n' ' ' <<<"$objs")"
  else
    echo "FAIL: $(basename "$1"): $out $objs"; fails=$((fails+1))
  fi
}
# manifests/crds stores MPIJob as v2beta1 and converts v1 through the operator, which does not run
# here; the MPIJob v1 examples run against the v1-only CRD
# (kubeflow.org_mpijobs_v1.yaml) afterwards, as the mpi-v1-only overlay installs it.
is_mpi_v1() { grep -q '^apiVersion: kubeflow.org/v1$' "$1" && grep -q '^kind: MPIJob$' "$1"; }
v1_examples=()
for f in "$src"/examples/*.yaml; do
  if is_mpi_v1 "$f"; then v1_examples+=("$f"); else check "$f"; fi
done
if (( ${#v1_examples[@]} > 0 )); then
  k delete crd mpijobs.kubeflow.org --wait >/dev/null || { echo "FAIL: deleting the v2beta1 MPIJob CRD"; exit 1; }
  k apply --server-side -f "$src/manifests/crds/kubeflow.org_mpijobs_v1.yaml" >/dev/null \
    || { echo "FAIL: installing the v1 MPIJob CRD"; exit 1; }
  for f in "${v1_examples[@]}"; do check "$f"; done
fi
(( n > 0 )) || { echo "FAIL: no examples/*.yaml found under $src"; exit 1; }
# The check has teeth: a job that breaks its CRD's schema is refused.
bad='{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"bad","namespace":"default"},"spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":"two"}}}}'
if k apply -f - <<<"$bad" >/dev/null 2>&1; then echo "FAIL: the local cluster accepted replicas: \"two\""; fails=$((fails+1)); fi
echo "$n example file(s), $fails failure(s)"
exit $fails
