#include <catch2/catch.hpp>

#include <string>

#include "localcluster/content_negotiation.h"
#include "localcluster/protobuf_body.h"
#include "localcluster/protobuf_wire.h"
#include "tests/support/json.h"

namespace lc = unitrain::localcluster;
namespace json = unitrain::json;
using lc::proto::WireWriter;

namespace {

// A body as client-go writes it: "k8s\0", then runtime.Unknown{typeMeta, raw, contentType}.
std::string envelope(std::string_view api_version, std::string_view kind, const std::string& raw) {
  WireWriter type_meta;
  type_meta.bytes(1, api_version);
  type_meta.bytes(2, kind);
  WireWriter unknown;
  unknown.bytes(1, type_meta.data());
  unknown.bytes(2, raw);
  unknown.bytes(3, "");
  unknown.bytes(4, "");
  return std::string("k8s\0", 4) + unknown.data();
}

std::string map_entry(std::string_view key, std::string_view value) {
  WireWriter e;
  e.bytes(1, key);
  e.bytes(2, value);
  return e.data();
}

// ObjectMeta as Go's generated marshaller writes it: every non-pointer field, empty or not, and an
// unset creationTimestamp as the zero time.
std::string object_meta(std::string_view name, std::string_view ns) {
  WireWriter zero_time;
  zero_time.varint(1, static_cast<uint64_t>(int64_t{-62135596800}));
  zero_time.varint(2, 0);
  WireWriter m;
  m.bytes(1, name);
  m.bytes(2, "");
  m.bytes(3, ns);
  m.bytes(4, "");
  m.bytes(5, "");
  m.bytes(6, "");
  m.varint(7, 0);
  m.bytes(8, zero_time.data());
  m.bytes(11, map_entry("app", "demo"));
  m.bytes(11, map_entry("tier", ""));
  return m.data();
}

json::Document decoded(const std::string& body) {
  auto d = lc::decode_body(body, lc::parse_media_type("application/vnd.kubernetes.protobuf"));
  if (!d) FAIL(d.error().message);
  return std::move(*d);
}

}  // namespace

TEST_CASE("a protobuf ConfigMap (kubectl create configmap) decodes into the JSON kube-apiserver would store") {
  WireWriter cm;
  cm.bytes(1, object_meta("settings", "team-a"));
  cm.bytes(2, map_entry("mode", "fast"));
  cm.bytes(2, map_entry("empty", ""));
  cm.bytes(3, map_entry("blob", std::string("\x00\xff\x10", 3)));
  auto d = decoded(envelope("v1", "ConfigMap", cm.data()));
  CHECK(json::dump(d.root()) ==
        R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"team-a",)"
        R"("labels":{"app":"demo","tier":""}},"data":{"mode":"fast","empty":""},"binaryData":{"blob":"AP8Q"}})");
}

