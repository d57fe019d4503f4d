// x-kubernetes-validations (CEL) rules, unknown-field detection, and label/annotation syntax in
// the memory store, worded as kube-apiserver words them.
#include "helpers.h"
#include "localcluster/schema.h"
#include "localcluster/validation_rules.h"

namespace {

const char* kJobCrd = R"json({
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "trainjobs.example.com"},
  "spec": {
    "group": "example.com", "scope": "Namespaced",
    "names": {"plural": "trainjobs", "kind": "TrainJob"},
    "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object",
        "x-kubernetes-validations": [{"rule": "self.metadata.name.size() <= 20", "message": "name too long"}],
        "properties": {
        "spec": {"type": "object",
          "x-kubernetes-validations": [
            {"rule": "!has(self.minReplicas) || self.minReplicas <= self.replicas",
             "message": "minReplicas must not exceed replicas", "fieldPath": ".minReplicas"},
            {"rule": "self.replicas >= oldSelf.replicas || has(self.allowShrink)",
             "messageExpression": "'replicas may not shrink from ' + string(oldSelf.replicas)"}],
          "properties": {
            "replicas": {"type": "integer"},
            "minReplicas": {"type": "integer"},
            "allowShrink": {"type": "boolean"},
            "queue": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf",
                                                                      "message": "queue is immutable"}]},
            "mode": {"type": "string", "x-kubernetes-validations": [
              {"rule": "self in ['a', 'b']", "reason": "FieldValueForbidden", "message": "mode must be a or b"}]},
            "workers": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
              "items": {"type": "object", "properties": {
                "name": {"type": "string"},
                "image": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}},
            "tags": {"type": "array", "items": {"type": "string"},
                     "x-kubernetes-validations": [{"rule": "self.all(t, t.startsWith('x-'))"}]},
            "runPolicy": {"type": "object", "properties": {"cleanPodPolicy": {"type": "string"}}},
            "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
          }},
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
      }}}}]
  }
})json";

const lc::ResourceInfo& rules_crd_resource() { return builtin("apiextensions.k8s.io", "customresourcedefinitions"); }

struct RulesFixture {
  std::unique_ptr<lc::Store> s = new_store();
  lc::ResourceInfo jobs;
  RulesFixture() {
    create_ok(*s, rules_crd_resource(), "", doc(kJobCrd));
    auto r = s->find_resource("example.com", "v1", "trainjobs");
    REQUIRE(r);
    jobs = *r;
  }
  lc::StoreResult<json::Document> create(std::string_view name, std::string_view spec) {
    return s->create(jobs, "default",
                     doc("{\"apiVersion\":\"example.com/v1\",\"kind\":\"TrainJob\",\"metadata\":{\"name\":\"" +
                         std::string(name) + "\"},\"spec\":" + std::string(spec) + "}"));
  }
  lc::StoreResult<json::Document> patch_spec(std::string_view name, std::string_view spec_patch) {
    return s->patch(jobs, "default", name, lc::PatchKind::Merge, "{\"spec\":" + std::string(spec_patch) + "}");
  }
};

}  // namespace

TEST_CASE("CEL rules run on create with kube-apiserver's wording, fieldPath and reason") {
  RulesFixture f;
  REQUIRE(f.create("ok", R"({"replicas": 2, "minReplicas": 1, "queue": "q1", "mode": "a", "tags": ["x-1"]})"));

  auto bad = f.create("bad", R"({"replicas": 1, "minReplicas": 3, "mode": "c", "tags": ["x-1", "y"]})");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == 422);
  CHECK(bad.error().message ==
        "TrainJob.example.com \"bad\" is invalid: [spec.minReplicas: Invalid value: \"object\": "
        "minReplicas must not exceed replicas, spec.mode: Forbidden: mode must be a or b, spec.tags: Invalid value: "
        "\"array\": failed rule: self.all(t, t.startsWith('x-'))]");

  auto root = f.create("a-name-longer-than-twenty", R"({"replicas": 1})");
  REQUIRE_FALSE(root);
  CHECK(root.error().message ==
        "TrainJob.example.com \"a-name-longer-than-twenty\" is invalid: <nil>: Invalid value: \"object\": name too long");

  // A rule that reads a missing field is an evaluation error, not a pass.
  auto missing = f.create("nomin", R"({"minReplicas": 1})");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message ==
        "TrainJob.example.com \"nomin\" is invalid: spec: Invalid value: \"object\": no such key: replicas "
        "evaluating rule: minReplicas must not exceed replicas");
}

TEST_CASE("transition rules compare with the stored object on update only") {
  RulesFixture f;
  REQUIRE(f.create("j", R"({"replicas": 3, "queue": "q1", "workers": [{"name": "w0", "image": "i1"}]})"));
  // Unchanged immutable fields and a growing replica count pass.
  REQUIRE(f.patch_spec("j", R"({"replicas": 4})"));

  auto queue = f.patch_spec("j", R"({"queue": "q2"})");
  REQUIRE_FALSE(queue);
  CHECK(queue.error().message ==
        "TrainJob.example.com \"j\" is invalid: spec.queue: Invalid value: \"string\": queue is immutable");

  auto shrink = f.patch_spec("j", R"({"replicas": 2})");
  REQUIRE_FALSE(shrink);
  CHECK(shrink.error().message ==
        "TrainJob.example.com \"j\" is invalid: spec: Invalid value: \"object\": replicas may not shrink from 4");
  REQUIRE(f.patch_spec("j", R"({"replicas": 2, "allowShrink": true})"));

  // Map-list items correlate by key: the same worker may not change its image, a new one may
  // have any.
  auto image = f.patch_spec("j", R"({"workers": [{"name": "w0", "image": "i2"}]})");
  REQUIRE_FALSE(image);
  CHECK(image.error().message ==
        "TrainJob.example.com \"j\" is invalid: spec.workers[0].image: Invalid value: \"string\": failed rule: "
        "self == oldSelf");
  REQUIRE(f.patch_spec("j", R"({"workers": [{"name": "w0", "image": "i1"}, {"name": "w1", "image": "other"}]})"));

  // A status update leaves spec alone, so spec's transition rules hold.
  auto current = f.s->get(f.jobs, "default", "j");
  REQUIRE(current);
  REQUIRE(json::set_string(*current, "/status/phase", "Running"));
  REQUIRE(f.s->update(f.jobs, "default", "j", std::move(*current), "status"));
}

