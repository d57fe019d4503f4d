#include <catch2/catch.hpp>

#include "core/kube/fake_client.h"
#include "tests/unit/kube_cache/test_objects.h"

using namespace unitrain;
using namespace unitrain::kube;
using namespace unitrain::kube::testing;
using namespace std::chrono_literals;

namespace {
std::string rv(const json::Document& d) {
  return std::string(json::get_string(d.root(), "/metadata/resourceVersion").value_or(""));
}
std::vector<std::string> names(const json::Document& list) {
  std::vector<std::string> out;
  for (const auto& item : json::find(list.root(), "/items")->GetArray()) {
    out.emplace_back(json::get_string(item, "/metadata/name").value_or(""));
  }
  return out;
}
}  // namespace

TEST_CASE("fake client: create assigns identity, get returns it, duplicates conflict", "[fake]") {
  FakeClient c;
  auto created = c.create(kPods, "ns", simple_object("ns", "a").root());
  REQUIRE(created);
  CHECK(json::get_string(created->root(), "/metadata/uid").has_value());
  CHECK(!rv(*created).empty());
  auto got = c.get(kPods, "ns", "a");
  REQUIRE(got);
  CHECK(rv(*got) == rv(*created));
  auto dup = c.create(kPods, "ns", simple_object("ns", "a").root());
  REQUIRE(!dup);
  CHECK(dup.error().is(ApiError::Reason::AlreadyExists));
  CHECK(dup.error().code == 409);
  auto missing = c.get(kPods, "ns", "zzz");
  REQUIRE(!missing);
  CHECK(missing.error().is(ApiError::Reason::NotFound));
  CHECK(missing.error().message == "pods \"zzz\" not found");
  CHECK(c.write_count() == 2 - 1);  // only the successful create is a write
}

TEST_CASE("fake client: list pages with continue tokens and filters by selector and namespace", "[fake]") {
  FakeClient c;
  for (int i = 0; i < 7; ++i) {
    (void)c.seed(kPods, simple_object("a", fmt::format("p{}", i), i % 2 ? R"({"odd":"yes"})" : R"({"odd":"no"})").root());
  }
  (void)c.seed(kPods, simple_object("b", "other").root());
  ListOptions o;
  o.limit = 3;
  auto p1 = c.list(kPods, "a", o);
  REQUIRE(p1);
  CHECK(names(*p1) == std::vector<std::string>{"p0", "p1", "p2"});
  auto cont = json::get_string(p1->root(), "/metadata/continue");
  REQUIRE(cont);
  o.continue_token = std::string(*cont);
  auto p2 = c.list(kPods, "a", o);
  REQUIRE(p2);
  CHECK(names(*p2) == std::vector<std::string>{"p3", "p4", "p5"});
  CHECK(json::get_string(p2->root(), "/metadata/resourceVersion") == json::get_string(p1->root(), "/metadata/resourceVersion"));

  ListOptions sel;
  sel.label_selector = "odd=yes";
  auto odd = c.list(kPods, "", sel);
  REQUIRE(odd);
  CHECK(names(*odd) == std::vector<std::string>{"p1", "p3", "p5"});
  sel.label_selector = "odd!=yes";
  CHECK(names(*c.list(kPods, "", sel)).size() == 5);  // 4 even + "other" without the label
  sel.label_selector = "!odd";
  CHECK(names(*c.list(kPods, "", sel)) == std::vector<std::string>{"other"});
  ListOptions fs;
  fs.field_selector = "metadata.name=p4";
  CHECK(names(*c.list(kPods, "", fs)) == std::vector<std::string>{"p4"});
  sel.label_selector = "odd in (yes,maybe)";
  CHECK(names(*c.list(kPods, "", sel)) == std::vector<std::string>{"p1", "p3", "p5"});
  ListOptions bad;
  bad.label_selector = "a in (b";
  auto err = c.list(kPods, "", bad);
  REQUIRE(!err);
  CHECK(err.error().is(ApiError::Reason::BadRequest));
}

