#!/usr/bin/env bash
# Migration from one upstream install to Unitrain's standalone overlay, by docs/upgrading.md's
# steps, on build/bin/localcluster. START is a folder of REFS (../shared/reference/upstream-install:
# training-operator-v1.8.1, training-operator-v1.9.0, mpi-operator-v0.8.0): its unmodified
# manifests are installed, jobs are written as that operator would have left them (running ones
# with their pods, services, and for mpi-operator the launcher Job, Secret and ConfigMap), then
# Unitrain is installed over it and its binary runs against the cluster (the Deployment's pods are
# simulated). Running jobs must finish with the pods they had (same UIDs, none created), finished
# ones stay untouched, the MPIJob CRD serves v1 and v2beta1 and keeps every stored version in
# status.storedVersions (Kubeflow's issue #1930), and the old Deployment is gone, the new one Available.
set -u
source "$(dirname "$0")/../operator/lib.sh"
bin=$1 lc=$2 src=$3 refs=$4 start=$5
# START "fresh": no upstream install; the default install on an empty cluster runs a Kubeflow SDK
# style MPIJob kubeflow.org/v1 and an MPIJob v2beta1.
ref=$refs/$start
[[ $start == fresh || -d $ref ]] || { echo "SKIPPED: $ref is absent (upstream install manifests)"; exit 77; }
require_tools kubectl curl python3
make_workdir
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  [[ -f $work/operator.log ]] && { echo "--- operator log (tail)"; grep -v ' info ' "$work/operator.log" | tail -20; }
  k get pods -A -o custom-columns=NAME:.metadata.name,PHASE:.status.phase,UID:.metadata.uid,LABELS:.metadata.labels 2>&1 | tail -10
  exit 1
}
k() { timeout 60 kubectl --kubeconfig "$work/kubeconfig" --request-timeout=30s "$@"; }

webhook_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$lc" --listen 127.0.0.1:0 --kubeconfig-out "$work/kubeconfig" \
  --service-endpoint "kubeflow/training-operator:443=127.0.0.1:$webhook_port" >"$work/cluster.out" 2>"$work/cluster.log" &
pids+=($!)
wait_until 10 grep -q '^ready ' "$work/cluster.out" || fail "localcluster did not print 'ready <url>'"

# --- the upstream install ---------------------------------------------------------------------
case $start in
  fresh) out= ;;
  training-operator-*) out=$(k apply --server-side -k "$ref/manifests/overlays/standalone" 2>&1) ;;
  mpi-operator-*) out=$(k apply --server-side -f "$ref/mpi-operator.yaml" 2>&1) ;;
  *) fail "unknown starting point $start" ;;
esac
[[ $? == 0 ]] || fail "installing $start: $out"
echo "installed $start"
# training-operator's validating webhooks call its pod, which cannot run here: they are set aside
# while the test writes what that operator would have written, then put back as they were.
hooks=
if [[ $start == training-operator-* ]]; then
  hooks=$(k get validatingwebhookconfiguration validator.training-operator.kubeflow.org -o json) || fail "no upstream webhooks"
  k delete validatingwebhookconfiguration validator.training-operator.kubeflow.org >/dev/null || fail "setting the upstream webhooks aside"
fi

