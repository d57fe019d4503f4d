#!/usr/bin/env bash
# kubectl v1.32 against build/bin/localcluster: what kube-apiserver refuses is refused with its
# words. Strict and Warn field validation of a PyTorchJob (the repository's CRD) and of built-in
# kinds (a Pod, a Deployment patch), CEL transition
# rules (schedulingPolicy.queue is immutable), invalid labels, a body of another kind, and
# server-side apply field ownership: managedFields, conflicts, --force-conflicts.
# Usage: schema_e2e.sh LOCALCLUSTER_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
source "$here/lib.sh"
bin=${1:?usage: schema_e2e.sh LOCALCLUSTER_BINARY}
require_tools kubectl
make_workdir
cleanup() {
  local rc=$?
  stop_cluster || rc=1
  if [[ $rc -ne 0 ]]; then echo "--- localcluster stderr (tail)"; tail -n 30 "$work/stderr" 2>/dev/null || true; fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
start_cluster "$bin" "$work" --controllers none

# expect_failure PATTERN ARGS...: kubectl ARGS must fail and print PATTERN (a fixed string).
expect_failure() {
  local pattern=$1 out
  shift
  if out=$(timeout 30 kubectl --request-timeout=20s "$@" 2>&1); then die "kubectl $* succeeded: $out"; fi
  [[ $out == *"$pattern"* ]] || die "kubectl $* said: $out (expected: $pattern)"
}

job() {  # job NAME QUEUE [EXTRA_RUN_POLICY_LINE]
  cat <<YAML
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: $1
  namespace: default
spec:
  runPolicy:
    schedulingPolicy:
      queue: $2
${3:-}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/library/python:3.11-slim
YAML
}

step "the repository's PyTorchJob CRD"
k apply -f "$repo/manifests/crds/kubeflow.org_pytorchjobs.yaml" >/dev/null
k wait --for=condition=Established crd/pytorchjobs.kubeflow.org --timeout=20s >/dev/null

step "fieldValidation=Strict refuses an unknown field with kube-apiserver's text"
job typo q1 "    cleanPodPolicyy: All" >"$work/typo.yaml"
expect_failure 'strict decoding error: unknown field "spec.runPolicy.cleanPodPolicyy"' \
  create --validate=strict -f "$work/typo.yaml"
if k get pytorchjob typo -o name 2>/dev/null; then die "the refused job was stored"; fi

step "fieldValidation=Warn stores the job and prints the warning"
out=$(k create --validate=warn -f "$work/typo.yaml" 2>&1)
[[ $out == *'Warning: unknown field "spec.runPolicy.cleanPodPolicyy"'* ]] || die "no warning: $out"
[[ -z $(k get pytorchjob typo -o jsonpath='{.spec.runPolicy.cleanPodPolicyy}') ]] || die "the unknown field was not pruned"

step "unknown fields of a built-in kind: Strict refuses, Warn warns"
cat >"$work/pod-typo.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: typo
  namespace: default
spec:
  containers:
    - name: main
      image: docker.io/library/busybox:1.36
      imagePullPolicyy: Never
      ports:
        - containerPort: 80
          hostPrt: 8080
YAML
expect_failure 'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.containers[0].imagePullPolicyy", unknown field "spec.containers[0].ports[0].hostPrt"' \
  create --validate=strict -f "$work/pod-typo.yaml"
if k get pod typo -o name 2>/dev/null; then die "the refused pod was stored"; fi
out=$(k create --validate=warn -f "$work/pod-typo.yaml" 2>&1) || die "--validate=warn refused the pod: $out"
[[ $out == *'Warning: unknown field "spec.containers[0].imagePullPolicyy"'* ]] || die "no warning: $out"
[[ $out == *'Warning: unknown field "spec.containers[0].ports[0].hostPrt"'* ]] || die "no warning for ports: $out"
k delete pod typo --wait=false >/dev/null
# A strategic merge patch of a Deployment is checked as the Deployment it describes (kubectl
# patch sends no fieldValidation: the default, Warn).
k create deployment web --image=docker.io/library/nginx:1.27 >/dev/null
out=$(k patch deployment web --type=strategic -p '{"spec":{"strategy":{"rollingUpdate":{"maxSurje":1}}}}' 2>&1) ||
  die "patch refused: $out"
[[ $out == *'Warning: unknown field "spec.strategy.rollingUpdate.maxSurje"'* ]] || die "no warning for the patch: $out"
out=$(k patch deployment web --type=strategic -p '{"spec":{"strategy":{"rollingUpdate":{"maxSurge":1}}}}' 2>&1)
[[ $out != *Warning* ]] || die "a declared field warned: $out"

step "CEL transition rule: schedulingPolicy.queue is immutable"
job j1 q1 | k apply -f - >/dev/null
expect_failure 'The PyTorchJob "j1" is invalid: spec.runPolicy.schedulingPolicy.queue: Invalid value: "string": spec.runPolicy.schedulingPolicy.queue is immutable' \
  patch pytorchjob j1 --type=merge -p '{"spec":{"runPolicy":{"schedulingPolicy":{"queue":"q2"}}}}'
k get pytorchjob j1 -o jsonpath='{.spec.runPolicy.schedulingPolicy.queue}' | grep -qx q1 || die "queue changed"
# Other fields still change.
k patch pytorchjob j1 --type=merge -p '{"spec":{"runPolicy":{"backoffLimit":3}}}' >/dev/null

step "invalid label keys and values are refused"
cat >"$work/badlabel.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: badlabel
  namespace: default
  labels:
    app: "-starts-with-dash"
YAML
expect_failure 'The ConfigMap "badlabel" is invalid: metadata.labels: Invalid value: "-starts-with-dash": a valid label must be an empty string' \
  apply -f "$work/badlabel.yaml"
expect_failure 'metadata.labels: Invalid value: "bad_prefix/app": prefix part a lowercase RFC 1123 subdomain' \
  patch pytorchjob j1 --type=merge -p '{"metadata":{"labels":{"bad_prefix/app":"x"}}}'

step "a Pod body posted to configmaps is refused"
printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}' >"$work/pod.json"
expect_failure 'Pod in version "v1" cannot be handled as a ConfigMap' \
  create --raw /api/v1/namespaces/default/configmaps -f "$work/pod.json"

