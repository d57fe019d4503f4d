#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "core/api/meta.h"
#include "tests/support/json.h"

namespace api = unitrain::api;
namespace json = unitrain::json;
using api::FieldPath;

using unitrain::testing::doc;

TEST_CASE("object meta readers") {
  auto pod = doc(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns","uid":"u1",
    "resourceVersion":"42","generation":3,"labels":{"a":"b"},"annotations":{"x/y":"z","n":1},
    "creationTimestamp":"2024-01-02T03:04:05Z","deletionTimestamp":"2024-01-02T03:05:05Z",
    "finalizers":["f1","f2"]}})");
  const auto& o = pod.root();
  CHECK(api::api_version_of(o) == "v1");
  CHECK(api::kind_of(o) == "Pod");
  CHECK(api::name_of(o) == "p");
  CHECK(api::namespace_of(o) == "ns");
  CHECK(api::uid_of(o) == "u1");
  CHECK(api::resource_version_of(o) == "42");
  CHECK(api::generation_of(o) == 3);
  CHECK(api::annotations_of(o) == api::Labels{{"x/y", "z"}});
  CHECK(api::labels_of(o) == api::Labels{{"a", "b"}});
  REQUIRE(api::deletion_timestamp_of(o));
  CHECK(*api::deletion_timestamp_of(o) - *api::creation_timestamp_of(o) == std::chrono::seconds(60));
  CHECK(api::finalizers_of(o) == std::vector<std::string>{"f1", "f2"});
  CHECK(api::has_finalizer(o, "f2"));
  CHECK_FALSE(api::has_finalizer(o, "f3"));
  CHECK(api::key_of(o) == "ns/p");

  auto bare = doc(R"({"metadata":{"name":"n","generation":"x","deletionTimestamp":"bad"}})");
  CHECK(api::key_of(bare.root()) == "n");
  CHECK(api::generation_of(bare.root()) == 0);
  CHECK_FALSE(api::deletion_timestamp_of(bare.root()));
  CHECK(api::namespace_of(bare.root()).empty());
  CHECK(api::finalizers_of(bare.root()).empty());
}

TEST_CASE("object meta mutators keep other fields") {
  auto o = doc(R"({"kind":"Pod","metadata":{"name":"p"},"spec":{"x-unknown":[1]}})");
  REQUIRE(api::set_label(o, "training.kubeflow.org/job-name", "j"));
  REQUIRE(api::set_annotation(o, "a~b", "c"));
  CHECK(api::labels_of(o.root()) == api::Labels{{"training.kubeflow.org/job-name", "j"}});
  CHECK(api::annotations_of(o.root()) == api::Labels{{"a~b", "c"}});
  CHECK(api::add_finalizer(o, "kubeflow.org/x"));
  CHECK_FALSE(api::add_finalizer(o, "kubeflow.org/x"));
  CHECK(api::finalizers_of(o.root()) == std::vector<std::string>{"kubeflow.org/x"});
  CHECK(api::remove_finalizer(o, "kubeflow.org/x"));
  CHECK_FALSE(api::remove_finalizer(o, "kubeflow.org/x"));
  CHECK(api::remove_label(o, "training.kubeflow.org/job-name"));
  CHECK_FALSE(api::remove_label(o, "training.kubeflow.org/job-name"));
  CHECK(api::remove_annotation(o, "a~b"));
  CHECK(o.dump() ==
        R"({"kind":"Pod","metadata":{"name":"p","labels":{},"annotations":{},"finalizers":[]},"spec":{"x-unknown":[1]}})");
  json::Document not_object = json::Document::array();
  CHECK_FALSE(api::set_label(not_object, "a", "b"));
}

TEST_CASE("owner references round trip and controller lookup") {
  auto job = doc(R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"j","namespace":"ns","uid":"u-1"}})");
  auto ref = api::make_owner_reference(job.root());
  CHECK(ref == api::OwnerReference{"kubeflow.org/v1", "PyTorchJob", "j", "u-1", true, true});
  json::Document out = json::Document::object();
  out.root() = ref.to_json(out.alloc());
  CHECK(out.dump() ==
        R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","name":"j","uid":"u-1","controller":true,"blockOwnerDeletion":true})");
  auto plain = api::make_owner_reference(job.root(), false);
  out.root() = plain.to_json(out.alloc());
  CHECK(out.dump() == R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","name":"j","uid":"u-1"})");
  auto back = api::OwnerReference::from_json(out.root(), FieldPath("ref"));
  REQUIRE(back);
  CHECK(*back == plain);

  auto pod = doc(R"({"metadata":{"name":"p","namespace":"ns"}})");
  REQUIRE(api::set_owner_reference(pod, plain));
  CHECK_FALSE(api::controller_of(pod.root()));
  REQUIRE(api::set_owner_reference(pod, ref));  // same uid: replaced, not duplicated
  CHECK(api::owner_references_of(pod.root()).size() == 1);
  CHECK(api::is_controlled_by(pod.root(), "u-1"));
  CHECK_FALSE(api::is_controlled_by(pod.root(), "u-2"));
  api::OwnerReference other{"v1", "X", "x", "u-2", true, true};
  auto conflict = api::set_owner_reference(pod, other);
  REQUIRE_FALSE(conflict);
  CHECK(conflict.error().message == "metadata.ownerReferences: object ns/p is already controlled by PyTorchJob j (uid u-1)");
}