TEST_CASE("fake client: update with a stale resourceVersion is a conflict, status is a subresource", "[fake]") {
  FakeClient c;
  auto created = c.create(kPods, "ns", simple_object("ns", "a").root());
  REQUIRE(created);
  auto v1 = *created;
  (void)json::set_string(v1, "/metadata/labels/x", "1");
  (void)json::set_string(v1, "/status/phase", "Running");  // ignored by update
  auto updated = c.update(kPods, "ns", v1.root());
  REQUIRE(updated);
  CHECK(json::get_string(updated->root(), "/metadata/labels/x") == "1");
  CHECK(json::get_string(updated->root(), "/status/phase") == "Pending");
  auto stale = c.update(kPods, "ns", v1.root());
  REQUIRE(!stale);
  CHECK(stale.error().is(ApiError::Reason::Conflict));
  auto st = *updated;
  (void)json::set_string(st, "/status/phase", "Running");
  (void)json::set_string(st, "/metadata/labels/x", "2");  // ignored by update_status
  auto after = c.update_status(kPods, "ns", st.root());
  REQUIRE(after);
  CHECK(json::get_string(after->root(), "/status/phase") == "Running");
  CHECK(json::get_string(after->root(), "/metadata/labels/x") == "1");
}

TEST_CASE("fake client: merge patch, patch preconditions and records of writes", "[fake]") {
  FakeClient c;
  REQUIRE(c.create(kPods, "ns", simple_object("ns", "a").root()));
  auto p = c.patch(kPods, "ns", "a", PatchType::Merge, R"({"metadata":{"labels":{"k":"v"}}})");
  REQUIRE(p);
  CHECK(json::get_string(p->root(), "/metadata/labels/k") == "v");
  auto stale = c.patch(kPods, "ns", "a", PatchType::Merge, R"({"metadata":{"resourceVersion":"1"}})");
  REQUIRE(!stale);
  CHECK(stale.error().is(ApiError::Reason::Conflict));
  auto s = c.patch(kPods, "ns", "a", PatchType::Merge, R"({"status":{"phase":"Failed"}})", {}, "status");
  REQUIRE(s);
  CHECK(json::get_string(s->root(), "/status/phase") == "Failed");
  REQUIRE(c.remove(kPods, "ns", "a"));
  auto w = c.writes();
  REQUIRE(w.size() == 4);
  CHECK(w[0].verb == FakeClient::Verb::Create);
  CHECK(w[1].verb == FakeClient::Verb::Patch);
  CHECK(w[2].verb == FakeClient::Verb::UpdateStatus);
  CHECK(w[3].verb == FakeClient::Verb::Delete);
  CHECK(w[3].resource == "pods");
  CHECK(w[3].name == "a");
  CHECK(!c.get(kPods, "ns", "a"));
}

TEST_CASE("fake client: finalizers hold a deleted object until removed", "[fake]") {
  FakeClient c;
  auto obj = simple_object("ns", "f");
  (void)json::set(obj, "/metadata/finalizers", json::Value(rapidjson::kArrayType));
  json::find(obj.root(), "/metadata/finalizers")->PushBack("x/y", obj.alloc());
  REQUIRE(c.create(kPods, "ns", obj.root()));
  auto del = c.remove(kPods, "ns", "f");
  REQUIRE(del);
  CHECK(json::get_string(del->root(), "/metadata/deletionTimestamp").has_value());
  REQUIRE(c.get(kPods, "ns", "f"));
  auto p = c.patch(kPods, "ns", "f", PatchType::Merge, R"({"metadata":{"finalizers":null}})");
  REQUIRE(p);
  CHECK(!c.get(kPods, "ns", "f"));
}

TEST_CASE("fake client: injected failures hit the next call of that verb only", "[fake]") {
  FakeClient c;
  ApiError e;
  e.reason = ApiError::Reason::InternalError;
  e.code = 500;
  c.fail_next(FakeClient::Verb::Create, e);
  auto r1 = c.create(kPods, "ns", simple_object("ns", "a").root());
  REQUIRE(!r1);
  CHECK(r1.error().code == 500);
  CHECK(c.create(kPods, "ns", simple_object("ns", "a").root()));
}

