#include <limits>
#include <regex>

#include "helpers.h"
#include "localcluster/continue_token.h"

using lc::DeleteRequest;
using lc::ListRequest;
using lc::PatchKind;

TEST_CASE("built-in resources carry kube-apiserver's names, scopes and short names") {
  CHECK(builtin("", "pods").short_names == std::vector<std::string>{"po"});
  CHECK(builtin("", "pods").categories == std::vector<std::string>{"all"});
  CHECK(builtin("", "pods").has_status);
  CHECK(builtin("", "services").short_names == std::vector<std::string>{"svc"});
  CHECK(builtin("", "namespaces").short_names == std::vector<std::string>{"ns"});
  CHECK_FALSE(builtin("", "namespaces").namespaced);
  CHECK(builtin("", "configmaps").short_names == std::vector<std::string>{"cm"});
  CHECK(builtin("", "serviceaccounts").short_names == std::vector<std::string>{"sa"});
  CHECK(builtin("", "nodes").short_names == std::vector<std::string>{"no"});
  CHECK(builtin("", "endpoints").short_names == std::vector<std::string>{"ep"});
  CHECK(builtin("", "events").short_names == std::vector<std::string>{"ev"});
  CHECK(builtin("autoscaling", "horizontalpodautoscalers").short_names == std::vector<std::string>{"hpa"});
  CHECK(builtin("scheduling.k8s.io", "priorityclasses").short_names == std::vector<std::string>{"pc"});
  CHECK(builtin("apiextensions.k8s.io", "customresourcedefinitions").short_names ==
        std::vector<std::string>{"crd", "crds"});
  CHECK(builtin("batch", "jobs").has_status);
  CHECK(builtin("batch", "jobs").list_kind == "JobList");
  CHECK(builtin("events.k8s.io", "events").api_version() == "events.k8s.io/v1");
  auto s = new_store();
  CHECK(s->find_resource("coordination.k8s.io", "v1", "leases"));
  CHECK_FALSE(s->find_resource("", "v1", "widgets"));
}

TEST_CASE("create fills uid, creationTimestamp, resourceVersion, generation, generateName adds 5 chars") {
  auto s = new_store();
  auto p = create_ok(*s, pods(), "default", doc(R"({"metadata":{"generateName":"job-worker-"},"spec":{"containers":[{"name":"c","image":"x"}]}})"));
  std::string name = str(p, "/metadata/name");
  CHECK(std::regex_match(name, std::regex("job-worker-[bcdfghjklmnpqrstvwxz2456789]{5}")));
  CHECK(std::regex_match(str(p, "/metadata/uid"),
                         std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
  CHECK(std::regex_match(str(p, "/metadata/creationTimestamp"),
                         std::regex("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ")));
  CHECK(json::get_int(p.root(), "/metadata/generation") == 1);
  CHECK(str(p, "/metadata/namespace") == "default");
  CHECK(str(p, "/apiVersion") == "v1");
  CHECK(str(p, "/kind") == "Pod");
  CHECK(str(p, "/status/phase") == "Pending");
  CHECK(str(p, "/spec/schedulerName") == "default-scheduler");
  CHECK(str(p, "/spec/restartPolicy") == "Always");
  uint64_t rv1 = std::stoull(str(p, "/metadata/resourceVersion"));
  auto p2 = create_ok(*s, pods(), "default", pod_doc("second"));
  CHECK(std::stoull(str(p2, "/metadata/resourceVersion")) > rv1);
  CHECK(s->resource_version() == str(p2, "/metadata/resourceVersion"));
}

TEST_CASE("create errors are worded like kube-apiserver's") {
  auto s = new_store();
  create_ok(*s, pods(), "default", pod_doc("a"));
  auto dup = s->create(pods(), "default", pod_doc("a"));
  REQUIRE_FALSE(dup);
  CHECK(dup.error().code == 409);
  CHECK(dup.error().reason == "AlreadyExists");
  CHECK(dup.error().message == "pods \"a\" already exists");
  CHECK(dup.error().to_status().dump() ==
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"a\" already exists","reason":"AlreadyExists","details":{"name":"a","kind":"pods"},"code":409})");

  auto missing_ns = s->create(pods(), "nope", pod_doc("a"));
  REQUIRE_FALSE(missing_ns);
  CHECK(missing_ns.error().code == 404);
  CHECK(missing_ns.error().message == "namespaces \"nope\" not found");

  auto bad = s->create(pods(), "default", pod_doc("Bad_Name"));
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == 422);
  CHECK(bad.error().message.starts_with(
      "Pod \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"));

  auto noname = s->create(pods(), "default", doc(R"({"metadata":{},"spec":{}})"));
  REQUIRE_FALSE(noname);
  CHECK(noname.error().message ==
        "Pod \"\" is invalid: metadata.name: Required value: name or generateName is required");

  auto wrong_ns = s->create(pods(), "default", pod_doc("x", R"("namespace":"kube-system")"));
  REQUIRE_FALSE(wrong_ns);
  CHECK(wrong_ns.error().code == 400);

  auto job_get = s->get(builtin("batch", "jobs"), "default", "nope");
  REQUIRE_FALSE(job_get);
  CHECK(job_get.error().message == "jobs.batch \"nope\" not found");
  auto pod_get = s->get(pods(), "default", "nope");
  CHECK(pod_get.error().message == "pods \"nope\" not found");
  CHECK(pod_get.error().code == 404);
}

