#!/usr/bin/env bash
# The faults an administrator meets first are said at once, with their cause, in one log line
# per cause (not a flood), and /readyz names the same cause: a kubeconfig whose CA is not the
# server's, a wrong token, a server that refuses connections, a CRD that is not installed (with
# the command that installs it), a missing PodGroup CRD for --gang-scheduler-name. A CRD
# installed later is said to work again.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 lc=$2 src=$3
require_tools kubectl curl
make_workdir
pids=()
trap 'for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; wait "${pids[i]}" 2>/dev/null; done; rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

cluster() {  # name args...: a standalone local cluster; its kubeconfig is $work/<name>.kubeconfig
  local name=$1; shift
  "$lc" --listen 127.0.0.1:0 --kubeconfig-out "$work/$name.kubeconfig" --controllers none "$@" \
    >"$work/$name.out" 2>"$work/$name.log" &
  pids+=($!)
  for _ in $(seq 100); do grep -q '^ready ' "$work/$name.out" && return 0; sleep 0.1; done
  echo "FAIL: cluster $name did not start"; cat "$work/$name.log"; exit 1
}
declare -A probe
operator() {  # name kubeconfig args...: an operator whose log is $work/<name>.op.log
  local name=$1 kc=$2; shift 2
  "$bin" --kubeconfig "$kc" --enable-scheme pytorchjob --disable-webhooks --metrics-bind-address 0 \
    --health-probe-bind-address 127.0.0.1:0 "$@" >/dev/null 2>"$work/$name.op.log" &
  pids+=($!)
  probe[$name]=$(logged_port --health-probe-bind-address "$work/$name.op.log" "$!")
  [[ -n ${probe[$name]} ]] || { echo "FAIL: operator $name did not log its probe port"; tail "$work/$name.op.log"; exit 1; }
}
# expect name text...: within 10 s one log line holds every text; /readyz is 503 and its body
# holds the first; 3 s later the cause has still one line.
expect() {
  local name=$1; shift
  local log=$work/$name.op.log t0=$SECONDS line=
  until line=$(grep -F -- "$1" "$log" | head -1) && [[ -n $line ]]; do
    (( SECONDS - t0 > 10 )) && { fail "$name: no line with '$1' within 10 s"; tail -5 "$log"; return; }
    sleep 0.2
  done
  for text in "$@"; do
    [[ $line == *"$text"* ]] || fail "$name: the line lacks '$text': $line"
  done
  local code body
  code=$(curl -s -o "$work/body" -w '%{http_code}' "http://127.0.0.1:${probe[$name]}/readyz")
  body=$(cat "$work/body")
  [[ $code == 503 && $body == *"$1"* ]] || fail "$name: /readyz $code does not name the cause: $body"
  sleep 3
  local n; n=$(grep -cF -- "$1" "$log")
  (( n == 1 )) || fail "$name: $n lines with '$1' in 3+ s, want 1 (once per cause and interval)"
  echo "ok: $name: $line"
}
with_line() {  # file key value: the kubeconfig with the line "    key: ..." replaced
  sed "s|^    $2: .*|    $2: $3|" "$1"
}

cluster a --tls
cluster b --tls
cluster plain
url_a=$(sed -n 's/^ready //p' "$work/a.out")

# A kubeconfig that trusts another cluster's CA.
with_line "$work/a.kubeconfig" certificate-authority-data \
  "$(sed -n 's/^    certificate-authority-data: //p' "$work/b.kubeconfig")" >"$work/wrong-ca.kubeconfig"
operator wrong-ca "$work/wrong-ca.kubeconfig"
# A kubeconfig with a token the server does not know.
with_line "$work/a.kubeconfig" token '"not-the-token"' >"$work/wrong-token.kubeconfig"
operator wrong-token "$work/wrong-token.kubeconfig"
# A server that is not there: a port nothing listens on (taken from a cluster that stopped).
cluster gone
url_gone=$(sed -n 's/^ready //p' "$work/gone.out")
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null; unset 'pids[-1]'
operator refused "$work/gone.kubeconfig"
# No CRD at all.
operator no-crd "$work/plain.kubeconfig"

expect wrong-ca "certificate verification failed" "request to the API server at $url_a failed" \
  "the server's certificate is" "expected a certificate issued by the CA"
expect wrong-token "rejected this client's credentials" "the API server at $url_a" "the kubeconfig's bearer token" "401"
expect refused "Connection refused" "request to the API server at $url_gone failed"
expect no-crd "the CustomResourceDefinition pytorchjobs.kubeflow.org is not installed" \
  "install it with: kubectl apply --server-side -f manifests/crds/kubeflow.org_pytorchjobs.yaml"

# The CRD appears: the missing one works again; a gang scheduler without its PodGroup CRD.
timeout 30 kubectl --kubeconfig "$work/plain.kubeconfig" apply --server-side \
  -f "$src/manifests/crds/kubeflow.org_pytorchjobs.yaml" >/dev/null || fail "installing the pytorchjobs CRD"
operator no-podgroups "$work/plain.kubeconfig" --gang-scheduler-name volcano
expect no-podgroups \
  "the PodGroup CustomResourceDefinition podgroups.scheduling.volcano.sh that --gang-scheduler-name volcano needs is not installed" \
  "install Volcano"
t0=$SECONDS
until grep -q "list pytorchjobs.kubeflow.org in all namespaces works again" "$work/no-crd.op.log"; do
  (( SECONDS - t0 > 45 )) && { fail "no-crd: no 'works again' line 45 s after the CRD was installed"; break; }
  sleep 0.5
done
(( fails == 0 )) && echo "ok: the CRD installed later is said to work again"
echo "$fails failure(s)"
exit $fails
