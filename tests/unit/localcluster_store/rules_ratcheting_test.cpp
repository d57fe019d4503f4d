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
  return doc(R"r({"type": "object", "properties": {"spec": )r" + std::string(spec_schema) + "}}");
}

json::Document with_spec(std::string_view spec) { return doc(R"r({"spec": )r" + std::string(spec) + "}"); }

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
     R"r({"type": "object", "x-kubernetes-validations": [{"rule": "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && self.replicatedJobs.exists(x, has(x.dependsOn)))", "message": "StartupPolicy and DependsOn APIs are mutually exclusive"}]})r",
     R"r({"startupPolicy": {"startupPolicyOrder": "AnyOrder"}, "replicatedJobs": [{"name": "a", "dependsOn": [{"name": "b"}]}]})r",
     R"r({"startupPolicy": {"startupPolicyOrder": "InOrder"}, "replicatedJobs": [{"name": "a"}, {"name": "b", "dependsOn": [{"name": "a"}]}]})r",
     nullptr, R"r(spec: Invalid value: "object": StartupPolicy and DependsOn APIs are mutually exclusive)r"},
    {"JobSet: immutable field (network, successPolicy, failurePolicy, dependsOn)r",
     R"r({"type": "object", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "Value is immutable"}]})r",
     R"r({"subdomain": "a"})r", R"r({"subdomain": "b"})r", R"r({"subdomain": "a"})r",
     R"r(spec: Invalid value: "object": Value is immutable)r"},
    {"JobSet volumeClaimPolicies: templates without a namespace",
     R"r({"type": "object", "x-kubernetes-validations": [{"rule": "self.templates.all(t, !has(t.metadata.namespace) || size(t.metadata.namespace) == 0)", "message": "namespace cannot be set for VolumeClaimPolicies templates"}]})r",
     R"r({"templates": [{"metadata": {"name": "data"}}, {"metadata": {"name": "x", "namespace": ""}}]})r",
     R"r({"templates": [{"metadata": {"name": "data", "namespace": "other"}}]})r", nullptr,
     R"r(spec: Invalid value: "object": namespace cannot be set for VolumeClaimPolicies templates)r"},
    {"Trainer mlPolicy: one policy source",
     R"r({"type": "object", "x-kubernetes-validations": [{"rule": "[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),has(self.flux)].filter(x, x).size() <= 1", "message": "Only one of the policy can be configured"}]})r",
     R"r({"numNodes": 2, "torch": {}})r", R"r({"torch": {}, "mpi": {"numProcPerNode": 1}})r", nullptr,
     R"r(spec: Invalid value: "object": Only one of the policy can be configured)r"},
    {"Trainer flux numProcPerNode",
     R"r({"type": "object", "properties": {"numProcPerNode": {"type": "integer", "format": "int32", "x-kubernetes-validations": [{"rule": "self >= 1", "message": "NumProcPerNode in fluxPolicy must be >= 1"}]}}})r",
     R"r({"numProcPerNode": 1})r", R"r({"numProcPerNode": 0})r", nullptr,
     R"r(spec.numProcPerNode: Invalid value: "integer": NumProcPerNode in fluxPolicy must be >= 1)r"},
    {"Trainer envInjection containerNames",
     R"r({"type": "object", "properties": {"containerNames": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "x-kubernetes-validations": [{"rule": "!self.exists(c, c == 'node')", "message": "containerNames must not include the main node container because PET_* envs are always injected into it"}]}}})r",
     R"r({"containerNames": ["sidecar"]})r", R"r({"containerNames": ["sidecar", "node"]})r", nullptr,
     R"r(spec.containerNames: Invalid value: "array": containerNames must not include the main node container because PET_* envs are always injected into it)r"},
    {"Trainer initializer storageUri",
     R"r({"type": "object", "properties": {"storageUri": {"type": "string", "maxLength": 2048, "x-kubernetes-validations": [{"rule": "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')", "message": "storageUri may be empty, or it must be a valid URI (scheme://...)"}]}}})r",
     R"r({"storageUri": "hf://meta-llama/Llama-3.2-1B"})r", R"r({"storageUri": "meta-llama/Llama-3.2-1B"})r", nullptr,
     R"r(spec.storageUri: Invalid value: "string": storageUri may be empty, or it must be a valid URI (scheme://...))r"},
    {"Trainer managedBy values",
     R"r({"type": "object", "properties": {"managedBy": {"type": "string", "x-kubernetes-validations": [{"rule": "self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']", "message": "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set"}]}}})r",
     R"r({"managedBy": "kueue.x-k8s.io/multikueue"})r", R"r({"managedBy": "example.com/other"})r", nullptr,
     R"r(spec.managedBy: Invalid value: "string": ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set)r"},
    {"Trainer trainerStatus lastUpdatedTime",
     R"r({"type": "object", "x-kubernetes-validations": [{"rule": "has(self.lastUpdatedTime)", "message": "lastUpdatedTime is required when trainerStatus is present"}]})r",
     R"r({"progressPercentage": 10, "lastUpdatedTime": "2025-01-01T00:00:00Z"})r", R"r({"progressPercentage": 10})r", nullptr,
     R"r(spec: Invalid value: "object": lastUpdatedTime is required when trainerStatus is present)r"},
    {"Trainer immutable trainer (field is immutable)r",
     R"r({"type": "object", "properties": {"trainer": {"type": "object", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "field is immutable"}]}}})r",
     R"r({"trainer": {"numNodes": 2}})r", R"r({"trainer": {"numNodes": 3}})r", R"r({"trainer": {"numNodes": 2}})r",
     R"r(spec.trainer: Invalid value: "object": field is immutable)r"},
    {"Kueue ClusterQueue: borrowingLimit needs a cohort (ternary over has)r",
     R"r({"type": "object", "x-kubernetes-validations": [{"rule": "!has(self.cohort) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true", "message": "borrowingLimit must be nil when cohort is empty"}]})r",
     R"r({"cohort": "c", "resourceGroups": [{"flavors": [{"resources": [{"name": "cpu", "borrowingLimit": 1}]}]}]})r",
     R"r({"resourceGroups": [{"flavors": [{"resources": [{"name": "cpu"}, {"name": "memory", "borrowingLimit": "1Gi"}]}]}]})r",
     nullptr, R"r(spec: Invalid value: "object": borrowingLimit must be nil when cohort is empty)r"},
    {"Kueue ResourceGroup: flavors cover the same resources (size of lists)r",
     R"r({"type": "object", "x-kubernetes-validations": [{"rule": "self.flavors.all(x, size(x.resources) == size(self.coveredResources))", "message": "flavors must have the same number of resources as the coveredResources"}]})r",
     R"r({"coveredResources": ["cpu"], "flavors": [{"resources": [{"name": "cpu"}]}]})r",
     R"r({"coveredResources": ["cpu", "memory"], "flavors": [{"resources": [{"name": "cpu"}]}]})r", nullptr,
     R"r(spec: Invalid value: "object": flavors must have the same number of resources as the coveredResources)r"},
    {"Kueue: list items unique (nested filter)r",
     R"r({"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"}, "x-kubernetes-validations": [{"rule": "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0", "message": "must be unique"}]}}})r",
     R"r({"names": ["a", "b"]})r", R"r({"names": ["a", "b", "a"]})r", nullptr,
     R"r(spec.names: Invalid value: "array": must be unique)r"},
    {"Kueue Topology: hostname only at the lowest level (index with an expression)r",
     R"r({"type": "object", "properties": {"levels": {"type": "array", "items": {"type": "object"}, "x-kubernetes-validations": [{"rule": "size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'", "message": "the kubernetes.io/hostname label can only be used at the lowest level of topology"}]}}})r",
     R"r({"levels": [{"nodeLabel": "rack"}, {"nodeLabel": "kubernetes.io/hostname"}]})r",
     R"r({"levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}]})r", nullptr,
     R"r(spec.levels: Invalid value: "array": the kubernetes.io/hostname label can only be used at the lowest level of topology)r"},
    {"Kueue tolerations: operator values (in, has)r",
     R"r({"type": "object", "properties": {"tolerations": {"type": "array", "items": {"type": "object"}, "x-kubernetes-validations": [{"rule": "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])", "message": "supported toleration values: 'Equal'(default), 'Exists'"}]}}})r",
     R"r({"tolerations": [{"key": "a"}, {"key": "b", "operator": "Exists"}]})r",
     R"r({"tolerations": [{"key": "a", "operator": "NotIn"}]})r", nullptr,
     R"r(spec.tolerations: Invalid value: "array": supported toleration values: 'Equal'(default), 'Exists')r"},
    {"Kueue: exactly one of (filter with x == true, size())r",
     R"r({"type": "object", "x-kubernetes-validations": [{"rule": "[has(self.kubeConfig),has(self.clusterProfileRef)].filter(x,x==true).size() == 1", "message": "exactly one of the fields in [kubeConfig clusterProfileRef] must be set"}]})r",
     R"r({"kubeConfig": {"location": "s"}})r", R"r({})r", nullptr,
     R"r(spec: Invalid value: "object": exactly one of the fields in [kubeConfig clusterProfileRef] must be set)r"},
    {"Kueue Workload: queueName immutable while quota reserved (oldSelf, exists)r",
     R"r({"type": "object", "x-kubernetes-validations": [{"rule": "((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True')) && (has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True'))) ? ((has(oldSelf.spec.queueName) == has(self.spec.queueName)) && (!has(oldSelf.spec.queueName) || oldSelf.spec.queueName == self.spec.queueName)) : true", "message": "queueName is immutable while workload quota reserved"}]})r",
     R"r({"spec": {"queueName": "q1"}, "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}]}})r",
     R"r({"spec": {"queueName": "q2"}, "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}]}})r",
     R"r({"spec": {"queueName": "q1"}, "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}]}})r",
     R"r(spec: Invalid value: "object": queueName is immutable while workload quota reserved)r"},
    {"Kueue Workload: maximumExecutionTimeSeconds immutable (ternaries inside ==)r",
     R"r({"type": "object", "x-kubernetes-validations": [{"rule": "((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')) && (has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')))?((has(oldSelf.spec.maximumExecutionTimeSeconds)?oldSelf.spec.maximumExecutionTimeSeconds:0) ==  (has(self.spec.maximumExecutionTimeSeconds)?self.spec.maximumExecutionTimeSeconds:0)):true", "message": "maximumExecutionTimeSeconds is immutable while workload quota reserved"}]})r",
     R"r({"spec": {}, "status": {"conditions": [{"type": "Admitted", "status": "True"}]}})r",
     R"r({"spec": {"maximumExecutionTimeSeconds": 60}, "status": {"conditions": [{"type": "Admitted", "status": "True"}]}})r",
     R"r({"spec": {}, "status": {"conditions": [{"type": "Admitted", "status": "True"}]}})r",
     R"r(spec: Invalid value: "object": maximumExecutionTimeSeconds is immutable while workload quota reserved)r"},
    {"Kueue: has() compared with != ",
     R"r({"type": "object", "x-kubernetes-validations": [{"rule": "has(self.universal) != has(self.individual)", "message": "exactly one of the fields in [universal individual] must be set"}]})r",
     R"r({"universal": 1})r", R"r({"universal": 1, "individual": {"roots": []}})r", nullptr,
     R"r(spec: Invalid value: "object": exactly one of the fields in [universal individual] must be set)r"},
    {"Kueue PodSet: minCount <= count",
     R"r({"type": "object", "x-kubernetes-validations": [{"rule": "has(self.minCount) ? self.minCount <= self.count : true", "message": "minCount should be positive and less or equal to count"}]})r",
     R"r({"count": 3, "minCount": 2})r", R"r({"count": 3, "minCount": 4})r", nullptr,
     R"r(spec: Invalid value: "object": minCount should be positive and less or equal to count)r"},
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

