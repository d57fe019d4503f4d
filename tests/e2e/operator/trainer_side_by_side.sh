#!/usr/bin/env bash
# One operator, one namespace: a PyTorchJob (kubeflow.org/v1), an MPIJob v1, an MPIJob v2beta1 and
# two TrainJobs (trainer.kubeflow.org/v1alpha1) on the shipped torch-distributed and
# deepspeed-distributed (MPI) runtimes. Every job ends Succeeded/Complete, and every object in the
# namespace belongs, through its owner references, to exactly one of them — of the kinds its own
# module makes (no JobSet for a v1 job, no launcher Pod for a TrainJob).
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 src=$2
require_tools kubectl python3
make_workdir
"$bin" --embedded-cluster --enable-scheme '*' --kubeconfig-out "$work/kubeconfig" --metrics-bind-address 0 \
  --health-probe-bind-address 0 --crd-dir "$src/manifests/crds" >"$work/stdout" 2>"$work/stderr" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- operator stderr (tail)"; tail -30 "$work/stderr"; exit 1; }

for _ in $(seq 150); do grep -q '^kubeconfig ' "$work/stdout" && break; sleep 0.2; done
kc=$(sed -n 's/^kubeconfig //p' "$work/stdout")
[[ -n $kc && -f $kc ]] || fail "no 'kubeconfig <path>' line on stdout"
k() { timeout 30 kubectl --kubeconfig "$kc" --request-timeout=20s "$@"; }

k apply --server-side -k "$src/manifests/runtimes" >/dev/null || fail "installing manifests/runtimes"
k apply -f "$src/examples/pytorch.yaml" -f "$src/examples/mpi-v1.yaml" -f "$src/examples/mpi-v2.yaml" \
  -f "$src/examples/trainjob.yaml" >/dev/null || fail "kubectl apply of the examples"
k apply -f - >/dev/null <<'YAML' || fail "kubectl apply of the deepspeed TrainJob"
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: ds-demo, namespace: default}
spec:
  runtimeRef: {name: deepspeed-distributed}
  trainer: {numNodes: 2}
  runtimePatches:
    - manager: example.unitrain.io/demo
      trainingRuntimeSpec:
        template:
          spec:
            replicatedJobs:
              - name: launcher
                template: {spec: {template: {metadata: {annotations: {sim.unitrain.io/duration: 2s}}}}}
              - name: node
                template: {spec: {template: {metadata: {annotations: {sim.unitrain.io/duration: 120s}}}}}
YAML

done_state() {  # resource name -> the type of its last True terminal condition, if any
  k get "$1" "$2" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{"\n"}{end}' 2>/dev/null \
    | grep -E '^(Succeeded|Failed|Complete)$' | tail -1
}
jobs=("pytorchjobs.kubeflow.org pytorch-demo Succeeded" "mpijobs.v1.kubeflow.org mpi-v1-demo Succeeded"
      "mpijobs.v2beta1.kubeflow.org mpi-demo Succeeded" "trainjobs.trainer.kubeflow.org torch-demo Complete"
      "trainjobs.trainer.kubeflow.org ds-demo Complete")
start=$SECONDS
while (( SECONDS - start < 140 )); do
  pending=0
  for j in "${jobs[@]}"; do
    set -- $j
    s=$(done_state "$1" "$2")
    [[ -z $s ]] && { pending=1; continue; }
    [[ $s == "$3" ]] || fail "$1/$2 ended $s"
  done
  (( pending == 0 )) && break
  sleep 1
done
(( pending == 0 )) || fail "not every job finished within 140 s: $(for j in "${jobs[@]}"; do set -- $j; echo "$2=$(done_state "$1" "$2")"; done)"
echo "all five jobs finished as expected in $((SECONDS - start)) s"

# Every object of the namespace, traced to the top-level job that owns it. A finished JobSet deletes
# its Jobs in the foreground, so for a moment a pod can outlive its Job: the check waits (bounded)
# for the garbage collector to settle.
check_ownership() {
  local r
  for r in pods services configmaps secrets jobs.batch jobsets.jobset.x-k8s.io serviceaccounts roles rolebindings \
           pytorchjobs.kubeflow.org mpijobs.v2beta1.kubeflow.org trainjobs.trainer.kubeflow.org; do
    k get "$r" -n default -o json >"$work/$r.json" || fail "listing $r"
  done
  python3 - "$work" >"$work/ownership.out" 2>&1 <<'PY'
import glob, json, sys
objs = {}
for path in glob.glob(sys.argv[1] + "/*.json"):
    for o in json.load(open(path))["items"]:
        objs[o["metadata"]["uid"]] = o
tops = {"PyTorchJob", "MPIJob", "TrainJob"}
def top(o):
    seen = set()
    while o["kind"] not in tops:
        refs = [r for r in o["metadata"].get("ownerReferences", []) if r.get("controller")]
        if not refs or refs[0]["uid"] not in objs or refs[0]["uid"] in seen:
            return None
        seen.add(refs[0]["uid"])
        o = objs[refs[0]["uid"]]
    return o["metadata"]["name"]
# What each job may own (kinds), by module.
allowed = {"pytorch-demo": {"Pod", "Service"},
           "mpi-v1-demo": {"Pod", "ConfigMap", "ServiceAccount", "Role", "RoleBinding"},
           "mpi-demo": {"Pod", "Service", "ConfigMap", "Secret", "Job"},
           "torch-demo": {"JobSet", "Job", "Pod", "Service", "ConfigMap"},
           "ds-demo": {"JobSet", "Job", "Pod", "Service", "ConfigMap", "Secret"}}
owned = {name: {} for name in allowed}
bad = []
for o in objs.values():
    if o["kind"] in tops:
        continue
    name = o["metadata"]["name"]
    if o["kind"] == "ServiceAccount" and name == "default":
        continue
    if o["kind"] == "ConfigMap" and name == "kube-root-ca.crt":
        continue
    if o["kind"] == "Service" and name == "kubernetes":
        continue
    t = top(o)
    if t is None:
        bad.append(f"{o['kind']}/{name} has no owning job")
    elif o["kind"] not in allowed[t]:
        bad.append(f"{o['kind']}/{name} belongs to {t}, which does not make {o['kind']}s")
    else:
        owned[t][o["kind"]] = owned[t].get(o["kind"], 0) + 1
for t, kinds in owned.items():
    if not kinds.get("Pod"):
        bad.append(f"{t} owns no Pod: {kinds}")
for t in ("torch-demo", "ds-demo"):
    if owned[t].get("JobSet") != 1:
        bad.append(f"{t} owns {owned[t].get('JobSet', 0)} JobSets")
print("owned:", json.dumps(owned, sort_keys=True))
if bad:
    print("\n".join(bad))
    sys.exit(1)
PY
}
for attempt in $(seq 20); do
  check_ownership && break
  (( attempt == 20 )) && { cat "$work/ownership.out"; fail "ownership"; }
  sleep 1
done
cat "$work/ownership.out"
echo "ok: each job owns only its own module's objects"