sim() { echo "\"annotations\":{\"sim.unitrain.io/duration\":\"$1\"}"; }
labels() {  # job operator-name replica-type index [role]
  local role=${5:+,\"training.kubeflow.org/job-role\":\"$5\"}
  echo "\"labels\":{\"training.kubeflow.org/job-name\":\"$1\",\"training.kubeflow.org/operator-name\":\"$2\",\"training.kubeflow.org/replica-type\":\"$3\",\"training.kubeflow.org/replica-index\":\"$4\"$role}"
}
owner() {  # apiVersion kind name uid
  echo "\"ownerReferences\":[{\"apiVersion\":\"$1\",\"kind\":\"$2\",\"name\":\"$3\",\"uid\":\"$4\",\"controller\":true,\"blockOwnerDeletion\":true}]"
}
set_status() {  # resource/name status-json
  k patch "$1" --subresource status --type merge -p "{\"status\":$2}" >/dev/null || fail "writing the status of $1"
}
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
cond() { echo "{\"type\":\"$1\",\"status\":\"True\",\"reason\":\"$2\",\"message\":\"$3\",\"lastUpdateTime\":\"$now\",\"lastTransitionTime\":\"$now\"}"; }

if [[ $start == training-operator-* ]]; then
  # A running PyTorchJob: its master and worker pods (20 s more to run) and their services.
  k create -f - >/dev/null <<EOF || fail "creating PyTorchJob running"
{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"running","namespace":"default"},
 "spec":{"pytorchReplicaSpecs":{
   "Master":{"replicas":1,"restartPolicy":"OnFailure","template":{"metadata":{$(sim 20s)},"spec":{"containers":[{"name":"pytorch","image":"example.com/torch:1"}]}}},
   "Worker":{"replicas":1,"restartPolicy":"OnFailure","template":{"metadata":{$(sim 20s)},"spec":{"containers":[{"name":"pytorch","image":"example.com/torch:1"}]}}}}}}
EOF
  uid=$(k get pytorchjob running -o jsonpath='{.metadata.uid}')
  for rt in master worker; do
    role=; [[ $rt == master ]] && role=master
    k create -f - >/dev/null <<EOF || fail "creating pod running-$rt-0"
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"running-$rt-0","namespace":"default",$(sim 20s),
  $(labels running pytorchjob-controller "$rt" 0 $role),$(owner kubeflow.org/v1 PyTorchJob running "$uid")},
 "spec":{"restartPolicy":"OnFailure","containers":[{"name":"pytorch","image":"example.com/torch:1","ports":[{"name":"pytorchjob-port","containerPort":23456}],
   "env":[{"name":"MASTER_ADDR","value":"running-master-0"},{"name":"MASTER_PORT","value":"23456"},{"name":"WORLD_SIZE","value":"2"},{"name":"RANK","value":"$([[ $rt == master ]] && echo 0 || echo 1)"}]}]}}
EOF
    k create -f - >/dev/null <<EOF || fail "creating service running-$rt-0"
{"apiVersion":"v1","kind":"Service","metadata":{"name":"running-$rt-0","namespace":"default",
  $(labels running pytorchjob-controller "$rt" 0 $role),$(owner kubeflow.org/v1 PyTorchJob running "$uid")},
 "spec":{"clusterIP":"None","selector":{"training.kubeflow.org/job-name":"running","training.kubeflow.org/operator-name":"pytorchjob-controller","training.kubeflow.org/replica-type":"$rt","training.kubeflow.org/replica-index":"0"},
   "ports":[{"name":"pytorchjob-port","port":23456}]}}
EOF
  done
  set_status pytorchjob/running "{\"conditions\":[$(cond Created PyTorchJobCreated 'PyTorchJob default/running is created.'),$(cond Running PyTorchJobRunning 'PyTorchJob default/running is running.')],\"replicaStatuses\":{\"Master\":{\"active\":1,\"selector\":\"training.kubeflow.org/job-name=running,training.kubeflow.org/operator-name=pytorchjob-controller,training.kubeflow.org/replica-type=master\"},\"Worker\":{\"active\":1,\"selector\":\"training.kubeflow.org/job-name=running,training.kubeflow.org/operator-name=pytorchjob-controller,training.kubeflow.org/replica-type=worker\"}},\"startTime\":\"$now\"}"

  # A finished TFJob (its pods deleted by cleanPodPolicy Running... kept none).
  k create -f - >/dev/null <<EOF || fail "creating TFJob finished"
{"apiVersion":"kubeflow.org/v1","kind":"TFJob","metadata":{"name":"finished","namespace":"default"},
 "spec":{"tfReplicaSpecs":{"Worker":{"replicas":1,"restartPolicy":"Never","template":{"spec":{"containers":[{"name":"tensorflow","image":"example.com/tf:1"}]}}}}}}
