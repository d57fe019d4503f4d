// managedFields (FieldsV1) computation, and server-side apply ownership and conflicts in the store.
#include "helpers.h"
#include "localcluster/managed_fields.h"

namespace {

const lc::ResourceInfo& managed_configmaps() { return builtin("", "configmaps"); }

std::string apply_body(std::string_view data) {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":)" + std::string(data) + "}";
}

// (manager, operation) of each managedFields entry, in order.
std::vector<std::string> owners(const json::Document& d) {
  std::vector<std::string> out;
  const json::Value* mf = json::find(d.root(), "/metadata/managedFields");
  if (mf == nullptr) return out;
  for (const auto& e : mf->GetArray()) {
    out.push_back(json::string_at(e, "/manager") + "/" + json::string_at(e, "/operation"));
  }
  return out;
}

std::string fields_of(const json::Document& d, size_t i) {
  const json::Value* f = json::find(d.root(), "/metadata/managedFields/" + std::to_string(i) + "/fieldsV1");
  return f == nullptr ? std::string() : json::dump(*f);
}

}  // namespace

TEST_CASE("leaf_fields and FieldsV1: map lists by merge key, sets by value, atomic lists whole") {
  auto pod = doc(R"({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": "p", "uid": "u", "labels": {"app": "x"}, "finalizers": ["a/b"]},
      "spec": {"containers": [{"name": "main", "image": "i", "args": ["1", "2"]}], "restartPolicy": "Never"},
      "status": {"phase": "Running"}})");
  lc::FieldsContext ctx;
  auto paths = lc::leaf_fields(pod.root(), ctx);
  std::vector<std::string> text;
  for (const auto& p : paths) text.push_back(lc::path_text(p));
  CHECK(text == std::vector<std::string>{".metadata.labels.app", ".metadata.finalizers[=\"a/b\"]",
                                         ".spec.containers[name=\"main\"]", ".spec.containers[name=\"main\"].name",
                                         ".spec.containers[name=\"main\"].image",
                                         ".spec.containers[name=\"main\"].args", ".spec.restartPolicy"});
  json::Document holder = json::Document::object();
  json::Value v1 = lc::to_fields_v1(paths, holder.alloc());
  CHECK(json::dump(v1) ==
        R"({"f:metadata":{"f:labels":{"f:app":{}},"f:finalizers":{"v:\"a/b\"":{}}},)"
        R"("f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:name":{},"f:image":{},"f:args":{}}},)"
        R"("f:restartPolicy":{}}})");
  CHECK(lc::from_fields_v1(v1) == paths);
  const json::Value* image = lc::value_at(pod.root(), paths[4]);
  REQUIRE(image != nullptr);
  CHECK(json::view(*image) == "i");

  auto status = lc::leaf_fields(pod.root(), ctx, "status");
  REQUIRE(status.size() == 1);
  CHECK(lc::path_text(status[0]) == ".status.phase");

  // Custom resources: the schema's list-type decides.
  auto schema = doc(R"({"type": "object", "properties": {"spec": {"type": "object", "properties": {
      "workers": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object"}},
      "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
      "args": {"type": "array", "items": {"type": "string"}}}}}})");
  lc::FieldsContext cr{true, &schema.root()};
  auto obj = doc(R"({"spec": {"workers": [{"name": "w", "n": 1}], "tags": ["t"], "args": ["a"]}})");
  text.clear();
  for (const auto& p : lc::leaf_fields(obj.root(), cr)) text.push_back(lc::path_text(p));
  CHECK(text == std::vector<std::string>{".spec.workers[name=\"w\"]", ".spec.workers[name=\"w\"].name",
                                         ".spec.workers[name=\"w\"].n", ".spec.tags[=\"t\"]", ".spec.args"});
}

