#!/usr/bin/env bash
# --framework-module / --framework-module-dir refusals: a module built for another plugin ABI
# major version, a kind another module already serves, a file that is no library, a missing
# directory. Each exits 2 before anything starts, naming the file and the cause.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 other_major=$2 modules=$3
fails=0
make_workdir
trap 'rm -rf "$work"' EXIT
check_refused() {  # what-the-message-must-contain... -- operator args...
  local want=() out rc
  while [[ $1 != -- ]]; do want+=("$1"); shift; done
  shift
  out=$("$bin" "$@" 2>&1); rc=$?
  if [[ $rc -ne 2 ]]; then echo "FAIL: $* exited $rc, want 2: $out"; fails=$((fails+1)); return; fi
  for w in "${want[@]}"; do
    if [[ $out != *"$w"* ]]; then echo "FAIL: $* output lacks '$w': $out"; fails=$((fails+1)); return; fi
  done
  echo "ok: $* -> $out"
}
check_refused "$other_major" "built for plugin ABI 2.0" "speaks plugin ABI 1.3" -- --framework-module "$other_major"
# Every built-in module's shared build collides with the built-in one of its kind.
for module in "$modules"/*.so; do
  check_refused "$module" "already" -- --framework-module="$module"
done
echo 'not a library' >"$work/fake.so"
check_refused "$work/fake.so" "cannot be loaded" -- --framework-module "$work/fake.so"
check_refused "$work/fake.so" "cannot be loaded" -- --framework-module-dir "$work"
check_refused "$work/missing" "not a directory" -- --framework-module-dir "$work/missing"
check_refused "--framework-module" "needs a value" -- --framework-module
exit $((fails > 0))