EOF
  set_status tfjob/finished "{\"conditions\":[$(cond Created TFJobCreated created),$(cond Running TFJobRunning running),$(cond Succeeded TFJobSucceeded 'TFJob default/finished successfully completed.')],\"replicaStatuses\":{\"Worker\":{\"succeeded\":1}},\"startTime\":\"$now\",\"completionTime\":\"$now\"}"

  # A running MPIJob kubeflow.org/v1, stored as v1: launcher and worker pods.
  k create -f - >/dev/null <<EOF || fail "creating MPIJob v1 mpi-running"
{"apiVersion":"kubeflow.org/v1","kind":"MPIJob","metadata":{"name":"mpi-running","namespace":"default"},
 "spec":{"slotsPerWorker":1,"runPolicy":{"cleanPodPolicy":"None"},"mpiReplicaSpecs":{
   "Launcher":{"replicas":1,"template":{"metadata":{$(sim 20s)},"spec":{"containers":[{"name":"l","image":"example.com/mpi:1","command":["mpirun","hostname"]}]}}},
   "Worker":{"replicas":1,"template":{"metadata":{$(sim 1h)},"spec":{"containers":[{"name":"w","image":"example.com/mpi:1"}]}}}}}}
EOF
  uid=$(k get mpijobs.v1.kubeflow.org mpi-running -o jsonpath='{.metadata.uid}')
  # training-operator's MPIJob labels: the launcher has role master and no replica index.
  v1_mpi_labels() {
    if [[ $1 == launcher ]]; then
      echo '"labels":{"training.kubeflow.org/job-name":"mpi-running","training.kubeflow.org/operator-name":"mpijob-controller","training.kubeflow.org/replica-type":"launcher","training.kubeflow.org/job-role":"master"}'
    else
      labels mpi-running mpijob-controller worker 0
    fi
  }
  for rt in launcher worker; do
    d=1h; [[ $rt == launcher ]] && d=20s
    k create -f - >/dev/null <<EOF || fail "creating pod mpi-running-$rt"
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"mpi-running-$rt$([[ $rt == worker ]] && echo -0)","namespace":"default",$(sim $d),
  $(v1_mpi_labels $rt),$(owner kubeflow.org/v1 MPIJob mpi-running "$uid")},
 "spec":{"restartPolicy":"Never","containers":[{"name":"$([[ $rt == launcher ]] && echo l || echo w)","image":"example.com/mpi:1"}]}}
EOF
  done
  set_status mpijobs.v1.kubeflow.org/mpi-running "{\"conditions\":[$(cond Created MPIJobCreated created),$(cond Running MPIJobRunning running)],\"replicaStatuses\":{\"Launcher\":{\"active\":1},\"Worker\":{\"active\":1}},\"startTime\":\"$now\"}"
elif [[ $start == mpi-operator-* ]]; then
  # A running MPIJob kubeflow.org/v2beta1 as mpi-operator v0.8 leaves it: worker pod, launcher
  # Job (whose pod the Job controller runs), the hostfile ConfigMap and the SSH Secret.
  k create -f - >/dev/null <<EOF || fail "creating MPIJob v2beta1 mpi-running"
{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"mpi-running","namespace":"default"},
 "spec":{"slotsPerWorker":1,"mpiReplicaSpecs":{
   "Launcher":{"replicas":1,"template":{"metadata":{$(sim 20s)},"spec":{"containers":[{"name":"l","image":"example.com/mpi:1","command":["mpirun","hostname"]}]}}},
   "Worker":{"replicas":1,"template":{"metadata":{$(sim 1h)},"spec":{"containers":[{"name":"w","image":"example.com/mpi:1"}]}}}}}}
EOF
  uid=$(k get mpijobs.v2beta1.kubeflow.org mpi-running -o jsonpath='{.metadata.uid}')
  own=$(owner kubeflow.org/v2beta1 MPIJob mpi-running "$uid")
  k create -f - >/dev/null <<EOF || fail "creating the ConfigMap"
{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"mpi-running-config","namespace":"default","labels":{"app":"mpi-running"},$own},
 "data":{"hostfile":"mpi-running-worker-0.mpi-running.default.svc slots=1\n","discover_hosts.sh":"#!/bin/sh\necho mpi-running-worker-0.mpi-running.default.svc\n"}}