TEST_CASE("the default namespaces exist at start and cannot be deleted") {
  auto s = new_store();
  for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    auto n = s->get(builtin("", "namespaces"), "", ns);
    REQUIRE(n);
    CHECK(str(*n, "/status/phase") == "Active");
  }
  auto del = s->remove(builtin("", "namespaces"), "", "default", DeleteRequest{});
  REQUIRE_FALSE(del);
  CHECK(del.error().code == 403);
  CHECK(del.error().message == "namespaces \"default\" is forbidden: this namespace may not be deleted");
}

TEST_CASE("update with a stale resourceVersion is a 409 Conflict with the exact message") {
  auto s = new_store();
  auto p = create_ok(*s, pods(), "default", pod_doc("x"));
  json::Document a = p;
  (void)json::set_string(a, "/metadata/labels/v", "1");
  auto u = s->update(pods(), "default", "x", a);
  REQUIRE(u);
  json::Document stale = p;
  (void)json::set_string(stale, "/metadata/labels/v", "2");
  auto c = s->update(pods(), "default", "x", stale);
  REQUIRE_FALSE(c);
  CHECK(c.error().code == 409);
  CHECK(c.error().reason == "Conflict");
  CHECK(c.error().message ==
        "Operation cannot be fulfilled on pods \"x\": the object has been modified; please apply your changes to the "
        "latest version and try again");
  // Without a resourceVersion the update is unconditional for built-in resources.
  json::Document uncond = *u;
  json::remove(uncond, "/metadata/resourceVersion");
  (void)json::set_string(uncond, "/metadata/labels/v", "3");
  auto u2 = s->update(pods(), "default", "x", uncond);
  REQUIRE(u2);
  CHECK(str(*u2, "/metadata/labels/v") == "3");
}

TEST_CASE("generation starts at 1 and moves only when spec changes, no-op updates keep the resourceVersion") {
  auto s = new_store();
  const auto& jobs = builtin("batch", "jobs");
  auto j = create_ok(*s, jobs, "default", doc(R"({"metadata":{"name":"j"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"x"}]}}}})"));
  CHECK(json::get_int(j.root(), "/metadata/generation") == 1);
  CHECK(json::get_int(j.root(), "/spec/backoffLimit") == 6);
  CHECK(str(j, "/spec/selector/matchLabels/batch.kubernetes.io~1controller-uid") == str(j, "/metadata/uid"));
  CHECK(str(j, "/spec/template/metadata/labels/job-name") == "j");

  json::Document labels = j;
  (void)json::set_string(labels, "/metadata/labels/a", "b");
  auto l = s->update(jobs, "default", "j", labels);
  REQUIRE(l);
  CHECK(json::get_int(l->root(), "/metadata/generation") == 1);

  json::Document same = *l;
  auto noop = s->update(jobs, "default", "j", same);
  REQUIRE(noop);
  CHECK(str(*noop, "/metadata/resourceVersion") == str(*l, "/metadata/resourceVersion"));

  json::Document spec = *l;
  (void)json::set_bool(spec, "/spec/suspend", true);
  auto sp = s->update(jobs, "default", "j", spec);
  REQUIRE(sp);
  CHECK(json::get_int(sp->root(), "/metadata/generation") == 2);
}