TEST_CASE("Update operations record their manager's changed fields and take them from others") {
  auto s = new_store();
  auto cm = s->create(managed_configmaps(), "default", doc(R"({"metadata":{"name":"cm"},"data":{"a":"1","b":"2"}})"), false,
                      "creator");
  REQUIRE(cm);
  CHECK(owners(*cm) == std::vector<std::string>{"creator/Update"});
  CHECK(fields_of(*cm, 0) == R"({"f:data":{"f:a":{},"f:b":{}}})");
  CHECK(str(*cm, "/metadata/managedFields/0/apiVersion") == "v1");
  CHECK(str(*cm, "/metadata/managedFields/0/fieldsType") == "FieldsV1");
  CHECK_FALSE(str(*cm, "/metadata/managedFields/0/time").empty());

  REQUIRE(json::set_string(*cm, "/data/b", "3"));
  auto upd = s->update(managed_configmaps(), "default", "cm", *cm, "", false, "editor");
  REQUIRE(upd);
  CHECK(owners(*upd) == std::vector<std::string>{"creator/Update", "editor/Update"});
  CHECK(fields_of(*upd, 0) == R"({"f:data":{"f:a":{}}})");
  CHECK(fields_of(*upd, 1) == R"({"f:data":{"f:b":{}}})");

  // A write without a manager (an in-process controller) keeps what is recorded.
  auto plain = s->update(managed_configmaps(), "default", "cm", *upd);
  REQUIRE(plain);
  CHECK(owners(*plain) == owners(*upd));
  // A no-op write by a manager records nothing new (no new resourceVersion either).
  auto same = s->update(managed_configmaps(), "default", "cm", *plain, "", false, "editor");
  REQUIRE(same);
  CHECK(str(*same, "/metadata/resourceVersion") == str(*plain, "/metadata/resourceVersion"));
}

TEST_CASE("server-side apply: ownership, shared values, 409 conflicts worded as kube-apiserver, force") {
  auto s = new_store();
  auto created = s->patch(managed_configmaps(), "default", "cm", lc::PatchKind::Apply, apply_body(R"({"a":"1","b":"2"})"),
                          "", "alice");
  REQUIRE(created);
  CHECK(owners(*created) == std::vector<std::string>{"alice/Apply"});
  CHECK(fields_of(*created, 0) == R"({"f:data":{"f:a":{},"f:b":{}}})");

  // Applying the same value shares ownership; a different value conflicts.
  auto shared = s->patch(managed_configmaps(), "default", "cm", lc::PatchKind::Apply, apply_body(R"({"a":"1"})"), "", "bob");
  REQUIRE(shared);
  CHECK(owners(*shared) == std::vector<std::string>{"alice/Apply", "bob/Apply"});

  auto conflict = s->patch(managed_configmaps(), "default", "cm", lc::PatchKind::Apply, apply_body(R"({"a":"9","b":"9"})"),
                           "", "bob");
  REQUIRE_FALSE(conflict);
  CHECK(conflict.error().code == 409);
  CHECK(conflict.error().reason == "Conflict");
  CHECK(conflict.error().message ==
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .data.a\n- .data.b");
  CHECK(str(conflict.error().details, "/causes/0/reason") == "FieldManagerConflict");
  CHECK(str(conflict.error().details, "/causes/0/message") == "conflict with \"alice\"");
  CHECK(str(conflict.error().details, "/causes/0/field") == ".data.a");

  // An Update manager is named with its apiVersion and time.
  auto cm = s->get(managed_configmaps(), "default", "cm");
  REQUIRE(cm);
  REQUIRE(json::set_string(*cm, "/data/c", "3"));
  auto edited = s->update(managed_configmaps(), "default", "cm", *cm, "", false, "kubectl-edit");
  REQUIRE(edited);
  auto one = s->patch(managed_configmaps(), "default", "cm", lc::PatchKind::Apply, apply_body(R"({"c":"4"})"), "", "alice");
  REQUIRE_FALSE(one);
  CHECK(one.error().message == "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using v1 at " +
                                   str(*edited, "/metadata/managedFields/2/time") + ": .data.c");

  // force takes the field over.
  auto forced = s->patch(managed_configmaps(), "default", "cm", lc::PatchKind::Apply, apply_body(R"({"a":"9"})"), "", "bob",
                         false, true);
  REQUIRE(forced);
  CHECK(str(*forced, "/data/a") == "9");
  CHECK(fields_of(*forced, 0) == R"({"f:data":{"f:b":{}}})");  // alice lost .data.a
  CHECK(fields_of(*forced, 1) == R"({"f:data":{"f:a":{}}})");

  // Fields an applier stops applying, owned by nobody else, are removed.
  auto dropped = s->patch(managed_configmaps(), "default", "cm", lc::PatchKind::Apply, apply_body(R"({"a":"9"})"), "", "alice");
  REQUIRE(dropped);
  CHECK(json::find(dropped->root(), "/data/b") == nullptr);
  CHECK(str(*dropped, "/data/a") == "9");  // shared with bob now: stays
  CHECK(str(*dropped, "/data/c") == "3");  // kubectl-edit's
}
