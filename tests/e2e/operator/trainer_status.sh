#!/usr/bin/env bash
# TrainJob with --feature-gates TrainJobStatus=true: the trainer pods' env and projected token
# volume, <trainjob>-tls-config with the webhook CA; the status server (HTTPS, the webhook
# certificate) writes status.trainerStatus for a token `kubectl create token` issued with the
# TrainJob's audience, and answers 403 (wrong audience, another namespace's account, no token),
# 422 (bad JSON, over 64 KiB, the CRD's CEL rule), 404 (unknown TrainJob, unknown path).
# A Flux TrainJob gets its entrypoint ConfigMap, CURVE Secret and installer init container.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 src=$2
require_tools kubectl curl python3
make_workdir
"$bin" --embedded-cluster --enable-scheme trainjob,jobset --kubeconfig-out "$work/kubeconfig" --metrics-bind-address 0 \
  --health-probe-bind-address 0 --feature-gates TrainJobStatus=true --status-server-port 0 \
  --crd-dir "$src/manifests/crds" >"$work/stdout" 2>"$work/stderr" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- operator stderr (tail)"; tail -30 "$work/stderr"; exit 1; }

for _ in $(seq 150); do grep -q '^kubeconfig ' "$work/stdout" && break; sleep 0.2; done
kc=$(sed -n 's/^kubeconfig //p' "$work/stdout")
[[ -n $kc && -f $kc ]] || fail "no 'kubeconfig <path>' line on stdout"
port=$(logged_port --status-server-port "$work/stderr" "$pid")
[[ -n $port ]] || fail "no '--status-server-port serving on port' line in the log"
k() { timeout 30 kubectl --kubeconfig "$kc" --request-timeout=20s "$@"; }

k apply --server-side -k "$src/manifests/runtimes" >/dev/null || fail "installing manifests/runtimes"
k create namespace other >/dev/null || fail "creating namespace other"
k apply -f - >/dev/null <<'YAML' || fail "kubectl apply of the TrainJob"
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: st, namespace: default}
spec:
  runtimeRef: {name: torch-distributed}
  trainer: {numNodes: 1, command: [torchrun, train.py]}
  runtimePatches:
    - manager: example.unitrain.io/demo
      trainingRuntimeSpec:
        template:
          spec:
            replicatedJobs:
              - name: node
                template: {spec: {template: {metadata: {annotations: {sim.unitrain.io/duration: 300s}}}}}
YAML

has_jobset() { k get jobset st -o name >/dev/null 2>&1; }
wait_until 60 has_jobset || fail "no JobSet st within 60 s"
node_env() { k get jobset st -o jsonpath="{.spec.replicatedJobs[0].template.spec.template.spec.containers[0].env[?(@.name==\"$1\")].value}"; }
# The configured port (0 here: the kernel picks the one served, for tests side by side).
[[ $(node_env KUBEFLOW_TRAINER_SERVER_URL) == "https://training-operator.kubeflow.svc:0/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/st/status" ]] \
  || fail "KUBEFLOW_TRAINER_SERVER_URL is '$(node_env KUBEFLOW_TRAINER_SERVER_URL)'"
[[ $(node_env KUBEFLOW_TRAINER_SERVER_TOKEN) == /var/run/secrets/kubeflow/trainer/token ]] || fail "KUBEFLOW_TRAINER_SERVER_TOKEN"
audience=$(k get jobset st -o jsonpath='{.spec.replicatedJobs[0].template.spec.template.spec.volumes[?(@.name=="kubeflow-trainer-token")].projected.sources[0].serviceAccountToken.audience}')
[[ $audience == trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/st/status ]] || fail "token audience '$audience'"
k get configmap st-tls-config -o jsonpath='{.data.ca\.crt}' >"$work/ca.pem" || fail "no ConfigMap st-tls-config"
k get secret -n kubeflow training-operator-webhook-cert -o jsonpath='{.data.ca\.crt}' | base64 -d | cmp -s - "$work/ca.pem" \
  || fail "st-tls-config's ca.crt differs from the webhook Secret's"
echo "trainer pods get the status server's URL, CA and a token for $audience"

k create serviceaccount trainer >/dev/null || fail "creating serviceaccount trainer"
k create serviceaccount trainer -n other >/dev/null || fail "creating serviceaccount other/trainer"
# create_token NAMESPACE AUDIENCE: a TokenRequest for NAMESPACE/trainer, as a projected volume
# gets it. (`kubectl create token` sends it as protobuf, which the local cluster does not decode for
# authentication.k8s.io: the JSON form goes through --raw.)
create_token() {
  echo "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\",\"spec\":{\"audiences\":[\"$2\"],\"expirationSeconds\":3600}}" >"$work/tokenrequest.json"
  k create --raw "/api/v1/namespaces/$1/serviceaccounts/trainer/token" -f "$work/tokenrequest.json" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["status"]["token"])'
}
token=$(create_token default "$audience") && [[ -n $token ]] || fail "TokenRequest"
wrong_audience=$(create_token default other-audience) || fail "TokenRequest (other audience)"
other_ns=$(create_token other "$audience") || fail "TokenRequest in namespace other"
nope_token=$(create_token default trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/nope/status) \
  || fail "TokenRequest for nope"