TEST_CASE("owner reference decode errors carry field paths") {
  auto bad = doc(R"({"apiVersion":"v1","kind":3,"name":"","controller":"yes"})");
  auto r = api::OwnerReference::from_json(bad.root(), FieldPath("metadata").child("ownerReferences").index(1));
  REQUIRE_FALSE(r);
  CHECK(api::aggregate(r.error()) ==
        "[metadata.ownerReferences[1].kind: Invalid value: 3: must be a string, "
        "metadata.ownerReferences[1].name: Required value, metadata.ownerReferences[1].uid: Required value, "
        R"(metadata.ownerReferences[1].controller: Invalid value: "yes": must be a boolean])");
  auto pod = doc(R"({"metadata":{"ownerReferences":[{"kind":"X"},{"apiVersion":"v1","kind":"K","name":"n","uid":"u","controller":true}]}})");
  CHECK(api::owner_references_of(pod.root()).size() == 1);
  CHECK(api::controller_of(pod.root())->name == "n");
}

TEST_CASE("controller_of is the first well-formed entry with controller: true") {
  // Skipped: a controller without a uid, a non-controller, controller as a string or null, a
  // non-object; the answer is the first well-formed controller, not the second.
  auto pod = doc(R"({"metadata":{"ownerReferences":[
      {"apiVersion":"v1","kind":"K","name":"no-uid","controller":true},
      {"apiVersion":"v1","kind":"K","name":"plain","uid":"u-0"},
      {"apiVersion":"v1","kind":"K","name":"not-false","uid":"u-1","controller":false},
      {"apiVersion":"v1","kind":"K","name":"string","uid":"u-2","controller":"true"},
      {"apiVersion":"v1","kind":"K","name":"null","uid":"u-3","controller":null},
      "controller",
      {"apiVersion":"v1","kind":"K","name":"first","uid":"u-4","controller":true,"blockOwnerDeletion":true},
      {"apiVersion":"v1","kind":"K","name":"second","uid":"u-5","controller":true}]}})");
  auto c = api::controller_of(pod.root());
  REQUIRE(c);
  CHECK(*c == api::OwnerReference{"v1", "K", "first", "u-4", true, true});
  CHECK(api::is_controlled_by(pod.root(), "u-4"));
  CHECK_FALSE(api::is_controlled_by(pod.root(), "u-5"));
  auto bad_flag = doc(R"({"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"K","name":"n","uid":"u",
      "controller":true,"blockOwnerDeletion":"yes"}]}})");
  CHECK_FALSE(api::controller_of(bad_flag.root()));  // malformed as a whole: skipped
  CHECK_FALSE(api::controller_of(doc(R"({"metadata":{"ownerReferences":{"controller":true}}})").root()));
  CHECK_FALSE(api::controller_of(doc(R"({"metadata":{}})").root()));
}

TEST_CASE("owner_references_of keeps exactly the entries OwnerReference::from_json accepts") {
  // Each entry alone: kept (and decoded the same) if and only if from_json decodes it.
  const char* entries[] = {
      R"({"apiVersion":"v1","kind":"K","name":"n","uid":"u"})",
      R"({"apiVersion":"v1","kind":"K","name":"n","uid":"u","controller":true,"blockOwnerDeletion":false})",
      R"({"apiVersion":"v1","kind":"K","name":"n","uid":"u","controller":null,"blockOwnerDeletion":null,"extra":1})",
      R"({"apiVersion":"","kind":"K","name":"n","uid":"u"})",
      R"({"apiVersion":"v1","kind":null,"name":"n","uid":"u"})",
      R"({"apiVersion":"v1","kind":"K","name":5,"uid":"u"})",
      R"({"apiVersion":"v1","kind":"K","name":"n"})",
      R"({"apiVersion":"v1","kind":"K","name":"n","uid":["u"]})",
      R"({"apiVersion":"v1","kind":"K","name":"n","uid":"u","controller":1})",
      R"({"apiVersion":"v1","kind":"K","name":"n","uid":"u","blockOwnerDeletion":"true"})",
      R"({})",
      R"(["v1","K","n","u"])",
      R"("u")",
      R"(null)",
  };
  for (const char* e : entries) {
    CAPTURE(e);
    auto entry = doc(e);
    auto decoded = api::OwnerReference::from_json(entry.root(), FieldPath("ref"));
    auto pod = doc(fmt::format(R"({{"metadata":{{"ownerReferences":[{}]}}}})", e));
    auto kept = api::owner_references_of(pod.root());
    REQUIRE(kept.size() == (decoded ? 1u : 0u));
    if (decoded) CHECK(kept.front() == *decoded);
    CHECK(api::controller_of(pod.root()).has_value() == (decoded && decoded->controller.value_or(false)));
  }
}