TEST_CASE("protobuf Secrets, Services and Pods: bytes, IntOrString, Quantity, times, repeated fields") {
  WireWriter secret;
  secret.bytes(1, object_meta("token", "default"));
  secret.bytes(2, map_entry("password", "s3cr3t"));
  secret.bytes(3, "Opaque");
  auto s = decoded(envelope("v1", "Secret", secret.data()));
  CHECK(json::string_at(s.root(), "/data/password") == "czNjcjN0");
  CHECK(json::string_at(s.root(), "/type") == "Opaque");

  WireWriter by_name, by_number;
  by_name.varint(1, 1);
  by_name.bytes(3, "http");
  by_number.varint(1, 0);
  by_number.varint(2, 8080);
  WireWriter p1, p2;
  p1.bytes(1, "web");
  p1.varint(3, 80);
  p1.bytes(4, by_name.data());
  p2.bytes(1, "alt");
  p2.varint(3, 81);
  p2.bytes(4, by_number.data());
  WireWriter spec;
  spec.bytes(1, p1.data());
  spec.bytes(1, p2.data());
  spec.bytes(4, "ClusterIP");
  WireWriter svc;
  svc.bytes(1, object_meta("web", "default"));
  svc.bytes(2, spec.data());
  svc.bytes(3, "");  // an empty ServiceStatus
  auto v = decoded(envelope("v1", "Service", svc.data()));
  CHECK(json::dump(*json::find(v.root(), "/spec")) ==
        R"({"ports":[{"name":"web","port":80,"targetPort":"http"},{"name":"alt","port":81,"targetPort":8080}],)"
        R"("type":"ClusterIP"})");
  CHECK(json::dump(*json::find(v.root(), "/status")) == "{}");

  WireWriter limits;
  WireWriter quantity;
  quantity.bytes(1, "500m");
  limits.bytes(1, map_entry("cpu", quantity.data()));
  WireWriter container;
  container.bytes(1, "main");
  container.bytes(2, "busybox:1.36");
  container.bytes(3, "sh");
  container.bytes(3, "-c");
  container.bytes(8, limits.data());
  WireWriter pod_spec;
  pod_spec.bytes(2, container.data());
  pod_spec.varint(4, 30);
  WireWriter started;
  started.varint(1, 1700000000);
  WireWriter meta;
  meta.bytes(1, "p");
  meta.bytes(8, started.data());
  WireWriter pod;
  pod.bytes(1, meta.data());
  pod.bytes(2, pod_spec.data());
  auto p = decoded(envelope("v1", "Pod", pod.data()));
  CHECK(json::string_at(p.root(), "/metadata/creationTimestamp") == "2023-11-14T22:13:20Z");
  CHECK(json::dump(*json::find(p.root(), "/spec")) ==
        R"({"containers":[{"name":"main","image":"busybox:1.36","command":["sh","-c"],)"
        R"("resources":{"limits":{"cpu":"500m"}}}],"terminationGracePeriodSeconds":30})");
}

// Go's marshaller writes every non-pointer field, zero or not; kube-apiserver's JSON then leaves out
// the zero value of an omitempty field (stdin, hostPort, minReadySeconds, paused) and keeps it
// otherwise (mountPath ""), and a pointer set to zero (replicas) or a struct (strategy) stays.
TEST_CASE("protobuf zero values: omitempty non-pointer fields are left out as in kube-apiserver's JSON") {
  WireWriter port;
  port.bytes(1, "");     // name,omitempty
  port.varint(2, 0);     // hostPort,omitempty
  port.varint(3, 8080);  // containerPort
  port.bytes(4, "TCP");  // protocol,omitempty
  port.bytes(5, "");     // hostIP,omitempty
  WireWriter mount;
  mount.bytes(1, "data");
  mount.varint(2, 0);  // readOnly,omitempty
  mount.bytes(3, "");  // mountPath: no omitempty
  mount.bytes(4, "");  // subPath,omitempty
  WireWriter container;
  container.bytes(1, "main");
  container.bytes(2, "busybox:1.36");
  container.bytes(5, "");  // workingDir,omitempty
  container.bytes(6, port.data());
  container.bytes(9, mount.data());
  container.bytes(13, "");  // terminationMessagePath,omitempty
  container.varint(16, 0);  // stdin,omitempty
  container.varint(17, 0);  // stdinOnce,omitempty
  container.varint(18, 0);  // tty,omitempty
  WireWriter pod_spec;
  pod_spec.bytes(2, container.data());
  WireWriter pod;
  pod.bytes(1, object_meta("p", "default"));
  pod.bytes(2, pod_spec.data());
  auto p = decoded(envelope("v1", "Pod", pod.data()));
  CHECK(json::dump(*json::find(p.root(), "/spec/containers/0")) ==
        R"({"name":"main","image":"busybox:1.36","ports":[{"containerPort":8080,"protocol":"TCP"}],)"
        R"("volumeMounts":[{"name":"data","mountPath":""}]})");
  CHECK(json::dump(*json::find(p.root(), "/metadata")) == R"({"name":"p","namespace":"default","labels":{"app":"demo","tier":""}})");

  WireWriter spec;
  spec.varint(1, 0);    // replicas: *int32 set to 0
  spec.bytes(3, "");    // template
  spec.bytes(4, "");    // strategy: a struct, never empty to encoding/json
  spec.varint(5, 0);    // minReadySeconds,omitempty
  spec.varint(6, 10);   // revisionHistoryLimit: *int32
  spec.varint(7, 0);    // paused,omitempty
  WireWriter deployment;
  deployment.bytes(1, object_meta("d", "default"));
  deployment.bytes(2, spec.data());
  auto d = decoded(envelope("apps/v1", "Deployment", deployment.data()));
  CHECK(json::dump(*json::find(d.root(), "/spec")) ==
        R"({"replicas":0,"template":{},"strategy":{},"revisionHistoryLimit":10})");
}

