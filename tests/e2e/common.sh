# Sourced by every e2e script (through its folder's lib.sh).

# require_tools TOOL...: a test that cannot run without TOOL reports itself skipped (exit 77, the
# SKIP_RETURN_CODE of every e2e test), never passed or failed.
require_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "SKIPPED: $tool is not installed"; exit 77; }
  done
}

# make_workdir: sets `work` to a new temporary directory (the caller's EXIT trap removes it) and
# keeps kubectl's discovery and HTTP caches in it (KUBECACHEDIR): in ~/.kube/cache every run's
# kernel-picked port would leave more folders behind.
make_workdir() {
  work=$(mktemp -d)
  export KUBECACHEDIR=$work/kubectl-cache
}

# wait_until SECONDS COMMAND...: runs COMMAND every 0.1 s until it succeeds (status 0) or SECONDS
# have passed (status 1). Tests wait for a state this way, never for a fixed time.
wait_until() {
  local secs=$1 t0=$SECONDS
  shift
  until "$@"; do
    ((SECONDS - t0 < secs)) || return 1
    sleep 0.1
  done
}