# post PATH TOKEN BODY-FILE: "<code> <body>"
post() {
  local auth=()
  [[ -n $2 ]] && auth=(-H "Authorization: Bearer $2")
  curl -sS --max-time 10 --cacert "$work/ca.pem" -o "$work/reply" -w '%{http_code}' "${auth[@]}" \
    -H 'Content-Type: application/json' --data-binary "@$3" "https://127.0.0.1:$port$1"
  echo " $(cat "$work/reply")"
}
path=/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/st/status
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
echo "{\"trainerStatus\":{\"progressPercentage\":42,\"estimatedRemainingSeconds\":60,\"metrics\":[{\"name\":\"loss\",\"value\":\"0.25\"}],\"lastUpdatedTime\":\"$now\"}}" >"$work/good.json"
out=$(post "$path" "$token" "$work/good.json")
[[ $out == 200* ]] || fail "valid report: $out"
[[ $(k get trainjob st -o jsonpath='{.status.trainerStatus.progressPercentage}/{.status.trainerStatus.metrics[0].value}') == 42/0.25 ]] \
  || fail "trainerStatus not written: $(k get trainjob st -o jsonpath='{.status}')"
managers=$(k get trainjob st --show-managed-fields -o jsonpath='{.metadata.managedFields[*].manager}')
[[ $managers == *trainer-status* ]] || fail "no managedFields entry of trainer-status: $managers"
echo "a valid report writes status.trainerStatus (manager trainer-status)"

expect() {  # expect WHAT CODE MESSAGE PATH TOKEN BODY-FILE
  local out
  out=$(post "$4" "$5" "$6")
  [[ $out == "$2 "* ]] || fail "$1: expected $2, got $out"
  python3 - "$2" "$3" "${out#* }" <<'PY' || fail "$1: the body is not the Status expected: ${out#* }"
import json, sys
code, message, body = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["status"] == "Failure", body
assert body["code"] == code, body
assert message in body["message"], body
PY
  echo "$1: $2 ($3)"
}
expect "wrong audience" 403 Forbidden "$path" "$wrong_audience" "$work/good.json"
expect "another namespace's account" 403 Forbidden "$path" "$other_ns" "$work/good.json"
expect "no token" 403 Forbidden "$path" "" "$work/good.json"
echo '{"trainerStatus": {"progressPercentage": "half"}' >"$work/bad.json"
expect "bad JSON" 422 "Invalid payload" "$path" "$token" "$work/bad.json"
python3 -c 'import json; print(json.dumps({"trainerStatus": {"metrics": [{"name": "m%d" % i, "value": "x" * 60} for i in range(1200)]}}))' >"$work/big.json"
expect "over 64 KiB" 422 "Invalid payload" "$path" "$token" "$work/big.json"
echo '{"trainerStatus": {"progressPercentage": 50}}' >"$work/no_time.json"
expect "no lastUpdatedTime" 422 "lastUpdatedTime is required when trainerStatus is present" "$path" "$token" "$work/no_time.json"
expect "unknown TrainJob" 404 "Train job not found" /apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/nope/status \
  "$nope_token" "$work/good.json"
expect "unknown path" 404 "Not found" /apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/st "$token" "$work/good.json"
[[ $(k get trainjob st -o jsonpath='{.status.trainerStatus.progressPercentage}') == 42 ]] || fail "a refused report changed trainerStatus"

# Flux: the entrypoint scripts, the CURVE Secret and the installer init container.
k apply -f - >/dev/null <<'YAML' || fail "kubectl apply of the Flux runtime and TrainJob"
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: flux-demo}
spec:
  mlPolicy: {numNodes: 1, flux: {numProcPerNode: 1}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              template:
                spec:
                  containers: [{name: node, image: ghcr.io/converged-computing/metric-lammps:latest}]
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: fx, namespace: default}
spec:
  runtimeRef: {name: flux-demo}
  trainer: {numNodes: 2, command: [lmp, -in, in.reaxff.hns]}
YAML
has_flux() { k get configmap fx-flux-entrypoint -o name >/dev/null 2>&1 && k get jobset fx -o name >/dev/null 2>&1; }
wait_until 60 has_flux || fail "no fx-flux-entrypoint ConfigMap or JobSet fx within 60 s"
k get configmap fx-flux-entrypoint -o jsonpath='{.data.entrypoint\.sh}' | grep -q 'fx-node-0-\[0-1\]' || fail "hostlist in entrypoint.sh"
k get secret fx-flux-curve -o jsonpath='{.data.curve\.cert}' | base64 -d | grep -q 'secret-key = ' || fail "no CURVE certificate"
[[ $(k get jobset fx -o jsonpath='{.spec.replicatedJobs[0].template.spec.template.spec.initContainers[0].name}') == flux-installer ]] \
  || fail "no flux-installer init container"
[[ $(k get jobset fx -o jsonpath='{.spec.replicatedJobs[0].template.spec.template.spec.containers[0].command[2]}') == "lmp -in in.reaxff.hns" ]] \
  || fail "command not rewritten: $(k get jobset fx -o jsonpath='{.spec.replicatedJobs[0].template.spec.template.spec.containers[0].command}')"
echo "Flux TrainJob: entrypoint ConfigMap, CURVE Secret, installer, command rewritten"
