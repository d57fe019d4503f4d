#!/usr/bin/env bash
# Flag handling: --help lists the Kubeflow flags; bad values exit 2 and name the flag;
# --log-format json writes one valid JSON object per line even for messages with quotes,
# newlines and control characters; --zap-log-level filters by level.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1
fails=0
require_tools python3
make_workdir
trap 'rm -rf "$work"' EXIT
check_bad() {  # flag args...
  local flag=$1; shift
  local out rc
  out=$("$bin" "$@" 2>&1); rc=$?
  if [[ $rc -ne 2 ]]; then echo "FAIL: $* exited $rc, want 2: $out"; fails=$((fails+1)); return; fi
  if [[ $out != *"$flag"* ]]; then echo "FAIL: $* output does not name $flag: $out"; fails=$((fails+1)); return; fi
  echo "ok: $*"
}
help=$("$bin" --help); rc=$?
[[ $rc -eq 0 ]] || { echo "FAIL: --help exited $rc"; fails=$((fails+1)); }
for f in --enable-scheme --gang-scheduler-name --namespace --controller-threads --leader-elect \
         --leader-election-id --leader-election-namespace --leader-elect-lease-duration \
         --leader-elect-renew-deadline --leader-elect-retry-period --metrics-bind-address \
         --health-probe-bind-address --kubeconfig --kube-api-qps --kube-api-burst --zap-log-level \
         --log-format --mpi-default-version --cluster-domain --embedded-cluster --pytorch-init-container-image --zap-devel \
         --zap-encoder --zap-stacktrace-level --zap-time-encoding --events-qps --events-burst; do
  [[ $help == *"$f"* ]] || { echo "FAIL: --help does not list $f"; fails=$((fails+1)); }
done
check_bad --enable-scheme --enable-scheme nosuchjob
check_bad --enable-scheme '--enable-scheme=-*'
check_bad --gang-scheduler-name --gang-scheduler-name 'Not a scheduler!'
check_bad --namespace --namespace Bad_Namespace
check_bad --namespace --namespace ok --namespace 'also bad'
check_bad --controller-threads --controller-threads 0
check_bad --controller-threads --controller-threads abc
check_bad --leader-elect --leader-elect=maybe
check_bad --leader-election-id --leader-election-id 'under_score'
check_bad --leader-election-namespace --leader-election-namespace 'Kubeflow'
check_bad --leader-elect-lease-duration --leader-elect-lease-duration 15
check_bad --leader-elect-lease-duration --leader-elect-lease-duration 0s
check_bad --leader-elect-renew-deadline --leader-elect-renew-deadline -5s
check_bad --leader-elect-retry-period --leader-elect-retry-period soon
check_bad --leader-elect-renew-deadline --leader-elect-lease-duration 10s  # not above the 10 s renew deadline
check_bad --leader-elect-retry-period --leader-elect-renew-deadline 2s --leader-elect-retry-period 2s
check_bad --metrics-bind-address --metrics-bind-address 8080x
check_bad --health-probe-bind-address --health-probe-bind-address localhost
check_bad --kubeconfig --kubeconfig "$work/no-such-kubeconfig"
check_bad --kube-api-qps --kube-api-qps -1
check_bad --kube-api-qps --kube-api-qps fast
check_bad --kube-api-burst --kube-api-burst 0
check_bad --cluster-domain --cluster-domain 'Cluster Local'
check_bad --zap-log-level --zap-log-level loud
check_bad --zap-log-level --zap-log-level 0
check_bad --log-format --log-format xml
check_bad --zap-encoder --zap-encoder text
check_bad --zap-stacktrace-level --zap-stacktrace-level warn
check_bad --zap-time-encoding --zap-time-encoding nano
check_bad --zap-encoder --log-format text --zap-encoder json
check_bad --events-qps --events-qps 0
check_bad --events-burst --events-burst 0
check_bad --mpi-default-version --mpi-default-version v3
check_bad --embedded-cluster --embedded-cluster nohost
check_bad --no-such-flag --no-such-flag

# A kubeconfig that exists but does not parse: the operator logs an error naming its path, and
# the path carries a quote, a newline, a tab and a control character.
bad_kc=$work/$'bad"name\nsecond line\tx\x01'
echo 'apiVersion: [' >"$bad_kc"
json_lines() {  # stdin: log lines; prints "<level> <msg>" per line, fails on a non-JSON line
  python3 -c '
import json, sys
for line in sys.stdin:
    rec = json.loads(line)
    for key in ("ts", "level", "logger", "msg"):
        assert key in rec, (key, line)
    print(rec["level"], json.dumps(rec["msg"]))'
}
"$bin" --log-format json --zap-log-level debug --kubeconfig "$bad_kc" >/dev/null 2>"$work/json.log"; rc=$?
[[ $rc -eq 1 ]] || { echo "FAIL: unreadable kubeconfig exited $rc, want 1"; fails=$((fails+1)); }
before=$fails
if parsed=$(json_lines <"$work/json.log"); then
  grep '^error ' <<<"$parsed" | grep -qF 'bad\"name\nsecond line\tx\u0001' \
    || { echo "FAIL: the error line does not carry the path verbatim: $parsed"; fails=$((fails+1)); }
  grep -q '^debug ' <<<"$parsed" || { echo "FAIL: --zap-log-level debug logged no debug line"; fails=$((fails+1)); }
  grep -q '^info ' <<<"$parsed" || { echo "FAIL: --zap-log-level debug logged no info line"; fails=$((fails+1)); }
  (( fails == before )) && echo "ok: --log-format json lines parse and keep quotes, newlines and control characters"
