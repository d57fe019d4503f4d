#include "helpers.h"

using lc::DeleteRequest;
using lc::PatchKind;
using lc::WatchRequest;

namespace {

const char* kWidgetCrd = R"({
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {
    "group": "example.com", "scope": "Namespaced",
    "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
    "versions": [
      {"name": "v1", "served": true, "storage": true,
       "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
       "additionalPrinterColumns": [{"name": "State", "type": "string", "jsonPath": ".status.state"}],
       "schema": {"openAPIV3Schema": {"type": "object", "properties": {
         "spec": {"type": "object", "required": ["image"], "properties": {
           "image": {"type": "string", "minLength": 1},
           "replicas": {"type": "integer", "format": "int32", "minimum": 0, "default": 1},
           "mode": {"type": "string", "enum": ["A", "B"]},
           "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
           "port": {"x-kubernetes-int-or-string": true},
           "note": {"type": "string", "nullable": true},
           "runPolicy": {"type": "object", "properties": {"backoffLimit": {"type": "integer"},
                                                            "cleanPodPolicy": {"type": "string", "default": "None"}}},
           "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
           "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
           "labels": {"type": "object", "additionalProperties": {"type": "string"}}
         }},
         "status": {"type": "object", "properties": {"state": {"type": "string"}, "replicas": {"type": "integer"},
                                                     "selector": {"type": "string"}}}
       }}}},
      {"name": "v2", "served": true, "storage": false,
       "subresources": {"status": {}},
       "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
         "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
           "properties": {"color": {"type": "string", "default": "blue"}}}}}}}
    ]
  }
})";

const lc::ResourceInfo& crds() { return builtin("apiextensions.k8s.io", "customresourcedefinitions"); }

lc::ResourceInfo widgets(lc::Store& s, const char* version = "v1") {
  auto r = s.find_resource("example.com", version, "widgets");
  REQUIRE(r);
  return *r;
}

std::string widget(std::string_view name, std::string_view spec) {
  return "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"" + std::string(name) +
         "\"},\"spec\":" + std::string(spec) + "}";
}

std::string create_error(lc::Store& s, std::string_view spec) {
  auto r = s.create(widgets(s), "default", doc(widget("w", spec)));
  REQUIRE_FALSE(r);
  CHECK(r.error().code == 422);
  CHECK(r.error().reason == "Invalid");
  return r.error().message;
}

}  // namespace

TEST_CASE("creating a CRD serves its versions and sets the status an API server would") {
  auto s = new_store();
  auto crd = create_ok(*s, crds(), "", doc(kWidgetCrd));
  CHECK(str(crd, "/status/conditions/0/type") == "NamesAccepted");
  CHECK(str(crd, "/status/conditions/0/status") == "True");
  CHECK(str(crd, "/status/conditions/1/type") == "Established");
  CHECK(str(crd, "/status/conditions/1/status") == "True");
  CHECK(str(crd, "/status/acceptedNames/listKind") == "WidgetList");
  CHECK(str(crd, "/status/acceptedNames/singular") == "widget");
  CHECK(str(crd, "/status/storedVersions/0") == "v1");
  CHECK(str(crd, "/spec/conversion/strategy") == "None");

  auto v1 = widgets(*s);
  CHECK(v1.kind == "Widget");
  CHECK(v1.has_status);
  CHECK(v1.has_scale);
  CHECK(v1.short_names == std::vector<std::string>{"wd"});
  auto v2 = widgets(*s, "v2");
  CHECK_FALSE(v2.has_scale);
  auto cols = s->printer_columns(v1);
  REQUIRE(cols.root().IsArray());
  CHECK(str(cols, "/0/name") == "State");
  CHECK(s->printer_columns(pods()).root().IsNull());
  bool listed = false;
  for (const auto& r : s->resources()) listed = listed || (r.group == "example.com" && r.version == "v2");
  CHECK(listed);

  auto bad = s->create(crds(), "", doc(R"({"metadata":{"name":"wrong"},"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"things","kind":"Thing"},"versions":[{"name":"v1","served":true,"storage":true}]}})"));
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "CustomResourceDefinition.apiextensions.k8s.io \"wrong\" is invalid: metadata.name: "
                               "Invalid value: \"wrong\": must be spec.names.plural+\".\"+spec.group");
}