step "server-side apply: managedFields, conflicts, --force-conflicts"
cat >"$work/cm.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata:
  name: owned
  namespace: default
data:
  key: one
  other: two
YAML
k apply --server-side -f "$work/cm.yaml" >/dev/null
k get cm owned -o jsonpath='{.metadata.managedFields[0].manager}/{.metadata.managedFields[0].operation}' |
  grep -qx 'kubectl/Apply' || die "no Apply managedFields entry: $(k get cm owned -o json)"
sed 's/key: one/key: changed/' "$work/cm.yaml" >"$work/cm2.yaml"
expect_failure 'Apply failed with 1 conflict: conflict with "kubectl": .data.key' \
  apply --server-side --field-manager=other -f "$work/cm2.yaml"
k get cm owned -o jsonpath='{.data.key}' | grep -qx one || die "the conflicting apply changed data"
k apply --server-side --field-manager=other --force-conflicts -f "$work/cm2.yaml" >/dev/null
k get cm owned -o jsonpath='{.data.key}' | grep -qx changed || die "--force-conflicts did not apply"
managers=$(k get cm owned -o jsonpath='{range .metadata.managedFields[*]}{.manager}={.fieldsV1.f:data}{"\n"}{end}')
[[ $managers == *'other={"f:key":{},"f:other":{}}'* ]] || die "other does not own .data.key: $managers"
[[ $managers == *'kubectl={"f:other":{}}'* ]] || die "kubectl still owns .data.key: $managers"
# An Update (kubectl edit-like merge patch) records its own manager.
k patch cm owned --type=merge -p '{"data":{"third":"3"}}' >/dev/null
k get cm owned -o jsonpath='{.metadata.managedFields[*].manager}' | grep -q 'kubectl-patch' ||
  die "the patch's manager is missing: $(k get cm owned -o jsonpath='{.metadata.managedFields}')"
echo PASS
