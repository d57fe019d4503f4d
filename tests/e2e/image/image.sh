#!/usr/bin/env bash
# The container image, packaged from the binary this build made (scripts/build-image
# --from-binary: seconds; the default multi-stage build compiles the project again, minutes, and
# is run by hand, docs/install.md): it runs as UID/GID 65532 with the operator as entrypoint, it
# holds only the binary, the libraries and loader it links, the CA bundle and passwd/group, it
# stays small, and the binary runs from the image's own filesystem: --version, --help, and as the
# operator against a TLS local cluster, through which a PyTorchJob succeeds, then SIGTERM.
#
# It runs the image with `podman run` (or docker) where the sandbox allows; where the runtime is
# refused (podman in some sandboxes cannot set rlimits) it runs the image's exported root
# filesystem with unshare (new mount namespace, /proc, chroot, UID/GID 65532) as root, else through
# the image's own dynamic loader and libraries. Skipped where neither podman nor docker works.
#
# Usage: image.sh BINARY LOCALCLUSTER SOURCE_DIR [IMAGE]. With IMAGE (e.g. the one scripts/build-image
# built, docker.io/unitrain/training-operator:0.1.0) it checks that image, and keeps it, instead of
# packaging BINARY; BINARY still says which version to expect.
set -u
source "$(dirname "$0")/../operator/lib.sh"
bin=$1 lc=$2 src=$3 given=${4:-}
max_mib=32  # today about 18 MiB; an unstripped binary alone adds more than 20