TEST_CASE("fake client: watch delivers events, replays from a resourceVersion, and expires", "[fake]") {
  FakeClient c;
  auto a = c.create(kPods, "ns", simple_object("ns", "a").root());
  REQUIRE(a);
  WatchOptions o;
  o.resource_version = rv(*a);
  auto w = c.watch(kPods, "ns", o);
  REQUIRE(w);
  REQUIRE(c.create(kPods, "ns", simple_object("ns", "b").root()));
  REQUIRE(c.create(kPods, "other", simple_object("other", "c").root()));  // other namespace
  REQUIRE(c.remove(kPods, "ns", "a"));
  auto e1 = (*w)->next(1s);
  REQUIRE(e1);
  REQUIRE(e1->has_value());
  CHECK((*e1)->type == WatchEvent::Type::Added);
  CHECK(json::get_string((*e1)->object.root(), "/metadata/name") == "b");
  auto e2 = (*w)->next(1s);
  REQUIRE((e2 && e2->has_value()));
  CHECK((*e2)->type == WatchEvent::Type::Deleted);
  auto none = (*w)->next(1ms);
  REQUIRE(none);
  CHECK(!none->has_value());
  CHECK((*w)->timed_out());

  // A new watch from the first version replays both events.
  auto replay = c.watch(kPods, "ns", o);
  REQUIRE(replay);
  auto r1 = (*replay)->next(1s);
  REQUIRE((r1 && r1->has_value()));
  CHECK(json::get_string((*r1)->object.root(), "/metadata/name") == "b");

  c.compact(c.resource_version());
  auto old = c.watch(kPods, "ns", o);
  REQUIRE(old);
  auto gone = (*old)->next(1s);
  REQUIRE((gone && gone->has_value()));
  CHECK((*gone)->type == WatchEvent::Type::Error);
  CHECK(json::get_int((*gone)->object.root(), "/code") == 410);
  auto end = (*old)->next(1s);
  REQUIRE(end);
  CHECK(!end->has_value());
  CHECK(!(*old)->timed_out());
}

TEST_CASE("fake client: label-selected watch sees objects leave the selector as deletes", "[fake]") {
  FakeClient c;
  auto a = c.create(kPods, "ns", simple_object("ns", "a", R"({"app":"x"})").root());
  REQUIRE(a);
  WatchOptions o;
  o.resource_version = rv(*a);
  o.label_selector = "app=x";
  auto w = c.watch(kPods, "ns", o);
  REQUIRE(w);
  REQUIRE(c.patch(kPods, "ns", "a", PatchType::Merge, R"({"metadata":{"labels":{"app":"y"}}})"));
  auto e = (*w)->next(1s);
  REQUIRE((e && e->has_value()));
  CHECK((*e)->type == WatchEvent::Type::Deleted);
}

TEST_CASE("fake client: cancel ends a blocked next promptly", "[fake]") {
  FakeClient c;
  auto w = c.watch(kPods, "", WatchOptions{});
  REQUIRE(w);
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    (*w)->cancel();
  });
  auto start = std::chrono::steady_clock::now();
  auto r = (*w)->next(10s);
  t.join();
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  REQUIRE(r);
  CHECK(!r->has_value());
}

TEST_CASE("fake client: a write's response holds only the fields its caller asked for", "[fake]") {
  FakeClient c;
  const WriteOptions written{written_fields()};
  auto obj = simple_object("ns", "a");
  REQUIRE(json::set_string(obj, "/spec/x", "y"));
  auto created = c.create(kPods, "ns", obj.root(), written);
  REQUIRE(created);
  CHECK(json::get_string(created->root(), "/metadata/uid").has_value());
  CHECK(!rv(*created).empty());
  CHECK(json::find(created->root(), "/spec") == nullptr);
  // Asked for nothing: the whole object, as before.
  auto whole = c.get(kPods, "ns", "a");
  REQUIRE(whole);
  CHECK(json::get_string(whole->root(), "/spec/x") == std::optional<std::string_view>("y"));

  auto updated = c.update(kPods, "ns", whole->root(), written);
  REQUIRE(updated);
  CHECK(rv(*updated) != rv(*created));
  CHECK(json::find(updated->root(), "/spec") == nullptr);
  PatchOptions patch;
  patch.response_fields = written_fields();
  auto patched = c.patch(kPods, "ns", "a", PatchType::Merge, R"({"metadata":{"labels":{"l":"v"}}})", patch);
  REQUIRE(patched);
  CHECK(json::find(patched->root(), "/metadata/labels") == nullptr);
  CHECK(json::find(patched->root(), "/spec") == nullptr);
  DeleteOptions del;
  del.response_fields = written_fields();
  auto removed = c.remove(kPods, "ns", "a", del);
  REQUIRE(removed);
  CHECK(json::find(removed->root(), "/spec") == nullptr);
  // Errors are whole.
  auto missing = c.remove(kPods, "ns", "a", del);
  REQUIRE(!missing);
  CHECK(missing.error().is(ApiError::Reason::NotFound));
}
