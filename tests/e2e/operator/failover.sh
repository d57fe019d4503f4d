#!/usr/bin/env bash
# Leader election with real processes: operators A and B with --leader-elect against one
# build/bin/localcluster.
#  1. exactly one leads: leader_election_master_status is 1 on A and 0 on B, B reconciles nothing,
#     and /readyz is 200 on both (the follower's caches are synced too);
#  2. kill -9 of A: B takes over within the lease duration plus one retry period, finishes A's
#     running job and runs a job submitted while nobody led, creating no pod twice;
#  3. SIGTERM of B (with C following): B stops within 30 s with exit 0 and releases the lease, so
#     C takes over at its next retry instead of after the 15 s expiry;
# A and B run with a 6 s lease (renew deadline 5 s, retry period 1 s) so the takeover after kill -9
# takes seconds, not 15-19 s; C keeps the default 15 s lease (with a 1 s retry period), so taking
# over within 12 s of B's exit proves the lease was released rather than left to expire.
#  4. SIGTERM of C after the API server died: still a clean stop (exit 0, not the 30 s graceful-stop bound).
# Pod creations are counted per name from a watch on the cluster that runs the whole time.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 lc=$2 src=$3
require_tools kubectl curl
make_workdir
lease=failover-e2e.unitrain.io
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
dump() {
  for n in a b c; do [[ -f $work/$n.log ]] && { echo "--- operator $n log (tail)"; tail -15 "$work/$n.log"; }; done
}
fail() { echo "FAIL: $*"; dump; exit 1; }
k() { timeout 30 kubectl --kubeconfig "$work/kubeconfig" --request-timeout=20s "$@"; }

"$lc" --listen 127.0.0.1:0 --kubeconfig-out "$work/kubeconfig" >"$work/cluster.out" 2>"$work/cluster.log" &
cluster=$!
pids+=($cluster)
for _ in $(seq 100); do grep -q '^ready ' "$work/cluster.out" && break; sleep 0.1; done
grep -q '^ready ' "$work/cluster.out" || fail "localcluster did not print 'ready <url>'"
k apply --server-side -k "$src/manifests/crds" >/dev/null || fail "installing the CRDs"
for _ in $(seq 50); do k get pytorchjobs -A >/dev/null 2>&1 && break; sleep 0.2; done

# Every pod ADDED event with its uid: a pod created twice shows up as one name with two uids.
kubectl --kubeconfig "$work/kubeconfig" get pods -A --watch --output-watch-events \
  -o jsonpath='{.type} {.object.metadata.name} {.object.metadata.uid}{"\n"}' >"$work/pod-events" 2>&1 &
watcher=$!
pids+=($watcher)

