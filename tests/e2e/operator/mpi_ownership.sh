#!/usr/bin/env bash
# MPIJob v1 and v2beta1 across operator restarts, against one build/bin/localcluster that outlives
# them (the two-version CRD, conversion through the operator's Service, as on a real cluster):
#  1. a job written without spec.runPolicy.managedBy (no defaulting webhook) runs under the v2
#     module (--mpi-default-version v2beta1), which pins itself in the job; after a restart with
#     --mpi-default-version v1 the job still has exactly one launcher (its batch Job; no v1
#     launcher Pod, Role or ServiceAccount), while a new job without managedBy goes to v1;
#  2. with the standalone overlay's webhook configurations installed and only the v1 module enabled, the
#     operator drops the v2beta1 hooks it no longer serves: writes through v2beta1 work (patch and
#     create), and v1 writes are still checked by the v1 module.
# The localcluster reaches the operator's webhook server through --service-endpoint for the
# Service training-operator.kubeflow:443; its port is picked by the kernel before both start.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 lc=$2 src=$3
require_tools kubectl curl python3
make_workdir
pids=()
operator=
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$work"/operator-*.log; do [[ -f $f ]] && { echo "--- $f (tail)"; tail -15 "$f"; }; done
  exit 1
}
k() { timeout 30 kubectl --kubeconfig "$work/kubeconfig" --request-timeout=20s "$@"; }

webhook_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$lc" --listen 127.0.0.1:0 --kubeconfig-out "$work/kubeconfig" \
  --service-endpoint "kubeflow/training-operator:443=127.0.0.1:$webhook_port" >"$work/cluster.out" 2>"$work/cluster.log" &
pids+=($!)
wait_until 10 grep -q '^ready ' "$work/cluster.out" || fail "localcluster did not print 'ready <url>'"
echo '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kubeflow"}}' | k create -f - >/dev/null || fail "creating namespace kubeflow"
k apply --server-side -f "$src/manifests/crds/kubeflow.org_mpijobs.yaml" >/dev/null || fail "installing the MPIJob CRD"

run=0
start_operator() {  # flags...: stops the running operator first, waits for the new one's /readyz
  if [[ -n $operator ]]; then
    kill -TERM "$operator"
    wait "$operator" 2>/dev/null
  fi
  run=$((run + 1))
  "$bin" --kubeconfig "$work/kubeconfig" --webhook-server-port "$webhook_port" --metrics-bind-address 0 \
    --health-probe-bind-address 127.0.0.1:0 "$@" >/dev/null 2>"$work/operator-$run.log" &
  operator=$!
  pids+=($operator)
  local probes
  probes=$(logged_port --health-probe-bind-address "$work/operator-$run.log" "$operator") || fail "operator $run did not start"
  wait_until 30 curl -sf "http://127.0.0.1:$probes/readyz" -o /dev/null || fail "operator $run not ready within 30 s"
}

job() {  # name version [run-policy]: an MPIJob whose pods run for an hour
  local run_policy=${3:-'{}'}
  cat <<EOF
{"apiVersion":"kubeflow.org/$2","kind":"MPIJob","metadata":{"name":"$1","namespace":"default"},
 "spec":{"slotsPerWorker":1,"runPolicy":$run_policy,"mpiReplicaSpecs":{
   "Launcher":{"replicas":1,"template":{"metadata":{"annotations":{"sim.unitrain.io/duration":"1h"}},
     "spec":{"containers":[{"name":"l","image":"example.com/mpi:1","command":["mpirun","hostname"]}]}}},
   "Worker":{"replicas":1,"template":{"metadata":{"annotations":{"sim.unitrain.io/duration":"1h"}},
     "spec":{"containers":[{"name":"w","image":"example.com/mpi:1"}]}}}}}}
EOF
}
state() { k get mpijobs.v2beta1.kubeflow.org "$1" -o jsonpath='{.status.conditions[-1:].type}' 2>/dev/null; }
is_state() { [[ $(state "$1") == "$2" ]]; }
exists() { k get "$@" >/dev/null 2>&1; }

