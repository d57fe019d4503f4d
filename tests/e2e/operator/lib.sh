# Shared by the operator e2e scripts (sourced).
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

# logged_port FLAG LOG PID: the port the operator logged as "FLAG serving on port N" (ports are
# kernel-picked so that tests can run side by side). Waits up to 10 s while PID lives; prints
# nothing and fails when the line never comes.
logged_port() {
  local flag=$1 log=$2 pid=$3 port
  for _ in $(seq 100); do
    port=$(sed -n "s/.*$flag serving on port \([0-9]*\).*/\1/p" "$log")
    [[ -n $port ]] && { echo "$port"; return 0; }
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