TEST_CASE("metav1 condition encode, decode and set") {
  auto t0 = api::parse_time("2024-01-02T03:04:05Z").value();
  auto t1 = t0 + std::chrono::seconds(10);
  std::vector<api::Condition> conds;
  CHECK(api::set_status_condition(conds, {"Ready", "False", 2, std::nullopt, "Init", "starting"}, t0));
  CHECK_FALSE(api::set_status_condition(conds, {"Ready", "False", 2, std::nullopt, "Init", "starting"}, t1));
  CHECK(api::set_status_condition(conds, {"Ready", "False", 2, std::nullopt, "Wait", "waiting"}, t1));
  CHECK(conds[0].last_transition_time == t0);
  CHECK(api::set_status_condition(conds, {"Ready", "True", 3, std::nullopt, "Up", "up"}, t1));
  CHECK(conds[0].last_transition_time == t1);
  REQUIRE(api::find_status_condition(conds, "Ready"));
  CHECK(api::find_status_condition(conds, "Ready")->observed_generation == 3);
  CHECK_FALSE(api::find_status_condition(conds, "Other"));

  json::Document out = json::Document::object();
  out.root() = conds[0].to_json(out.alloc());
  CHECK(out.dump() ==
        R"({"type":"Ready","status":"True","observedGeneration":3,"lastTransitionTime":"2024-01-02T03:04:15Z","reason":"Up","message":"up"})");
  auto back = api::Condition::from_json(out.root(), FieldPath("status").child("conditions").index(0));
  REQUIRE(back);
  CHECK(*back == conds[0]);
  api::Condition zero{"A", "Unknown", 0, std::nullopt, "", ""};
  out.root() = zero.to_json(out.alloc());
  CHECK(out.dump() == R"({"type":"A","status":"Unknown","lastTransitionTime":null,"reason":"","message":""})");

  auto bad = doc(R"({"status":"True","lastTransitionTime":"yesterday"})");
  auto err = api::Condition::from_json(bad.root(), FieldPath("status").child("conditions").index(2));
  REQUIRE_FALSE(err);
  CHECK(api::aggregate(err.error()) ==
        "[status.conditions[2].type: Required value, status.conditions[2].lastTransitionTime: Invalid value: "
        "\"yesterday\": time 'yesterday': position 1: expected 4-digit year]");
}

TEST_CASE("metav1 condition set on conditions kept as JSON: the same rule, other entries untouched") {
  auto t0 = api::parse_time("2024-01-02T03:04:05Z").value();
  auto t1 = t0 + std::chrono::seconds(10);
  auto status = doc(R"({"conditions":[{"type":"Other","status":"True","custom":1},)"
                    R"({"type":"Ready","status":"False","lastTransitionTime":"2024-01-01T00:00:00Z","reason":"Init","message":"m"}]})");
  json::Value& conds = status.root()["conditions"];
  // Same status, same words: nothing written.
  CHECK_FALSE(api::set_status_condition(conds, {"Ready", "False", 0, std::nullopt, "Init", "m"}, t0, status.alloc()));
  // Same status, new words: the transition time stays.
  CHECK(api::set_status_condition(conds, {"Ready", "False", 0, std::nullopt, "Wait", "w"}, t0, status.alloc()));
  CHECK(json::string_at(status.root(), "/conditions/1/lastTransitionTime") == "2024-01-01T00:00:00Z");
  CHECK(json::string_at(status.root(), "/conditions/1/reason") == "Wait");
  // A new status: the transition time moves to the one given, else to now.
  CHECK(api::set_status_condition(conds, {"Ready", "True", 0, t0, "Up", "up"}, t1, status.alloc()));
  CHECK(json::string_at(status.root(), "/conditions/1/lastTransitionTime") == "2024-01-02T03:04:05Z");
  // A new type is appended at now; the other entries keep every member.
  CHECK(api::set_status_condition(conds, {"Done", "True", 0, std::nullopt, "R", "d"}, t1, status.alloc()));
  CHECK(status.dump() ==
        R"({"conditions":[{"type":"Other","status":"True","custom":1},)"
        R"({"type":"Ready","status":"True","lastTransitionTime":"2024-01-02T03:04:05Z","reason":"Up","message":"up"},)"
        R"({"type":"Done","status":"True","lastTransitionTime":"2024-01-02T03:04:15Z","reason":"R","message":"d"}]})");
  // An entry of the type that does not read as a Condition is replaced; a non-array becomes one.
  auto broken = doc(R"({"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"yesterday"}]})");
  CHECK(api::set_status_condition(broken.root()["conditions"], {"Ready", "True", 0, std::nullopt, "Up", "up"}, t1,
                                  broken.alloc()));
  CHECK(json::string_at(broken.root(), "/conditions/0/lastTransitionTime") == "2024-01-02T03:04:15Z");
  json::Value none(rapidjson::kObjectType);
  CHECK(api::set_status_condition(none, {"Ready", "True", 0, std::nullopt, "Up", "up"}, t1, broken.alloc()));
  CHECK((none.IsArray() && none.Size() == 1));
}