TEST_CASE("TrainJob's object-level rules on metadata.name, at the root (<nil>)r") {
  auto schema = doc(R"r({"type": "object", "x-kubernetes-validations": [
      {"rule": "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')", "message": "metadata.name must match RFC 1035 DNS label format"},
      {"rule": "size(self.metadata.name) <= 63", "message": "metadata.name must be no more than 63 characters"}]})r");
  CHECK(rule_errors(doc(R"r({"metadata": {"name": "job-1"}})r"), nullptr, schema).empty());
  CHECK(rule_errors(doc(R"r({"metadata": {"name": "1job"}})r"), nullptr, schema) ==
        std::vector<std::string>{R"r(<nil>: Invalid value: "object": metadata.name must match RFC 1035 DNS label format)r"});
  CHECK(rule_errors(doc(R"r({"metadata": {"name": ")r" + std::string(64, 'a') + R"r("}})r"), nullptr, schema) ==
        std::vector<std::string>{R"r(<nil>: Invalid value: "object": metadata.name must be no more than 63 characters)r"});
}

TEST_CASE("ratcheting: an unchanged invalid value does not block an update, a changed one does") {
  auto schema = under_spec(R"r({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 3, "x-kubernetes-validations": [{"rule": "self.startsWith('a')", "message": "must start with a"}]},
      "replicas": {"type": "integer", "minimum": 1},
      "tags": {"type": "array", "items": {"type": "string", "maxLength": 2}},
      "workers": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"},
          "image": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 5", "message": "image too long"}]}}}},
      "frozen": {"type": "string", "x-kubernetes-validations": [{"rule": "oldSelf == 'never'", "message": "transition"}]},
      "probe": {"type": "object", "x-kubernetes-validations": [{"rule": "self.missing == 1", "message": "eval"}]}}})r");
  auto old = with_spec(R"r({"name": "bbbb", "replicas": 0, "tags": ["xyz", "ok"],
                           "workers": [{"name": "w0", "image": "toolong"}]})r");

  // On create every error counts.
  CHECK(schema_errors(old, nullptr, schema) ==
        std::vector<std::string>{"spec.name: Too long: may not be more than 3 bytes",
                                 "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
                                 "spec.tags[0]: Too long: may not be more than 2 bytes"});
  CHECK(rule_errors(old, nullptr, schema) ==
        std::vector<std::string>{R"r(spec.name: Invalid value: "string": must start with a)r",
                                 R"r(spec.workers[0].image: Invalid value: "string": image too long)r"});

  // Another field changes: the unchanged invalid values are ratcheted, schema and CEL alike.
  auto other = with_spec(R"r({"name": "bbbb", "replicas": 0, "tags": ["xyz", "ok"],
                             "workers": [{"name": "w0", "image": "toolong"}], "extra": 1})r");
  CHECK(schema_errors(other, &old, schema).empty());
  CHECK(rule_errors(other, &old, schema).empty());

  // Changed values are checked: a new name, a new map-list item (the old one still ratchets),
  // and an atomic list with any change (its items do not correlate: all are checked).
  auto changed = with_spec(R"r({"name": "cccc", "replicas": 0, "tags": ["xyz", "okk"],
                               "workers": [{"name": "w0", "image": "toolong"}, {"name": "w1", "image": "alsolong"}]})r");
  CHECK(schema_errors(changed, &old, schema) ==
        std::vector<std::string>{"spec.name: Too long: may not be more than 3 bytes",
                                 "spec.tags[0]: Too long: may not be more than 2 bytes",
                                 "spec.tags[1]: Too long: may not be more than 2 bytes"});
  CHECK(rule_errors(changed, &old, schema) ==
        std::vector<std::string>{R"r(spec.name: Invalid value: "string": must start with a)r",
                                 R"r(spec.workers[1].image: Invalid value: "string": image too long)r"});

  // Transition rules and evaluation errors are never ratcheted.
  auto with_frozen = with_spec(R"r({"frozen": "x", "probe": {}})r");
  CHECK(rule_errors(with_frozen, &with_frozen, schema) ==
        std::vector<std::string>{R"r(spec.frozen: Invalid value: "string": transition)r",
                                 R"r(spec.probe: Invalid value: "object": no such key: missing evaluating rule: eval)r"});
}