else
  echo "FAIL: --log-format json wrote a line that is not JSON:"; cat -A "$work/json.log"; fails=$((fails+1))
fi
# Levels: error hides info and debug; info hides debug.
"$bin" --log-format json --zap-log-level error --kubeconfig "$bad_kc" >/dev/null 2>"$work/error.log"
levels=$(json_lines <"$work/error.log" | cut -d' ' -f1 | sort -u | tr '\n' ' ')
before=$fails
[[ $levels == "error " ]] || { echo "FAIL: --zap-log-level error logged levels: $levels"; fails=$((fails+1)); }
"$bin" --log-format json --zap-log-level info --kubeconfig "$bad_kc" >/dev/null 2>"$work/info.log"
levels=$(json_lines <"$work/info.log" | cut -d' ' -f1 | sort -u | tr '\n' ' ')
[[ $levels == "error info " ]] || { echo "FAIL: --zap-log-level info logged levels: $levels"; fails=$((fails+1)); }
(( fails == before )) && echo "ok: --zap-log-level error/info/debug"
# Text format stays one record per line prefix: timestamp, level, logger.
"$bin" --kubeconfig "$bad_kc" >/dev/null 2>"$work/text.log"
grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z error training-operator --kubeconfig' "$work/text.log" \
  || { echo "FAIL: text log lacks '<ts> error training-operator --kubeconfig ...':"; cat "$work/text.log"; fails=$((fails+1)); }
# controller-runtime's zap flags: --zap-devel=false means JSON (production), --zap-devel debug
# text; the time encoding; a stacktrace on records at or above --zap-stacktrace-level.
"$bin" --zap-devel=false --zap-time-encoding epoch --zap-stacktrace-level error --kubeconfig "$bad_kc" \
  >/dev/null 2>"$work/prod.log"
before=$fails
python3 - "$work/prod.log" <<'PY' || fails=$((fails+1))
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
levels = {r["level"] for r in recs}
assert levels == {"info", "error"}, f"production levels {levels}"
assert all(isinstance(r["ts"], (int, float)) for r in recs), "epoch time is not a number"
errors = [r for r in recs if r["level"] == "error"]
assert errors and all("stacktrace" in r and r["stacktrace"] for r in errors), "no stacktrace on error records"
assert all("stacktrace" not in r for r in recs if r["level"] == "info"), "stacktrace on an info record"
PY
"$bin" --zap-devel --kubeconfig "$bad_kc" >/dev/null 2>"$work/devel.log"
grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]+Z debug training-operator ' "$work/devel.log" \
  || { echo "FAIL: --zap-devel did not log text at debug level:"; cat "$work/devel.log"; fails=$((fails+1)); }
(( fails == before )) && echo "ok: --zap-devel, --zap-time-encoding, --zap-stacktrace-level"
# Every kubeflow.org/v1 kind answers to its alias, case-insensitively (the operator logs what it
# enabled, then stops at the missing kubeconfig).
check_alias() {  # alias canonical-name
  local out
  out=$("$bin" --enable-scheme "$1" --kubeconfig "$bad_kc" --metrics-bind-address 0 \
        --health-probe-bind-address 0 2>&1)
  if [[ $out != *"enabled frameworks: $2"$'\n'* && $out != *"enabled frameworks: $2" ]]; then
    echo "FAIL: --enable-scheme $1 did not enable exactly $2: $out"; fails=$((fails+1)); return
  fi
  echo "ok: --enable-scheme $1 -> $2"
}
for a in tfjob TFJob; do check_alias "$a" kubeflow.org/tfjob; done
for a in mxjob MXJOB; do check_alias "$a" kubeflow.org/mxjob; done
for a in xgboostjob XGBoostJob; do check_alias "$a" kubeflow.org/xgboostjob; done
for a in paddlejob PaddleJob; do check_alias "$a" kubeflow.org/paddlejob; done
# `training-operator manifests` prints the generated install files for the kinds asked for, and
# refuses an unknown one as a usage error (exit 2) naming it.
before=$fails
out=$("$bin" manifests --enable-scheme tfjob 2>&1) || { echo "FAIL: manifests --enable-scheme tfjob exited $?: $out"; fails=$((fails+1)); }
[[ $out == *"# manifests/rbac/cluster/cluster_role.yaml"* && $out == *'resources: ["tfjobs"]'* && $out != *pytorchjobs* ]] \
  || { echo "FAIL: manifests --enable-scheme tfjob printed: ${out:0:400}"; fails=$((fails+1)); }
out=$("$bin" manifests --enable-scheme no-such-kind 2>&1); rc=$?
[[ $rc == 2 && $out == *no-such-kind* ]] || { echo "FAIL: manifests --enable-scheme no-such-kind: exit $rc: $out"; fails=$((fails+1)); }
(( fails == before )) && echo "ok: training-operator manifests"
echo "$fails failure(s)"
exit $fails
