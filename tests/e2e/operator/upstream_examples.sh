#!/usr/bin/env bash
# Kubeflow's own example jobs (TFJob, MXJob, XGBoostJob, PaddleJob, PyTorchJob at v1.8.1), applied
# unchanged with kubectl to the operator's embedded cluster, produce the pods, services and env
# of training-operator-v1.md §3–4 and run to Succeeded. The examples are read from the shared
# reference folder next to the checkout; without it the test reports itself skipped (77).
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 src=$2 examples=$3
if [[ ! -d $examples ]]; then
  echo "SKIPPED: upstream examples not found at $examples (they live outside the repository)"
  exit 77
fi
require_tools kubectl
echo "running against the upstream examples in $examples"
make_workdir
"$bin" --embedded-cluster --kubeconfig-out "$work/kubeconfig" --metrics-bind-address 0 \
  --health-probe-bind-address 0 --crd-dir "$src/manifests/crds" >"$work/stdout" 2>"$work/stderr" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fails=0
fatal() { echo "FAIL: $*"; echo "--- operator stderr (tail)"; tail -30 "$work/stderr"; exit 1; }
for _ in $(seq 150); do grep -q '^kubeconfig ' "$work/stdout" && break; sleep 0.2; done
kc=$(sed -n 's/^kubeconfig //p' "$work/stdout")
[[ -n $kc && -f $kc ]] || fatal "no 'kubeconfig <path>' line on stdout"
k() { timeout 30 kubectl --kubeconfig "$kc" --request-timeout=20s "$@"; }

# expect WHAT GOT WANT
expect() {
  if [[ $2 == "$3" ]]; then echo "ok: $1"
  else echo "FAIL: $1"; echo "  got:  $2"; echo "  want: $3"; fails=$((fails+1)); fi
}
# names KIND NS JOB: sorted names of the job's pods or services, space separated.
names() {
  k get "$1" -n "$2" -l "training.kubeflow.org/job-name=$3" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' |
    sort | tr '\n' ' '
}
# env NS POD: "NAME=value " per env entry of the first container; downward API as "NAME<-path ".
env_of() {
  k get pod -n "$1" "$2" -o jsonpath='{range .spec.containers[0].env[*]}{.name}{"|"}{.value}{"|"}{.valueFrom.fieldRef.fieldPath}{"\n"}{end}' |
    while IFS='|' read -r n v f; do if [[ -n $f ]]; then printf '%s<-%s ' "$n" "$f"; else printf '%s=%s ' "$n" "$v"; fi; done
}
env_var() { k get pod -n "$1" "$2" -o jsonpath="{.spec.containers[0].env[?(@.name==\"$3\")].value}"; }
label() { k get pod -n "$1" "$2" -o jsonpath="{.metadata.labels.training\.kubeflow\.org/$3}"; }
svc_ports() { k get svc -n "$1" "$2" -o jsonpath='{.spec.clusterIP}{range .spec.ports[*]}{" "}{.name}:{.port}{end}'; }
# wait_for KIND NS NAME: the job's last condition becomes Succeeded (or Failed: reported).
wait_for() {
  local phase= start=$SECONDS
  while (( SECONDS - start < 90 )); do
    phase=$(k get "$1" -n "$2" "$3" -o jsonpath='{.status.conditions[-1:].type}' 2>/dev/null)
    [[ $phase == Succeeded || $phase == Failed ]] && break
    sleep 0.5
  done
  expect "$1 $3 finishes Succeeded" "$phase" Succeeded
}
# wait_pods NS JOB N: N pods of the job exist.
wait_pods() {
  for _ in $(seq 150); do [[ $(names pods "$1" "$2" | wc -w) -ge $3 ]] && return; sleep 0.2; done
}

# `kubectl create namespace` sends protobuf, which the local cluster does not speak; apply sends JSON.
printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: kubeflow}\n' | k apply -f - >/dev/null || fatal "create namespace kubeflow"