TEST_CASE("CRDs whose rules do not parse are refused, naming the rule's field and position") {
  auto s = new_store();
  std::string crd = kJobCrd;
  crd.replace(crd.find("\"self == oldSelf\",") + 1, 15, "self ==");  // queue's rule
  auto r = s->create(rules_crd_resource(), "", doc(crd));
  REQUIRE_FALSE(r);
  CHECK(r.error().code == 422);
  INFO(r.error().message);
  CHECK(r.error().message.find(
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[queue].x-kubernetes-validations[0]."
            "rule: Invalid value: \"self ==\": compilation failed: ERROR: <input>:1:8: Syntax error: mismatched input "
            "'<EOF>'") != std::string::npos);
}

TEST_CASE("unknown_fields lists what pruning removes, respecting preserve-unknown-fields") {
  auto schema = doc(R"({"type": "object", "properties": {
      "spec": {"type": "object", "properties": {
        "runPolicy": {"type": "object", "properties": {"cleanPodPolicy": {"type": "string"}}},
        "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}})");
  auto obj = doc(R"({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n", "whatever": 1},
      "spec": {"runPolicy": {"cleanPodPolicyy": "All", "cleanPodPolicy": "None"},
               "items": [{"a": "1", "b": 2}], "template": {"anything": {"goes": true}},
               "labels": {"free": "form"}, "extra": 1}, "top": true})");
  CHECK(lc::unknown_fields(obj.root(), schema.root()) ==
        std::vector<std::string>{"spec.runPolicy.cleanPodPolicyy", "spec.items[0].b", "spec.extra", "top"});
  lc::prune(obj.root(), schema.root(), obj.alloc());
  CHECK(lc::unknown_fields(obj.root(), schema.root()).empty());
  CHECK(json::find(obj.root(), "/spec/template/anything/goes") != nullptr);
  CHECK(str(obj, "/spec/runPolicy/cleanPodPolicy") == "None");
}

TEST_CASE("labels and annotations of every kind follow kube-apiserver's syntax rules") {
  auto s = new_store();
  auto bad_key = s->create(builtin("", "configmaps"), "default",
                           doc(R"({"metadata": {"name": "c", "labels": {"bad key!": "v"}}})"));
  REQUIRE_FALSE(bad_key);
  CHECK(bad_key.error().code == 422);
  CHECK(bad_key.error().message ==
        "ConfigMap \"c\" is invalid: metadata.labels: Invalid value: \"bad key!\": name part must consist of "
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
        "'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')");

  auto bad_value = s->create(pods(), "default", pod_doc("p", R"("labels": {"app": "-nope"})"));
  REQUIRE_FALSE(bad_value);
  CHECK(bad_value.error().message.find("metadata.labels: Invalid value: \"-nope\": a valid label must be an empty "
                                       "string or consist of alphanumeric characters") != std::string::npos);

  std::string long_value(64, 'a');
  auto too_long = s->create(builtin("", "configmaps"), "default",
                            doc(R"({"metadata": {"name": "c", "labels": {"a": ")" + long_value + "\"}}}"));
  REQUIRE_FALSE(too_long);
  CHECK(too_long.error().message.find("must be no more than 63 characters") != std::string::npos);

  auto bad_prefix = s->create(builtin("", "configmaps"), "default",
                              doc(R"({"metadata": {"name": "c", "annotations": {"Bad_Prefix/x": "anything at all"}}})"));
  REQUIRE_FALSE(bad_prefix);
  CHECK(bad_prefix.error().message.find("metadata.annotations: Invalid value: \"Bad_Prefix/x\": prefix part a "
                                        "lowercase RFC 1123 subdomain") != std::string::npos);

  std::string huge(256 * 1024, 'x');
  auto big = s->create(builtin("", "configmaps"), "default",
                       doc(R"({"metadata": {"name": "c", "annotations": {"a": ")" + huge + "\"}}}"));
  REQUIRE_FALSE(big);
  CHECK(big.error().message ==
        "ConfigMap \"c\" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes");

  // Valid keys with prefixes, empty values and free-form annotation values pass; so does an
  // update that keeps them.
  auto ok = create_ok(*s, builtin("", "configmaps"), "default",
                      doc(R"({"metadata": {"name": "c", "labels": {"example.com/app": "", "a.b_c-d": "V.1"},
                              "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"x\": 1}"}}})"));
  REQUIRE(json::set_string(ok, "/metadata/labels/app", "bad value"));
  auto upd = s->update(builtin("", "configmaps"), "default", "c", ok);
  REQUIRE_FALSE(upd);
  CHECK(upd.error().message.find("metadata.labels: Invalid value: \"bad value\"") != std::string::npos);
}