TEST_CASE("custom resources: one stored object served at every version, status and scale subresources") {
  auto s = new_store();
  create_ok(*s, crds(), "", doc(kWidgetCrd));
  auto w = create_ok(*s, widgets(*s), "default", doc(widget("w", R"({"image":"x","replicas":2})")));
  CHECK(str(w, "/apiVersion") == "example.com/v1");
  auto at_v2 = s->get(widgets(*s, "v2"), "default", "w");
  REQUIRE(at_v2);
  CHECK(str(*at_v2, "/apiVersion") == "example.com/v2");
  CHECK(str(*at_v2, "/spec/color") == "blue");  // v2's default applied on read
  WatchRequest wreq;
  wreq.resource_version = s->resource_version();
  auto watch_v2 = s->watch(widgets(*s, "v2"), "", wreq);
  REQUIRE(watch_v2);
  auto created_v2 = s->create(widgets(*s, "v2"), "default",
                              doc(R"({"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w2"},"spec":{"image":"x"}})"));
  REQUIRE(created_v2);
  CHECK(str(*created_v2, "/apiVersion") == "example.com/v2");
  CHECK(str(*s->get(widgets(*s), "default", "w2"), "/apiVersion") == "example.com/v1");
  auto wev = drain(**watch_v2);
  REQUIRE(wev.types == std::vector<std::string>{"ADDED"});
  CHECK(str(wev.objects[0], "/apiVersion") == "example.com/v2");
  REQUIRE(s->remove(widgets(*s), "default", "w2", DeleteRequest{}));
  auto list_v2 = s->list(widgets(*s, "v2"), "", {});
  REQUIRE(list_v2);
  CHECK(str(doc(*list_v2), "/items/0/apiVersion") == "example.com/v2");
  CHECK(str(doc(*list_v2), "/kind") == "WidgetList");

  // Generation counts everything outside metadata and status.
  auto relabel = s->patch(widgets(*s), "default", "w", PatchKind::Merge, R"({"metadata":{"labels":{"a":"b"}}})");
  REQUIRE(relabel);
  CHECK(json::get_int(relabel->root(), "/metadata/generation") == 1);
  auto spec = s->patch(widgets(*s), "default", "w", PatchKind::Merge, R"({"spec":{"replicas":3}})");
  REQUIRE(spec);
  CHECK(json::get_int(spec->root(), "/metadata/generation") == 2);

  auto status = s->patch(widgets(*s), "default", "w", PatchKind::Merge,
                         R"({"status":{"state":"Running","replicas":3,"selector":"app=w"},"spec":{"replicas":9}})", "status");
  REQUIRE(status);
  CHECK(str(*status, "/status/state") == "Running");
  CHECK(json::get_int(status->root(), "/spec/replicas") == 3);

  auto scale = s->get(widgets(*s), "default", "w", "scale");
  REQUIRE(scale);
  CHECK(str(*scale, "/kind") == "Scale");
  CHECK(json::get_int(scale->root(), "/spec/replicas") == 3);
  CHECK(json::get_int(scale->root(), "/status/replicas") == 3);
  CHECK(str(*scale, "/status/selector") == "app=w");
  auto scaled = s->patch(widgets(*s), "default", "w", PatchKind::Merge, R"({"spec":{"replicas":5}})", "scale");
  REQUIRE(scaled);
  CHECK(json::get_int(scaled->root(), "/spec/replicas") == 5);
  CHECK(json::get_int(s->get(widgets(*s), "default", "w")->root(), "/spec/replicas") == 5);

  auto strategic = s->patch(widgets(*s), "default", "w", PatchKind::Strategic, R"({"spec":{"replicas":1}})");
  REQUIRE_FALSE(strategic);
  CHECK(strategic.error().code == 415);
  CHECK(strategic.error().reason == "UnsupportedMediaType");

  json::Document no_rv = *s->get(widgets(*s), "default", "w");
  json::remove(no_rv, "/metadata/resourceVersion");
  auto uncond = s->update(widgets(*s), "default", "w", no_rv);
  REQUIRE_FALSE(uncond);
  CHECK(uncond.error().message ==
        "Widget.example.com \"w\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update");
}

TEST_CASE("structural schema: validation errors worded like kube-apiserver's") {
  auto s = new_store();
  create_ok(*s, crds(), "", doc(kWidgetCrd));
  CHECK(create_error(*s, R"({"image":"x","runPolicy":{"backoffLimit":"abc"}})") ==
        "Widget.example.com \"w\" is invalid: spec.runPolicy.backoffLimit: Invalid value: \"string\": "
        "spec.runPolicy.backoffLimit in body must be of type integer: \"string\"");
  CHECK(create_error(*s, R"({})") == "Widget.example.com \"w\" is invalid: spec.image: Required value");
  CHECK(create_error(*s, R"({"image":"x","replicas":-1})") ==
        "Widget.example.com \"w\" is invalid: spec.replicas: Invalid value: -1: spec.replicas in body should be "
        "greater than or equal to 0");
  CHECK(create_error(*s, R"({"image":"x","mode":"C"})") ==
        "Widget.example.com \"w\" is invalid: spec.mode: Unsupported value: \"C\": supported values: \"A\", \"B\"");
  CHECK(create_error(*s, R"({"image":"x","name":"ab1"})") ==
        "Widget.example.com \"w\" is invalid: spec.name: Invalid value: \"ab1\": spec.name in body should match "
        "'^[a-z]+$'");
  CHECK(create_error(*s, R"({"image":""})") ==
        "Widget.example.com \"w\" is invalid: spec.image: Invalid value: \"\": spec.image in body should be at least "
        "1 chars long");
  CHECK(create_error(*s, R"({"image":"x","tags":["a","b","c"]})") ==
        "Widget.example.com \"w\" is invalid: spec.tags: Too many: 3: must have at most 2 items");
  CHECK(create_error(*s, R"({"image":"x","labels":{"a":1}})") ==
        "Widget.example.com \"w\" is invalid: spec.labels.a: Invalid value: \"integer\": spec.labels.a in body must "
        "be of type string: \"integer\"");
  CHECK(create_error(*s, R"({"image":"x","port":1.5})").find("spec.port") != std::string::npos);
  std::string two = create_error(*s, R"({"replicas":"x"})");
  CHECK(two.starts_with("Widget.example.com \"w\" is invalid: ["));
  CHECK(two.find("spec.image: Required value") != std::string::npos);

  auto r = s->create(widgets(*s), "default", doc(widget("w", R"({"image":"x","mode":"C"})")));
  REQUIRE_FALSE(r);
  const json::Value* cause = json::find(r.error().details.root(), "/causes/0");
  REQUIRE(cause);
  CHECK(json::get_string(*cause, "/reason") == "FieldValueNotSupported");
  CHECK(json::get_string(*cause, "/field") == "spec.mode");
  CHECK(json::get_string(r.error().details.root(), "/kind") == "Widget");
  CHECK(json::get_string(r.error().details.root(), "/group") == "example.com");
}

