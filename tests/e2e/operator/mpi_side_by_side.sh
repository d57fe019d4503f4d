#!/usr/bin/env bash
# MPIJob v1 and v2beta1 side by side in one embedded cluster: one CRD serves both versions through
# the operator's conversion webhook; the defaulting webhooks give each job to the module of the
# version it was written in; each job gets only its own framework's objects and succeeds; both
# versions list every job; invalid specs of every framework are refused at admission with the
# reference field paths; spec.runPolicy.managedBy cannot change.
# Usage: mpi_side_by_side.sh OPERATOR SOURCE_DIR [REFERENCE_EXAMPLES]: with REFERENCE_EXAMPLES,
# upstream's mpi-v1/tensorflow-mnist.yaml and mpi-v2/pi.yaml run side by side instead of
# examples/mpi-v1.yaml and examples/mpi-v2.yaml; when they are absent the test reports itself
# skipped (77).
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 src=$2 ref=${3:-}
if [[ -n $ref && ! ( -f $ref/mpi-v1/tensorflow-mnist.yaml && -f $ref/mpi-v2/pi.yaml ) ]]; then
  echo "SKIPPED: upstream examples mpi-v1/tensorflow-mnist.yaml and mpi-v2/pi.yaml not found in $ref"
  exit 77
fi
require_tools kubectl curl python3
make_workdir
"$bin" --embedded-cluster --enable-scheme '*' --kubeconfig-out "$work/kubeconfig" --metrics-bind-address 0 \
  --health-probe-bind-address 127.0.0.1:0 --crd-dir "$src/manifests/crds" \
  >"$work/stdout" 2>"$work/stderr" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- operator stderr (tail)"; tail -30 "$work/stderr"; exit 1; }

for _ in $(seq 150); do grep -q '^kubeconfig ' "$work/stdout" && break; sleep 0.2; done
kc=$(sed -n 's/^kubeconfig //p' "$work/stdout")
[[ -n $kc && -f $kc ]] || fail "no 'kubeconfig <path>' line on stdout"
# Ports the kernel picked (fixed ones could clash with tests running in parallel).
probe_port=$(logged_port --health-probe-bind-address "$work/stderr" "$pid")
[[ -n $probe_port ]] || fail "no '--health-probe-bind-address serving on port' line in the log"
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$probe_port/readyz" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$probe_port/readyz" >/dev/null || fail "/readyz not 200 within 20 s"
k() { kubectl --kubeconfig "$kc" "$@"; }

served=$(k get crd mpijobs.kubeflow.org -o jsonpath='{range .spec.versions[*]}{.name}/{.storage} {end}{.spec.conversion.strategy}')
[[ $served == "v2beta1/true v1/false Webhook" ]] || fail "mpijobs CRD serves '$served'"
# One defaulting webhook per MPIJob version, each matching only the version it names (other
# kinds get one only when their module persists its defaults, as JobSet's does).
defaulters=$(k get mutatingwebhookconfiguration defaulter.training-operator.kubeflow.org \
               -o jsonpath='{range .webhooks[*]}{.name}/{.matchPolicy} {end}' | tr ' ' '\n' | grep mpijob | tr '\n' ' ')
[[ $defaulters == "defaulter.mpijob-v2beta1.training-operator.kubeflow.org/Exact defaulter.mpijob-v1.training-operator.kubeflow.org/Exact " ]] \
  || fail "defaulting webhooks: '$defaulters'"

if [[ -n $ref ]]; then
  # Both upstream folders name a job tensorflow-mnist; v2's pi runs beside v1's tensorflow-mnist.
  v1_jobs=(tensorflow-mnist) v2_jobs=(pi)
  k apply -n default -f "$ref/mpi-v1/tensorflow-mnist.yaml" -f "$ref/mpi-v2/pi.yaml" || fail "kubectl apply upstream examples"
  echo "upstream examples: mpi-v1/tensorflow-mnist.yaml and mpi-v2/pi.yaml from $ref"
else
  v1_jobs=(mpi-v1-demo) v2_jobs=(mpi-demo)
  k apply -f "$src/examples/mpi-v1.yaml" -f "$src/examples/mpi-v2.yaml" || fail "kubectl apply examples"
fi

for j in "${v1_jobs[@]}"; do
  m=$(k get mpijobs.v1.kubeflow.org "$j" -o jsonpath='{.spec.runPolicy.managedBy}')
  [[ $m == kubeflow.org/training-operator ]] || fail "v1 job $j has managedBy '$m'"
