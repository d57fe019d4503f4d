#include "localcluster/builtin_resources.h"

namespace unitrain::localcluster {
namespace {

ResourceInfo with_scale(ResourceInfo r) {
  r.has_scale = true;
  return r;
}

const std::vector<std::string> kAllVerbs = {"create", "delete", "deletecollection", "get",
                                            "list",   "patch",  "update",           "watch"};

ResourceInfo make(std::string group, std::string version, std::string plural, std::string singular, std::string kind,
                  bool namespaced, bool status, std::vector<std::string> short_names,
                  std::vector<std::string> categories = {}, std::vector<std::string> verbs = kAllVerbs) {
  ResourceInfo r;
  r.group = std::move(group);
  r.version = std::move(version);
  r.resource = std::move(plural);
  r.singular = std::move(singular);
  r.list_kind = kind + "List";
  r.kind = std::move(kind);
  r.namespaced = namespaced;
  r.has_status = status;
  r.short_names = std::move(short_names);
  r.categories = std::move(categories);
  r.verbs = std::move(verbs);
  return r;
}

std::vector<ResourceInfo> build() {
  const std::vector<std::string> all = {"all"};
  const std::vector<std::string> ext = {"api-extensions"};
  std::vector<ResourceInfo> v;
  // Namespaces have no deletecollection in kube-apiserver.
  v.push_back(make("", "v1", "namespaces", "namespace", "Namespace", false, true, {"ns"}, {},
                   {"create", "delete", "get", "list", "patch", "update", "watch"}));
  v.push_back(make("", "v1", "pods", "pod", "Pod", true, true, {"po"}, all));
  v.push_back(make("", "v1", "services", "service", "Service", true, true, {"svc"}, all));
  v.push_back(make("", "v1", "endpoints", "endpoints", "Endpoints", true, false, {"ep"}));
  v.push_back(make("", "v1", "configmaps", "configmap", "ConfigMap", true, false, {"cm"}));
  v.push_back(make("", "v1", "secrets", "secret", "Secret", true, false, {}));
  v.push_back(make("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", true, false, {"sa"}));
  v.push_back(make("", "v1", "nodes", "node", "Node", false, true, {"no"}));
  v.push_back(make("", "v1", "events", "event", "Event", true, false, {"ev"}));
  v.push_back(make("events.k8s.io", "v1", "events", "event", "Event", true, false, {"ev"}));
  v.push_back(make("rbac.authorization.k8s.io", "v1", "roles", "role", "Role", true, false, {}));
  v.push_back(make("rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding", true, false, {}));
  v.push_back(make("rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole", false, false, {}));
  v.push_back(make("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding",
                   "ClusterRoleBinding", false, false, {}));
  v.push_back(make("coordination.k8s.io", "v1", "leases", "lease", "Lease", true, false, {}));
  v.push_back(make("batch", "v1", "jobs", "job", "Job", true, true, {}, all));
  v.push_back(make("scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass", false, false,
                   {"pc"}));
  v.push_back(make("autoscaling", "v2", "horizontalpodautoscalers", "horizontalpodautoscaler",
                   "HorizontalPodAutoscaler", true, true, {"hpa"}, all));
  v.push_back(make("", "v1", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", true, true,
                   {"pvc"}));
  v.push_back(make("", "v1", "persistentvolumes", "persistentvolume", "PersistentVolume", false, true, {"pv"}));
  v.push_back(make("", "v1", "resourcequotas", "resourcequota", "ResourceQuota", true, true, {"quota"}));
  v.push_back(make("", "v1", "limitranges", "limitrange", "LimitRange", true, false, {"limits"}));
  v.push_back(with_scale(make("apps", "v1", "deployments", "deployment", "Deployment", true, true, {"deploy"}, all)));
  v.push_back(with_scale(make("apps", "v1", "replicasets", "replicaset", "ReplicaSet", true, true, {"rs"}, all)));
  v.push_back(with_scale(make("apps", "v1", "statefulsets", "statefulset", "StatefulSet", true, true, {"sts"}, all)));
  v.push_back(make("apps", "v1", "daemonsets", "daemonset", "DaemonSet", true, true, {"ds"}, all));
  v.push_back(make("apps", "v1", "controllerrevisions", "controllerrevision", "ControllerRevision", true, false, {}));
  v.push_back(make("storage.k8s.io", "v1", "storageclasses", "storageclass", "StorageClass", false, false, {"sc"}));
  v.push_back(make("policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", true, true,
                   {"pdb"}));
  v.push_back(make("networking.k8s.io", "v1", "networkpolicies", "networkpolicy", "NetworkPolicy", true, false,
                   {"netpol"}));
  v.push_back(make("networking.k8s.io", "v1", "ingresses", "ingress", "Ingress", true, true, {"ing"}));
  v.push_back(make("networking.k8s.io", "v1", "ingressclasses", "ingressclass", "IngressClass", false, false, {}));
  // Reviews are create-only and never stored: the server answers them (resource_handler.cpp).
  v.push_back(make("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "selfsubjectaccessreview",
                   "SelfSubjectAccessReview", false, false, {}, {}, {"create"}));
  v.push_back(make("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "selfsubjectrulesreview",
                   "SelfSubjectRulesReview", false, false, {}, {}, {"create"}));
  v.push_back(make("authorization.k8s.io", "v1", "subjectaccessreviews", "subjectaccessreview",
                   "SubjectAccessReview", false, false, {}, {}, {"create"}));
  v.push_back(make("authentication.k8s.io", "v1", "tokenreviews", "tokenreview", "TokenReview", false, false, {}, {},
                   {"create"}));
  v.push_back(make("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                   "mutatingwebhookconfiguration", "MutatingWebhookConfiguration", false, false, {}, ext));
  v.push_back(make("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                   "validatingwebhookconfiguration", "ValidatingWebhookConfiguration", false, false, {}, ext));
  v.push_back(make("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
                   "CustomResourceDefinition", false, true, {"crd", "crds"}, ext));
  return v;
}

}  // namespace

const std::vector<ResourceInfo>& builtin_resources() {
  // Immutable after first use; function-local static initialization is thread-safe.
  static const std::vector<ResourceInfo> table = build();
  return table;
}

}  // namespace unitrain::localcluster