TEST_CASE("protobuf bodies that do not decode are 400s naming the cause, custom resources 415") {
  const auto refusal = [](const std::string& body) {
    auto d = lc::decode_body(body, lc::parse_media_type("application/vnd.kubernetes.protobuf"));
    REQUIRE_FALSE(d);
    return std::pair{d.error().code, d.error().message};
  };
  CHECK(refusal("{\"kind\":\"ConfigMap\"}").first == 400);
  CHECK(refusal("{\"kind\":\"ConfigMap\"}").second.find("\"k8s\\x00\" prefix") != std::string::npos);
  WireWriter cm;
  cm.bytes(1, object_meta("x", "y"));
  std::string truncated = envelope("v1", "ConfigMap", cm.data());
  truncated.resize(truncated.size() - 3);
  CHECK(refusal(truncated).first == 400);
  // A string where a map entry's bytes should be, and a varint where a message should be.
  WireWriter wrong;
  wrong.varint(1, 7);
  auto wrong_type = refusal(envelope("v1", "ConfigMap", wrong.data()));
  CHECK(wrong_type.first == 400);
  CHECK(wrong_type.second.find("k8s.io.api.core.v1.ConfigMap.metadata: unexpected wire type") != std::string::npos);
  CHECK(refusal(envelope("kubeflow.org/v1", "PyTorchJob", "")).first == 415);
  CHECK(refusal(envelope("v1", "NoSuchKind", "")).first == 415);
  CHECK(refusal(std::string("k8s\0", 4)).first == 400);  // no kind
}

TEST_CASE("fields a newer release added are skipped, as Go's decoder skips them") {
  WireWriter cm;
  cm.bytes(1, object_meta("x", "y"));
  cm.bytes(99, "future");
  cm.varint(100, 5);
  auto d = decoded(envelope("v1", "ConfigMap", cm.data()));
  CHECK(json::string_at(d.root(), "/metadata/name") == "x");
  CHECK(d.root().MemberCount() == 3);
}

TEST_CASE("the wire reader refuses truncated and malformed input") {
  // The reader views its input: each input outlives its reader.
  const std::string overlong_varint(11, '\xff');
  const std::string start_group("\x0b", 1);        // field 1, wire type 3
  const std::string field_zero("\x00\x01", 2);    // field number 0
  const std::string too_long("\x0a\x05" "ab", 4);  // 5 bytes announced, 2 present
  for (const std::string* input : {&overlong_varint, &start_group, &field_zero, &too_long}) {
    lc::proto::WireReader r(*input);
    CHECK_FALSE(r.next());
  }
}

TEST_CASE("inline structs are flattened and JSON names come from the Go tags, not the .proto names") {
  // Volume{name, VolumeSource{configMap: ConfigMapVolumeSource{LocalObjectReference{name}}}}.
  WireWriter reference;
  reference.bytes(1, "settings");
  WireWriter config_map_source;
  config_map_source.bytes(1, reference.data());
  config_map_source.varint(3, 0420);
  WireWriter volume_source;
  volume_source.bytes(19, config_map_source.data());
  WireWriter volume;
  volume.bytes(1, "config");
  volume.bytes(2, volume_source.data());
  // EnvVar{name, valueFrom: EnvVarSource{secretKeyRef: SecretKeySelector{LocalObjectReference, key}}}.
  WireWriter secret_ref;
  WireWriter creds;
  creds.bytes(1, "creds");
  secret_ref.bytes(1, creds.data());
  secret_ref.bytes(2, "password");
  WireWriter source;
  source.bytes(4, secret_ref.data());
  WireWriter env;
  env.bytes(1, "PASSWORD");
  env.bytes(3, source.data());
  WireWriter container;
  container.bytes(1, "main");
  container.bytes(7, env.data());
  WireWriter spec;
  spec.bytes(1, volume.data());
  spec.bytes(2, container.data());
  WireWriter pod;
  pod.bytes(2, spec.data());
  auto p = decoded(envelope("v1", "Pod", pod.data()));
  CHECK(json::dump(*json::find(p.root(), "/spec")) ==
        R"({"volumes":[{"name":"config","configMap":{"name":"settings","defaultMode":272}}],)"
        R"("containers":[{"name":"main","env":[{"name":"PASSWORD","valueFrom":{"secretKeyRef":)"
        R"({"name":"creds","key":"password"}}}]}]})");

  // ValidatingWebhookConfiguration's webhooks are `Webhooks` in its .proto.
  WireWriter hook;
  hook.bytes(1, "check.example.com");
  WireWriter config;
  config.bytes(2, hook.data());
  auto v = decoded(envelope("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", config.data()));
  CHECK(json::string_at(v.root(), "/webhooks/0/name") == "check.example.com");
}

