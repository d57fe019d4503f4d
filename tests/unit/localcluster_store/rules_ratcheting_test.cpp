// The x-kubernetes-validations rules of the JobSet v0.12, Kubeflow Trainer v2.3 and Kueue CRDs
// evaluated with kube-apiserver's error text, and validation ratcheting of unchanged values.
#include "helpers.h"
#include "localcluster/schema.h"
#include "localcluster/validation_rules.h"

namespace {

std::vector<std::string> rule_errors(const json::Document& object, const json::Document* old,
                                     const json::Document& schema) {
  std::vector<std::string> out;
  for (const auto& e : lc::validate_rules(object.root(), old ? &old->root() : nullptr, schema.root())) {
    out.push_back(e.full());
  }
  return out;
}

std::vector<std::string> schema_errors(const json::Document& object, const json::Document* old,
                                       const json::Document& schema) {
  std::vector<std::string> out;
  for (const auto& e : lc::validate_schema(object.root(), schema.root(), old ? &old->root() : nullptr)) {
    out.push_back(e.full());
  }
  return out;
}

// A root object whose `spec` property has `spec_schema` (a JSON object text).
json::Document under_spec(std::string_view spec_schema) {
  return doc(R"({"type": "object", "properties": {"spec": )" + std::string(spec_schema) + "}}");
}

json::Document with_spec(std::string_view spec) { return doc(R"({"spec": )" + std::string(spec) + "}"); }

struct UpstreamRule {
  const char* what;
  const char* spec_schema;  // the schema of `spec`, carrying the rule
  const char* good;         // a spec the rule accepts
  const char* bad;          // a spec the rule refuses
  const char* old;          // the stored spec for transition rules, else nullptr
  const char* error;        // kube-apiserver's field error for `bad`
};

// The rules as the CRDs declare them (rule and message verbatim), each on the schema node it
// sits on in its CRD.
const UpstreamRule kUpstreamRules[] = {
    {"JobSet spec: startupPolicy InOrder excludes dependsOn",
     R"({"type": "object", "x-kubernetes-validations": [{"rule": "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && self.replicatedJobs.exists(x, has(x.dependsOn)))", "message": "StartupPolicy and DependsOn APIs are mutually exclusive"}]})",
     R"({"startupPolicy": {"startupPolicyOrder": "AnyOrder"}, "replicatedJobs": [{"name": "a", "dependsOn": [{"name": "b"}]}]})",
     R"({"startupPolicy": {"startupPolicyOrder": "InOrder"}, "replicatedJobs": [{"name": "a"}, {"name": "b", "dependsOn": [{"name": "a"}]}]})",
     nullptr, R"(spec: Invalid value: "object": StartupPolicy and DependsOn APIs are mutually exclusive)"},
    {"JobSet: immutable field (network, successPolicy, failurePolicy, dependsOn)",
     R"({"type": "object", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "Value is immutable"}]})",
     R"({"subdomain": "a"})", R"({"subdomain": "b"})", R"({"subdomain": "a"})",
     R"(spec: Invalid value: "object": Value is immutable)"},
    {"JobSet volumeClaimPolicies: templates without a namespace",
     R"({"type": "object", "x-kubernetes-validations": [{"rule": "self.templates.all(t, !has(t.metadata.namespace) || size(t.metadata.namespace) == 0)", "message": "namespace cannot be set for VolumeClaimPolicies templates"}]})",
     R"({"templates": [{"metadata": {"name": "data"}}, {"metadata": {"name": "x", "namespace": ""}}]})",
     R"({"templates": [{"metadata": {"name": "data", "namespace": "other"}}]})", nullptr,
     R"(spec: Invalid value: "object": namespace cannot be set for VolumeClaimPolicies templates)"},
    {"Trainer mlPolicy: one policy source",
     R"({"type": "object", "x-kubernetes-validations": [{"rule": "[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),has(self.flux)].filter(x, x).size() <= 1", "message": "Only one of the policy can be configured"}]})",
     R"({"numNodes": 2, "torch": {}})", R"({"torch": {}, "mpi": {"numProcPerNode": 1}})", nullptr,
     R"(spec: Invalid value: "object": Only one of the policy can be configured)"},
    {"Trainer flux numProcPerNode",
     R"({"type": "object", "properties": {"numProcPerNode": {"type": "integer", "format": "int32", "x-kubernetes-validations": [{"rule": "self >= 1", "message": "NumProcPerNode in fluxPolicy must be >= 1"}]}}})",
     R"({"numProcPerNode": 1})", R"({"numProcPerNode": 0})", nullptr,
     R"(spec.numProcPerNode: Invalid value: "integer": NumProcPerNode in fluxPolicy must be >= 1)"},
    {"Trainer envInjection containerNames",
     R"({"type": "object", "properties": {"containerNames": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "x-kubernetes-validations": [{"rule": "!self.exists(c, c == 'node')", "message": "containerNames must not include the main node container because PET_* envs are always injected into it"}]}}})",
     R"({"containerNames": ["sidecar"]})", R"({"containerNames": ["sidecar", "node"]})", nullptr,
     R"(spec.containerNames: Invalid value: "array": containerNames must not include the main node container because PET_* envs are always injected into it)"},
    {"Trainer initializer storageUri",
     R"({"type": "object", "properties": {"storageUri": {"type": "string", "maxLength": 2048, "x-kubernetes-validations": [{"rule": "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')", "message": "storageUri may be empty, or it must be a valid URI (scheme://...)"}]}}})",
     R"({"storageUri": "hf://meta-llama/Llama-3.2-1B"})", R"({"storageUri": "meta-llama/Llama-3.2-1B"})", nullptr,
     R"(spec.storageUri: Invalid value: "string": storageUri may be empty, or it must be a valid URI (scheme://...))"},
    {"Trainer managedBy values",
     R"({"type": "object", "properties": {"managedBy": {"type": "string", "x-kubernetes-validations": [{"rule": "self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']", "message": "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set"}]}}})",
     R"({"managedBy": "kueue.x-k8s.io/multikueue"})", R"({"managedBy": "example.com/other"})", nullptr,
     R"(spec.managedBy: Invalid value: "string": ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set)"},
    {"Trainer trainerStatus lastUpdatedTime",
     R"({"type": "object", "x-kubernetes-validations": [{"rule": "has(self.lastUpdatedTime)", "message": "lastUpdatedTime is required when trainerStatus is present"}]})",
     R"({"progressPercentage": 10, "lastUpdatedTime": "2025-01-01T00:00:00Z"})", R"({"progressPercentage": 10})", nullptr,
     R"(spec: Invalid value: "object": lastUpdatedTime is required when trainerStatus is present)"},
    {"Trainer immutable trainer (field is immutable)",
     R"({"type": "object", "properties": {"trainer": {"type": "object", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "field is immutable"}]}}})",
     R"({"trainer": {"numNodes": 2}})", R"({"trainer": {"numNodes": 3}})", R"({"trainer": {"numNodes": 2}})",
     R"(spec.trainer: Invalid value: "object": field is immutable)"},
    {"Kueue ClusterQueue: borrowingLimit needs a cohort (ternary over has)",
     R"({"type": "object", "x-kubernetes-validations": [{"rule": "!has(self.cohort) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true", "message": "borrowingLimit must be nil when cohort is empty"}]})",
     R"({"cohort": "c", "resourceGroups": [{"flavors": [{"resources": [{"name": "cpu", "borrowingLimit": 1}]}]}]})",
     R"({"resourceGroups": [{"flavors": [{"resources": [{"name": "cpu"}, {"name": "memory", "borrowingLimit": "1Gi"}]}]}]})",
     nullptr, R"(spec: Invalid value: "object": borrowingLimit must be nil when cohort is empty)"},
    {"Kueue ResourceGroup: flavors cover the same resources (size of lists)",
     R"({"type": "object", "x-kubernetes-validations": [{"rule": "self.flavors.all(x, size(x.resources) == size(self.coveredResources))", "message": "flavors must have the same number of resources as the coveredResources"}]})",
     R"({"coveredResources": ["cpu"], "flavors": [{"resources": [{"name": "cpu"}]}]})",
     R"({"coveredResources": ["cpu", "memory"], "flavors": [{"resources": [{"name": "cpu"}]}]})", nullptr,
     R"(spec: Invalid value: "object": flavors must have the same number of resources as the coveredResources)"},
    {"Kueue: list items unique (nested filter)",
     R"({"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"}, "x-kubernetes-validations": [{"rule": "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0", "message": "must be unique"}]}}})",
     R"({"names": ["a", "b"]})", R"({"names": ["a", "b", "a"]})", nullptr,
     R"(spec.names: Invalid value: "array": must be unique)"},
    {"Kueue Topology: hostname only at the lowest level (index with an expression)",
     R"({"type": "object", "properties": {"levels": {"type": "array", "items": {"type": "object"}, "x-kubernetes-validations": [{"rule": "size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'", "message": "the kubernetes.io/hostname label can only be used at the lowest level of topology"}]}}})",
     R"({"levels": [{"nodeLabel": "rack"}, {"nodeLabel": "kubernetes.io/hostname"}]})",
     R"({"levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}]})", nullptr,
     R"(spec.levels: Invalid value: "array": the kubernetes.io/hostname label can only be used at the lowest level of topology)"},
    {"Kueue tolerations: operator values (in, has)",
     R"({"type": "object", "properties": {"tolerations": {"type": "array", "items": {"type": "object"}, "x-kubernetes-validations": [{"rule": "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])", "message": "supported toleration values: 'Equal'(default), 'Exists'"}]}}})",
     R"({"tolerations": [{"key": "a"}, {"key": "b", "operator": "Exists"}]})",
     R"({"tolerations": [{"key": "a", "operator": "NotIn"}]})", nullptr,
     R"(spec.tolerations: Invalid value: "array": supported toleration values: 'Equal'(default), 'Exists')"},
    {"Kueue: exactly one of (filter with x == true, size())",
     R"({"type": "object", "x-kubernetes-validations": [{"rule": "[has(self.kubeConfig),has(self.clusterProfileRef)].filter(x,x==true).size() == 1", "message": "exactly one of the fields in [kubeConfig clusterProfileRef] must be set"}]})",
     R"({"kubeConfig": {"location": "s"}})", R"({})", nullptr,
     R"(spec: Invalid value: "object": exactly one of the fields in [kubeConfig clusterProfileRef] must be set)"},
    {"Kueue Workload: queueName immutable while quota reserved (oldSelf, exists)",
     R"({"type": "object", "x-kubernetes-validations": [{"rule": "((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True')) && (has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True'))) ? ((has(oldSelf.spec.queueName) == has(self.spec.queueName)) && (!has(oldSelf.spec.queueName) || oldSelf.spec.queueName == self.spec.queueName)) : true", "message": "queueName is immutable while workload quota reserved"}]})",
     R"({"spec": {"queueName": "q1"}, "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}]}})",
     R"({"spec": {"queueName": "q2"}, "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}]}})",
     R"({"spec": {"queueName": "q1"}, "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}]}})",
     R"(spec: Invalid value: "object": queueName is immutable while workload quota reserved)"},
    {"Kueue Workload: maximumExecutionTimeSeconds immutable (ternaries inside ==)",
     R"({"type": "object", "x-kubernetes-validations": [{"rule": "((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')) && (has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')))?((has(oldSelf.spec.maximumExecutionTimeSeconds)?oldSelf.spec.maximumExecutionTimeSeconds:0) ==  (has(self.spec.maximumExecutionTimeSeconds)?self.spec.maximumExecutionTimeSeconds:0)):true", "message": "maximumExecutionTimeSeconds is immutable while workload quota reserved"}]})",
     R"({"spec": {}, "status": {"conditions": [{"type": "Admitted", "status": "True"}]}})",
     R"({"spec": {"maximumExecutionTimeSeconds": 60}, "status": {"conditions": [{"type": "Admitted", "status": "True"}]}})",
     R"({"spec": {}, "status": {"conditions": [{"type": "Admitted", "status": "True"}]}})",
     R"(spec: Invalid value: "object": maximumExecutionTimeSeconds is immutable while workload quota reserved)"},
    {"Kueue: has() compared with != ",
     R"({"type": "object", "x-kubernetes-validations": [{"rule": "has(self.universal) != has(self.individual)", "message": "exactly one of the fields in [universal individual] must be set"}]})",
     R"({"universal": 1})", R"({"universal": 1, "individual": {"roots": []}})", nullptr,
     R"(spec: Invalid value: "object": exactly one of the fields in [universal individual] must be set)"},
    {"Kueue PodSet: minCount <= count",
     R"({"type": "object", "x-kubernetes-validations": [{"rule": "has(self.minCount) ? self.minCount <= self.count : true", "message": "minCount should be positive and less or equal to count"}]})",
     R"({"count": 3, "minCount": 2})", R"({"count": 3, "minCount": 4})", nullptr,
     R"(spec: Invalid value: "object": minCount should be positive and less or equal to count)"},
};

}  // namespace

