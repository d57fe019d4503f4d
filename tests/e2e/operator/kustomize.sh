#!/usr/bin/env bash
# Every overlay in manifests/overlays renders with kubectl kustomize and holds what it promises.
set -u
src=$1
command -v kubectl >/dev/null || { echo "SKIP: kubectl is not installed"; exit 77; }
kubectl kustomize --help >/dev/null 2>&1 || { echo "SKIP: this kubectl has no kustomize"; exit 77; }
fails=0
for dir in "$src"/manifests/overlays/*/; do
  o=$(basename "$dir")
  # The CRDs live in manifests/crds, outside the kustomization roots.
  out=$(kubectl kustomize --load-restrictor LoadRestrictionsNone "$dir" 2>&1) || {
    echo "FAIL: $o: $out"; fails=$((fails+1)); continue; }
  for kind in CustomResourceDefinition ServiceAccount Deployment Service; do
    grep -q "^kind: $kind\$" <<<"$out" || { echo "FAIL: $o renders no $kind"; fails=$((fails+1)); }
  done
  grep -q "^kind: \(Cluster\)\?Role\$" <<<"$out" || { echo "FAIL: $o renders no Role/ClusterRole"; fails=$((fails+1)); }
  grep -q "readOnlyRootFilesystem: true" <<<"$out" || { echo "FAIL: $o: root filesystem is writable"; fails=$((fails+1)); }
  grep -q "runAsNonRoot: true" <<<"$out" || { echo "FAIL: $o: may run as root"; fails=$((fails+1)); }
  echo "ok: $o"
done
exit $fails
