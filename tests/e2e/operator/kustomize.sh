#!/usr/bin/env bash
# Every overlay in manifests/overlays renders with kubectl kustomize and holds what it promises.
set -u
src=$1
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
kubectl kustomize --help >/dev/null 2>&1 || { echo "SKIP: this kubectl has no kustomize"; exit 77; }
fails=0
for dir in "$src"/manifests/overlays/*/; do
  o=$(basename "$dir")
  # Default load restrictions: every overlay stays within manifests/ through kustomizations.
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
  echo "ok: $o"
done
# Every CRD in manifests/crds is listed in its kustomization.
crds=$(kubectl kustomize "$src/manifests/crds" 2>&1) || { echo "FAIL: manifests/crds: $crds"; fails=$((fails+1)); }
files=$(ls "$src"/manifests/crds/*.yaml | grep -vc '/kustomization.yaml$')
rendered=$(grep -c '^kind: CustomResourceDefinition$' <<<"$crds")
[[ $files == "$rendered" ]] || { echo "FAIL: manifests/crds holds $files CRD files, its kustomization renders $rendered"; fails=$((fails+1)); }
# The ClusterRole and the namespaced Role grant the same rules.
rules() { sed -n '/^rules:/,$p' "$1" | grep -v '^ *#'; }
diff <(rules "$src/manifests/rbac/cluster/cluster_role.yaml") <(rules "$src/manifests/rbac/namespaced/role.yaml") \
  || { echo "FAIL: ClusterRole and Role rules differ"; fails=$((fails+1)); }
# Least privilege: nothing grants "*" or escalation verbs.
grep -nE '"\*"|"escalate"|"bind"|"impersonate"' "$src"/manifests/rbac/*/*role.yaml \
  && { echo "FAIL: RBAC grants wildcards or escalation verbs"; fails=$((fails+1)); }
echo "$fails failure(s)"
exit $fails