TEST_CASE("the CEL rules of the JobSet v0.12, Trainer v2.3 and Kueue CRDs, with kube-apiserver's error text") {
  for (const auto& r : kUpstreamRules) {
    INFO(r.what);
    auto schema = under_spec(r.spec_schema);
    auto good = with_spec(r.good);
    auto bad = with_spec(r.bad);
    std::optional<json::Document> old;
    if (r.old != nullptr) old = with_spec(r.old);
    CHECK(rule_errors(good, old ? &*old : nullptr, schema).empty());
    CHECK(rule_errors(bad, old ? &*old : nullptr, schema) == std::vector<std::string>{r.error});
  }
}

TEST_CASE("TrainJob's object-level rules on metadata.name, at the root (<nil>)") {
  auto schema = doc(R"({"type": "object", "x-kubernetes-validations": [
      {"rule": "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')", "message": "metadata.name must match RFC 1035 DNS label format"},
      {"rule": "size(self.metadata.name) <= 63", "message": "metadata.name must be no more than 63 characters"}]})");
  CHECK(rule_errors(doc(R"({"metadata": {"name": "job-1"}})"), nullptr, schema).empty());
  CHECK(rule_errors(doc(R"({"metadata": {"name": "1job"}})"), nullptr, schema) ==
        std::vector<std::string>{R"(<nil>: Invalid value: "object": metadata.name must match RFC 1035 DNS label format)"});
  CHECK(rule_errors(doc(R"({"metadata": {"name": ")" + std::string(64, 'a') + R"("}})"), nullptr, schema) ==
        std::vector<std::string>{R"(<nil>: Invalid value: "object": metadata.name must be no more than 63 characters)"});
}