TEST_CASE("ratcheting in the store: an object stored before a stricter CRD stays updatable") {
  auto s = new_store();
  const auto& crds = builtin("apiextensions.k8s.io", "customresourcedefinitions");
  auto crd = [](std::string_view name_schema) {
    return doc(R"r({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
      "metadata": {"name": "widgets.example.com"},
      "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
          "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}, "name": )r" +
               std::string(name_schema) + "}}}}}}]}}");
  };
  create_ok(*s, crds, "", crd(R"r({"type": "string"})r"));
  auto widgets = s->find_resource("example.com", "v1", "widgets");
  REQUIRE(widgets);
  REQUIRE(s->create(*widgets, "default",
                    doc(R"r({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                            "spec": {"name": "bbbb", "size": 1}})r")));
  // The CRD now limits and checks the name.
  auto stored_crd = s->get(crds, "", "widgets.example.com");
  REQUIRE(stored_crd);
  auto stricter = crd(R"r({"type": "string", "maxLength": 3,
                          "x-kubernetes-validations": [{"rule": "self.startsWith('a')", "message": "must start with a"}]})r");
  REQUIRE(json::set_string(stricter, "/metadata/resourceVersion", str(*stored_crd, "/metadata/resourceVersion")));
  REQUIRE(s->update(crds, "", "widgets.example.com", std::move(stricter)));

  REQUIRE(s->patch(*widgets, "default", "w", lc::PatchKind::Merge, R"r({"spec": {"size": 2}})r"));
  auto renamed = s->patch(*widgets, "default", "w", lc::PatchKind::Merge, R"r({"spec": {"name": "cccc"}})r");
  REQUIRE_FALSE(renamed);
  CHECK(renamed.error().message ==
        "Widget.example.com \"w\" is invalid: [spec.name: Too long: may not be more than 3 bytes, spec.name: Invalid "
        "value: \"string\": must start with a]");
}
