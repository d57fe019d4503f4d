#!/usr/bin/env bash
# kubectl v1.32 against build/bin/localcluster: CRDs, apply, get (json/yaml/wide/watch), the patch
# types, label, annotate, wait, describe, logs, events, api-resources, explain, delete --wait.
# Usage: kubectl_e2e.sh LOCALCLUSTER_BINARY [--tls]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
# grep -q stops reading at the first match; with pipefail the writer's SIGPIPE would count as failure.
set +o pipefail
bin=${1:?usage: kubectl_e2e.sh LOCALCLUSTER_BINARY [--tls]}
shift
require_tools kubectl python3
make_workdir
watch_pid=""
cleanup() {
  local rc=$?
  [[ -n $watch_pid ]] && kill "$watch_pid" 2>/dev/null || true
  stop_cluster || rc=1
  if [[ $rc -ne 0 ]]; then echo "--- localcluster stderr (tail)"; tail -n 30 "$work/stderr" 2>/dev/null || true; fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
start_cluster "$bin" "$work" "$@"

step "version and health"
k version -o json | grep -q '"gitVersion": "v1.32' || die "kubectl version does not show the server's v1.32"

step "apply the CRD and wait until it is established"
k apply -f "$here/widget-crd.yaml" | grep -q "created" || die "CRD apply did not say created"
k wait --for=condition=Established crd/widgets.e2e.unitrain.io --timeout=20s

step "api-resources lists the CRD"
k api-resources | grep -E '^widgets +wd +e2e.unitrain.io/v1 +true +Widget' >/dev/null ||
  die "api-resources does not list widgets: $(k api-resources | grep -i widget || true)"

step "watch widgets in the background"
# -v=6 logs the watch request once the server answered it: from then on no event can be missed.
timeout 200 kubectl get widgets --watch --output-watch-events -v=6 >"$work/watch.out" 2>"$work/watch.err" &
watch_pid=$!
wait_until 60 grep -q 'widgets?.*watch=true.* 200 OK' "$work/watch.err" || die "the background watch did not start within 60 s"

step "apply a custom resource twice (the second is a no-op)"
out=$(k apply -f "$here/widget.yaml")
[[ $out == *"widget.e2e.unitrain.io/w1 created"* ]] || die "first apply: $out"
out=$(k apply -f "$here/widget.yaml")
[[ $out == *"widget.e2e.unitrain.io/w1 unchanged"* ]] || die "second apply was not a no-op: $out"

step "get -o json / -o yaml / -o wide / short name"
k get widget w1 -o json | python3 -c 'import json,sys; o=json.load(sys.stdin); assert o["spec"]["replicas"]==1, o; assert o["spec"]["extra"]["anything"]==[1,2,3], o' ||
  die "get -o json lacks fields"
k get widget w1 -o yaml | grep -q '^  color: red' || die "get -o yaml lacks spec.color"
wide=$(k get widgets -o wide)
echo "$wide"
head -n1 <<<"$wide" | grep -Eq 'NAME +REPLICAS +COLOR +LAST +AGE' || die "wide header: $(head -n1 <<<"$wide")"
grep -Eq '^w1 +1 +red ' <<<"$wide" || die "wide row: $wide"
k get wd w1 -o name | grep -qx 'widget.e2e.unitrain.io/w1' || die "short name wd does not resolve"

step "patch: merge, json, status subresource, scale"
k patch widget w1 --type=merge -p '{"spec":{"replicas":2}}' >/dev/null
k patch widget w1 --type=json -p '[{"op":"replace","path":"/spec/color","value":"blue"}]' >/dev/null
k get widget w1 -o jsonpath='{.spec.replicas}/{.spec.color}' | grep -qx '2/blue' || die "merge/json patch not applied"
k patch widget w1 --subresource=status --type=merge \
  -p '{"status":{"replicas":2,"conditions":[{"type":"Ready","status":"True","reason":"E2E","message":"ok","lastTransitionTime":"2024-01-01T00:00:00Z"}]}}' >/dev/null
k get widget w1 -o jsonpath='{.status.conditions[0].type}' | grep -qx Ready || die "status patch not applied"
k scale widget w1 --replicas=4 >/dev/null
k get widget w1 -o jsonpath='{.spec.replicas}' | grep -qx 4 || die "scale subresource did not set spec.replicas"

step "wait --for=condition"
k wait --for=condition=Ready widget/w1 --timeout=10s | grep -q "condition met" || die "wait did not report condition met"

step "label and annotate"
k label widget w1 tier=gold >/dev/null
k get widgets -l tier=gold -o name | grep -qx 'widget.e2e.unitrain.io/w1' || die "label selector does not find w1"
k get widgets -l 'tier in (gold,silver),app' -o name | grep -qx 'widget.e2e.unitrain.io/w1' ||
  die "set-based selector does not find w1"
k annotate widget w1 note=hello >/dev/null
k get widget w1 -o jsonpath='{.metadata.annotations.note}' | grep -qx hello || die "annotation missing"

step "strategic merge patch on a pod (containers merged by name, env by name)"
k apply -f "$here/pod.yaml" >/dev/null
k patch pod p1 --type=strategic -p '{"spec":{"containers":[{"name":"main","env":[{"name":"B","value":"2"}]}]}}' >/dev/null ||
  die "strategic patch rejected"
envs=$(k get pod p1 -o jsonpath='{range .spec.containers[0].env[*]}{.name}{" "}{end}')
[[ $envs == "A B " || $envs == "B A " ]] || die "strategic merge lost an env entry: '$envs'"
pods=$(k get pods -o wide)
head -n1 <<<"$pods" | grep -Eq 'NAME +READY +STATUS +RESTARTS +AGE +IP +NODE' || die "pod wide header: $pods"

step "describe, logs, events"
k describe widget w1 | grep -q "Name:         w1" || die "describe widget"
k describe pod p1 | grep -q "^Name:" || die "describe pod"
k logs p1 >/dev/null || die "kubectl logs failed"
k apply -f "$here/event.yaml" >/dev/null
k get events | grep -q "e2e event for p1" || die "get events does not show the event"
k get events.v1.events.k8s.io >/dev/null || die "events.k8s.io/v1 not served"

step "explain (OpenAPI is not served: a clear error is acceptable)"
if explain=$(k explain widgets 2>&1); then
  echo "explain works"
else
  echo "explain: $explain"
  [[ -n $explain ]] || die "explain failed without a message"
fi

step "delete --wait"
k delete widget w1 --wait --timeout=20s | grep -q deleted || die "delete did not report deleted"
if k get widget w1 >/dev/null 2>&1; then die "w1 still exists after delete --wait"; fi
k delete pod p1 --wait --timeout=20s >/dev/null

step "the background watch saw ADDED, MODIFIED and DELETED"
wait_until 30 grep -Eq '^DELETED +w1 ' "$work/watch.out" || true  # checked below, with all events
kill "$watch_pid" 2>/dev/null || true
wait "$watch_pid" 2>/dev/null || true
watch_pid=""
cat "$work/watch.out"
for t in ADDED MODIFIED DELETED; do
  grep -Eq "^$t +w1 " "$work/watch.out" || die "watch output has no $t event for w1 (stderr: $(cat "$work/watch.err"))"
done

step "metrics count the writes"
k get --raw /metrics | grep -q 'apiserver_request_total{code="201",component="apiserver",group="e2e.unitrain.io",resource="widgets",subresource="",verb="POST",version="v1"} ' ||
  die "/metrics lacks the widget create"
echo "PASS"
