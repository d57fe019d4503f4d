#!/usr/bin/env bash
# kubectl v1.32 against build/bin/localcluster, on the wire: the typed `kubectl create` generators
# and `kubectl create token` (which send protobuf bodies), OpenAPI v2 and v3 (`kubectl explain` of a
# CRD field and of built-in kinds' fields, kubectl's own
# "no matches for kind" error for a kind that is not served), invalid query parameters answered
# with kube-apiserver's status and message, an 8 KB label selector, an oversized body (413), a
# client that accepts only protobuf (406), and the start-up refusals and file modes of
# `--listen`/`--token`/`--state-dir`.
# Usage: wire_e2e.sh LOCALCLUSTER_BINARY REPO_ROOT
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
set +o pipefail
bin=${1:?usage: wire_e2e.sh LOCALCLUSTER_BINARY REPO_ROOT}
repo=${2:?usage: wire_e2e.sh LOCALCLUSTER_BINARY REPO_ROOT}
require_tools kubectl curl python3
make_workdir
cleanup() {
  local rc=$?
  stop_cluster || rc=1
  if [[ $rc -ne 0 ]]; then echo "--- localcluster stderr (tail)"; tail -n 30 "$work/stderr" 2>/dev/null || true; fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT

step "listening beyond loopback without TLS is refused (exit 2, with the reason)"
rc=0
timeout 10 "$bin" --listen 0.0.0.0:0 >"$work/refused.out" 2>"$work/refused.err" || rc=$?
[[ $rc -eq 2 ]] || die "--listen 0.0.0.0:0 without --tls exited $rc, expected 2"
grep -q "reachable from other machines" "$work/refused.err" || die "no reason given: $(cat "$work/refused.err")"
grep -q -- "--insecure-allow-remote" "$work/refused.err" || die "the way out is not named: $(cat "$work/refused.err")"

step "state directory 0700, its files 0600; --token without --tls warns"
start_cluster "$bin" "$work" --state-dir "$work/state" --token wire-token
grep -q "bearer token travels in clear" "$work/stderr" || die "no warning for --token without --tls"
# kubectl sends no bearer token over plain HTTP: curl writes the object that lands in the state files.
code=$(curl -s -o "$work/probe.json" -w '%{http_code}' -X POST -H 'Authorization: Bearer wire-token' \
  -H 'Content-Type: application/json' -d '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"probe"},"data":{"k":"dg=="}}' \
  "$CLUSTER_URL/api/v1/namespaces/default/secrets")
[[ $code == 201 ]] || die "secret not created: $code $(cat "$work/probe.json")"
[[ $(stat -c %a "$work/state") == 700 ]] || die "state dir mode $(stat -c %a "$work/state")"
for f in "$work/state"/*; do
  [[ $(stat -c %a "$f") == 600 ]] || die "$f has mode $(stat -c %a "$f")"
done
stop_cluster

start_cluster "$bin" "$work"
api=$CLUSTER_URL

step "kubectl create generators (protobuf bodies)"
k create namespace wire | grep -q "namespace/wire created" || die "create namespace"
k create configmap settings -n wire --from-literal=mode=fast --from-literal=empty= | grep -q created ||
  die "create configmap"
[[ $(k get configmap settings -n wire -o jsonpath='{.data.mode}') == fast ]] || die "configmap data lost"
k create secret generic creds -n wire --from-literal=password=s3cr3t | grep -q created || die "create secret"
[[ $(k get secret creds -n wire -o jsonpath='{.data.password}') == czNjcjN0 ]] || die "secret data not base64 of s3cr3t"
[[ $(k get secret creds -n wire -o jsonpath='{.type}') == Opaque ]] || die "secret type lost"
k create serviceaccount builder -n wire | grep -q created || die "create serviceaccount"
# kubectl create token: a TokenRequest (authentication.k8s.io/v1) in protobuf; TokenReview accepts the token.
token=$(k create token builder -n wire --audience=wire-test --duration=20m) || die "create token"
claims=$(python3 -c 'import base64, json, sys
p = sys.argv[1].split(".")[1]
c = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
print(c["sub"], c["aud"], c["exp"] - c["iat"])' "$token") || die "not a JWT: $token"
[[ $claims == "system:serviceaccount:wire:builder ['wire-test'] 1200" ]] || die "token claims: $claims"
printf '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"%s","audiences":["wire-test"]}}' \
  "$token" >"$work/review.json"
[[ $(k create -f "$work/review.json" -o jsonpath='{.status.authenticated} {.status.user.username}') == \
  "true system:serviceaccount:wire:builder" ]] || die "TokenReview did not accept the token"
k create service clusterip web -n wire --tcp=80:8080 | grep -q created || die "create service"
[[ $(k get service web -n wire -o jsonpath='{.spec.ports[0].targetPort}') == 8080 ]] || die "targetPort lost"
k create role reader -n wire --verb=get,list --resource=pods | grep -q created || die "create role"
k create rolebinding reader -n wire --role=reader --serviceaccount=wire:builder | grep -q created ||
  die "create rolebinding"
k create clusterrole cluster-reader --verb=get --resource=nodes | grep -q created || die "create clusterrole"
k create priorityclass high --value=1000 --description="wire test" | grep -q created || die "create priorityclass"
[[ $(k get priorityclass high -o jsonpath='{.value}') == 1000 ]] || die "priorityclass value lost"
k create job once -n wire --image=busybox:1.36 -- true | grep -q created || die "create job"
[[ $(k get job once -n wire -o jsonpath='{.spec.template.spec.containers[0].image}') == busybox:1.36 ]] ||
  die "job image lost"
# The bodies were protobuf: the server's request metrics count no 415.
if curl -sf "$api/metrics" | grep 'code="415"' | grep -q .; then die "a request was refused with 415"; fi

step "a client that accepts only protobuf gets 406 with the reason"
code=$(curl -s -o "$work/406.json" -w '%{http_code}' -H 'Accept: application/vnd.kubernetes.protobuf' \
  "$api/api/v1/namespaces/wire/configmaps")
[[ $code == 406 ]] || die "Accept protobuf only: $code"
grep -q "answers in JSON only" "$work/406.json" || die "406 without the reason: $(cat "$work/406.json")"

step "OpenAPI v2: JSON and gnostic protobuf"
curl -sf "$api/openapi/v2" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["swagger"]=="2.0"; assert "io.k8s.api.core.v1.ConfigMap" in d["definitions"]' ||
  die "/openapi/v2 JSON"
ctype=$(curl -s -o "$work/v2.pb" -w '%{content_type}' \
  -H 'Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf' "$api/openapi/v2")
[[ $ctype == application/com.github.proto-openapi.spec.v2.v1.0+protobuf ]] || die "protobuf v2 content type $ctype"
[[ $(head -c 5 "$work/v2.pb" | od -An -c | tr -d ' ') == '\n0032.0' ]] || die "protobuf v2 does not start with swagger 2.0"

step "kubectl explain of a CRD field"
k apply -f "$repo/manifests/crds/kubeflow.org_pytorchjobs.yaml" | grep -q created || die "PyTorchJob CRD"
k wait --for=condition=Established crd/pytorchjobs.kubeflow.org --timeout=20s
explain=$(k explain pytorchjob.spec.runPolicy)
grep -q "FIELD: *runPolicy" <<<"$explain" || die "explain does not name the field: $explain"
grep -q "cleanPodPolicy" <<<"$explain" || die "explain does not list runPolicy's fields: $explain"

step "kubectl explain of built-in kinds: fields and types from the protobuf tables"
explain=$(k explain pod.spec.containers.ports)
grep -q "FIELD: *ports <\[\]ContainerPort>" <<<"$explain" || die "explain pod.spec.containers.ports: $explain"
for f in "containerPort.*<integer>" "hostIP.*<string>" "protocol.*<string>"; do
  grep -q "$f" <<<"$explain" || die "explain pod.spec.containers.ports lacks $f: $explain"
done
explain=$(k explain deployment.spec.strategy)
grep -q "rollingUpdate.*<RollingUpdateDeployment>" <<<"$explain" || die "explain deployment.spec.strategy: $explain"
grep -q "type.*<string>" <<<"$explain" || die "explain deployment.spec.strategy lacks type: $explain"
explain=$(k explain deployment.spec.strategy.rollingUpdate.maxSurge)
grep -q "maxSurge.*<IntOrString>" <<<"$explain" || die "explain maxSurge: $explain"
explain=$(k explain job.spec.template.spec.containers.resources.limits --api-version=batch/v1)
grep -q "limits.*<map\[string\]Quantity>" <<<"$explain" || die "explain job resources.limits: $explain"
explain=$(k explain pod.spec.containers --output=plaintext-openapiv2)
grep -q "imagePullPolicy.*<string>" <<<"$explain" || die "explain (OpenAPI v2) pod.spec.containers: $explain"

step "a kind that is not served: kubectl's own 'no matches for kind'"
for manifest in "apiVersion: example.com/v1
kind: Gadget
metadata: {name: g}" "apiVersion: kubeflow.org/v1
kind: NoSuchJob
metadata: {name: j, namespace: default}"; do
  out=$(printf '%s\n' "$manifest" | k apply -f - 2>&1) && die "apply of an unserved kind succeeded: $out"
  grep -q 'no matches for kind' <<<"$out" || die "expected kubectl's no-matches error, got: $out"
  grep -q -i 'error validating' <<<"$out" && die "client-side validation failed instead: $out"
done

step "invalid query parameters: kube-apiserver's status and message"
expect_raw() {  # expect_raw PATH_AND_QUERY TEXT
  local out
  out=$(k get --raw "$1" 2>&1) && die "$1 succeeded: $out"
  grep -qF -- "$2" <<<"$out" || die "$1: expected '$2', got: $out"
}
expect_raw '/api/v1/namespaces/wire/configmaps?limit=abc' 'strconv.ParseInt: parsing "abc": invalid syntax'
expect_raw '/api/v1/namespaces/wire/configmaps?limit=9223372036854775808' 'value out of range'
expect_raw '/api/v1/namespaces/wire/configmaps?timeoutSeconds=abc' 'strconv.ParseInt: parsing "abc": invalid syntax'
expect_raw '/api/v1/namespaces/wire/configmaps?resourceVersion=1&resourceVersionMatch=Bogus' \
  'Unsupported value: "Bogus": supported values: "Exact", "NotOlderThan", ""'
expect_raw '/api/v1/namespaces/wire/configmaps?limit=1&continue=bm90LWEtdG9rZW4' 'invalid continue token: continue key is not valid'
code=$(curl -s -o "$work/rvm.json" -w '%{http_code}' \
  "$api/api/v1/namespaces/wire/configmaps?resourceVersion=1&resourceVersionMatch=Bogus")
[[ $code == 422 ]] || die "resourceVersionMatch=Bogus answered $code"
code=$(curl -s -o "$work/dry.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"}}' "$api/api/v1/namespaces/wire/configmaps?dryRun=Yes")
[[ $code == 422 ]] || die "dryRun=Yes answered $code"
# kube-apiserver reads watch=maybe as true: a watch, ended by its timeout.
[[ $(curl -s --max-time 10 "$api/api/v1/namespaces/wire/configmaps?watch=maybe&timeoutSeconds=1" | head -c 15) == '{"type":"ADDED"' ]] ||
  die "watch=maybe did not start a watch"

step "an 8 KB label selector is answered"
selector="app in ($(python3 -c 'print(",".join("v%04d" % i for i in range(1600)))'))"
[[ ${#selector} -gt 8192 ]] || die "selector is only ${#selector} bytes"
k get configmaps -n wire -l "$selector" -o name >"$work/selected" 2>"$work/selected.err" ||
  die "8 KB selector failed: $(cat "$work/selected.err")"

step "over-long headers get 431 and an unreadable request 400, not a closed connection"
# The status line the server answers a raw request with (curl cannot send a 2 MiB header):
# `long-header` is a GET with a 2 MiB header, `garbage` no HTTP at all.
first_line() {
  python3 - "$api" "$1" <<'PY'
import socket, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
requests = {"long-header": b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * (2 << 20) + b"\r\n\r\n",
            "garbage": b"NOT A REQUEST\r\n\r\n"}
s = socket.create_connection((u.hostname, u.port), timeout=10)
s.sendall(requests[sys.argv[2]])
print(s.recv(100).split(b"\r\n")[0].decode())
PY
}
answer=$(first_line long-header)
[[ $answer == "HTTP/1.1 431 Request Header Fields Too Large" ]] || die "a 2 MiB header was answered '$answer'"
answer=$(first_line garbage)
[[ $answer == "HTTP/1.1 400 Bad Request" ]] || die "a malformed request was answered '$answer'"

step "a body over the limit gets 413, not a closed connection"
code=$(python3 -c 'import sys; sys.stdout.write("x" * (65 * 1024 * 1024))' |
  curl -s -o "$work/413.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data-binary @- \
    "$api/api/v1/namespaces/wire/configmaps")
[[ $code == 413 ]] || die "oversized body answered $code"
grep -q "Request entity too large: limit is 67108864" "$work/413.json" || die "413 body: $(cat "$work/413.json")"
k get namespace wire -o name | grep -q namespace/wire || die "the server does not answer after the 413"
