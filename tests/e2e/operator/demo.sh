#!/usr/bin/env bash
# scripts/demo without a terminal (DEMO_SKIP_BUILD=1, the built operator):
#  1. the examples in examples/ all succeed: plain lines (no cursor movement), a summary, exit 0;
#  2. a failing job: exit 1 and the message names it; a job that outlives DEMO_TIMEOUT: exit 2,
#     named;
#  3. on a terminal: a table redrawn in place (cursor up), no plain lines;
#  4. SIGINT while jobs run: exit 130 within 30 s, the operator process and its embedded cluster
#     are gone, and the demo's temporary directory is removed.
# Usage: demo.sh OPERATOR_BINARY SOURCE_DIR [PART...]: the numbered parts above (default: all), so
# ctest can run them as separate tests side by side.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 src=$2
shift 2
parts=" ${*:-1 2 3 4} "
want() { [[ $parts == *" $1 "* ]]; }
require_tools kubectl curl python3
make_workdir
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
# A background job of a non-interactive shell starts with SIGINT ignored, and bash cannot trap a
# signal ignored on entry; restore the default as a terminal's foreground job would have it.
# It execs, so call it in a subshell: `(run_demo ...)`, or `run_demo ... &` to get the demo's pid.
run_demo() {  # out-file env...
  local out=$1; shift
  exec env DEMO_SKIP_BUILD=1 DEMO_BIN="$bin" "$@" \
    python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
    "$src/scripts/demo" >"$out" 2>&1 </dev/null
}
job_yaml() {  # name exit-code duration
  sed -e "s/name: pytorch-demo/name: $1/" -e "s/restartPolicy: OnFailure/restartPolicy: Never/" \
      -e "s/sim.unitrain.io\/duration: \"2s\"/sim.unitrain.io\/duration: \"$3s\"\n            sim.unitrain.io\/exit-code: \"$2\"/" \
      "$src/examples/pytorch.yaml"
}

# --- 1. the real examples
if want 1; then
(run_demo "$work/ok.out" DEMO_TIMEOUT=120); rc=$?
[[ $rc == 0 ]] || fail "demo exited $rc with examples/: $(tail -5 "$work/ok.out")"
grep -q $'\033' "$work/ok.out" && fail "demo wrote escape sequences to a non-terminal"
grep -q '^all [0-9]* job(s) succeeded$' "$work/ok.out" || fail "no 'all N job(s) succeeded' line"
for f in "$src"/examples/*.yaml; do
  name=$(sed -n 's/^  name: //p' "$f" | head -1)
  grep -q "^  [A-Za-z]* $name: Succeeded after" "$work/ok.out" || fail "summary lacks $name: Succeeded"
  grep -q "^t=[0-9]*s $name [A-Za-z]* [A-Za-z]* pods [0-9]*/[0-9]*$" "$work/ok.out" || fail "no plain progress line for $name"
done
(( fails == 0 )) && echo "ok: examples succeed, plain progress lines, summary, exit 0"
fi

# --- 2. a failure and a timeout, each named
mkdir -p "$work/slow"
job_yaml sleepy 0 300 >"$work/slow/sleepy.yaml"
if want 2; then
before=$fails
mkdir -p "$work/failing"
job_yaml doomed 7 1 >"$work/failing/doomed.yaml"
job_yaml fine 0 1 >"$work/failing/fine.yaml"
(run_demo "$work/fail.out" DEMO_TIMEOUT=60 DEMO_EXAMPLES="$work/failing"); rc=$?
[[ $rc == 1 ]] || fail "a failed job: demo exited $rc, want 1"
grep -q 'job(s) failed: doomed;' "$work/fail.out" || fail "the failure message does not name doomed: $(tail -3 "$work/fail.out")"
grep -q 'fine: Succeeded' "$work/fail.out" || fail "the summary lacks fine: Succeeded"
(run_demo "$work/slow.out" DEMO_TIMEOUT=3 DEMO_EXAMPLES="$work/slow"); rc=$?
[[ $rc == 2 ]] || fail "a timeout: demo exited $rc, want 2"
grep -q 'timeout after 3s; unfinished job(s): sleepy$' "$work/slow.out" || fail "the timeout message does not name sleepy: $(tail -3 "$work/slow.out")"
(( fails == before )) && echo "ok: failure exits 1 naming doomed; timeout exits 2 naming sleepy"
fi

# --- 3. on a terminal (script(1) provides one): the table is redrawn in place
before=$fails
if ! want 3; then
  :
elif [[ -n $(type -P script) ]]; then  # no redirection: see require_tools in common.sh
  mkdir -p "$work/quick"
  job_yaml quick 0 3 >"$work/quick/quick.yaml"
  DEMO_SKIP_BUILD=1 DEMO_BIN="$bin" DEMO_EXAMPLES="$work/quick" DEMO_TIMEOUT=60 TERM=xterm \
    script -qefc "$src/scripts/demo" /dev/null >"$work/tty.out" 2>&1 </dev/null; rc=$?
  [[ $rc == 0 ]] || fail "on a terminal the demo exited $rc"
  grep -q 'JOB  *FRAMEWORK  *PHASE  *PODS RUN/TOTAL  *ELAPSED' "$work/tty.out" || fail "no table header on a terminal"
  grep -qP '\033\[2A' "$work/tty.out" || fail "the table was not redrawn in place (no cursor-up by 2 lines)"
  grep -q '^t=' "$work/tty.out" && fail "plain progress lines on a terminal"
  (( fails == before )) && echo "ok: on a terminal the table is redrawn in place"
else
  echo "SKIPPED: the terminal check needs script(1) (util-linux)"
  [[ $parts == " 3 " ]] && exit 77  # this part alone (its ctest entry): reported as skipped
fi

# --- 4. SIGINT
if want 4; then
before=$fails
run_demo "$work/int.out" DEMO_TIMEOUT=120 DEMO_EXAMPLES="$work/slow" &
demo=$!
for _ in $(seq 150); do grep -q '^t=' "$work/int.out" && break; sleep 0.2; done
grep -q '^t=' "$work/int.out" || fail "the demo never showed progress: $(cat "$work/int.out")"
op=$(sed -n 's/^operator running (pid \([0-9]*\)).*/\1/p' "$work/int.out")
kc=$(sed -n 's/^operator running .*; kubeconfig: \([^;]*\);.*/\1/p' "$work/int.out")
kubectl --kubeconfig "$kc" --request-timeout=5s get ns >/dev/null 2>&1 || fail "the embedded cluster does not answer before SIGINT"
server=$(sed -n 's/^ *server: //p' "$kc")
t0=$SECONDS
kill -INT "$demo"
wait "$demo"; rc=$?
(( SECONDS - t0 <= 30 )) || fail "SIGINT took $((SECONDS - t0)) s"
[[ $rc == 130 ]] || fail "after SIGINT the demo exited $rc, want 130"
grep -q 'demo: interrupted' "$work/int.out" || fail "no 'interrupted' message"
[[ -n $op ]] && kill -0 "$op" 2>/dev/null && { fail "operator $op still runs after SIGINT"; kill -KILL "$op"; }
[[ -e $kc ]] && fail "the demo's kubeconfig $kc was left behind"
[[ -n $server ]] && curl -s --max-time 2 "$server/version" >/dev/null && fail "the cluster at $server still answers"
(( fails == before )) && echo "ok: SIGINT stopped the demo in $((SECONDS - t0)) s (exit 130), operator and cluster gone"
fi
echo "$fails failure(s)"
exit $fails
