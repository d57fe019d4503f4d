#!/usr/bin/python3
"""Checks one rendered overlay (`kubectl kustomize` output on stdin) against what it promises.

usage: check_overlay.py OVERLAY SRC < rendered.yaml
Prints one FAIL line per broken promise and exits with their count.
"""
import sys

import yaml

overlay, src = sys.argv[1], sys.argv[2]
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
fails = []


def by_kind(kind):
    return [d for d in docs if d.get("kind") == kind]


def one(kind, name):
    found = [d for d in by_kind(kind) if d["metadata"]["name"] == name]
    if len(found) != 1:
        fails.append(f"{len(found)} {kind} {name}, want 1")
        return {}
    return found[0]


# What each overlay serves: MPIJob versions (storage first) and whether it has webhooks.
MPI = {"standalone": ["v2beta1", "v1"], "mpi-both": ["v2beta1", "v1"], "mpi-v1-only": ["v1"],
       "mpi-v2-only": ["v2beta1"], "namespaced": ["v2beta1"]}
WEBHOOKS = {"standalone": True, "mpi-both": True, "mpi-v1-only": True, "mpi-v2-only": True, "namespaced": False}
if overlay not in MPI:
    sys.exit(f"FAIL: {overlay}: unknown overlay; say in check_overlay.py what it serves")

crds = {d["spec"]["names"]["plural"]: d for d in by_kind("CustomResourceDefinition")}
# Every kind the generated crds kustomization installs (scripts/generate-manifests): no list here.
with open(f"{src}/manifests/crds/kustomization.yaml") as f:
    listed = yaml.safe_load(f)["resources"]
want_plurals = set()
for file in listed:
    with open(f"{src}/manifests/crds/{file}") as f:
        want_plurals.add(yaml.safe_load(f)["spec"]["names"]["plural"])
if set(crds) != want_plurals:
    fails.append(f"CRDs {sorted(crds)}, want {sorted(want_plurals)}")

mpi = crds.get("mpijobs", {"spec": {"versions": []}})
versions = [v["name"] for v in mpi["spec"]["versions"] if v.get("served")]
storage = [v["name"] for v in mpi["spec"]["versions"] if v.get("storage")]
if versions != MPI[overlay]:
    fails.append(f"mpijobs serves {versions}, want {MPI[overlay]}")
if storage != MPI[overlay][:1]:
    fails.append(f"mpijobs stores {storage}, want {MPI[overlay][:1]}")
conversion = mpi["spec"].get("conversion", {}).get("strategy", "None")
want_conversion = "Webhook" if len(MPI[overlay]) > 1 else "None"
if conversion != want_conversion:
    fails.append(f"mpijobs conversion {conversion}, want {want_conversion}")
if want_conversion == "Webhook" and conversion == "Webhook":
    svc = mpi["spec"]["conversion"]["webhook"]["clientConfig"]["service"]
    if (svc["namespace"], svc["name"], svc["path"]) != ("kubeflow", "training-operator", "/convert"):
        fails.append(f"mpijobs conversion calls {svc}")
# A single-version MPIJob CRD is exactly the single-version file in manifests/crds.
if len(MPI[overlay]) == 1:
    with open(f"{src}/manifests/crds/kubeflow.org_mpijobs_{MPI[overlay][0]}.yaml") as f:
        if yaml.safe_load(f)["spec"] != mpi["spec"]:
            fails.append(f"mpijobs differs from kubeflow.org_mpijobs_{MPI[overlay][0]}.yaml")

deployment = one("Deployment", "training-operator")
container = deployment.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [{}])[0]
args = container.get("args", [])
if f"--mpi-default-version={MPI[overlay][0]}" not in args:
    fails.append(f"Deployment args {args} lack --mpi-default-version={MPI[overlay][0]}")
if len(MPI[overlay]) == 1:
    other = {"v1": "mpijob-v2", "v2beta1": "mpijob-v1"}[MPI[overlay][0]]
    if f"--enable-scheme=*,-{other}" not in args:
        fails.append(f"Deployment args {args} do not disable {other}")
elif "--enable-scheme=*" not in args:
    fails.append(f"Deployment args {args} do not enable both MPIJob modules (--enable-scheme=*)")
if not container.get("image", "").startswith("unitrain/training-operator:"):
    fails.append(f"Deployment image {container.get('image')}")

# Every served kind and version has a validating and a defaulting webhook calling the operator's
# path for it, on the Service's webhook port.
validating = by_kind("ValidatingWebhookConfiguration")
mutating = by_kind("MutatingWebhookConfiguration")
if WEBHOOKS[overlay]:
    hooks = {"validate": one("ValidatingWebhookConfiguration", "validator.training-operator.kubeflow.org"),
             "mutate": one("MutatingWebhookConfiguration", "defaulter.training-operator.kubeflow.org")}
    for plural, crd in crds.items():
        kind = crd["spec"]["names"]["kind"].lower()
        for v in (v["name"] for v in crd["spec"]["versions"] if v.get("served")):
            for verb, config in hooks.items():
                path = f"/{verb}-kubeflow-org-{v}-{kind}"
                match = [h for h in config.get("webhooks", [])
                         if h["clientConfig"].get("service", {}).get("path") == path
                         and any(plural in r["resources"] and v in r["apiVersions"] and "CREATE" in r["operations"]
                                 for r in h["rules"])]
                if len(match) != 1:
                    fails.append(f"{len(match)} {verb} webhooks for {plural} {v} at {path}, want 1")
                elif match[0].get("matchPolicy") != "Exact" or match[0].get("failurePolicy") != "Fail":
                    fails.append(f"{verb} webhook {match[0]['name']}: matchPolicy/failurePolicy not Exact/Fail")
    one("Secret", "training-operator-webhook-cert")
    service = one("Service", "training-operator")
    if not any(p.get("port") == 443 and p.get("targetPort") == 9443 for p in service.get("spec", {}).get("ports", [])):
        fails.append("Service has no webhook port 443 -> 9443")
    if "--webhook-server-port=9443" not in args:
        fails.append("Deployment does not serve webhooks on 9443")
    env = {e["name"] for e in container.get("env", [])}
    if "MY_POD_NAMESPACE" not in env:
        fails.append("Deployment lacks MY_POD_NAMESPACE (the certificate Secret's namespace)")
    if not any(r["metadata"]["name"] == "training-operator-webhook" for r in by_kind("ClusterRole")):
        fails.append("no ClusterRole training-operator-webhook (caBundle patching)")
elif validating or mutating:
    fails.append("webhook configurations in an overlay without webhooks")

# Every namespaced object lands in kubeflow.
for d in docs:
    if d["kind"] in ("Deployment", "Service", "ServiceAccount", "Secret", "Role", "RoleBinding") and \
            d["metadata"].get("namespace") != "kubeflow":
        fails.append(f"{d['kind']} {d['metadata']['name']} in namespace {d['metadata'].get('namespace')}")

for f in fails:
    print(f"FAIL: {overlay}: {f}")
sys.exit(len(fails))