done
for j in "${v2_jobs[@]}"; do
  m=$(k get mpijobs.v2beta1.kubeflow.org "$j" -o jsonpath='{.spec.runPolicy.managedBy}')
  [[ $m == kubeflow.org/mpi-operator ]] || fail "v2beta1 job $j has managedBy '$m'"
done
echo "managedBy filled from the version each job was written in"

state() { k get "mpijobs.$1.kubeflow.org" "$2" -o jsonpath='{.status.conditions[-1:].type}' 2>/dev/null; }
start=$SECONDS
while (( SECONDS - start < 120 )); do
  # One read per job and round (kubectl is the CPU cost of this test).
  done_all=1 failed=
  for j in "${v1_jobs[@]}"; do s=$(state v1 "$j"); [[ $s == Succeeded ]] || done_all=; [[ $s == Failed ]] && failed+=" v1/$j"; done
  for j in "${v2_jobs[@]}"; do s=$(state v2beta1 "$j"); [[ $s == Succeeded ]] || done_all=; [[ $s == Failed ]] && failed+=" v2beta1/$j"; done
  [[ -n $done_all ]] && break
  [[ -n $failed ]] && fail "job(s) Failed:$failed"
  sleep 1
done
[[ -n $done_all ]] || fail "not every job Succeeded within 120 s"
echo "all ${#v1_jobs[@]} v1 and ${#v2_jobs[@]} v2beta1 jobs Succeeded in $((SECONDS - start)) s"

# Each job has exactly its own framework's objects: no second launcher, no foreign helpers.
for j in "${v1_jobs[@]}"; do
  k get pod "$j-launcher" >/dev/null 2>&1 || fail "v1 job $j has no launcher Pod"
  k get job.batch "$j-launcher" >/dev/null 2>&1 && fail "v1 job $j also got a v2 launcher Job"
  k get role "$j-launcher" >/dev/null 2>&1 || fail "v1 job $j has no launcher Role"
  k get secret "$j-ssh" >/dev/null 2>&1 && fail "v1 job $j got a v2 SSH Secret"
  k get service "$j" >/dev/null 2>&1 && fail "v1 job $j got a v2 Service"
done
for j in "${v2_jobs[@]}"; do
  k get job.batch "$j-launcher" >/dev/null 2>&1 || fail "v2beta1 job $j has no launcher Job"
  k get pod "$j-launcher" >/dev/null 2>&1 && fail "v2beta1 job $j also got a v1 launcher Pod"
  k get role "$j-launcher" >/dev/null 2>&1 && fail "v2beta1 job $j got a v1 Role"
  k get serviceaccount "$j-launcher" >/dev/null 2>&1 && fail "v2beta1 job $j got a v1 ServiceAccount"
done
echo "each job has only its own framework's objects"

# Both versions list every job, each converted to the version asked for.
all=$(printf '%s\n' "${v1_jobs[@]}" "${v2_jobs[@]}" | sort | tr '\n' ' ')
for v in v1 v2beta1; do
  listed=$(k get "mpijobs.$v.kubeflow.org" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort | tr '\n' ' ')
  [[ $listed == "$all" ]] || fail "mpijobs.$v lists '$listed', want '$all'"
  versions=$(k get "mpijobs.$v.kubeflow.org" -o jsonpath='{range .items[*]}{.apiVersion}{"\n"}{end}' | sort -u)
  [[ $versions == "kubeflow.org/$v" ]] || fail "mpijobs.$v returns apiVersions '$versions'"
done
m=$(k get mpijobs.v1.kubeflow.org "${v2_jobs[0]}" -o jsonpath='{.spec.runPolicy.managedBy}/{.spec.sshAuthMountPath}')
[[ $m == "kubeflow.org/mpi-operator/" ]] || fail "a v2beta1 job read as v1 shows '$m'"
# Its v2beta1-only fields travel in an annotation, unless they all hold the schema's defaults (the
# API server fills those in again when the job is written back).
k get mpijobs.v2beta1.kubeflow.org "${v2_jobs[0]}" -o json >"$work/as-v2.json"
k get mpijobs.v1.kubeflow.org "${v2_jobs[0]}" -o json >"$work/as-v1.json"
python3 - "$work/as-v2.json" "$work/as-v1.json" <<'PY' || fail "the v2beta1-only fields of ${v2_jobs[0]} read as v1: $(cat "$work/as-v1.json")"
import json, sys
v2, v1 = (json.load(open(p)) for p in sys.argv[1:3])
defaults = {"runLauncherAsWorker": False, "sshAuthMountPath": "/root/.ssh", "launcherCreationPolicy": "AtStartup",
            "mpiImplementation": "OpenMPI"}
