# Shared helpers of the local-cluster e2e scripts: start the binary on a free port, wait for its
# `ready <url>` line, stop it on exit. Every step runs under a timeout so nothing hangs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

die() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "--- $*"; }

# start_cluster BINARY WORKDIR [extra flags...]: sets CLUSTER_PID, CLUSTER_URL, KUBECONFIG.
start_cluster() {
  local bin=$1 work=$2
  shift 2
  [[ -x $bin ]] || die "localcluster binary not found at $bin"
  "$bin" --listen 127.0.0.1:0 --kubeconfig-out "$work/kubeconfig" "$@" >"$work/stdout" 2>"$work/stderr" &
  CLUSTER_PID=$!
  local line=""
  for _ in $(seq 1 100); do
    line=$(head -n1 "$work/stdout" 2>/dev/null || true)
    [[ $line == ready\ * ]] && break
    kill -0 "$CLUSTER_PID" 2>/dev/null || { cat "$work/stderr" >&2; die "localcluster exited before it was ready"; }
    sleep 0.1
  done
  [[ $line == ready\ * ]] || { cat "$work/stderr" >&2; die "no 'ready <url>' line within 10s"; }
  CLUSTER_URL=${line#ready }
  export KUBECONFIG=$work/kubeconfig
  echo "cluster at $CLUSTER_URL (pid $CLUSTER_PID)"
}

stop_cluster() {
  if [[ -n ${CLUSTER_PID:-} ]] && kill -0 "$CLUSTER_PID" 2>/dev/null; then
    kill -TERM "$CLUSTER_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$CLUSTER_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$CLUSTER_PID" 2>/dev/null; then
      kill -KILL "$CLUSTER_PID" 2>/dev/null || true
      echo "FAIL: localcluster did not stop within 5s of SIGTERM" >&2
      return 1
    fi
    wait "$CLUSTER_PID" 2>/dev/null || true
  fi
}

# k ARGS...: kubectl with a timeout; output on stdout, failures abort the script.
k() { timeout 30 kubectl --request-timeout=20s "$@"; }
