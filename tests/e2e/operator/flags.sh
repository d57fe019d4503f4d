#!/usr/bin/env bash
# Flag handling: --help lists the Kubeflow flags; bad values exit 2 and name the flag.
set -u
bin=$1
fails=0
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
         --leader-election-id --leader-election-namespace --metrics-bind-address \
         --health-probe-bind-address --kubeconfig --kube-api-qps --kube-api-burst --zap-log-level \
         --log-format --mpi-default-version --embedded-cluster --pytorch-init-container-image; do
  [[ $help == *"$f"* ]] || { echo "FAIL: --help does not list $f"; fails=$((fails+1)); }
done
check_bad --controller-threads --controller-threads 0
check_bad --controller-threads --controller-threads abc
check_bad --log-format --log-format xml
check_bad --zap-log-level --zap-log-level loud
check_bad --mpi-default-version --mpi-default-version v3
check_bad --enable-scheme --enable-scheme nosuchjob
check_bad --metrics-bind-address --metrics-bind-address 8080x
check_bad --kube-api-qps --kube-api-qps -1
check_bad --no-such-flag --no-such-flag
# Every kubeflow.org/v1 kind answers to its alias, case-insensitively (the operator logs what it
# enabled, then stops at the missing kubeconfig).
check_alias() {  # alias canonical-name
  local out
  out=$("$bin" --enable-scheme "$1" --kubeconfig /nonexistent --metrics-bind-address 0 \
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
exit $fails
