#!/usr/bin/env bash
# The conformance kit's verdicts: wrong expectations fail (exit 1), each named with the check and
# both values; a module for another plugin ABI major version and an unreadable fixture exit 2.
set -u
kit=$1 jax=$2 other_major=$3 here=$4
fails=0
expect() {  # rc what-the-output-must-contain... -- args
  local want_rc=$1; shift
  local want=() out rc
  while [[ $1 != -- ]]; do want+=("$1"); shift; done
  shift
  out=$("$kit" "$@" 2>&1); rc=$?
  if [[ $rc -ne $want_rc ]]; then echo "FAIL: $* exited $rc, want $want_rc: $out"; fails=$((fails+1)); return; fi
  for w in "${want[@]}"; do
    [[ $out == *"$w"* ]] || { echo "FAIL: $* output lacks '$w': $out"; fails=$((fails+1)); return; }
  done
  echo "ok: exit $rc"
}
f=$here/wrong_expectations.yaml
expect 1 "FAIL $f: valid: want false" \
         "FAIL $f: defaults.spec.jaxReplicaSpecs.Worker.restartPolicy: want \"OnFailure\", got \"Never\"" \
         "FAIL $f: pods.j-worker-1.spec.containers[0].env: want" \
         "FAIL $f: pods.j-worker-9: the module keeps no pod of that name" \
         "FAIL $f: objects[0]: no desired configmaps named j-config" \
         "FAIL $f: status[0].conditions: want [Succeeded JAXJobSucceeded wrong message]" \
         "0 of 1 fixtures hold" -- "$jax" "$f"
expect 2 "built for plugin ABI 2.0" -- "$other_major" "$f"
expect 2 "cannot be read" -- "$jax" "$here/no-such-fixture.yaml"
exit $((fails > 0))