EOF
  k create -f - >/dev/null <<EOF || fail "creating the Secret"
{"apiVersion":"v1","kind":"Secret","metadata":{"name":"mpi-running-ssh","namespace":"default","labels":{"app":"mpi-running"},$own},
 "type":"kubernetes.io/ssh-auth","data":{"ssh-privatekey":"$(printf 'test-key' | base64)","ssh-publickey":"$(printf 'test-pub' | base64)"}}
EOF
  k create -f - >/dev/null <<EOF || fail "creating the workers' Service"
{"apiVersion":"v1","kind":"Service","metadata":{"name":"mpi-running","namespace":"default","labels":{"app":"mpi-running"},$own},
 "spec":{"clusterIP":"None","selector":{"training.kubeflow.org/job-name":"mpi-running","training.kubeflow.org/operator-name":"mpi-operator","training.kubeflow.org/job-role":"worker"}}}
EOF
  k create -f - >/dev/null <<EOF || fail "creating pod mpi-running-worker-0"
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"mpi-running-worker-0","namespace":"default",$(sim 1h),
  $(labels mpi-running mpi-operator worker 0 worker),$own},
 "spec":{"hostname":"mpi-running-worker-0","subdomain":"mpi-running","restartPolicy":"Never","containers":[{"name":"w","image":"example.com/mpi:1"}]}}
EOF
  k create -f - >/dev/null <<EOF || fail "creating the launcher Job"
{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"mpi-running-launcher","namespace":"default",
  "labels":{"training.kubeflow.org/job-name":"mpi-running","training.kubeflow.org/operator-name":"mpi-operator","training.kubeflow.org/job-role":"launcher"},$own},
 "spec":{"backoffLimit":6,"template":{"metadata":{$(sim 20s),"labels":{"training.kubeflow.org/job-name":"mpi-running","training.kubeflow.org/operator-name":"mpi-operator","training.kubeflow.org/job-role":"launcher"}},
   "spec":{"restartPolicy":"OnFailure","containers":[{"name":"l","image":"example.com/mpi:1","command":["mpirun","hostname"]}]}}}}
EOF
  launcher_pod() { k get pods -l job-name=mpi-running-launcher -o jsonpath='{.items[*].metadata.name}'; }
  wait_until 30 test -n "$(launcher_pod)" || fail "the launcher Job made no pod"
  set_status mpijobs.v2beta1.kubeflow.org/mpi-running "{\"conditions\":[$(cond Created MPIJobCreated created),$(cond Running MPIJobRunning running)],\"replicaStatuses\":{\"Launcher\":{\"active\":1},\"Worker\":{\"active\":1}},\"startTime\":\"$now\"}"
fi
if [[ -n $hooks ]]; then
  python3 -c 'import json,sys; d=json.load(sys.stdin); m=d["metadata"]; [m.pop(f, None) for f in ("resourceVersion","uid","creationTimestamp","managedFields")]; print(json.dumps(d))' <<<"$hooks" \
    | k create -f - >/dev/null || fail "putting the upstream webhooks back"
fi
pods_before=$(k get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}={.metadata.uid}{"\n"}{end}' | grep -v -- '-operator-\|training-operator-' | sort)
children() { [[ $start == mpi-operator-* ]] && k get job.batch/mpi-running-launcher secret/mpi-running-ssh configmap/mpi-running-config service/mpi-running -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.uid} {end}'; }
children_before=$(children)
stored_before=$(k get crd mpijobs.kubeflow.org -o jsonpath='{.status.storedVersions}')
finished_before=$( [[ $start == training-operator-* ]] && k get tfjob finished -o jsonpath='{.metadata.resourceVersion} {.status}')
echo "jobs written; MPIJob storedVersions $stored_before; pods:"; echo "$pods_before"