TEST_CASE("ratcheting: an unchanged invalid value does not block an update; a changed one does") {
  auto schema = under_spec(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 3, "x-kubernetes-validations": [{"rule": "self.startsWith('a')", "message": "must start with a"}]},
      "replicas": {"type": "integer", "minimum": 1},
      "tags": {"type": "array", "items": {"type": "string", "maxLength": 2}},
      "workers": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"},
          "image": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 5", "message": "image too long"}]}}}},
      "frozen": {"type": "string", "x-kubernetes-validations": [{"rule": "oldSelf == 'never'", "message": "transition"}]},
      "probe": {"type": "object", "x-kubernetes-validations": [{"rule": "self.missing == 1", "message": "eval"}]}}})");
  auto old = with_spec(R"({"name": "bbbb", "replicas": 0, "tags": ["xyz", "ok"],
                           "workers": [{"name": "w0", "image": "toolong"}]})");

  // On create every error counts.
  CHECK(schema_errors(old, nullptr, schema) ==
        std::vector<std::string>{"spec.name: Too long: may not be more than 3 bytes",
                                 "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
                                 "spec.tags[0]: Too long: may not be more than 2 bytes"});
  CHECK(rule_errors(old, nullptr, schema) ==
        std::vector<std::string>{R"(spec.name: Invalid value: "string": must start with a)",
                                 R"(spec.workers[0].image: Invalid value: "string": image too long)"});

  // Another field changes: the unchanged invalid values are ratcheted, schema and CEL alike.
  auto other = with_spec(R"({"name": "bbbb", "replicas": 0, "tags": ["xyz", "ok"],
                             "workers": [{"name": "w0", "image": "toolong"}], "extra": 1})");
  CHECK(schema_errors(other, &old, schema).empty());
  CHECK(rule_errors(other, &old, schema).empty());

  // Changed values are checked: a new name, a new map-list item (the old one still ratchets),
  // and an atomic list with any change (its items do not correlate: all are checked).
  auto changed = with_spec(R"({"name": "cccc", "replicas": 0, "tags": ["xyz", "okk"],
                               "workers": [{"name": "w0", "image": "toolong"}, {"name": "w1", "image": "alsolong"}]})");
  CHECK(schema_errors(changed, &old, schema) ==
        std::vector<std::string>{"spec.name: Too long: may not be more than 3 bytes",
                                 "spec.tags[0]: Too long: may not be more than 2 bytes",
                                 "spec.tags[1]: Too long: may not be more than 2 bytes"});
  CHECK(rule_errors(changed, &old, schema) ==
        std::vector<std::string>{R"(spec.name: Invalid value: "string": must start with a)",
                                 R"(spec.workers[1].image: Invalid value: "string": image too long)"});

  // Transition rules and evaluation errors are never ratcheted.
  auto with_frozen = with_spec(R"({"frozen": "x", "probe": {}})");
  CHECK(rule_errors(with_frozen, &with_frozen, schema) ==
        std::vector<std::string>{R"(spec.frozen: Invalid value: "string": transition)",
                                 R"(spec.probe: Invalid value: "object": no such key: missing evaluating rule: eval)"});
}