echo "--- TFJob tensorflow/tf_job_mnist.yaml"
k apply -f "$examples/tensorflow/tf_job_mnist.yaml" >/dev/null || fatal "apply tf_job_mnist.yaml"
j=dist-mnist-for-e2e-test
wait_pods default $j 6
expect "TFJob pods" "$(names pods default $j)" "$j-ps-0 $j-ps-1 $j-worker-0 $j-worker-1 $j-worker-2 $j-worker-3 "
expect "TFJob services" "$(names svc default $j)" "$j-ps-0 $j-ps-1 $j-worker-0 $j-worker-1 $j-worker-2 $j-worker-3 "
expect "TFJob service ports" "$(svc_ports default $j-ps-1)" "None tfjob-port:2222"
cluster="{\"ps\":[\"$j-ps-0.default.svc:2222\",\"$j-ps-1.default.svc:2222\"],\"worker\":[\"$j-worker-0.default.svc:2222\",\"$j-worker-1.default.svc:2222\",\"$j-worker-2.default.svc:2222\",\"$j-worker-3.default.svc:2222\"]}"
expect "TF_CONFIG of worker 3" "$(env_var default $j-worker-3 TF_CONFIG)" \
  "{\"cluster\":$cluster,\"task\":{\"type\":\"worker\",\"index\":3},\"environment\":\"cloud\"}"
expect "TF_CONFIG of ps 1" "$(env_var default $j-ps-1 TF_CONFIG)" \
  "{\"cluster\":$cluster,\"task\":{\"type\":\"ps\",\"index\":1},\"environment\":\"cloud\"}"
expect "TFJob worker 0 is job-role master" "$(label default $j-worker-0 job-role)" master
expect "TFJob ps 0 has no job-role" "$(label default $j-ps-0 job-role)" ""
expect "TFJob pod restartPolicy" "$(k get pod $j-worker-1 -o jsonpath='{.spec.restartPolicy}')" Never
wait_for tfjob default $j

echo "--- MXJob mxnet/mxjob_dist_v1.yaml"
k apply -f "$examples/mxnet/mxjob_dist_v1.yaml" >/dev/null || fatal "apply mxjob_dist_v1.yaml"
j=mxnet-job
wait_pods default $j 3
expect "MXJob pods" "$(names pods default $j)" "$j-scheduler-0 $j-server-0 $j-worker-0 "
expect "MXJob services" "$(names svc default $j)" "$j-scheduler-0 $j-server-0 $j-worker-0 "
expect "MXJob service ports" "$(svc_ports default $j-scheduler-0)" "None mxjob-port:9991"
mx="{\"cluster\":{\"scheduler\":[{\"url\":\"$j-scheduler-0\",\"port\":9991}],\"server\":[{\"url\":\"$j-server-0\",\"port\":9991}],\"worker\":[{\"url\":\"$j-worker-0\",\"port\":9991}]},\"labels\":{\"scheduler\":\"\",\"server\":\"\",\"worker\":\"\"}"
expect "MXJob worker env" "$(env_of default $j-worker-0)" \
  "MX_CONFIG=$mx,\"task\":{\"type\":\"worker\",\"index\":0}} DMLC_PS_ROOT_PORT=9991 DMLC_PS_ROOT_URI=$j-scheduler-0 DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=1 DMLC_ROLE=worker DMLC_USE_KUBERNETES=1 DMLC_WORKER_ID=0 "
expect "MXJob scheduler env" "$(env_of default $j-scheduler-0)" \
  "MX_CONFIG=$mx,\"task\":{\"type\":\"scheduler\",\"index\":0}} DMLC_PS_ROOT_PORT=9991 DMLC_PS_ROOT_URI=$j-scheduler-0 DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=1 DMLC_ROLE=scheduler DMLC_USE_KUBERNETES=1 "
expect "MXJob server is job-role master" "$(label default $j-server-0 job-role)" master
wait_for mxjob default $j

echo "--- XGBoostJob xgboost/xgboostjob_v1_rabit_test.yaml"
k apply -f "$examples/xgboost/xgboostjob_v1_rabit_test.yaml" >/dev/null || fatal "apply xgboostjob_v1_rabit_test.yaml"
j=xgboost-dist-test
wait_pods default $j 3
expect "XGBoostJob pods" "$(names pods default $j)" "$j-master-0 $j-worker-0 $j-worker-1 "
expect "XGBoostJob services" "$(names svc default $j)" "$j-master-0 $j-worker-0 $j-worker-1 "
expect "XGBoostJob service ports" "$(svc_ports default $j-master-0)" "None xgboostjob-port:9991"
expect "XGBoostJob master env" "$(env_of default $j-master-0)" \
  "MASTER_PORT=9991 MASTER_ADDR=$j-master-0 WORLD_SIZE=3 RANK=0 PYTHONUNBUFFERED=1 WORKER_PORT=9991 WORKER_ADDRS=$j-worker-0,$j-worker-1 "
