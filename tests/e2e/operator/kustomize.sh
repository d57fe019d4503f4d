#!/usr/bin/env bash
# Every overlay in manifests/overlays renders with kubectl kustomize and holds what it promises.
set -u
source "$(dirname "$0")/lib.sh"
src=$1
require_tools kubectl
help=$(kubectl kustomize --help 2>&1) || { echo "SKIPPED: this kubectl has no kustomize: $help"; exit 77; }
fails=0
for dir in "$src"/manifests/overlays/*/; do
  o=$(basename "$dir")
  # kustomize's default load restrictor, as `kubectl apply -k` uses it: no overlay reaches for a
  # file outside its folder tree (components and bases are folders).
  out=$(kubectl kustomize "$dir" 2>&1) || {
    echo "FAIL: $o: $out"; fails=$((fails+1)); continue; }
  for kind in CustomResourceDefinition ServiceAccount Deployment Service; do
    grep -q "^kind: $kind\$" <<<"$out" || { echo "FAIL: $o renders no $kind"; fails=$((fails+1)); }
  done
  grep -q "^kind: \(Cluster\)\?Role\$" <<<"$out" || { echo "FAIL: $o renders no Role/ClusterRole"; fails=$((fails+1)); }
  grep -q "readOnlyRootFilesystem: true" <<<"$out" || { echo "FAIL: $o: root filesystem is writable"; fails=$((fails+1)); }
  grep -q "runAsNonRoot: true" <<<"$out" || { echo "FAIL: $o: may run as root"; fails=$((fails+1)); }
  for want in "livenessProbe:" "readinessProbe:" "path: /healthz" "path: /readyz" "requests:" "limits:" \
              "allowPrivilegeEscalation: false" "--leader-elect"; do
    grep -q -- "$want" <<<"$out" || { echo "FAIL: $o: Deployment lacks '$want'"; fails=$((fails+1)); }
  done
  # Kinds, MPIJob versions and storage, conversion, a validating and a defaulting webhook per
  # served kind and version, the Deployment's MPI flags and webhook port.
  python3 "$(dirname "$0")/check_overlay.py" "$o" "$src" <<<"$out" || fails=$((fails+1))
  echo "ok: $o"
done
# Every CRD in manifests/crds is listed in its kustomization (MPIJob has three files for one CRD:
# v1 only, v2beta1 only, and both versions; the kustomization installs both versions).
crds=$(kubectl kustomize "$src/manifests/crds" 2>&1) || { echo "FAIL: manifests/crds: $crds"; fails=$((fails+1)); }
names=$(for f in "$src"/manifests/crds/*.yaml; do [[ $f == */kustomization.yaml ]] || awk '/^  name: /{print $2; exit}' "$f"; done | sort -u | wc -l)
rendered=$(grep -c '^kind: CustomResourceDefinition$' <<<"$crds")
[[ $names == "$rendered" ]] || { echo "FAIL: manifests/crds defines $names CRDs, its kustomization renders $rendered"; fails=$((fails+1)); }
# The ClusterRole and the namespaced Role grant the same rules, except the cluster-scoped
# PriorityClasses a Role cannot grant (with --namespace the operator does not look them up).
rules() { sed -n '/^rules:/,$p' "$1" | grep -v '^ *#' | awk '/apiGroups: \["scheduling.k8s.io"\]/{skip=3} skip>0{skip--; next} {print}'; }
diff <(rules "$src/manifests/rbac/cluster/cluster_role.yaml") <(rules "$src/manifests/rbac/namespaced/role.yaml") \
  || { echo "FAIL: ClusterRole and Role rules differ"; fails=$((fails+1)); }
# Least privilege: nothing grants "*" or escalation verbs.
grep -nE '"\*"|"escalate"|"bind"|"impersonate"' "$src"/manifests/rbac/*/*role.yaml \
  && { echo "FAIL: RBAC grants wildcards or escalation verbs"; fails=$((fails+1)); }
# manifests/monitoring: the ServiceMonitor, the PrometheusRule and the dashboard's ConfigMap, whose
# JSON parses (metrics.sh checks the metric names they use against /metrics).
mon=$(kubectl kustomize "$src/manifests/monitoring" 2>&1) || { echo "FAIL: manifests/monitoring: $mon"; fails=$((fails+1)); }
for kind in ServiceMonitor PrometheusRule ConfigMap; do
  grep -q "^kind: $kind\$" <<<"$mon" || { echo "FAIL: manifests/monitoring renders no $kind"; fails=$((fails+1)); }
done
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$src/manifests/monitoring/grafana-dashboard.json" \
  || { echo "FAIL: grafana-dashboard.json is not JSON"; fails=$((fails+1)); }
echo "$fails failure(s)"
exit $fails