TEST_CASE("ratcheting in the store: an object stored before a stricter CRD stays updatable") {
  auto s = new_store();
  const auto& crds = builtin("apiextensions.k8s.io", "customresourcedefinitions");
  auto crd = [](std::string_view name_schema) {
    return doc(R"({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
      "metadata": {"name": "widgets.example.com"},
      "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
          "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}, "name": )" +
               std::string(name_schema) + "}}}}}}]}}");
  };
  create_ok(*s, crds, "", crd(R"({"type": "string"})"));
  auto widgets = s->find_resource("example.com", "v1", "widgets");
  REQUIRE(widgets);
  REQUIRE(s->create(*widgets, "default",
                    doc(R"({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                            "spec": {"name": "bbbb", "size": 1}})")));
  // The CRD now limits and checks the name.
  auto stored_crd = s->get(crds, "", "widgets.example.com");
  REQUIRE(stored_crd);
  auto stricter = crd(R"({"type": "string", "maxLength": 3,
                          "x-kubernetes-validations": [{"rule": "self.startsWith('a')", "message": "must start with a"}]})");
  REQUIRE(json::set_string(stricter, "/metadata/resourceVersion", str(*stored_crd, "/metadata/resourceVersion")));
  REQUIRE(s->update(crds, "", "widgets.example.com", std::move(stricter)));

  REQUIRE(s->patch(*widgets, "default", "w", lc::PatchKind::Merge, R"({"spec": {"size": 2}})"));
  auto renamed = s->patch(*widgets, "default", "w", lc::PatchKind::Merge, R"({"spec": {"name": "cccc"}})");
  REQUIRE_FALSE(renamed);
  CHECK(renamed.error().message ==
        "Widget.example.com \"w\" is invalid: [spec.name: Too long: may not be more than 3 bytes, spec.name: Invalid "
        "value: \"string\": must start with a]");
}