TEST_CASE("status subresource: the main resource ignores status, /status ignores everything else") {
  auto s = new_store();
  auto p = create_ok(*s, pods(), "default", pod_doc("x"));
  json::Document main = p;
  (void)json::set_string(main, "/status/phase", "Running");
  (void)json::set_string(main, "/metadata/labels/a", "b");
  auto m = s->update(pods(), "default", "x", main);
  REQUIRE(m);
  CHECK(str(*m, "/status/phase") == "Pending");
  CHECK(str(*m, "/metadata/labels/a") == "b");

  json::Document st = *m;
  (void)json::set_string(st, "/status/phase", "Running");
  (void)json::set_string(st, "/spec/nodeName", "node-1");
  (void)json::set_string(st, "/metadata/labels/a", "changed");
  auto u = s->update(pods(), "default", "x", st, "status");
  REQUIRE(u);
  CHECK(str(*u, "/status/phase") == "Running");
  CHECK(str(*u, "/spec/nodeName").empty());
  CHECK(str(*u, "/metadata/labels/a") == "b");
  CHECK(json::get_int(u->root(), "/metadata/generation") == 1);

  auto cm = s->update(builtin("", "configmaps"), "default", "x", doc("{}"), "status");
  CHECK_FALSE(cm);
}

TEST_CASE("patch a pod with merge, JSON, strategic and apply patches") {
  auto s = new_store();
  create_ok(*s, pods(), "default",
            pod_doc("x", "", R"({"containers":[{"name":"a","image":"a:1","env":[{"name":"E1","value":"1"}]},{"name":"b","image":"b:1"}]})"));

  auto m = s->patch(pods(), "default", "x", PatchKind::Merge, R"({"metadata":{"labels":{"k":"v"}}})");
  REQUIRE(m);
  CHECK(str(*m, "/metadata/labels/k") == "v");

  auto j = s->patch(pods(), "default", "x", PatchKind::JSON,
                    R"([{"op":"replace","path":"/spec/containers/1/image","value":"b:2"}])");
  REQUIRE(j);
  CHECK(str(*j, "/spec/containers/1/image") == "b:2");

  auto failed_test = s->patch(pods(), "default", "x", PatchKind::JSON,
                              R"([{"op":"test","path":"/metadata/labels/k","value":"other"}])");
  REQUIRE_FALSE(failed_test);
  CHECK(failed_test.error().code == 422);

  auto sm = s->patch(pods(), "default", "x", PatchKind::Strategic,
                     R"({"spec":{"containers":[{"name":"a","env":[{"name":"E2","value":"2"}]}]}})");
  REQUIRE(sm);
  CHECK(str(*sm, "/spec/containers/0/name") == "a");
  CHECK(str(*sm, "/spec/containers/0/image") == "a:1");
  CHECK(str(*sm, "/spec/containers/1/name") == "b");
  const json::Value* env = json::find(sm->root(), "/spec/containers/0/env");
  REQUIRE(env);
  CHECK(env->Size() == 2);

  auto status = s->patch(pods(), "default", "x", PatchKind::Merge, R"({"status":{"phase":"Running"}})", "status");
  REQUIRE(status);
  CHECK(str(*status, "/status/phase") == "Running");
  auto ignored = s->patch(pods(), "default", "x", PatchKind::Merge, R"({"status":{"phase":"Failed"}})");
  REQUIRE(ignored);
  CHECK(str(*ignored, "/status/phase") == "Running");

  auto stale = s->patch(pods(), "default", "x", PatchKind::Merge, R"({"metadata":{"resourceVersion":"1"}})");
  REQUIRE_FALSE(stale);
  CHECK(stale.error().code == 409);

  auto missing = s->patch(pods(), "default", "nope", PatchKind::Merge, "{}");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == 404);

  const auto& cms = builtin("", "configmaps");
  auto created = s->patch(cms, "default", "cfg", PatchKind::Apply,
                          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: '1'\n");
  REQUIRE(created);
  CHECK(str(*created, "/data/a") == "1");
  std::string rv = str(*created, "/metadata/resourceVersion");
  auto again = s->patch(cms, "default", "cfg", PatchKind::Apply,
                        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: '1'\n");
  REQUIRE(again);
  CHECK(str(*again, "/metadata/resourceVersion") == rv);
  auto merged = s->patch(cms, "default", "cfg", PatchKind::Apply,
                         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  b: '2'\n");
  REQUIRE(merged);
  CHECK(str(*merged, "/data/a") == "1");
  CHECK(str(*merged, "/data/b") == "2");
}

TEST_CASE("finalizers keep a deleted object until the last one is removed") {
  auto s = new_store();
  const auto& cms = builtin("", "configmaps");
  create_ok(*s, cms, "default", doc(R"({"metadata":{"name":"c","finalizers":["example.com/keep"]}})"));
  auto d = s->remove(cms, "default", "c", DeleteRequest{});
  REQUIRE(d);
  CHECK_FALSE(str(*d, "/metadata/deletionTimestamp").empty());
  CHECK(json::get_int(d->root(), "/metadata/deletionGracePeriodSeconds") == 0);
  CHECK(json::get_int(d->root(), "/metadata/generation") == 2);
  REQUIRE(s->get(cms, "default", "c"));

  auto add = s->patch(cms, "default", "c", PatchKind::Merge,
                      R"({"metadata":{"finalizers":["example.com/keep","example.com/more"]}})");
  REQUIRE_FALSE(add);
  CHECK(add.error().code == 422);
  CHECK(add.error().message.find("no new finalizers can be added if the object is being deleted") != std::string::npos);

  auto clear = s->patch(cms, "default", "c", PatchKind::Merge, R"({"metadata":{"finalizers":null}})");
  REQUIRE(clear);
  CHECK_FALSE(s->get(cms, "default", "c"));
}

TEST_CASE("graceful pod deletion, grace 0, unscheduled pods, preconditions, propagation policies") {
  auto s = new_store();
  create_ok(*s, pods(), "default", pod_doc("bound", "", R"({"nodeName":"n1","containers":[{"name":"c","image":"x"}]})"));
  auto d = s->remove(pods(), "default", "bound", DeleteRequest{});
  REQUIRE(d);
  CHECK(json::get_int(d->root(), "/metadata/deletionGracePeriodSeconds") == 30);
  REQUIRE(s->get(pods(), "default", "bound"));
  DeleteRequest now;
  now.grace_period_seconds = 0;
  REQUIRE(s->remove(pods(), "default", "bound", now));
  CHECK_FALSE(s->get(pods(), "default", "bound"));

  // Any int64 grace period: the deletionTimestamp stays a valid time (now + grace overflowed).
  create_ok(*s, pods(), "default", pod_doc("forever", "", R"({"nodeName":"n1","containers":[{"name":"c","image":"x"}]})"));
  DeleteRequest forever;
  forever.grace_period_seconds = std::numeric_limits<int64_t>::max();
  auto pending_forever = s->remove(pods(), "default", "forever", forever);
  REQUIRE(pending_forever);
  CHECK(json::get_int(pending_forever->root(), "/metadata/deletionGracePeriodSeconds") == std::numeric_limits<int64_t>::max());
  CHECK(str(*pending_forever, "/metadata/deletionTimestamp").size() == std::string("2026-01-01T00:00:00Z").size());
  REQUIRE(s->remove(pods(), "default", "forever", now));

  create_ok(*s, pods(), "default", pod_doc("pending"));
  REQUIRE(s->remove(pods(), "default", "pending", DeleteRequest{}));
  CHECK_FALSE(s->get(pods(), "default", "pending"));

  auto p = create_ok(*s, pods(), "default", pod_doc("pre"));
  DeleteRequest uid;
  uid.precondition_uid = "other";
  auto bad_uid = s->remove(pods(), "default", "pre", uid);
  REQUIRE_FALSE(bad_uid);
  CHECK(bad_uid.error().code == 409);
  CHECK(bad_uid.error().message == "Operation cannot be fulfilled on pods \"pre\": Precondition failed: UID in "
                                   "precondition: other, UID in object meta: " + str(p, "/metadata/uid"));
  DeleteRequest rv;
  rv.precondition_resource_version = "1";
  auto bad_rv = s->remove(pods(), "default", "pre", rv);
  REQUIRE_FALSE(bad_rv);
  CHECK(bad_rv.error().message.find("Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in "
                                    "object meta: ") != std::string::npos);

  const auto& cms = builtin("", "configmaps");
  create_ok(*s, cms, "default", doc(R"({"metadata":{"name":"o"}})"));
  DeleteRequest orphan;
  orphan.propagation_policy = "Orphan";
  auto o = s->remove(cms, "default", "o", orphan);
  REQUIRE(o);
  CHECK(json::dump(*json::find(o->root(), "/metadata/finalizers")) == R"(["orphan"])");
  create_ok(*s, cms, "default", doc(R"({"metadata":{"name":"f"}})"));
  DeleteRequest fg;
  fg.propagation_policy = "Foreground";
  auto f = s->remove(cms, "default", "f", fg);
  REQUIRE(f);
  CHECK(json::dump(*json::find(f->root(), "/metadata/finalizers")) == R"(["foregroundDeletion"])");
  create_ok(*s, cms, "default", doc(R"({"metadata":{"name":"b"}})"));
  DeleteRequest bg;
  bg.propagation_policy = "Background";
  REQUIRE(s->remove(cms, "default", "b", bg));
  CHECK_FALSE(s->get(cms, "default", "b"));
}

TEST_CASE("deletecollection and namespace deletion remove the objects") {
  auto s = new_store();
  const auto& nss = builtin("", "namespaces");
  create_ok(*s, nss, "", doc(R"({"metadata":{"name":"team"}})"));
  for (const char* n : {"a", "b", "c"}) {
    create_ok(*s, pods(), "team", pod_doc(n, std::string(R"("labels":{"app":")") + (n[0] == 'c' ? "other" : "web") + "\"}"));
  }
  create_ok(*s, builtin("", "configmaps"), "team", doc(R"({"metadata":{"name":"cfg"}})"));
  create_ok(*s, pods(), "default", pod_doc("keep", R"("labels":{"app":"web"})"));
  ListRequest sel;
  sel.label_selector = "app=web";
  auto deleted = s->remove_collection(pods(), "team", sel, DeleteRequest{});
  REQUIRE(deleted);
  CHECK(item_names(*deleted) == std::vector<std::string>{"a", "b"});
  CHECK(item_names(*s->list(pods(), "team", {})) == std::vector<std::string>{"c"});

  REQUIRE(s->remove(nss, "", "team", DeleteRequest{}));
  CHECK(item_names(*s->list(pods(), "team", {})).empty());
  CHECK(item_names(*s->list(builtin("", "configmaps"), "team", {})).empty());
  CHECK(item_names(*s->list(pods(), "", {})) == std::vector<std::string>{"keep"});
  auto in_gone = s->create(pods(), "team", pod_doc("late"));
  REQUIRE_FALSE(in_gone);
  CHECK(in_gone.error().message == "namespaces \"team\" not found");
}

TEST_CASE("list with label selectors (set-based) and field selectors") {
  auto s = new_store();
  create_ok(*s, pods(), "default", pod_doc("a", R"("labels":{"app":"web","tier":"fe"})",
                                           R"({"nodeName":"n1","containers":[{"name":"c","image":"x"}]})"));
  create_ok(*s, pods(), "default", pod_doc("b", R"("labels":{"app":"db"})"));
  create_ok(*s, pods(), "kube-system", pod_doc("c", R"("labels":{"app":"web"})"));
  REQUIRE(s->patch(pods(), "default", "b", PatchKind::Merge, R"({"status":{"phase":"Running"}})", "status"));

  auto names = [&](std::string ns, std::string labels, std::string fields) {
    ListRequest req;
    req.label_selector = labels;
    req.field_selector = fields;
    auto l = s->list(pods(), ns, req);
    INFO((l ? "" : l.error().message));
    REQUIRE(l);
    return item_names(*l);
  };
  CHECK(names("", "app in (web)", "") == std::vector<std::string>{"a", "c"});
  CHECK(names("default", "app in (web,db)", "") == std::vector<std::string>{"a", "b"});
  CHECK(names("", "app notin (web)", "") == std::vector<std::string>{"b"});
  CHECK(names("", "tier", "") == std::vector<std::string>{"a"});
  CHECK(names("", "!tier", "") == std::vector<std::string>{"b", "c"});
  CHECK(names("", "", "status.phase=Running") == std::vector<std::string>{"b"});
  CHECK(names("", "", "status.phase!=Running") == std::vector<std::string>{"a", "c"});
  CHECK(names("", "", "spec.nodeName=n1") == std::vector<std::string>{"a"});
  CHECK(names("", "", "spec.nodeName==") == std::vector<std::string>{"b", "c"});
  CHECK(names("", "", "metadata.name=c") == std::vector<std::string>{"c"});
  CHECK(names("", "app=web", "metadata.namespace=default") == std::vector<std::string>{"a"});

  ListRequest bad;
  bad.field_selector = "spec.foo=bar";
  auto e = s->list(pods(), "", bad);
  REQUIRE_FALSE(e);
  CHECK(e.error().code == 400);
  CHECK(e.error().message == "field label not supported: spec.foo");
  ListRequest bad_labels;
  bad_labels.label_selector = "a in (b";
  CHECK(s->list(pods(), "", bad_labels).error().code == 400);

  const auto& events = builtin("", "events");
  create_ok(*s, events, "default", doc(R"({"metadata":{"name":"e1"},"involvedObject":{"kind":"Pod","name":"a"},"reason":"Started"})"));
  create_ok(*s, events, "default", doc(R"({"metadata":{"name":"e2"},"involvedObject":{"kind":"Pod","name":"b"},"reason":"Started"})"));
  ListRequest ev;
  ev.field_selector = "involvedObject.name=b,involvedObject.kind=Pod";
  CHECK(item_names(*s->list(events, "default", ev)) == std::vector<std::string>{"e2"});
}

TEST_CASE("list paging with limit and continue, and resourceVersion semantics") {
  auto s = new_store();
  for (int i = 0; i < 5; ++i) create_ok(*s, pods(), "default", pod_doc("p" + std::to_string(i)));
  create_ok(*s, pods(), "kube-system", pod_doc("sys"));
  ListRequest req;
  req.limit = 2;
  auto first = s->list(pods(), "default", req);
  REQUIRE(first);
  auto d1 = doc(*first);
  CHECK(item_names(*first) == std::vector<std::string>{"p0", "p1"});
  CHECK(json::get_int(d1.root(), "/metadata/remainingItemCount") == 3);
  std::string token = str(d1, "/metadata/continue");
  REQUIRE_FALSE(token.empty());
  std::string rv = str(d1, "/metadata/resourceVersion");

  create_ok(*s, pods(), "default", pod_doc("p9"));
  req.continue_token = token;
  auto second = s->list(pods(), "default", req);
  REQUIRE(second);
  auto d2 = doc(*second);
  CHECK(item_names(*second) == std::vector<std::string>{"p2", "p3"});
  CHECK(str(d2, "/metadata/resourceVersion") == rv);
  req.continue_token = str(d2, "/metadata/continue");
  auto third = s->list(pods(), "default", req);
  REQUIRE(third);
  CHECK(item_names(*third) == std::vector<std::string>{"p4", "p9"});
  CHECK(str(doc(*third), "/metadata/continue").empty());

  // Any int64 limit: the list once reserved room for `limit` objects up front.
  ListRequest unbounded;
  unbounded.limit = std::numeric_limits<int64_t>::max();
  auto everything = s->list(pods(), "default", unbounded);
  REQUIRE(everything);
  CHECK(item_names(*everything).size() == 6);

  ListRequest bad;
  bad.continue_token = "!!!";
  CHECK(s->list(pods(), "default", bad).error().code == 400);
  CHECK(s->list(pods(), "default", bad).error().message.starts_with("invalid continue token: continue key is not valid"));

  ListRequest future;
  future.resource_version = std::to_string(std::stoull(s->resource_version()) + 100);
  auto f = s->list(pods(), "", future);
  REQUIRE_FALSE(f);
  CHECK(f.error().code == 504);
  CHECK(f.error().message.starts_with("Too large resource version: "));

  ListRequest exact;
  exact.resource_version = rv;
  exact.resource_version_match = "Exact";
  auto old = s->list(pods(), "", exact);
  REQUIRE_FALSE(old);
  CHECK(old.error().code == 410);
  exact.resource_version = s->resource_version();
  CHECK(s->list(pods(), "", exact));
  ListRequest not_older;
  not_older.resource_version = rv;
  auto all = s->list(pods(), "", not_older);
  REQUIRE(all);
  CHECK(item_names(*all).size() == 7);
}

TEST_CASE("services and secrets get kube-apiserver's defaults, dry run stores nothing") {
  auto s = new_store();
  auto svc = create_ok(*s, builtin("", "services"), "default",
                       doc(R"({"metadata":{"name":"web"},"spec":{"clusterIP":"None","ports":[{"port":80}]}})"));
  CHECK(str(svc, "/spec/type") == "ClusterIP");
  CHECK(json::get_int(svc.root(), "/spec/ports/0/targetPort") == 80);
  CHECK(str(svc, "/spec/ports/0/protocol") == "TCP");
  CHECK(str(svc, "/spec/clusterIPs/0") == "None");
  auto bad_svc = s->create(builtin("", "services"), "default", doc(R"({"metadata":{"name":"1web"}})"));
  REQUIRE_FALSE(bad_svc);
  CHECK(bad_svc.error().message.find("a DNS-1035 label must consist of") != std::string::npos);

  auto sec = create_ok(*s, builtin("", "secrets"), "default",
                       doc(R"({"metadata":{"name":"s"},"stringData":{"k":"hello"}})"));
  CHECK(str(sec, "/type") == "Opaque");
  CHECK(str(sec, "/data/k") == "aGVsbG8=");
  CHECK(json::find(sec.root(), "/stringData") == nullptr);

  auto dry = s->create(builtin("", "configmaps"), "default", doc(R"({"metadata":{"name":"dry"}})"), true);
  REQUIRE(dry);
  CHECK_FALSE(s->get(builtin("", "configmaps"), "default", "dry"));
}

TEST_CASE("a continue token older than the store's history is 410 with a token that goes on at the current state") {
  lc::StoreOptions o;
  o.watch_window = 2;
  auto s = new_store(o);
  for (int i = 0; i < 4; ++i) create_ok(*s, pods(), "default", pod_doc("p" + std::to_string(i)));
  ListRequest req;
  req.limit = 1;
  auto first = s->list(pods(), "default", req);
  REQUIRE(first);
  std::string token = str(doc(*first), "/metadata/continue");
  // Three more writes push the first page's resourceVersion out of the window.
  for (int i = 4; i < 7; ++i) create_ok(*s, pods(), "default", pod_doc("p" + std::to_string(i)));
  req.continue_token = token;
  auto expired = s->list(pods(), "default", req);
  REQUIRE_FALSE(expired);
  CHECK(expired.error().code == 410);
  CHECK(expired.error().reason == "Expired");
  CHECK(expired.error().message.starts_with("The provided continue parameter is too old to display a consistent list"));
  auto status = expired.error().to_status();
  std::string inconsistent = str(status, "/metadata/continue");
  auto decoded = lc::decode_continue_token(inconsistent);
  REQUIRE(decoded);
  CHECK(decoded->resource_version == -1);
  req.continue_token = inconsistent;
  auto rest = s->list(pods(), "default", req);
  REQUIRE(rest);
  CHECK(item_names(*rest) == std::vector<std::string>{"p1"});
  CHECK(str(doc(*rest), "/metadata/resourceVersion") == s->resource_version());

  // A token naming a resourceVersion the store has not reached is refused like a too-new list.
  req.continue_token = lc::encode_continue_token({static_cast<int64_t>(std::stoull(s->resource_version())) + 5, "default/p1"});
  auto future = s->list(pods(), "default", req);
  REQUIRE_FALSE(future);
  CHECK(future.error().code == 504);
}