# --- docs/upgrading.md's steps ------------------------------------------------------------------
case $start in
  training-operator-*)
    k -n kubeflow delete deployment training-operator --wait=true >/dev/null || fail "deleting the old Deployment"
    k -n kubeflow delete service training-operator >/dev/null || fail "deleting the old Service"
    # MPIJobs training-operator ran (kubeflow.org/v1, no managedBy) stay with Unitrain's v1 module:
    # without the pin the default install's --mpi-default-version=v2beta1 would give them to v2.
    k annotate mpijobs.v1.kubeflow.org --all -A unitrain.io/managed-by=kubeflow.org/training-operator >/dev/null \
      || fail "pinning the v1 MPIJobs"
    ;;
  mpi-operator-*)
    k -n mpi-operator delete deployment mpi-operator --wait=true >/dev/null || fail "deleting the old Deployment"
    ;;
esac
out=$(k apply --server-side --force-conflicts -k "$src/manifests/overlays/standalone" 2>&1) || fail "installing Unitrain over $start: $out"
echo "Unitrain installed over $start"
# The operator itself runs here out of the cluster with the Deployment's arguments, as its pod
# would (ports and leader election aside).
mapfile -t args < <(k -n kubeflow get deployment training-operator -o jsonpath='{range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}' \
  | grep -v -- '--leader-elect\|--metrics-bind-address\|--health-probe-bind-address\|--webhook-server-port')
"$bin" --kubeconfig "$work/kubeconfig" "${args[@]}" --webhook-server-port "$webhook_port" --webhook-namespace kubeflow \
  --metrics-bind-address 0 --health-probe-bind-address 127.0.0.1:0 >/dev/null 2>"$work/operator.log" &
operator=$!
pids+=($operator)
probes=$(logged_port --health-probe-bind-address "$work/operator.log" "$operator") || fail "the operator did not start"
wait_until 60 curl -sf "http://127.0.0.1:$probes/readyz" -o /dev/null || fail "the operator is not ready within 60 s"

available() { [[ $(k -n kubeflow get deployment training-operator -o jsonpath='{.status.conditions[?(@.type=="Available")].status}') == True ]]; }
wait_until 60 available || fail "the Deployment is not Available: $(k -n kubeflow get deployment training-operator -o jsonpath='{.status}')"
if [[ $start == mpi-operator-* ]]; then
  k -n mpi-operator get deployment mpi-operator >/dev/null 2>&1 && fail "the mpi-operator Deployment is still there"
else
  sel=$(k -n kubeflow get deployment training-operator -o jsonpath='{.spec.selector.matchLabels}')
  [[ $sel == *app.kubernetes.io/name* && $sel != *control-plane* ]] || fail "the Deployment's selector is $sel"
  sel=$(k -n kubeflow get service training-operator -o jsonpath='{.spec.selector}')
  [[ $sel != *control-plane* ]] || fail "the Service still selects the old pods: $sel"
fi

succeeded() { [[ $(k get "$1" -o jsonpath='{.status.conditions[?(@.type=="Succeeded")].status}') == True ]]; }
if [[ $start == fresh ]]; then
  # What the Kubeflow SDK's TrainingClient(job_kind="MPIJob") sends: kubeflow.org/v1 through the
  # custom objects API.
  /usr/bin/python3 - "$work/kubeconfig" <<'PY' || fail "the SDK-style v1 MPIJob was refused"
import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
pod = lambda c, cmd: {"metadata": {"annotations": {"sim.unitrain.io/duration": "2s"}},
                      "spec": {"containers": [{"name": c, "image": "docker.io/kubeflow/mpi-horovod-mnist", "command": cmd}]}}
client.CustomObjectsApi().create_namespaced_custom_object("kubeflow.org", "v1", "default", "mpijobs", {
    "apiVersion": "kubeflow.org/v1", "kind": "MPIJob", "metadata": {"name": "sdk-v1"},
    "spec": {"slotsPerWorker": 1, "runPolicy": {"cleanPodPolicy": "None"},
             "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": pod("mpi", ["mpirun", "python", "mnist.py"])},
                                 "Worker": {"replicas": 2, "template": pod("mpi", None)}}}})
