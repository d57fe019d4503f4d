#!/usr/bin/env bash
# operator --embedded-cluster with webhooks: /readyz waits for certificates; the Secret, the
# webhook configurations and the served certificate agree; validating, defaulting and /convert
# answer over HTTPS; with a 12 s certificate validity the certificates rotate (a quarter, 3 s,
# before expiry) and every call made through the rotation (trusting the caBundle the configuration
# holds at that moment) succeeds.
set -u
source "$(dirname "$0")/lib.sh"
bin=$1 src=$2
require_tools kubectl curl openssl
make_workdir
"$bin" --embedded-cluster --kubeconfig-out "$work/kubeconfig" --metrics-bind-address 0 \
  --health-probe-bind-address 127.0.0.1:0 --webhook-cert-validity 12s \
  --crd-dir "$src/manifests/crds" >"$work/stdout" 2>"$work/stderr" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- operator stderr (tail)"; tail -30 "$work/stderr"; exit 1; }

for _ in $(seq 100); do grep -q '^kubeconfig ' "$work/stdout" && break; sleep 0.2; done
kc=$(sed -n 's/^kubeconfig //p' "$work/stdout")
[[ -n $kc && -f $kc ]] || fail "no 'kubeconfig <path>' line on stdout"
# Ports the kernel picked (fixed ones could clash with tests running in parallel).
probe_port=$(logged_port --health-probe-bind-address "$work/stderr" "$pid")
[[ -n $probe_port ]] || fail "no '--health-probe-bind-address serving on port' line in the log"
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$probe_port/readyz" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$probe_port/readyz" >/dev/null || fail "/readyz not 200 within 20 s"
port=$(sed -n 's/.*--webhook-server-port serving HTTPS on port \([0-9]*\).*/\1/p' "$work/stderr")
[[ -n $port ]] || fail "no webhook port in the log"
k() { kubectl --kubeconfig "$kc" "$@"; }

ca_of_config() { k get validatingwebhookconfiguration validator.training-operator.kubeflow.org \
                   -o jsonpath='{.webhooks[0].clientConfig.caBundle}' | base64 -d; }
# The Secret and the configurations are written one after the other at each rotation: they agree
# once both reads fall between two rotations (three tries, each a fresh pair).
agree=
for _ in 1 2 3; do
  ca_of_config >"$work/ca.pem" || fail "no caBundle in validator.training-operator.kubeflow.org"
  k get secret -n kubeflow training-operator-webhook-cert -o jsonpath='{.data.ca\.crt}' | base64 -d \
    | cmp -s - "$work/ca.pem" && agree=yes && break
done
[[ -n $agree ]] || fail "the Secret's ca.crt differs from the configuration's caBundle"
url=$(k get validatingwebhookconfiguration validator.training-operator.kubeflow.org \
        -o jsonpath='{.webhooks[?(@.name=="validator.pytorchjob.training-operator.kubeflow.org")].clientConfig.url}')
[[ $url == "https://127.0.0.1:$port/validate-kubeflow-org-v1-pytorchjob" ]] || fail "webhook url is '$url'"
policies=$(k get validatingwebhookconfiguration validator.training-operator.kubeflow.org \
           -o jsonpath='{.webhooks[*].matchPolicy}' | tr ' ' '\n' | sort -u)
[[ $policies == Exact ]] || fail "validating webhooks have matchPolicy '$policies', not only Exact"
# Defaults are not persisted: a defaulting webhook is registered only for a kind two built-in
# modules serve (MPIJob v1 and v2beta1, even with v1 not enabled here), where it records which
# module owns a job (mpi_side_by_side.sh checks the pair), and for a kind whose reference
# persists its defaults (JobSet, on CREATE); every other one would change nothing.
mutating=$(k get mutatingwebhookconfiguration defaulter.training-operator.kubeflow.org -o jsonpath='{.webhooks[*].name}')
[[ $mutating == "defaulter.mpijob-v2beta1.training-operator.kubeflow.org defaulter.jobset.training-operator.kubeflow.org" ]] \
  || fail "defaulting webhooks registered beyond the shared MPIJob kind and JobSet: '$mutating'"

review='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"kubeflow.org","version":"v1","kind":"PyTorchJob"},"resource":{"group":"kubeflow.org","version":"v1","resource":"pytorchjobs"},"operation":"CREATE","object":{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"bad"},"spec":{}}}}'
call() { curl -sS --max-time 5 --cacert "$1" "https://127.0.0.1:$port$2" -H 'Content-Type: application/json' -d "$3"; }
# The certificates live 12 s: a bundle read a few kubectl calls ago may already be rotated out on a
# busy machine, so each call trusts the bundle registered now, and one that races the swap is
# retried with the re-read bundle (as the loop below does).
call_current() {
  ca_of_config >"$work/now.pem" && call "$work/now.pem" "$@" 2>/dev/null && return
  ca_of_config >"$work/now.pem" && call "$work/now.pem" "$@"
}
out=$(call_current /validate-kubeflow-org-v1-pytorchjob "$review") || fail "validating webhook call"
grep -q '"allowed":false' <<<"$out" && grep -q '"field":"spec.pytorchReplicaSpecs"' <<<"$out" \
  || fail "invalid PyTorchJob not denied with its field path: $out"
echo "validating webhook denies spec.pytorchReplicaSpecs"
convert='{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"c1","desiredAPIVersion":"kubeflow.org/v1","objects":[{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"pi"},"spec":{"sshAuthMountPath":"/home/mpiuser/.ssh"}}]}}'
out=$(call_current /convert "$convert") || fail "/convert call"
grep -q '"apiVersion":"kubeflow.org/v1"' <<<"$out" && grep -q 'mpijob-v2beta1-fields' <<<"$out" \
  && grep -q '"status":"Success"' <<<"$out" || fail "/convert: $out"
echo "/convert turns a v2beta1 MPIJob into v1 with its v2beta1-only fields in an annotation"

# Through a rotation: every call trusts the caBundle currently registered (as the API server does);
# a call that races the swap is retried once with the re-read bundle.
first_serial=$(openssl x509 -noout -serial -in "$work/ca.pem")
failures=0 calls=0 rotated=
start=$SECONDS
while (( SECONDS - start < 30 )); do
  ca_of_config >"$work/now.pem"
  if ! call "$work/now.pem" /validate-kubeflow-org-v1-pytorchjob "$review" 2>/dev/null | grep -q '"uid":"u1"'; then
    ca_of_config >"$work/now.pem"
    call "$work/now.pem" /validate-kubeflow-org-v1-pytorchjob "$review" | grep -q '"uid":"u1"' || failures=$((failures + 1))
  fi
  calls=$((calls + 1))
  [[ $(openssl x509 -noout -serial -in "$work/now.pem") != "$first_serial" ]] && rotated=yes
  [[ -n $rotated ]] && (( calls > 20 )) && break
  sleep 0.1
done
[[ -n $rotated ]] || fail "the CA was not rotated within 30 s of a 12 s validity"
(( failures == 0 )) || fail "$failures of $calls webhook calls failed through the rotation"
grep -c 'webhook server serving a certificate' "$work/stderr" | grep -qv '^1$' || fail "the server did not reload its certificate"
echo "certificates rotated; $calls webhook calls through the rotation all answered"
curl -sf "http://127.0.0.1:$probe_port/readyz" >/dev/null || fail "/readyz not 200 after the rotation"
