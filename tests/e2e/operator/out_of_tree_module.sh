#!/usr/bin/env bash
# An author's path end to end: install the plugin SDK from this build, build
# examples/plugins/echojob against it alone (a separate CMake project in a scratch directory;
# no include path into the repository), load it with --framework-module into an operator with
# --embedded-cluster, and run its example job to Succeeded.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 src=$2 build=$3
require_tools kubectl cmake ninja
# Under the build tree, at a fixed path: ccache (base_dir=/work) then reuses the SDK's objects.
scratch=$build/tests/out_of_tree_module
rm -rf "$scratch"
mkdir -p "$scratch"
pid=
cleanup() { [[ -n $pid ]] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$scratch"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [[ -f $scratch/stderr ]] && { echo "--- operator stderr (tail)"; tail -30 "$scratch/stderr"; }; exit 1; }

cmake --install "$build" --component plugin_sdk --prefix "$scratch/sdk" >"$scratch/install.log" \
  || fail "cmake --install --component plugin_sdk: $(tail -5 "$scratch/install.log")"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src/examples/plugins/echojob" -B "$scratch/echojob" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$scratch/sdk" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "${launcher[@]}" >"$scratch/configure.log" 2>&1 \
  || fail "configuring the example: $(tail -20 "$scratch/configure.log")"
cmake --build "$scratch/echojob" >"$scratch/build.log" 2>&1 || fail "building the example: $(tail -30 "$scratch/build.log")"
module=$scratch/echojob/echojob.so
[[ -f $module ]] || fail "no $module"
if grep -q -- "-I$src/core\|-I$src " "$scratch/echojob/compile_commands.json"; then
  fail "the example compiled with an include path into the repository"
fi
echo "built $module against the installed SDK"

"$bin" --embedded-cluster --kubeconfig-out "$scratch/kubeconfig" --metrics-bind-address 0 \
  --health-probe-bind-address 0 --framework-module "$module" --enable-scheme echojob \
  >"$scratch/stdout" 2>"$scratch/stderr" &
pid=$!
for _ in $(seq 150); do grep -q '^kubeconfig ' "$scratch/stdout" && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
kc=$(sed -n 's/^kubeconfig //p' "$scratch/stdout")
[[ -n $kc && -f $kc ]] || fail "no 'kubeconfig <path>' line on stdout"
kubectl --kubeconfig "$kc" get crd echojobs.example.unitrain.io >/dev/null || fail "the module's CRD is not installed"
kubectl --kubeconfig "$kc" apply -f "$src/examples/plugins/echojob/job.yaml" || fail "kubectl apply"
start=$SECONDS
phase=
while (( SECONDS - start < 90 )); do
  phase=$(kubectl --kubeconfig "$kc" get echojob echo-demo -n default -o jsonpath='{.status.conditions[-1:].type}' 2>/dev/null)
  [[ $phase == Succeeded || $phase == Failed ]] && break
  sleep 0.3
done
[[ $phase == Succeeded ]] || fail "echo-demo ended as '$phase' after $((SECONDS - start)) s"
rank=$(kubectl --kubeconfig "$kc" get pod echo-demo-worker-1 -n default \
       -o jsonpath='{.spec.containers[0].env[?(@.name=="ECHO_RANK")].value}')
[[ $rank == 1 ]] || fail "echo-demo-worker-1 has ECHO_RANK '$rank', want 1"
echo "echo-demo Succeeded in $((SECONDS - start)) s through the loaded module"