declare -A pid_of metrics_of probes_of
start_operator() {  # name [election flags...]
  local n=$1; shift
  "$bin" --leader-elect --leader-election-id "$lease" --leader-election-namespace default "$@" \
    --kubeconfig "$work/kubeconfig" --disable-webhooks --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
    >/dev/null 2>"$work/$n.log" &
  pid_of[$n]=$!
  pids+=($!)
  metrics_of[$n]=$(logged_port --metrics-bind-address "$work/$n.log" "${pid_of[$n]}")
  probes_of[$n]=$(logged_port --health-probe-bind-address "$work/$n.log" "${pid_of[$n]}")
  [[ -n ${metrics_of[$n]} && -n ${probes_of[$n]} ]] || fail "operator $n did not log its ports"
}
metrics() { curl -sf "http://127.0.0.1:${metrics_of[$1]}/metrics"; }
master_status() { metrics "$1" | sed -n "s/^leader_election_master_status{name=\"$lease\"} //p"; }
ready() { curl -sf "http://127.0.0.1:${probes_of[$1]}/readyz" >/dev/null; }
reconciles() {  # sum of controller_runtime_reconcile_total on operator $1
  metrics "$1" | awk '/^controller_runtime_reconcile_total\{/ { s += $2 } END { print s + 0 }'
}
wait_for() {  # seconds description command...
  local secs=$1 what=$2; shift 2
  local t0=$SECONDS
  until "$@"; do (( SECONDS - t0 >= secs )) && fail "$what not within $secs s"; sleep 0.2; done
}
is_master() { [[ $(master_status "$1") == 1 ]]; }
holder() { k get lease "$lease" -n default -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
identity() { sed -n 's/.*campaigning for lease [^ ]* as \(.*\)$/\1/p' "$work/$1.log"; }
submit() {  # name seconds-per-pod
  sed -e "s/name: pytorch-demo/name: $1/" -e "s/sim.unitrain.io\/duration: \"2s\"/sim.unitrain.io\/duration: \"$2s\"/" \
    "$src/examples/pytorch.yaml" | k apply -f - >/dev/null || fail "submitting $1"
}
phase() { k get pytorchjob "$1" -n default -o jsonpath='{.status.conditions[-1:].type}' 2>/dev/null; }
succeeded() { [[ $(phase "$1") == Succeeded ]]; }
pod_count() { k get pods -n default -l "training.kubeflow.org/job-name=$1" --no-headers 2>/dev/null | wc -l; }

# --- 1. one leader, one ready follower
fast_lease=(--leader-elect-lease-duration 6s --leader-elect-renew-deadline 5s --leader-elect-retry-period 1s)
start_operator a "${fast_lease[@]}"
wait_for 30 "operator a leading" is_master a
start_operator b "${fast_lease[@]}"
wait_for 30 "operator b /readyz 200 while following" ready b
# Leading says nothing about a's caches: each replica syncs on its own, and on a busy machine a,
# started first, can still be listing when b is done.
wait_for 30 "leader a /readyz 200" ready a
[[ $(master_status b) == 0 ]] || fail "follower b: leader_election_master_status is '$(master_status b)', want 0"
[[ $(holder) == "$(identity a)" ]] || fail "lease holder '$(holder)' is not a ($(identity a))"
echo "ok: a leads (master_status 1), b follows (master_status 0), both ready"

# Long enough to still run when b takes over: within about 6 s + 2 x 2.2 s of the kill -9 below.
submit long-job 18
wait_for 30 "long-job's 3 pods" eval '[[ $(pod_count long-job) == 3 ]]'
sleep 1
[[ $(reconciles a) -gt 0 ]] || fail "leader a reconciled nothing"
[[ $(reconciles b) == 0 ]] || fail "follower b reconciled $(reconciles b) times"
grep -q 'started .*-controller workers' "$work/b.log" && fail "follower b started its workers"
echo "ok: only a reconciles ($(reconciles a) reconciles on a, 0 on b)"

# --- 2. kill -9 of the leader
kill -KILL "${pid_of[a]}"
killed_at=$SECONDS
wait "${pid_of[a]}" 2>/dev/null
submit orphan-job 2  # nobody leads now; the next leader must run it
wait_for 25 "b taking over after kill -9 of a" is_master b
takeover=$((SECONDS - killed_at))
echo "ok: b took over ${takeover} s after kill -9 (lease duration 6 s, retry period 1 s with jitter)"
[[ $(holder) == "$(identity b)" ]] || fail "lease holder '$(holder)' is not b"
wait_for 60 "long-job Succeeded under b" succeeded long-job
wait_for 30 "orphan-job Succeeded under b" succeeded orphan-job
[[ $(pod_count long-job) == 3 && $(pod_count orphan-job) == 3 ]] || fail "pods: long-job $(pod_count long-job), orphan-job $(pod_count orphan-job), want 3 each"
echo "ok: b finished long-job and orphan-job"

# --- 3. SIGTERM of the leader hands over at once
start_operator c --leader-elect-retry-period 1s
wait_for 30 "operator c /readyz 200 while following" ready c
[[ $(master_status c) == 0 ]] || fail "c leads while b holds the lease"
kill -TERM "${pid_of[b]}"
term_at=$SECONDS
wait "${pid_of[b]}"; rc=$?
stopped=$((SECONDS - term_at))
(( stopped <= 30 )) || fail "b took $stopped s to stop after SIGTERM"
[[ $rc == 0 ]] || fail "b exited $rc after SIGTERM"
grep -q 'stopped in' "$work/b.log" || fail "b did not log its graceful stop"
# Without a release C would wait for its 15 s expiry; with it, C's next retry (<= 2.2 s) wins.
wait_for 12 "c taking over the released lease" is_master c
handover=$((SECONDS - term_at))
echo "ok: b stopped in ${stopped} s (exit 0); c leads ${handover} s after SIGTERM"
submit after-handover 2
wait_for 30 "after-handover Succeeded under c" succeeded after-handover

# --- no pod was ever created twice
sleep 1
kill -0 "$watcher" 2>/dev/null || fail "the pod watch ended early; creations may be missing: $(tail -3 "$work/pod-events")"
dups=$(awk '$1 == "ADDED" && !seen[$2 " " $3]++ { uids[$2]++ } END { for (n in uids) if (uids[n] > 1) print n }' "$work/pod-events")
[[ -z $dups ]] || fail "pods created more than once: $dups"
created=$(awk '$1 == "ADDED" { print $2 }' "$work/pod-events" | sort -u | wc -l)
[[ $created == 9 ]] || fail "$created distinct pods were created, want 9 (3 jobs x 3)"
echo "ok: 9 pods created, each exactly once"

# --- 4. the API server goes away, then SIGTERM
kill -KILL "$watcher" "$cluster"
wait "$watcher" "$cluster" 2>/dev/null
sleep 1
t0=$SECONDS
kill -TERM "${pid_of[c]}"
wait "${pid_of[c]}"; rc=$?
[[ $rc == 0 ]] || fail "c exited $rc after SIGTERM with the API server gone (1: the 30 s graceful-stop bound ran out)"
echo "ok: c stopped in $((SECONDS - t0)) s after SIGTERM with the API server gone"
echo "PASS (takeover after kill -9: ${takeover} s; handover after SIGTERM: ${handover} s)"