TEST_CASE("a protobuf CustomResourceDefinition: JSON, schema-or-array/bool alternatives, $ref names, whole floats") {
  // JSONSchemaProps field numbers of k8s.io/apiextensions-apiserver's generated.proto.
  WireWriter replicas;  // {type: integer, minimum: 1, maximum: 10.5, default: 1}
  replicas.bytes(5, "integer");
  WireWriter one;
  one.bytes(1, "1");  // apiextensions JSON: raw bytes
  replicas.bytes(8, one.data());
  replicas.double_value(9, 10.5);
  replicas.boolean(10, false);
  replicas.double_value(11, 1);
  WireWriter tag;
  tag.bytes(5, "string");
  WireWriter tags_items;  // JSONSchemaPropsOrArray{schema: 1}
  tags_items.bytes(1, tag.data());
  WireWriter tags;
  tags.bytes(5, "array");
  tags.bytes(24, tags_items.data());
  WireWriter any;  // JSONSchemaPropsOrBool{allows: true}
  any.boolean(1, true);
  WireWriter labels;
  labels.bytes(5, "object");
  labels.bytes(30, any.data());
  WireWriter spec_schema;
  spec_schema.bytes(5, "object");
  spec_schema.bytes(29, map_entry("replicas", replicas.data()));
  spec_schema.bytes(29, map_entry("tags", tags.data()));
  spec_schema.bytes(29, map_entry("labels", labels.data()));
  WireWriter root;
  root.bytes(5, "object");
  root.bytes(29, map_entry("spec", spec_schema.data()));
  WireWriter validation;
  validation.bytes(1, root.data());
  WireWriter version;  // CustomResourceDefinitionVersion{name 1, served 2, storage 3, schema 4}
  version.bytes(1, "v1");
  version.boolean(2, true);
  version.boolean(3, true);
  version.bytes(4, validation.data());
  WireWriter names;  // plural 1, singular 2, kind 4
  names.bytes(1, "widgets");
  names.bytes(2, "");
  names.bytes(4, "Widget");
  WireWriter spec;  // group 1, names 3, scope 4, versions 7
  spec.bytes(1, "example.com");
  spec.bytes(3, names.data());
  spec.bytes(4, "Namespaced");
  spec.bytes(7, version.data());
  WireWriter crd;
  crd.bytes(1, object_meta("widgets.example.com", ""));
  crd.bytes(2, spec.data());
  auto d = decoded(envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd.data()));
  CHECK(json::string_at(d.root(), "/spec/names/kind") == "Widget");
  CHECK(json::find(d.root(), "/spec/names/singular") == nullptr);
  const auto* props = json::find(d.root(), "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties");
  REQUIRE(props != nullptr);
  CHECK(json::dump(*json::find(*props, "/replicas")) ==
        R"({"type":"integer","default":1,"maximum":10.5,"minimum":1})");  // exclusiveMaximum false: omitempty
  CHECK(json::dump(*json::find(*props, "/tags")) == R"({"type":"array","items":{"type":"string"}})");
  CHECK(json::dump(*json::find(*props, "/labels")) == R"({"type":"object","additionalProperties":true})");
}
