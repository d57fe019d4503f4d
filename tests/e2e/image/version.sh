#!/usr/bin/env bash
# training-operator --version prints "training-operator <CMakeLists.txt's project(VERSION)>" and
# exits 0 (scripts/build-image tags the image with that version); --help lists --version; the
# Deployment in manifests/base names the image of that version, as scripts/build-image tags it.
set -u
bin=$1 src=$2
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
want=$(sed -n 's/^project([A-Za-z0-9_]* VERSION \([0-9][0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[[ -n $want ]] || { echo "FAIL: no project(... VERSION x.y.z) in $src/CMakeLists.txt"; exit 1; }
out=$("$bin" --version 2>&1); rc=$?
[[ $rc -eq 0 ]] || fail "--version exited $rc: $out"
[[ $out == "training-operator $want" ]] || fail "--version printed '$out', want 'training-operator $want'"
help=$("$bin" --help 2>&1); rc=$?
[[ $rc -eq 0 ]] || fail "--help exited $rc"
grep -q -- '--version' <<<"$help" || fail "--help does not list --version"
image=$(sed -n 's/^ *image: *//p' "$src/manifests/base/deployment.yaml")
[[ $image == "unitrain/training-operator:$want" ]] ||
  fail "manifests/base/deployment.yaml names image '$image', want unitrain/training-operator:$want (scripts/build-image's tag)"
((fails == 0)) && echo "ok: --version prints '$out'; the Deployment names unitrain/training-operator:$want"
echo "$fails failure(s)"
exit $fails
