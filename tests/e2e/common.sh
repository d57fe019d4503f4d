# Sourced by every e2e script (through its folder's lib.sh).

# require_tools TOOL...: a test that cannot run without TOOL reports itself skipped (exit 77, the
# SKIP_RETURN_CODE of every e2e test), never passed or failed. The lookup redirects nothing: with
# a broken /dev/null (seen on a shared machine) `command -v kubectl >/dev/null` fails, and every
# e2e test reported Skipped instead of Failed.
require_tools() {
  local tool
  for tool in "$@"; do
    [[ -n $(type -P "$tool") ]] || { echo "SKIPPED: $tool is not installed"; exit 77; }
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
