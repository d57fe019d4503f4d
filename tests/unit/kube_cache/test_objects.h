// Realistic objects for the informer and fake-client tests: a pod as a kubelet-managed
// PyTorchJob worker looks on a real cluster (managedFields, projected token volume, env,
// tolerations, four conditions), so memory figures mean something.
#pragma once

#include <string>

#include <fmt/format.h>

#include "core/json/json.h"
#include "core/kube/client.h"

namespace unitrain::kube::testing {

inline const GroupVersionResource kPods{"", "v1", "pods"};
inline const GroupVersionResource kServices{"", "v1", "services"};
inline const GroupVersionResource kLeases{"coordination.k8s.io", "v1", "leases"};
inline const GroupVersionResource kEvents{"", "v1", "events"};

inline json::Document realistic_pod(const std::string& ns, const std::string& name, const std::string& job = "job",
                                    const std::string& phase = "Running") {
  std::string text = fmt::format(R"({{
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {{
    "name": "{name}", "namespace": "{ns}",
    "labels": {{"training.kubeflow.org/job-name": "{job}", "training.kubeflow.org/operator-name": "pytorchjob-controller",
               "training.kubeflow.org/replica-index": "0", "training.kubeflow.org/replica-type": "worker"}},
    "annotations": {{"sidecar.istio.io/inject": "false", "kubectl.kubernetes.io/last-applied-configuration": "{{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\",\"metadata\":{{\"annotations\":{{}},\"name\":\"{job}\",\"namespace\":\"{ns}\"}},\"spec\":{{\"pytorchReplicaSpecs\":{{\"Worker\":{{\"replicas\":4,\"template\":{{\"spec\":{{\"containers\":[{{\"image\":\"docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727\",\"name\":\"pytorch\"}}]}}}}}}}}}}}}"}},
    "ownerReferences": [{{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "{job}", "uid": "uid-{job}",
                          "controller": true, "blockOwnerDeletion": true}}],
    "managedFields": [
      {{"manager": "training-operator", "operation": "Update", "apiVersion": "v1", "time": "2024-01-02T03:04:05Z",
        "fieldsType": "FieldsV1", "fieldsV1": {{"f:metadata": {{"f:labels": {{".": {{}}, "f:training.kubeflow.org/job-name": {{}},
        "f:training.kubeflow.org/operator-name": {{}}, "f:training.kubeflow.org/replica-index": {{}}, "f:training.kubeflow.org/replica-type": {{}}}},
        "f:ownerReferences": {{".": {{}}, "k:{{\"uid\":\"uid-{job}\"}}": {{}}}}}}, "f:spec": {{"f:containers": {{"k:{{\"name\":\"pytorch\"}}": {{".": {{}},
        "f:env": {{".": {{}}, "k:{{\"name\":\"MASTER_ADDR\"}}": {{".": {{}}, "f:name": {{}}, "f:value": {{}}}}, "k:{{\"name\":\"MASTER_PORT\"}}": {{".": {{}}, "f:name": {{}}, "f:value": {{}}}}}},
        "f:image": {{}}, "f:imagePullPolicy": {{}}, "f:name": {{}}, "f:ports": {{".": {{}}, "k:{{\"containerPort\":23456,\"protocol\":\"TCP\"}}": {{".": {{}}, "f:containerPort": {{}}, "f:name": {{}}, "f:protocol": {{}}}}}},
        "f:resources": {{}}, "f:terminationMessagePath": {{}}, "f:terminationMessagePolicy": {{}}}}}}, "f:dnsPolicy": {{}}, "f:enableServiceLinks": {{}},
        "f:restartPolicy": {{}}, "f:schedulerName": {{}}, "f:securityContext": {{}}, "f:terminationGracePeriodSeconds": {{}}}}}}}},
      {{"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2024-01-02T03:04:09Z", "fieldsType": "FieldsV1",
        "fieldsV1": {{"f:status": {{"f:conditions": {{"k:{{\"type\":\"ContainersReady\"}}": {{".": {{}}, "f:lastProbeTime": {{}}, "f:lastTransitionTime": {{}}, "f:status": {{}}, "f:type": {{}}}},
        "k:{{\"type\":\"Initialized\"}}": {{".": {{}}, "f:lastProbeTime": {{}}, "f:lastTransitionTime": {{}}, "f:status": {{}}, "f:type": {{}}}},
        "k:{{\"type\":\"Ready\"}}": {{".": {{}}, "f:lastProbeTime": {{}}, "f:lastTransitionTime": {{}}, "f:status": {{}}, "f:type": {{}}}}}},
        "f:containerStatuses": {{}}, "f:hostIP": {{}}, "f:phase": {{}}, "f:podIP": {{}}, "f:podIPs": {{".": {{}}, "k:{{\"ip\":\"10.244.1.17\"}}": {{".": {{}}, "f:ip": {{}}}}}}, "f:startTime": {{}}}}}}}}
    ]
  }},
  "spec": {{
    "volumes": [{{"name": "kube-api-access-x7k2p", "projected": {{"sources": [
      {{"serviceAccountToken": {{"expirationSeconds": 3607, "path": "token"}}}},
      {{"configMap": {{"name": "kube-root-ca.crt", "items": [{{"key": "ca.crt", "path": "ca.crt"}}]}}}},
      {{"downwardAPI": {{"items": [{{"path": "namespace", "fieldRef": {{"apiVersion": "v1", "fieldPath": "metadata.namespace"}}}}]}}}}],
      "defaultMode": 420}}}}],
    "containers": [{{"name": "pytorch", "image": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
      "command": ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"],
      "ports": [{{"name": "pytorchjob-port", "containerPort": 23456, "protocol": "TCP"}}],
      "env": [{{"name": "MASTER_PORT", "value": "23456"}}, {{"name": "MASTER_ADDR", "value": "{job}-master-0"}},
              {{"name": "WORLD_SIZE", "value": "5"}}, {{"name": "RANK", "value": "1"}}, {{"name": "PYTHONUNBUFFERED", "value": "1"}}],
      "resources": {{"limits": {{"cpu": "1", "memory": "2Gi"}}, "requests": {{"cpu": "500m", "memory": "1Gi"}}}},
      "volumeMounts": [{{"name": "kube-api-access-x7k2p", "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}}],
      "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}}],
    "restartPolicy": "OnFailure", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
    "serviceAccountName": "default", "serviceAccount": "default", "nodeName": "node-3", "securityContext": {{}},
    "schedulerName": "default-scheduler",
    "tolerations": [{{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}},
                    {{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}}],
    "priority": 0, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority"
  }},
  "status": {{
    "phase": "{phase}",
    "conditions": [
      {{"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2024-01-02T03:04:05Z"}},
      {{"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2024-01-02T03:04:09Z"}},
      {{"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2024-01-02T03:04:09Z"}},
      {{"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2024-01-02T03:04:05Z"}}],
    "hostIP": "172.18.0.4", "podIP": "10.244.1.17", "podIPs": [{{"ip": "10.244.1.17"}}], "startTime": "2024-01-02T03:04:05Z",
    "containerStatuses": [{{"name": "pytorch", "state": {{"running": {{"startedAt": "2024-01-02T03:04:08Z"}}}},
      "lastState": {{}}, "ready": true, "restartCount": 0,
      "image": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
      "imageID": "docker.io/kubeflowkatib/pytorch-mnist@sha256:4a3a8e4a4fb1d2fd5d3a6a0d1a6c8b4f7a0a7c3b8e0f5d6a9e4b2c1d0f3e5a7b9",
      "containerID": "containerd://9f2c4a1b7e3d5f6a8b0c2d4e6f8a0b1c3d5e7f9a1b2c3d4e5f6a7b8c9d0e1f2a", "started": true}}],
    "qosClass": "Burstable"
  }}
}})",
                                 fmt::arg("ns", ns), fmt::arg("name", name), fmt::arg("job", job),
                                 fmt::arg("phase", phase));
  auto d = json::Document::parse(text);
  return d ? std::move(*d) : json::Document();
}

inline json::Document simple_object(const std::string& ns, const std::string& name,
                                    const std::string& labels_json = "{}") {
  auto d = json::Document::parse(fmt::format(
      R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{}","namespace":"{}","labels":{}}},"status":{{"phase":"Pending"}}}})",
      name, ns, labels_json));
  return d ? std::move(*d) : json::Document();
}

}  // namespace unitrain::kube::testing