own = {k: v for k, v in v2["spec"].items() if k in defaults and v != defaults[k]}
stash = v1["metadata"].get("annotations", {}).get("conversion.unitrain.io/mpijob-v2beta1-fields")
assert (json.loads(stash)["fields"] if stash else {}) == own, (own, stash)
PY
echo "mpijobs.v1.kubeflow.org and mpijobs.v2beta1.kubeflow.org both list all jobs, converted"

# managedBy is immutable.
out=$(k patch mpijobs.v1.kubeflow.org "${v1_jobs[0]}" --type merge \
      -p '{"spec":{"runPolicy":{"managedBy":"kubeflow.org/mpi-operator"}}}' 2>&1) && fail "managedBy changed: $out"
grep -q 'spec.runPolicy.managedBy' <<<"$out" && grep -q 'immutable' <<<"$out" || fail "managedBy change refused with: $out"
echo "managedBy change refused: $out"

# Invalid specs of every framework are refused at admission with the reference field paths.
# None of these is a CRD schema error: only the validating webhooks know these rules. kubectl
# prints a webhook's 422 Invalid Status like the API server's own ("is invalid: <causes>").
reject() {  # file-content expected-field
  out=$(k apply -f - <<<"$1" 2>&1) && fail "accepted: $1"
  grep -qF "$2" <<<"$out" || fail "refusal lacks $2: $out"
  echo "refused: $out"
}
reject '{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"bad-pt","namespace":"default"},
  "spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":1,"template":{"spec":{"containers":[{"name":"pytorch"}]}}}}}}' \
  'spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].image'
reject '{"apiVersion":"kubeflow.org/v1","kind":"TFJob","metadata":{"name":"bad-tf","namespace":"default"},
  "spec":{"tfReplicaSpecs":{"Chief":{"replicas":1,"template":{"spec":{"containers":[{"name":"tensorflow","image":"x"}]}}},
          "Master":{"replicas":1,"template":{"spec":{"containers":[{"name":"tensorflow","image":"x"}]}}}}}}' \
  'spec.tfReplicaSpecs'
reject '{"apiVersion":"kubeflow.org/v1","kind":"MXJob","metadata":{"name":"bad-mx","namespace":"default"},
  "spec":{"jobMode":"MXTrain","mxReplicaSpecs":{"Scheduler":{"replicas":2,"template":{"spec":{"containers":[{"name":"mxnet","image":"x"}]}}}}}}' \
  'spec.mxReplicaSpecs[Scheduler].replicas'
reject '{"apiVersion":"kubeflow.org/v1","kind":"XGBoostJob","metadata":{"name":"bad-xgb","namespace":"default"},
  "spec":{"xgbReplicaSpecs":{"Worker":{"replicas":1,"template":{"spec":{"containers":[{"name":"xgboost","image":"x"}]}}}}}}' \
  'spec.xgbReplicaSpecs[Master]'
reject '{"apiVersion":"kubeflow.org/v1","kind":"PaddleJob","metadata":{"name":"bad-paddle","namespace":"default"},
  "spec":{"paddleReplicaSpecs":{"Worker":{"replicas":1,"template":{"spec":{"containers":[{"name":"paddle"}]}}}}}}' \
  'spec.paddleReplicaSpecs[Worker].template.spec.containers[0].image'
reject '{"apiVersion":"kubeflow.org/v1","kind":"MPIJob","metadata":{"name":"bad-v1","namespace":"default"},
  "spec":{"mpiReplicaSpecs":{"Worker":{"replicas":1,"template":{"spec":{"containers":[{"name":"mpi","image":"x"}]}}}}}}' \
  'spec.mpiReplicaSpecs[Launcher]'
reject '{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"bad-v2","namespace":"default"},
  "spec":{"mpiReplicaSpecs":{"Launcher":{"replicas":2,"template":{"spec":{"containers":[{"name":"l","image":"x"}]}}}}}}' \
  'spec.mpiReplicaSpecs[Launcher].replicas'
# The v2beta1 schema has no enum on restartPolicy (as mpi-operator's CRD): the webhook's rule and
# message are what users see.
reject '{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"bad-restart","namespace":"default"},
  "spec":{"mpiReplicaSpecs":{"Launcher":{"replicas":1,"restartPolicy":"Sometimes","template":{"spec":{"containers":[{"name":"l","image":"x"}]}}}}}}' \
  'spec.mpiReplicaSpecs[Launcher].restartPolicy: Unsupported value: "Sometimes": supported values: "Never", "OnFailure"'

