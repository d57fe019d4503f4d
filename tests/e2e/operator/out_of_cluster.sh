#!/usr/bin/env bash
# The operator run out of a cluster, against a standalone local cluster, with its webhooks on:
#  - the certificate Secret's namespace missing: exit 1 at once with one error line naming the
#    namespace to create and the flag to set, no retries;
#  - the Secret goes to --webhook-namespace, else $MY_POD_NAMESPACE (the pod's namespace);
#  - --webhook-bind-address HOST:PORT and --webhook-host bind the webhook server to that address
#    (here loopback, not every interface), and it serves TLS there;
#  - conflicting or malformed webhook flags are usage errors (exit 2) naming the flag;
#  - SIGTERM stops each running operator within a few seconds, exit 0.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 lc=$2
require_tools kubectl curl ss
make_workdir
pids=()
trap 'for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -KILL "${pids[i]}" 2>/dev/null; wait "${pids[i]}" 2>/dev/null; done; rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
"$lc" --listen 127.0.0.1:0 --kubeconfig-out "$work/kubeconfig" >"$work/cluster.out" 2>"$work/cluster.log" &
pids+=($!)
wait_until 20 grep -q '^ready ' "$work/cluster.out" || { echo "FAIL: the local cluster did not start"; exit 1; }
k() { timeout 30 kubectl --kubeconfig "$work/kubeconfig" --request-timeout=20s "$@"; }
printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n' ml-env ml-flag | k apply -f - >/dev/null ||
  { echo "FAIL: namespaces"; exit 1; }

common=(--kubeconfig "$work/kubeconfig" --enable-scheme pytorchjob --metrics-bind-address 0 --health-probe-bind-address 0)
op=
start() {  # log operator-flags...
  local log=$1; shift
  "$bin" "${common[@]}" "$@" >/dev/null 2>"$work/$log" &
  op=$!
  pids+=($op)
}
term() {  # what
  local t0 rc ms
  t0=$(date +%s%3N)
  kill -TERM "$op"; wait "$op"; rc=$?
  ms=$(($(date +%s%3N) - t0))
  unset 'pids[-1]'
  [[ $rc == 0 ]] || { fail "$1: exit $rc after SIGTERM (in $ms ms)"; return; }
  ((ms <= 5000)) || { fail "$1: stopped in $ms ms, want at most 5 s"; return; }
  echo "ok: $1: SIGTERM stopped it in $ms ms"
}
webhook_port() { sed -n 's/.*--webhook-server-port serving HTTPS on port \([0-9]*\).*/\1/p' "$work/$1"; }
secret_in() { k get secret training-operator-webhook-cert -n "$1" -o name >/dev/null 2>&1; }

# --- the Secret's namespace does not exist ------------------------------------------------------
t0=$SECONDS
timeout 60 "$bin" "${common[@]}" --webhook-server-port 0 --webhook-namespace nowhere >/dev/null 2>"$work/missing.log"
rc=$?
errors=$(grep -c ' error ' "$work/missing.log")
line=$(grep ' error ' "$work/missing.log")
if [[ $rc == 1 && $errors == 1 && $line == *'namespace "nowhere"'*'kubectl create namespace nowhere'*'--webhook-namespace'* ]]; then
  echo "ok: a missing Secret namespace: exit 1 after $((SECONDS - t0)) s with one line: ${line#* error }"
else
  fail "a missing Secret namespace: exit $rc, $errors error line(s):"; cat "$work/missing.log"
fi
# The same without the flag: the default namespace, kubeflow, does not exist here either.
timeout 60 "$bin" "${common[@]}" --webhook-server-port 0 >/dev/null 2>"$work/default.log"
rc=$?
[[ $rc == 1 ]] && grep -q 'kubectl create namespace kubeflow' "$work/default.log" &&
  echo "ok: the default namespace kubeflow, missing, is named" || { fail "default namespace: exit $rc"; cat "$work/default.log"; }

# --- where the Secret goes ------------------------------------------------------------------------
MY_POD_NAMESPACE=ml-env start env.log --webhook-bind-address 127.0.0.1:0
wait_until 20 secret_in ml-env && echo "ok: \$MY_POD_NAMESPACE=ml-env: the Secret is in ml-env" ||
  { fail "no Secret in ml-env"; tail -5 "$work/env.log"; }
wait_until 10 test -n "$(webhook_port env.log)" || fail "no webhook port logged"
port=$(webhook_port env.log)
# Bound to loopback only: the listening socket is 127.0.0.1:PORT, not *:PORT or 0.0.0.0:PORT.
listening=$(ss -Hltn "sport = :$port" | awk '{print $4}')
[[ $listening == "127.0.0.1:$port" ]] && echo "ok: --webhook-bind-address 127.0.0.1:0 listens on $listening" ||
  fail "--webhook-bind-address 127.0.0.1:0 listens on '$listening'"
served() { [[ $(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$port/validate") == 405 ]]; }
wait_until 20 served && echo "ok: it serves TLS there (GET answered 405)" || fail "no TLS answer on 127.0.0.1:$port"
term "\$MY_POD_NAMESPACE, --webhook-bind-address"

MY_POD_NAMESPACE=ml-env start flag.log --webhook-namespace ml-flag --webhook-host 127.0.0.1 --webhook-server-port 0
wait_until 20 secret_in ml-flag && echo "ok: --webhook-namespace ml-flag wins over \$MY_POD_NAMESPACE" ||
  { fail "no Secret in ml-flag"; tail -5 "$work/flag.log"; }
wait_until 10 test -n "$(webhook_port flag.log)" || fail "no webhook port logged"
port=$(webhook_port flag.log)
listening=$(ss -Hltn "sport = :$port" | awk '{print $4}')
[[ $listening == "127.0.0.1:$port" ]] && echo "ok: --webhook-host 127.0.0.1 listens on $listening" ||
  fail "--webhook-host 127.0.0.1 listens on '$listening'"
term "--webhook-namespace, --webhook-host"

# --- usage errors ---------------------------------------------------------------------------------
check_bad() {  # flag args...
  local flag=$1 out rc
  shift
  out=$("$bin" "$@" 2>&1); rc=$?
  [[ $rc == 2 && $out == *"$flag"* ]] && echo "ok: $* -> exit 2 naming $flag" || fail "$*: exit $rc: $out"
}
check_bad --webhook-bind-address --webhook-bind-address 127.0.0.1:9443 --webhook-server-port 9443
check_bad --webhook-bind-address --webhook-bind-address 127.0.0.1:9443 --webhook-host 127.0.0.1
check_bad --webhook-bind-address --webhook-bind-address localhost
check_bad --webhook-namespace --webhook-namespace Not_A_Namespace

echo "$fails failure(s)"
exit $fails