require_tools kubectl curl tar
make_workdir
tool=
name=localhost/unitrain-e2e/training-operator-$$
ref=
pids=()
cid=
cleanup() {
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; wait "${pids[i]}" 2>/dev/null; done
  [[ -n $cid ]] && "$tool" rm -f "$cid" >"$work/rm.log" 2>&1
  [[ -n $ref ]] && "$tool" rmi -f "$ref" "$name:latest" >"$work/rmi.log" 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# The first of podman and docker that works (a docker client whose daemon does not answer does not).
why=()
for t in podman docker; do
  if [[ -z $(type -P "$t") ]]; then why+=("$t is not installed")
  elif "$t" info >"$work/$t-info.log" 2>&1; then tool=$t; break
  elif [[ $t == docker ]]; then why+=("'docker info' fails (no daemon answers)")
  else why+=("'$t info' fails: $(tail -n1 "$work/$t-info.log")")
  fi
done
if [[ -z $tool ]]; then
  echo "SKIPPED: no container tool works: ${why[0]}, ${why[1]}; 'scripts/build-image --install' (or apt-get install podman) enables this test"
  exit 77
fi
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

t0=$SECONDS
if [[ -n $given ]]; then
  size=$("$tool" image inspect --format '{{.Size}}' "$given") || { echo "FAIL: no image $given"; exit 1; }
  echo "ok: checking $given, $((size / 1024)) KiB"
else
  if ! out=$("$src/scripts/build-image" --from-binary "$bin" --name "$name" --tool "$tool" 2>"$work/build.log"); then
    echo "FAIL: scripts/build-image --from-binary failed:"; tail -30 "$work/build.log"; exit 1
  fi
  read -r _ ref size <<<"$(grep '^image ' <<<"$out")"
  [[ -n $ref && -n $size ]] || { echo "FAIL: build-image printed no 'image <ref> <size>' line: $out"; exit 1; }
  echo "ok: packaged $ref with $tool in $((SECONDS - t0)) s, $((size / 1024)) KiB"
fi
image=${given:-$ref}

# --- what the image says -----------------------------------------------------------------------
user=$("$tool" image inspect --format '{{.Config.User}}' "$image")
[[ $user == 65532:65532 ]] || fail "image user is '$user', want 65532:65532"
entrypoint=$("$tool" image inspect --format '{{json .Config.Entrypoint}}' "$image")
[[ $entrypoint == '["/usr/local/bin/training-operator"]' ]] || fail "entrypoint is $entrypoint"
version=$("$bin" --version)
label=$("$tool" image inspect --format '{{index .Config.Labels "org.opencontainers.image.version"}}' "$image")
[[ "training-operator $label" == "$version" ]] || fail "version label '$label' does not match '$version'"
# The limit is for release builds; a sanitizer build's binary alone is ten times larger.
if ldd "$bin" | grep -q libasan; then
  echo "note: $bin is a sanitizer build: its image ($((size / 1024 / 1024)) MiB) has no size limit"
else
  ((size <= max_mib * 1024 * 1024)) || fail "image is $((size / 1024 / 1024)) MiB, more than $max_mib MiB"
fi

# --- what it holds -----------------------------------------------------------------------------
cid=$("$tool" create "$image") || { echo "FAIL: $tool create $image"; exit 1; }
root=$work/root
mkdir -p "$root"
"$tool" export "$cid" | tar -C "$root" -x || { echo "FAIL: $tool export $image"; exit 1; }
# Besides the binary and its libraries only: passwd/group, the CA bundle and OpenSSL's link to it,
# and the empty mount points a container runtime adds to every container.
allowed='^(usr/local/bin/training-operator|etc/(passwd|group|ssl/certs/ca-certificates\.crt)|usr/lib/ssl/cert\.pem|(usr/)?lib[^/]*(/[^/]*-linux-gnu)?/[^/]+\.so(\.[0-9]+)*|\.dockerenv|etc/(hosts|hostname|resolv\.conf|mtab)|run/\.containerenv)$'
extra=$(cd "$root" && find . ! -type d -printf '%P\n' | grep -Ev "$allowed")
[[ -z $extra ]] || fail "the image holds more than the operator needs: $(tr '\n' ' ' <<<"$extra")"
[[ -x $root/usr/local/bin/training-operator ]] || fail "no /usr/local/bin/training-operator in the image"
# The API client's fallback trust store, where OpenSSL looks for it.
[[ -s $root/etc/ssl/certs/ca-certificates.crt && $(readlink "$root/usr/lib/ssl/cert.pem") == /etc/ssl/certs/ca-certificates.crt ]] ||
  fail "no CA bundle at /etc/ssl/certs/ca-certificates.crt linked from /usr/lib/ssl/cert.pem"
for f in bin/sh usr/bin/apt-get; do [[ ! -e $root/$f ]] || fail "the image has /$f"; done
echo "ok: user 65532:65532, entrypoint /usr/local/bin/training-operator, $(cd "$root" && find . ! -type d | wc -l) files"

# --- the binary runs from the image's filesystem -----------------------------------------------
way=
if run_out=$(timeout 120 "$tool" run --rm "$image" --version 2>&1); then
  way=run
elif [[ $(id -u) -eq 0 && -n $(type -P unshare) ]]; then
  way=unshare
  echo "note: '$tool run' is refused here ($(head -n1 <<<"$run_out")): running the exported root filesystem with unshare"
else
  way=loader
  echo "note: '$tool run' is refused here ($(head -n1 <<<"$run_out")) and unshare needs root: running the binary through the image's own loader"
fi
mkdir -p "$root/proc"
loader=$(cd "$root" && find . -path '*/ld-linux*.so*' ! -type d -printf '%P\n' | head -n1)
libpath=$(cd "$root" && find . -name '*.so*' ! -type d -printf '%h\n' | sort -u | sed "s:^\.:$root:" | paste -sd:)
# run_in_image ARGS...: the image's entrypoint with ARGS; $kubeconfig is where it sees $work/kubeconfig.
# Call it in a subshell ($(...) or &): it execs, so a background call's $! is the operator's process
# (or podman's, which passes signals on).
kubeconfig=/kubeconfig
[[ $way == loader ]] && kubeconfig=$root/kubeconfig
run_in_image() {
  case $way in
    run)
      local mount=()
      [[ -f $work/kubeconfig ]] && mount=(-v "$work/kubeconfig:/kubeconfig:ro")
      exec "$tool" run --rm --network host "${mount[@]}" "$image" "$@" ;;
    unshare) exec unshare --mount-proc --root="$root" --setuid 65532 --setgid 65532 /usr/local/bin/training-operator "$@" ;;
    loader) exec "$root/$loader" --library-path "$libpath" "$root/usr/local/bin/training-operator" "$@" ;;
  esac
}
out=$(run_in_image --version 2>&1); rc=$?
[[ $rc -eq 0 && $out == "$version" ]] || fail "--version in the image ($way): exit $rc, '$out', want '$version'"
out=$(run_in_image --help 2>&1); rc=$?
[[ $rc -eq 0 && $out == *"--enable-scheme"* ]] || fail "--help in the image ($way): exit $rc: $(head -n3 <<<"$out")"
((fails == 0)) && echo "ok: --version and --help run in the image ($way): $version"