# --- 1. switching --mpi-default-version over a running job ---------------------------------------
start_operator --enable-scheme mpijob-v1,mpijob-v2 --mpi-default-version v2beta1
job unowned v2beta1 | k create -f - >/dev/null || fail "creating job unowned"
wait_until 60 is_state unowned Running || fail "job unowned not Running under v2: $(state unowned)"
pinned=$(k get mpijobs.v2beta1.kubeflow.org unowned -o jsonpath='{.metadata.annotations.unitrain\.io/managed-by}/{.spec.runPolicy.managedBy}')
[[ $pinned == kubeflow.org/mpi-operator/ ]] || fail "job unowned: owner annotation/managedBy '$pinned'"
echo "job unowned runs under the v2 module, which pinned itself: $pinned"

start_operator --enable-scheme mpijob-v1,mpijob-v2 --mpi-default-version v1
# A job created now without managedBy goes to v1; once it has its v1 launcher Pod, the v1
# controller has also been through the jobs it found at start.
job probe v1 | k create -f - >/dev/null || fail "creating job probe"
wait_until 60 exists pod probe-launcher || fail "job probe got no v1 launcher Pod"
exists job.batch unowned-launcher || fail "job unowned lost its launcher Job"
for kind in pod role serviceaccount; do
  exists "$kind" unowned-launcher && fail "job unowned got a v1 launcher $kind beside its launcher Job"
done
is_state unowned Running || fail "job unowned is $(state unowned) after the restart"
echo "after --mpi-default-version v1: job unowned has one launcher (its Job), job probe went to v1"

# --- 2. a disabled module's webhooks ---------------------------------------------------------------
k apply -n kubeflow -f "$src/manifests/components/webhooks/webhook.yaml" >/dev/null || fail "installing the webhook configurations"
start_operator --enable-scheme mpijob-v1,mpijob-v2
job owned-v1 v1 | k create -f - >/dev/null || fail "creating job owned-v1"
m=$(k get mpijobs.v1.kubeflow.org owned-v1 -o jsonpath='{.spec.runPolicy.managedBy}')
[[ $m == kubeflow.org/training-operator ]] || fail "the defaulting webhook gave owned-v1 managedBy '$m'"

start_operator --enable-scheme mpijob-v1
hooks() { k get "$1" "$2" -o jsonpath='{range .webhooks[*]}{.name}{"\n"}{end}'; }
no_v2beta1_hooks() {
  ! hooks validatingwebhookconfiguration validator.training-operator.kubeflow.org | grep -q mpijob-v2beta1 &&
    ! hooks mutatingwebhookconfiguration defaulter.training-operator.kubeflow.org | grep -q mpijob-v2beta1
}
wait_until 30 no_v2beta1_hooks || fail "the v2beta1 hooks are still registered: $(hooks validatingwebhookconfiguration validator.training-operator.kubeflow.org)"
hooks validatingwebhookconfiguration validator.training-operator.kubeflow.org | grep -q '^validator.mpijob-v1\.' \
  || fail "the v1 validating hook is gone"
out=$(k patch mpijobs.v2beta1.kubeflow.org owned-v1 --type merge -p '{"metadata":{"labels":{"edited":"v2beta1"}}}' 2>&1) \
  || fail "patching owned-v1 through v2beta1 with the v2 module disabled: $out"
out=$(job written-v2 v2beta1 '{"managedBy":"kubeflow.org/mpi-operator"}' | k create -f - 2>&1) \
  || fail "creating a v2beta1 job with the v2 module disabled: $out"
# The v1 module still checks v1 writes.
out=$(k patch mpijobs.v1.kubeflow.org owned-v1 --type merge -p '{"spec":{"mpiReplicaSpecs":{"Launcher":{"replicas":2}}}}' 2>&1) \
  && fail "a v1 job with two launchers was accepted"
grep -q 'spec.mpiReplicaSpecs\[Launcher\].replicas' <<<"$out" || fail "two launchers refused with: $out"
echo "with only the v1 module enabled: v2beta1 writable, v1 still validated ($out)"
