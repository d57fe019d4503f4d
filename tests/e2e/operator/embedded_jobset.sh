#!/usr/bin/env bash
# operator --embedded-cluster + kubectl: examples/jobset.yaml is defaulted by the JobSet webhook,
# listed with JobSet's printer columns, runs its Jobs under the headless Service and ends
# Completed; the validating webhook refuses a bad JobSet with upstream's message.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 src=$2
require_tools kubectl
make_workdir
"$bin" --embedded-cluster --kubeconfig-out "$work/kubeconfig" --metrics-bind-address 127.0.0.1:0 \
  --health-probe-bind-address 127.0.0.1:0 >"$work/stdout" 2>"$work/stderr" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- operator stderr (tail)"; tail -30 "$work/stderr"; exit 1; }

for _ in $(seq 100); do grep -q '^kubeconfig ' "$work/stdout" && break; sleep 0.2; done
kc=$(sed -n 's/^kubeconfig //p' "$work/stdout")
[[ -n $kc && -f $kc ]] || fail "no 'kubeconfig <path>' line on stdout"
k() { timeout 30 kubectl --kubeconfig "$kc" --request-timeout=20s "$@"; }

k apply -f "$src/examples/jobset.yaml" >/dev/null || fail "kubectl apply examples/jobset.yaml"
# The defaulting webhook wrote JobSet's defaults into the stored object.
defaults=$(k get jobset jobset-simple -o jsonpath='{.spec.successPolicy.operator} {.spec.startupPolicy.startupPolicyOrder} {.spec.network.enableDNSHostnames} {.spec.replicatedJobs[0].template.spec.completionMode} {.spec.replicatedJobs[0].template.spec.template.spec.restartPolicy}')
[[ $defaults == "All AnyOrder true Indexed OnFailure" ]] || fail "stored defaults are '$defaults'"

start=$SECONDS state=
while (( SECONDS - start < 90 )); do
  state=$(k get jobset jobset-simple -o jsonpath='{.status.terminalState}' 2>/dev/null)
  [[ -n $state ]] && break
  sleep 0.3
done
[[ $state == Completed ]] || fail "jobset-simple ended as '$state' after $((SECONDS - start)) s"
echo "jobset-simple Completed in $((SECONDS - start)) s"

header=$(k get jobsets | head -1)
[[ $header =~ ^NAME\ +TERMINALSTATE\ +RESTARTS\ +COMPLETED\ +SUSPENDED\ +AGE ]] || fail "kubectl get jobsets header is '$header'"
row=$(k get jobsets --no-headers)
[[ $row =~ ^jobset-simple\ +Completed\ +0\ +True ]] || fail "kubectl get jobsets row is '$row'"
jobs=$(k get jobs -l jobset.sigs.k8s.io/jobset-name=jobset-simple -o jsonpath='{range .items[*]}{.metadata.name} {end}')
[[ $jobs == "jobset-simple-driver-0 jobset-simple-workers-0 jobset-simple-workers-1 " ]] || fail "child Jobs are '$jobs'"
svc=$(k get service jobset-simple -o jsonpath='{.spec.clusterIP} {.spec.selector.jobset\.sigs\.k8s\.io/jobset-name}')
[[ $svc == "None jobset-simple" ]] || fail "headless Service is '$svc'"

bad='{"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"bad","namespace":"default"},
  "spec":{"successPolicy":{"operator":"All","targetReplicatedJobs":["ghost"]},
          "replicatedJobs":[{"name":"a","template":{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}}}]}}'
if out=$(k apply -f - <<<"$bad" 2>&1); then fail "a JobSet naming a missing replicatedJob was accepted"; fi
grep -q "invalid replicatedJob name 'ghost' does not appear in .spec.ReplicatedJobs" <<<"$out" || fail "refusal reads: $out"
echo "ok: defaults, printer columns, child Jobs, Service, Completed, webhook refusal"