PY
  k create -f - >/dev/null <<EOF || fail "creating MPIJob v2beta1 v2"
{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"v2","namespace":"default"},
 "spec":{"slotsPerWorker":1,"mpiReplicaSpecs":{
   "Launcher":{"replicas":1,"template":{"metadata":{$(sim 2s)},"spec":{"containers":[{"name":"l","image":"example.com/mpi:1","command":["mpirun","hostname"]}]}}},
   "Worker":{"replicas":1,"template":{"metadata":{$(sim 1h)},"spec":{"containers":[{"name":"w","image":"example.com/mpi:1"}]}}}}}}
EOF
  wait_until 90 succeeded mpijobs.v1.kubeflow.org/sdk-v1 || fail "MPIJob v1 sdk-v1 did not succeed: $(k get mpijobs.v1.kubeflow.org sdk-v1 -o jsonpath='{.status}')"
  wait_until 90 succeeded mpijobs.v2beta1.kubeflow.org/v2 || fail "MPIJob v2beta1 v2 did not succeed: $(k get mpijobs.v2beta1.kubeflow.org v2 -o jsonpath='{.status}')"
  owners=$(k get mpijobs.v2beta1.kubeflow.org -o jsonpath='{range .items[*]}{.metadata.name}={.spec.runPolicy.managedBy} {end}')
  [[ $owners == "sdk-v1=kubeflow.org/training-operator v2=kubeflow.org/mpi-operator " ]] \
    || fail "the defaulting webhook did not route by version: $owners"
  k get pod sdk-v1-launcher >/dev/null || fail "sdk-v1 has no v1 launcher pod"
  k get job.batch v2-launcher >/dev/null || fail "v2 has no launcher Job"
  echo "MPIJob v1 (SDK style) and v2beta1 succeeded under the default install: $owners"
elif [[ $start == training-operator-* ]]; then
  wait_until 90 succeeded pytorchjob/running || fail "PyTorchJob running did not succeed: $(k get pytorchjob running -o jsonpath='{.status}')"
  wait_until 90 succeeded mpijobs.v1.kubeflow.org/mpi-running || fail "MPIJob v1 mpi-running did not succeed: $(k get mpijobs.v1.kubeflow.org mpi-running -o jsonpath='{.status}')"
  after=$(k get tfjob finished -o jsonpath='{.metadata.resourceVersion} {.status}')
  [[ $after == "$finished_before" ]] || fail "the finished TFJob changed: $finished_before -> $after"
  k get pods -l training.kubeflow.org/job-name=finished -o name | grep -q . && fail "the finished TFJob got pods"
else
  wait_until 90 succeeded mpijobs.v2beta1.kubeflow.org/mpi-running || fail "MPIJob v2beta1 mpi-running did not succeed: $(k get mpijobs.v2beta1.kubeflow.org mpi-running -o jsonpath='{.status}')"
fi
pods_after=$(k get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}={.metadata.uid}{"\n"}{end}' | grep -v -- '-operator-\|training-operator-' | sort)
[[ $start == fresh || $pods_after == "$pods_before" ]] || fail "pods re-created or added: before
$pods_before
after
$pods_after"
children_after=$(children)
[[ $children_after == "$children_before" ]] || fail "the launcher Job, Secret, ConfigMap or Service were replaced: $children_before -> $children_after"
echo "running jobs finished with the pods they had${children_before:+ and the objects: $children_before}"

served=$(k get crd mpijobs.kubeflow.org -o jsonpath='{.spec.versions[?(@.served==true)].name}')
[[ $served == "v2beta1 v1" ]] || fail "mpijobs serves '$served'"
stored=$(k get crd mpijobs.kubeflow.org -o jsonpath='{.status.storedVersions}')
for v in $(python3 -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])))' "${stored_before:-[]}"); do
  [[ $stored == *"\"$v\""* ]] || fail "storedVersions lost $v: $stored_before -> $stored"
done
# The old operator's MPIJob reads through both versions (conversion of what it stored).
if [[ $start != fresh ]]; then
  k get mpijobs.v1.kubeflow.org mpi-running >/dev/null || fail "mpi-running does not read as v1"
  k get mpijobs.v2beta1.kubeflow.org mpi-running >/dev/null || fail "mpi-running does not read as v2beta1"
fi
echo "MPIJob CRD serves $served, storedVersions $stored_before -> $stored"