v1j=${v1_jobs[0]} v2j=${v2_jobs[0]}
# Same-version reads carry no conversion annotation; cross-version reads carry the other
# version's fields where that version has any beyond its schema's defaults.
for pair in "v1 $v1j" "v2beta1 $v2j"; do
  set -- $pair
  annotations=$(k get "mpijobs.$1.kubeflow.org" "$2" -o jsonpath='{.metadata.annotations}')
  [[ $annotations != *conversion.unitrain.io* ]] || fail "$1 job $2 read as $1 carries a conversion annotation: $annotations"
done
echo "jobs read in the version they were written in carry no conversion annotation"

# `kubectl get` names the module that runs each job.
columns=$(k get mpijobs.v2beta1.kubeflow.org "$v1j" "$v2j" --no-headers -o wide 2>&1)
grep -q "^$v1j *[A-Za-z]* *kubeflow.org/training-operator" <<<"$columns" \
  && grep -q "^$v2j *[A-Za-z]* *kubeflow.org/mpi-operator" <<<"$columns" || fail "no Managed-By column: $columns"
k get mpijobs.v1.kubeflow.org "$v1j" | head -1 | grep -q 'MANAGED-BY' || fail "no MANAGED-BY header"

# Each version's job edited through the other version: merge patch, then read and replace.
k patch mpijobs.v2beta1.kubeflow.org "$v1j" --type merge -p '{"metadata":{"labels":{"edited-as":"v2beta1"}}}' >/dev/null \
  || fail "patching the v1 job $v1j through v2beta1"
k patch mpijobs.v1.kubeflow.org "$v2j" --type merge -p '{"metadata":{"labels":{"edited-as":"v1"}}}' >/dev/null \
  || fail "patching the v2beta1 job $v2j through v1"
for pair in "v2beta1 $v1j v1" "v1 $v2j v2beta1"; do
  set -- $pair
  k get "mpijobs.$1.kubeflow.org" "$2" -o json >"$work/$2.json" || fail "reading $2 as $1"
  python3 - "$work/$2.json" <<'PY' || fail "editing $work/$2.json"
import json, sys
path = sys.argv[1]
job = json.load(open(path))
job["metadata"].setdefault("annotations", {})["edited"] = "replace"
json.dump(job, open(path, "w"))
PY
  out=$(k replace -f "$work/$2.json" 2>&1) || fail "replacing $2 through $1: $out"
  # Read back in its own version: the edit is there, its own fields unchanged, no annotation left over.
  k get "mpijobs.$3.kubeflow.org" "$2" -o json >"$work/$2.back.json"
  python3 - "$work/$2.back.json" "$3" <<'PY' || fail "$2 after the edit through $1: $(cat "$work/$2.back.json")"
import json, sys
job = json.load(open(sys.argv[1]))
ann = job["metadata"].get("annotations", {})
assert ann.get("edited") == "replace", ann
assert not any(k.startswith("conversion.unitrain.io") for k in ann), ann
assert job["spec"]["runPolicy"]["managedBy"] == {"v1": "kubeflow.org/training-operator", "v2beta1": "kubeflow.org/mpi-operator"}[sys.argv[2]]
PY
done
echo "each version's job patched and replaced through the other version"

# A v1 and a v2beta1 job of one name: creating or applying the second is an ordinary
# AlreadyExists, not a managedBy error, and the first job is left as it was.
same_name='{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"'$v1j'","namespace":"default"},
 "spec":{"mpiReplicaSpecs":{"Launcher":{"replicas":1,"template":{"spec":{"containers":[{"name":"l","image":"x"}]}}}}}}'
before=$(k get mpijobs.v1.kubeflow.org "$v1j" -o jsonpath='{.metadata.resourceVersion}')
for verb in create apply; do
  out=$(k "$verb" -f - <<<"$same_name" 2>&1) && fail "kubectl $verb of a v2beta1 job named like the v1 job $v1j succeeded: $out"
  grep -q "AlreadyExists" <<<"$out" && grep -q "already exists" <<<"$out" || fail "same name ($verb) refused with: $out"
  grep -q managedBy <<<"$out" && fail "same name ($verb) refused with a managedBy error: $out"
  echo "same name, kubectl $verb: $out"
done
[[ $(k get mpijobs.v1.kubeflow.org "$v1j" -o jsonpath='{.metadata.resourceVersion}') == "$before" ]] || fail "the v1 job $v1j changed"