expect "XGBoostJob worker 1 env" "$(env_of default $j-worker-1)" \
  "MASTER_PORT=9991 MASTER_ADDR=$j-master-0 WORLD_SIZE=3 RANK=2 PYTHONUNBUFFERED=1 WORKER_PORT=9991 WORKER_ADDRS=$j-worker-0,$j-worker-1 "
expect "XGBoostJob master is job-role master" "$(label default $j-master-0 job-role)" master
wait_for xgboostjob default $j

echo "--- PaddleJob paddlepaddle/simple-cpu.yaml (namespace kubeflow)"
k apply -f "$examples/paddlepaddle/simple-cpu.yaml" >/dev/null || fatal "apply simple-cpu.yaml"
j=paddle-simple-cpu
wait_pods kubeflow $j 2
expect "PaddleJob pods" "$(names pods kubeflow $j)" "$j-worker-0 $j-worker-1 "
expect "PaddleJob services" "$(names svc kubeflow $j)" "$j-worker-0 $j-worker-1 "
expect "PaddleJob service ports" "$(svc_ports kubeflow $j-worker-0)" "None master:37777"
expect "PaddleJob worker 0 env" "$(env_of kubeflow $j-worker-0)" \
  "PYTHONUNBUFFERED=1 PADDLE_JOB_ID=$j PADDLE_NNODES=2 POD_IP_DUMMY<-status.podIP PADDLE_MASTER=\$(POD_IP_DUMMY):37777 "
expect "PaddleJob worker 1 env" "$(env_of kubeflow $j-worker-1)" \
  "PYTHONUNBUFFERED=1 PADDLE_JOB_ID=$j PADDLE_NNODES=2 PADDLE_MASTER=$j-worker-0:37777 "
expect "PaddleJob pod restartPolicy" "$(k get pod -n kubeflow $j-worker-0 -o jsonpath='{.spec.restartPolicy}')" OnFailure
wait_for paddlejob kubeflow $j
expect "PaddleJob Worker selector" "$(k get paddlejob -n kubeflow $j -o jsonpath='{.status.replicaStatuses.Worker.selector}')" \
  "training.kubeflow.org/job-name=$j,training.kubeflow.org/operator-name=paddlejob-controller,training.kubeflow.org/replica-type=worker"

echo "--- PyTorchJob pytorch/pytorch_job_sendrecv.yaml"
k apply -f "$examples/pytorch/pytorch_job_sendrecv.yaml" >/dev/null || fatal "apply pytorch_job_sendrecv.yaml"
j=pytorch-dist-basic-sendrecv
wait_pods default $j 4
expect "PyTorchJob pods" "$(names pods default $j)" "$j-master-0 $j-worker-0 $j-worker-1 $j-worker-2 "
expect "PyTorchJob services" "$(names svc default $j)" "$j-master-0 $j-worker-0 $j-worker-1 $j-worker-2 "
expect "PyTorchJob service ports" "$(svc_ports default $j-master-0)" "None pytorchjob-port:23456"
expect "PyTorchJob worker 2 env" "$(env_of default $j-worker-2)" \
  "PYTHONUNBUFFERED=1 MASTER_PORT=23456 PET_MASTER_PORT=23456 MASTER_ADDR=$j-master-0 PET_MASTER_ADDR=$j-master-0 WORLD_SIZE=4 RANK=3 PET_NODE_RANK=3 PET_NPROC_PER_NODE=auto PET_NNODES=4 "
expect "PyTorchJob worker init container" \
  "$(k get pod $j-worker-0 -o jsonpath='{.spec.initContainers[0].name} {.spec.initContainers[0].image}')" "init-pytorch alpine:3.10"
expect "PyTorchJob master has no init container" "$(k get pod $j-master-0 -o jsonpath='{.spec.initContainers}')" ""
expect "PyTorchJob master is job-role master" "$(label default $j-master-0 job-role)" master
wait_for pytorchjob default $j

echo "$fails failure(s)"
(( fails == 0 )) || { echo "--- operator stderr (tail)"; tail -30 "$work/stderr"; exit 1; }