TEST_CASE("structural schema: defaulting, pruning, preserved fields, int-or-string, nullable") {
  auto s = new_store();
  create_ok(*s, crds(), "", doc(kWidgetCrd));
  auto w = create_ok(*s, widgets(*s), "default",
                     doc(widget("w", R"({"image":"x","unknown":1,"port":"http","note":null,"runPolicy":{},
                                         "template":{"anything":{"goes":[1,2]}}})")));
  CHECK(json::get_int(w.root(), "/spec/replicas") == 1);
  CHECK(str(w, "/spec/runPolicy/cleanPodPolicy") == "None");
  CHECK(json::find(w.root(), "/spec/unknown") == nullptr);
  CHECK(json::find(w.root(), "/spec/template/anything/goes/1") != nullptr);
  CHECK(str(w, "/spec/port") == "http");
  const json::Value* note = json::find(w.root(), "/spec/note");
  REQUIRE(note);
  CHECK(note->IsNull());
  auto num_port = s->create(widgets(*s), "default", doc(widget("w2", R"({"image":"x","port":8080})")));
  CHECK(num_port);
  auto top = s->create(widgets(*s), "default",
                       doc(R"({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w3"},"spec":{"image":"x"},"extra":true})"));
  REQUIRE(top);
  CHECK(json::find(top->root(), "/extra") == nullptr);
}

TEST_CASE("deleting a CRD removes its resource, its objects, and ends its watches") {
  auto s = new_store();
  create_ok(*s, crds(), "", doc(kWidgetCrd));
  create_ok(*s, widgets(*s), "default", doc(widget("w", R"({"image":"x"})")));
  WatchRequest req;
  req.resource_version = s->resource_version();
  auto w = s->watch(widgets(*s), "", req);
  REQUIRE(w);
  auto v1 = widgets(*s);
  REQUIRE(s->remove(crds(), "", "widgets.example.com", DeleteRequest{}));
  CHECK_FALSE(s->find_resource("example.com", "v1", "widgets"));
  auto d = drain(**w);
  CHECK(d.types == std::vector<std::string>{"DELETED"});
  CHECK(d.closed);
  auto gone = s->get(v1, "default", "w");
  REQUIRE_FALSE(gone);
  CHECK(gone.error().code == 404);
  CHECK_FALSE(s->get(crds(), "", "widgets.example.com"));

  // Re-created, it starts empty.
  create_ok(*s, crds(), "", doc(kWidgetCrd));
  CHECK(item_names(*s->list(widgets(*s), "", {})).empty());
}

TEST_CASE("a CRD update cannot drop a version objects are stored in (kubeflow/training-operator#1930)") {
  auto s = new_store();
  create_ok(*s, crds(), "", doc(kWidgetCrd));
  // v2 becomes the storage version and v1 is dropped, while status.storedVersions still says v1.
  json::Document next = *s->get(crds(), "", "widgets.example.com");
  auto* versions = json::find(next.root(), "/spec/versions");
  REQUIRE(versions);
  versions->Erase(versions->Begin());
  REQUIRE(json::set_bool(next, "/spec/versions/0/storage", true));
  auto dropped = s->update(crds(), "", "widgets.example.com", next);
  REQUIRE_FALSE(dropped);
  CHECK(dropped.error().code == 422);
  CHECK(dropped.error().message ==
        "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: "
        "status.storedVersions[0]: Invalid value: \"v1\": must appear in spec.versions");
  // Served or not, a version that stays in spec.versions keeps its stored objects readable.
  json::Document kept = *s->get(crds(), "", "widgets.example.com");
  REQUIRE(json::set_bool(kept, "/spec/versions/0/served", false));
  REQUIRE(json::set_bool(kept, "/spec/versions/0/storage", false));
  REQUIRE(json::set_bool(kept, "/spec/versions/1/storage", true));
  auto moved = s->update(crds(), "", "widgets.example.com", kept);
  REQUIRE(moved);
  CHECK(json::strings_at(moved->root(), "/status/storedVersions") == std::vector<std::string>{"v1", "v2"});
}