# The operator from the image against a local cluster over HTTPS (the image's OpenSSL), with the
# kubeconfig's CA and bearer token: ready, a PyTorchJob succeeds, SIGTERM stops it with status 0.
"$lc" --listen 127.0.0.1:0 --tls --kubeconfig-out "$work/kubeconfig" >"$work/cluster.out" 2>"$work/cluster.log" &
pids+=($!)
wait_until 20 grep -q '^ready ' "$work/cluster.out" || { echo "FAIL: the local cluster did not start"; tail "$work/cluster.log"; exit 1; }
chmod 644 "$work/kubeconfig"
cp "$work/kubeconfig" "$root/kubeconfig"
k() { timeout 30 kubectl --kubeconfig "$work/kubeconfig" --request-timeout=20s "$@"; }
k apply --server-side -f "$src/manifests/crds/kubeflow.org_pytorchjobs.yaml" >/dev/null || { echo "FAIL: pytorchjobs CRD"; exit 1; }
run_in_image --kubeconfig "$kubeconfig" --enable-scheme pytorchjob --disable-webhooks --metrics-bind-address 0 \
  --health-probe-bind-address 127.0.0.1:0 >/dev/null 2>"$work/operator.log" &
op=$!
pids+=("$op")
port=$(logged_port --health-probe-bind-address "$work/operator.log" "$op")
[[ -n $port ]] || { echo "FAIL: the operator in the image did not start:"; tail -20 "$work/operator.log"; exit 1; }
ready_or_gone() { curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || ! kill -0 "$op" 2>/dev/null; }
wait_until 30 ready_or_gone && curl -sf "http://127.0.0.1:$port/readyz" >/dev/null ||
  { echo "FAIL: the operator in the image did not get ready within 30 s:"; tail -20 "$work/operator.log"; exit 1; }
k apply -f "$src/examples/pytorch.yaml" >/dev/null || fail "kubectl apply examples/pytorch.yaml"
phase() { k get pytorchjob pytorch-demo -n default -o jsonpath='{.status.conditions[-1:].type}' 2>/dev/null; }
finished() { [[ $(phase) == Succeeded || $(phase) == Failed ]]; }
wait_until 90 finished
[[ $(phase) == Succeeded ]] || fail "pytorch-demo is '$(phase)' under the operator from the image, want Succeeded"
kill -TERM "$op"
stop=$SECONDS
wait "$op"; rc=$?
unset 'pids[-1]'
[[ $rc -eq 0 ]] || fail "the operator from the image exited $rc after SIGTERM"
((fails == 0)) && echo "ok: the operator from the image ($way) ran pytorch-demo to Succeeded over TLS and stopped in $((SECONDS - stop)) s"
((fails == 0)) || { echo "--- operator log (tail)"; tail -20 "$work/operator.log"; }
echo "$fails failure(s)"
exit $fails
