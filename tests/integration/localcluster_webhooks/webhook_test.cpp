// The local cluster calling admission and conversion webhooks like kube-apiserver: a real HTTPS
// webhook server inside the test process (its own test CA), reached by URL and as a Service
// through the endpoint resolver; requests and results checked over the local cluster's REST API.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/base/base64.h"
#include "core/json/json.h"
#include "core/kube/config.h"
#include "core/kube/transport.h"
#include "localcluster/local_cluster.h"
#include "localcluster/tls.h"
#include "tests/support/skip.h"
#include "tests/support/hook_server.h"

using namespace unitrain;
using namespace unitrain::localcluster;
using unitrain::testing::skip;
using json::Document;
using json::Value;
using unitrain::testing::Api;
using unitrain::testing::HookServer;

namespace {

Document parse(std::string_view s) {
  auto d = Document::parse(s);
  REQUIRE(d);
  return std::move(*d);
}

std::string str(const Value& v, std::string_view p) { return std::string(json::get_string(v, p).value_or("")); }


// An AdmissionReview response for `review`.
Document admission_response(const Document& review, bool allowed, const std::string& patch = {},
                            std::vector<std::string> warnings = {}, int code = 0, const std::string& message = {}) {
  Document d = Document::object();
  auto& a = d.alloc();
  d.root().AddMember("apiVersion", "admission.k8s.io/v1", a);
  d.root().AddMember("kind", "AdmissionReview", a);
  Value r(rapidjson::kObjectType);
  r.AddMember("uid", json::str(str(review.root(), "/request/uid"), a), a);
  r.AddMember("allowed", allowed, a);
  if (!patch.empty()) {
    r.AddMember("patchType", "JSONPatch", a);
    r.AddMember("patch", json::str(base64_encode(patch), a), a);
  }
  if (!warnings.empty()) {
    Value w(rapidjson::kArrayType);
    for (auto& x : warnings) w.PushBack(json::str(x, a), a);
    r.AddMember("warnings", w, a);
  }
  if (!allowed) {
    Value st(rapidjson::kObjectType);
    st.AddMember("code", code, a);
    st.AddMember("message", json::str(message, a), a);
    r.AddMember("status", st, a);
  }
  d.root().AddMember("response", r, a);
  return d;
}

// The test CRD's two versions: v1 has spec.count, v2 (storage) spec.replicas.
Document convert_review(const Document& review) {
  Document d = Document::object();
  auto& a = d.alloc();
  d.root().AddMember("apiVersion", "apiextensions.k8s.io/v1", a);
  d.root().AddMember("kind", "ConversionReview", a);
  Value r(rapidjson::kObjectType);
  r.AddMember("uid", json::str(str(review.root(), "/request/uid"), a), a);
  std::string desired = str(review.root(), "/request/desiredAPIVersion");
  Value out(rapidjson::kArrayType);
  bool refuse = false;
  for (const auto& o : review.root()["request"]["objects"].GetArray()) {
    if (json::find(o, "/metadata/labels/fail-convert") != nullptr) refuse = true;
    Document c = Document::copy_of(o);
    (void)json::set_string(c, "/apiVersion", desired);
    bool to_v1 = desired.ends_with("/v1");
    const char* from = to_v1 ? "/spec/replicas" : "/spec/count";
    const char* to = to_v1 ? "/spec/count" : "/spec/replicas";
    if (auto n = json::get_int(c.root(), from)) {
      json::remove(c, from);
      (void)json::set_int(c, to, *n);
    }
    out.PushBack(json::clone(c.root(), a), a);
  }
  Value result(rapidjson::kObjectType);
  if (refuse) {
    result.AddMember("status", "Failure", a);
    result.AddMember("message", "cannot convert a gadget labelled fail-convert", a);
    r.AddMember("convertedObjects", Value(rapidjson::kArrayType), a);
  } else {
    result.AddMember("status", "Success", a);
    r.AddMember("convertedObjects", out, a);
  }
  r.AddMember("result", result, a);
  d.root().AddMember("response", r, a);
  return d;
}

Document handle(const std::string& path, const Document& review) {
  const Value& q = review.root()["request"].IsObject() ? review.root()["request"] : review.root();
  if (path == "/convert") return convert_review(review);
  if (path == "/mutate") {
    if (json::find(q, "/object/metadata/labels/mutated") != nullptr) return admission_response(review, true);
    std::string patch = json::find(q, "/object/metadata/labels") != nullptr
                            ? R"([{"op":"add","path":"/metadata/labels/mutated","value":"true"}])"
                            : R"([{"op":"add","path":"/metadata/labels","value":{"mutated":"true"}}])";
    return admission_response(review, true, patch, {"mutated by test"});
  }
  if (path == "/deny") {
    std::string name = str(q, "/name");
    if (name.starts_with("bad")) return admission_response(review, false, {}, {}, 403, "name is forbidden");
    return admission_response(review, true);
  }
  if (path == "/slow") {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return admission_response(review, true);
  }
  return admission_response(review, true);  // /record, /count, ...
}


std::vector<std::string> warnings_of(const kube::http::Response& r) {
  std::vector<std::string> out;
  for (const auto& h : r.headers) {
    if (kube::http::iequals(h.name, "Warning")) out.push_back(h.value);
  }
  return out;
}

// A loopback port nothing listens on: the kernel picked it for a socket that is closed again.
uint16_t closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  REQUIRE(bound);
  return ntohs(addr.sin_port);
}

// Two CAs: the webhook server's, and one it was not signed by.
struct Fixture {
  Fixture() {
    // The webhook server answers for the Services mapped to it below, except "misnamed".
    auto t = make_self_signed_tls("DNS:hooks.hooks.svc,DNS:replicas.hooks.svc,DNS:down.hooks.svc,IP:127.0.0.1");
    REQUIRE(t);
    tls = std::move(*t);
    auto other = make_self_signed_tls("DNS:hooks.hooks.svc,IP:127.0.0.1");
    REQUIRE(other);
    other_ca = other->ca_cert_pem;
    hooks = std::make_unique<HookServer>(tls, handle);
    LocalClusterOptions o;
    o.threads = 4;
    REQUIRE(add_service_endpoint(o.webhooks, "hooks/hooks:443=127.0.0.1:" + std::to_string(hooks->port())));
    // A service whose certificate does not carry its name.
    REQUIRE(add_service_endpoint(o.webhooks, "hooks/misnamed:443=127.0.0.1:" + std::to_string(hooks->port())));
    // Two replicas behind one Service, the first one gone; and a Service whose only replica is gone.
    const std::string gone = "127.0.0.1:" + std::to_string(closed_port());
    REQUIRE(add_service_endpoint(o.webhooks, "hooks/replicas:443=" + gone));
    REQUIRE(add_service_endpoint(o.webhooks, "hooks/replicas:443=127.0.0.1:" + std::to_string(hooks->port())));
    REQUIRE(add_service_endpoint(o.webhooks, "hooks/down:443=" + gone));
    cluster = std::make_unique<LocalCluster>(std::move(o));
    REQUIRE(cluster->start());
    api = std::make_unique<Api>(*cluster);
  }

  std::string url_config(const std::string& path, const std::string& ca = {}) const {
    return R"({"url":"https://127.0.0.1:)" + std::to_string(hooks->port()) + path + R"(","caBundle":")" +
           base64_encode(ca.empty() ? tls.ca_cert_pem : ca) + R"("})";
  }
  std::string service_config(const std::string& path, const std::string& name = "hooks") const {
    return R"({"service":{"namespace":"hooks","name":")" + name + R"(","path":")" + path +
           R"(","port":443},"caBundle":")" + base64_encode(tls.ca_cert_pem) + R"("})";
  }

  void add_config(const std::string& kind, const std::string& name, const std::string& webhooks) {
    std::string plural = kind == "MutatingWebhookConfiguration" ? "mutatingwebhookconfigurations"
                                                                : "validatingwebhookconfigurations";
    auto r = api->send("POST", "/apis/admissionregistration.k8s.io/v1/" + plural,
                       R"({"apiVersion":"admissionregistration.k8s.io/v1","kind":")" + kind +
                           R"(","metadata":{"name":")" + name + R"("},"webhooks":)" + webhooks + "}");
    REQUIRE(r.status == 201);
  }

  kube::http::Response create_configmap(const std::string& ns, const std::string& name, const std::string& labels = "{}",
                                        const std::string& query = {}) {
    return api->send("POST", "/api/v1/namespaces/" + ns + "/configmaps" + query,
                     R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"(","labels":)" + labels +
                         R"(},"data":{"k":"v"}})");
  }

  TlsMaterial tls;
  std::string other_ca;
  std::unique_ptr<HookServer> hooks;
  std::unique_ptr<LocalCluster> cluster;
  std::unique_ptr<Api> api;
};

std::string hook(const std::string& name, const std::string& client_config, const std::string& rules,
                 const std::string& extra = {}) {
  return R"({"name":")" + name + R"(","clientConfig":)" + client_config + R"(,"rules":)" + rules +
         R"(,"sideEffects":"None","admissionReviewVersions":["v1"])" + extra + "}";
}

const char* kConfigMapCreate =
    R"([{"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"],"operations":["CREATE"]}])";

}  // namespace

TEST_CASE("mutating webhook patches, its warning reaches the client, validating webhook sees the result") {
  Fixture f;
  f.add_config("MutatingWebhookConfiguration", "mutate", "[" + hook("mutate.hooks.test", f.url_config("/mutate"), kConfigMapCreate) + "]");
  f.add_config("ValidatingWebhookConfiguration", "record",
               "[" + hook("record.hooks.test", f.service_config("/record"), kConfigMapCreate) + "]");
  auto r = f.create_configmap("default", "cm1");
  REQUIRE(r.status == 201);
  auto obj = parse(r.body);
  CHECK(str(obj.root(), "/metadata/labels/mutated") == "true");
  CHECK(warnings_of(r) == std::vector<std::string>{"299 - \"mutated by test\""});

  auto seen = f.hooks->seen("/record");
  REQUIRE(seen.size() == 1);
  const Value& q = seen[0].review.root()["request"];
  CHECK(str(seen[0].review.root(), "/apiVersion") == "admission.k8s.io/v1");
  CHECK(str(q, "/uid").size() == 36);
  CHECK(str(q, "/kind/kind") == "ConfigMap");
  CHECK(str(q, "/kind/version") == "v1");
  CHECK(str(q, "/resource/resource") == "configmaps");
  CHECK(str(q, "/requestKind/kind") == "ConfigMap");
  CHECK(str(q, "/requestResource/resource") == "configmaps");
  CHECK(str(q, "/name") == "cm1");
  CHECK(str(q, "/namespace") == "default");
  CHECK(str(q, "/operation") == "CREATE");
  CHECK(str(q, "/userInfo/username") == "system:admin");
  CHECK(json::get_bool(q, "/dryRun") == false);
  CHECK(str(q, "/options/kind") == "CreateOptions");
  CHECK(str(q, "/object/metadata/labels/mutated") == "true");
  CHECK(json::find(q, "/oldObject")->IsNull());

  // The stored object carries the mutation.
  auto got = f.api->send("GET", "/api/v1/namespaces/default/configmaps/cm1");
  CHECK(str(parse(got.body).root(), "/metadata/labels/mutated") == "true");
}

TEST_CASE("validating webhook denial is the API error with kube's wording") {
  Fixture f;
  f.add_config("ValidatingWebhookConfiguration", "deny",
               "[" + hook("deny.hooks.test", f.service_config("/deny"), kConfigMapCreate) + "]");
  auto bad = f.create_configmap("default", "bad-one");
  CHECK(bad.status == 403);
  auto st = parse(bad.body);
  CHECK(str(st.root(), "/kind") == "Status");
  CHECK(str(st.root(), "/message") == "admission webhook \"deny.hooks.test\" denied the request: name is forbidden");
  CHECK(f.api->send("GET", "/api/v1/namespaces/default/configmaps/bad-one").status == 404);
  CHECK(f.create_configmap("default", "good-one").status == 201);
}

TEST_CASE("failurePolicy: a timeout fails the request with Fail and is ignored with Ignore") {
  Fixture f;
  f.add_config("ValidatingWebhookConfiguration", "slow",
               "[" + hook("slow.hooks.test", f.service_config("/slow"), kConfigMapCreate, R"(,"timeoutSeconds":1)") +
                   "]");
  auto r = f.create_configmap("default", "a");
  CHECK(r.status == 500);
  auto msg = str(parse(r.body).root(), "/message");
  CHECK(msg.starts_with("Internal error occurred: failed calling webhook \"slow.hooks.test\": failed to call webhook: "
                        "Post \"https://hooks.hooks.svc:443/slow?timeout=1s\": "));
  CHECK(msg.ends_with("context deadline exceeded"));

  REQUIRE(f.api->send("DELETE", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/slow").status ==
          200);
  f.add_config("ValidatingWebhookConfiguration", "slow-ignored",
               "[" +
                   hook("slow.hooks.test", f.service_config("/slow"), kConfigMapCreate,
                        R"(,"timeoutSeconds":1,"failurePolicy":"Ignore")") +
                   "]");
  CHECK(f.create_configmap("default", "b").status == 201);
}

TEST_CASE("webhook TLS is verified against caBundle and the service DNS name") {
  Fixture f;
  SECTION("a caBundle that did not sign the server") {
    f.add_config("ValidatingWebhookConfiguration", "wrong-ca",
                 "[" + hook("ca.hooks.test", f.url_config("/record", f.other_ca), kConfigMapCreate) + "]");
  }
  SECTION("a service whose certificate does not name it") {
    f.add_config("ValidatingWebhookConfiguration", "wrong-name",
                 "[" + hook("ca.hooks.test", f.service_config("/record", "misnamed"), kConfigMapCreate) + "]");
  }
  SECTION("a service the cluster cannot reach") {
    f.add_config("ValidatingWebhookConfiguration", "unmapped",
                 "[" + hook("ca.hooks.test", f.service_config("/record", "nowhere"), kConfigMapCreate) + "]");
  }
  auto r = f.create_configmap("default", "x");
  CHECK(r.status == 500);
  auto msg = str(parse(r.body).root(), "/message");
  INFO(msg);
  CHECK(msg.starts_with("Internal error occurred: failed calling webhook \"ca.hooks.test\": failed to call webhook: "));
  bool explained = msg.find("tls: failed to verify certificate") != std::string::npos ||
                   msg.find("no such host") != std::string::npos;
  CHECK(explained);
  CHECK(f.hooks->seen("/record").empty());
}

TEST_CASE("rules, objectSelector, namespaceSelector and subresources decide which webhooks are called") {
  Fixture f;
  REQUIRE(f.api->send("POST", "/api/v1/namespaces", R"({"metadata":{"name":"watched","labels":{"team":"a"}}})").status ==
          201);
  f.add_config("ValidatingWebhookConfiguration", "sel",
               "[" +
                   hook("objsel.hooks.test", f.service_config("/objsel"), kConfigMapCreate,
                        R"(,"objectSelector":{"matchLabels":{"check":"yes"}})") +
                   "," +
                   hook("nssel.hooks.test", f.service_config("/nssel"), kConfigMapCreate,
                        R"(,"namespaceSelector":{"matchExpressions":[{"key":"team","operator":"In","values":["a"]}]})") +
                   "," +
                   hook("status.hooks.test", f.service_config("/deny"),
                        R"([{"apiGroups":[""],"apiVersions":["v1"],"resources":["pods/status"],"operations":["UPDATE"]}])") +
                   "," +
                   hook("delete.hooks.test", f.service_config("/deny"),
                        R"([{"apiGroups":["*"],"apiVersions":["*"],"resources":["*"],"operations":["DELETE"],"scope":"Namespaced"}])") +
                   "]");
  CHECK(f.create_configmap("default", "plain").status == 201);
  CHECK(f.create_configmap("default", "labelled", R"({"check":"yes"})").status == 201);
  CHECK(f.create_configmap("watched", "in-team").status == 201);
  auto objsel = f.hooks->seen("/objsel");
  REQUIRE(objsel.size() == 1);
  CHECK(str(objsel[0].review.root(), "/request/name") == "labelled");
  auto nssel = f.hooks->seen("/nssel");
  REQUIRE(nssel.size() == 1);
  CHECK(str(nssel[0].review.root(), "/request/namespace") == "watched");

  // pods/status matches an update of the status subresource only.
  REQUIRE(f.api->send("POST", "/api/v1/namespaces/default/pods",
                      R"({"metadata":{"name":"bad-pod"},"spec":{"containers":[{"name":"c","image":"busybox"}]}})")
              .status == 201);
  auto pod = parse(f.api->send("GET", "/api/v1/namespaces/default/pods/bad-pod").body);
  CHECK(f.api->send("PUT", "/api/v1/namespaces/default/pods/bad-pod", pod.dump()).status == 200);
  pod = parse(f.api->send("GET", "/api/v1/namespaces/default/pods/bad-pod").body);
  (void)json::set_string(pod, "/status/phase", "Running");
  auto st = f.api->send("PUT", "/api/v1/namespaces/default/pods/bad-pod/status", pod.dump());
  CHECK(st.status == 403);
  auto seen = f.hooks->seen("/deny");
  REQUIRE(!seen.empty());
  CHECK(str(seen.back().review.root(), "/request/subResource") == "status");
  CHECK(str(seen.back().review.root(), "/request/oldObject/status/phase") == "Pending");
  CHECK(str(seen.back().review.root(), "/request/object/status/phase") == "Running");

  // DELETE: the webhook sees the object being deleted as oldObject.
  auto del = f.api->send("DELETE", "/api/v1/namespaces/default/pods/bad-pod");
  CHECK(del.status == 403);
  seen = f.hooks->seen("/deny");
  CHECK(str(seen.back().review.root(), "/request/operation") == "DELETE");
  CHECK(str(seen.back().review.root(), "/request/oldObject/metadata/name") == "bad-pod");
  CHECK(str(seen.back().review.root(), "/request/options/kind") == "DeleteOptions");
  CHECK(f.api->send("GET", "/api/v1/namespaces/default/pods/bad-pod").status == 200);
  // Namespaces are cluster-scoped: the Namespaced rule leaves them alone (the webhook would deny
  // this name).
  REQUIRE(f.api->send("POST", "/api/v1/namespaces", R"({"metadata":{"name":"bad-ns"}})").status == 201);
  CHECK(f.api->send("DELETE", "/api/v1/namespaces/bad-ns").status == 200);
}

TEST_CASE("reinvocationPolicy IfNeeded calls a mutating webhook again after a later one changed the object") {
  Fixture f;
  f.add_config("MutatingWebhookConfiguration", "m",
               "[" + hook("count.hooks.test", f.service_config("/count"), kConfigMapCreate, R"(,"reinvocationPolicy":"IfNeeded")") +
                   "," + hook("once.hooks.test", f.service_config("/once"), kConfigMapCreate) + "," +
                   hook("mutate.hooks.test", f.url_config("/mutate"), kConfigMapCreate) + "]");
  REQUIRE(f.create_configmap("default", "r").status == 201);
  auto count = f.hooks->seen("/count");
  REQUIRE(count.size() == 2);
  CHECK(json::find(count[0].review.root(), "/request/object/metadata/labels/mutated") == nullptr);
  CHECK(str(count[1].review.root(), "/request/object/metadata/labels/mutated") == "true");
  CHECK(f.hooks->seen("/once").size() == 1);  // reinvocationPolicy Never
}

TEST_CASE("dry run is refused by webhooks with side effects and flagged to the others") {
  Fixture f;
  f.add_config("ValidatingWebhookConfiguration", "se",
               "[" + hook("record.hooks.test", f.service_config("/record"), kConfigMapCreate) + "]");
  auto ok = f.create_configmap("default", "d", "{}", "?dryRun=All");
  CHECK(ok.status == 201);
  auto seen = f.hooks->seen("/record");
  REQUIRE(seen.size() == 1);
  CHECK(json::get_bool(seen[0].review.root(), "/request/dryRun") == true);
  CHECK(f.api->send("GET", "/api/v1/namespaces/default/configmaps/d").status == 404);

  f.add_config("ValidatingWebhookConfiguration", "unknown-effects",
               R"([{"name":"effects.hooks.test","clientConfig":)" + f.service_config("/record") + R"(,"rules":)" +
                   kConfigMapCreate + R"(,"sideEffects":"Some","admissionReviewVersions":["v1"]}])");
  auto refused = f.create_configmap("default", "e", "{}", "?dryRun=All");
  CHECK(refused.status == 400);
  CHECK(str(parse(refused.body).root(), "/message") == "admission webhook \"effects.hooks.test\" does not support dry run");
}

namespace {

std::string gadget_crd(const Fixture& f, const std::string& strategy) {
  std::string conversion = strategy == "Webhook"
                               ? R"({"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":)" +
                                     f.service_config("/convert") + "}}"
                               : R"({"strategy":"None"})";
  const char* schema = R"({"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}})";
  return std::string(R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",)") +
         R"("metadata":{"name":"gadgets.hooks.example.com"},"spec":{"group":"hooks.example.com","scope":"Namespaced",)" +
         R"("names":{"plural":"gadgets","singular":"gadget","kind":"Gadget","listKind":"GadgetList"},)" +
         R"("versions":[{"name":"v1","served":true,"storage":false,"schema":)" + schema +
         R"(},{"name":"v2","served":true,"storage":true,"schema":)" + schema + R"(}],"conversion":)" + conversion +
         "}}";
}

void add_gadget_crd(Fixture& f, const std::string& strategy) {
  REQUIRE(f.api->send("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", gadget_crd(f, strategy))
              .status == 201);
}

const std::string kGadgetsV1 = "/apis/hooks.example.com/v1/namespaces/default/gadgets";
const std::string kGadgetsV2 = "/apis/hooks.example.com/v2/namespaces/default/gadgets";

}  // namespace

TEST_CASE("a Service's replica that cannot be reached is skipped, with none left the call fails") {
  Fixture f;
  add_gadget_crd(f, "Webhook");
  // The conversion webhook behind the Service whose first replica is gone: every version is served.
  auto crd_path = std::string("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.hooks.example.com");
  const std::string to_service =
      R"({"spec":{"conversion":{"webhook":{"clientConfig":{"url":null,"service":{"namespace":"hooks","name":")";
  auto point_at = [&](const std::string& service) {
    auto r = f.api->send("PATCH", crd_path,
                         to_service + service + R"(","path":"/convert","port":443}}}}}})", "application/merge-patch+json");
    REQUIRE(r.status == 200);
  };
  point_at("replicas");
  REQUIRE(f.api->send("POST", kGadgetsV2,
                      R"({"apiVersion":"hooks.example.com/v2","kind":"Gadget","metadata":{"name":"r1"},"spec":{"replicas":2}})")
              .status == 201);
  auto got = f.api->send("GET", kGadgetsV1 + "/r1");
  REQUIRE(got.status == 200);
  CHECK(json::get_int(parse(got.body).root(), "/spec/count") == 2);
  // Admission likewise.
  f.add_config("ValidatingWebhookConfiguration", "replicas",
               "[" + hook("replicas.hooks.test", f.service_config("/record", "replicas"), kConfigMapCreate) + "]");
  CHECK(f.create_configmap("default", "through-replicas").status == 201);
  CHECK(f.hooks->seen("/record").size() == 1);

  point_at("down");
  auto failed = f.api->send("GET", kGadgetsV1 + "/r1");
  CHECK(failed.status == 500);
  auto msg = str(parse(failed.body).root(), "/message");
  INFO(msg);
  CHECK(msg.starts_with("Internal error occurred: conversion webhook for hooks.example.com/v2, Kind=Gadget failed: "
                        "Post \"https://down.hooks.svc:443/convert?timeout=30s\": "));
  CHECK(msg.find("refused") != std::string::npos);
}

TEST_CASE("a CRD with a conversion webhook stores at the storage version and serves every version") {
  Fixture f;
  add_gadget_crd(f, "Webhook");
  auto created = f.api->send("POST", kGadgetsV1,
                             R"({"apiVersion":"hooks.example.com/v1","kind":"Gadget","metadata":{"name":"g1"},"spec":{"count":3}})");
  REQUIRE(created.status == 201);
  auto c = parse(created.body);
  CHECK(str(c.root(), "/apiVersion") == "hooks.example.com/v1");
  CHECK(json::get_int(c.root(), "/spec/count") == 3);

  // Stored at v2, converted by the webhook.
  auto v2 = f.cluster->store().find_resource("hooks.example.com", "v2", "gadgets");
  REQUIRE(v2);
  auto stored = f.cluster->store().get(*v2, "default", "g1");
  REQUIRE(stored);
  CHECK(json::get_int(stored->root(), "/spec/replicas") == 3);
  CHECK(json::find(stored->root(), "/spec/count") == nullptr);

  auto convs = f.hooks->seen("/convert");
  REQUIRE(!convs.empty());
  const Value& q = convs.front().review.root()["request"];
  CHECK(str(convs.front().review.root(), "/kind") == "ConversionReview");
  CHECK(str(q, "/uid").size() == 36);
  CHECK(str(q, "/desiredAPIVersion") == "hooks.example.com/v2");

  auto got = parse(f.api->send("GET", kGadgetsV1 + "/g1").body);
  CHECK(json::get_int(got.root(), "/spec/count") == 3);
  CHECK(str(got.root(), "/metadata/uid") == str(stored->root(), "/metadata/uid"));
  auto list = parse(f.api->send("GET", kGadgetsV1).body);
  CHECK(str(list.root(), "/apiVersion") == "hooks.example.com/v1");
  REQUIRE(list.root()["items"].Size() == 1);
  CHECK(json::get_int(list.root()["items"][0], "/spec/count") == 3);

  // A patch at v1 applies to the v1 form and is stored converted.
  auto patched = f.api->send("PATCH", kGadgetsV1 + "/g1", R"({"spec":{"count":5}})", "application/merge-patch+json");
  REQUIRE(patched.status == 200);
  CHECK(json::get_int(parse(patched.body).root(), "/spec/count") == 5);
  CHECK(json::get_int(f.cluster->store().get(*v2, "default", "g1")->root(), "/spec/replicas") == 5);
  // An update at v1 likewise.
  auto cur = parse(f.api->send("GET", kGadgetsV1 + "/g1").body);
  (void)json::set_int(cur, "/spec/count", 7);
  REQUIRE(f.api->send("PUT", kGadgetsV1 + "/g1", cur.dump()).status == 200);
  CHECK(json::get_int(f.cluster->store().get(*v2, "default", "g1")->root(), "/spec/replicas") == 7);

  // The storage version is served without the webhook.
  size_t before = f.hooks->seen("/convert").size();
  auto direct = parse(f.api->send("GET", kGadgetsV2 + "/g1").body);
  CHECK(json::get_int(direct.root(), "/spec/replicas") == 7);
  CHECK(f.hooks->seen("/convert").size() == before);
}

TEST_CASE("a watch at a non-storage version delivers objects converted by the webhook") {
  Fixture f;
  add_gadget_crd(f, "Webhook");
  kube::http::Request req;
  req.target = kGadgetsV1 + "?watch=true&timeoutSeconds=10";
  auto stream = f.api->transport->open_stream(req);
  REQUIRE(stream);
  REQUIRE(f.api->send("POST", kGadgetsV2,
                      R"({"apiVersion":"hooks.example.com/v2","kind":"Gadget","metadata":{"name":"w1"},"spec":{"replicas":4}})")
              .status == 201);
  std::string data;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (data.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    auto r = (*stream)->read(std::chrono::milliseconds(500), data);
    REQUIRE(r);
    if (*r == kube::BodyStream::Read::End) break;
  }
  (*stream)->cancel();
  REQUIRE(data.find('\n') != std::string::npos);
  auto ev = parse(data.substr(0, data.find('\n')));
  CHECK(str(ev.root(), "/type") == "ADDED");
  CHECK(str(ev.root(), "/object/apiVersion") == "hooks.example.com/v1");
  CHECK(json::get_int(ev.root(), "/object/spec/count") == 4);
}

TEST_CASE("a conversion webhook failure is an internal error with kube's wording") {
  Fixture f;
  add_gadget_crd(f, "Webhook");
  REQUIRE(f.api->send("POST", kGadgetsV2,
                      R"({"apiVersion":"hooks.example.com/v2","kind":"Gadget","metadata":{"name":"nope","labels":{"fail-convert":"x"}},"spec":{"replicas":1}})")
              .status == 201);
  auto r = f.api->send("GET", kGadgetsV1 + "/nope");
  CHECK(r.status == 500);
  CHECK(str(parse(r.body).root(), "/message") ==
        "Internal error occurred: conversion webhook for hooks.example.com/v2, Kind=Gadget failed: cannot convert a "
        "gadget labelled fail-convert");
}

TEST_CASE("matchPolicy Equivalent sends a request at another version converted to the webhook's version") {
  Fixture f;
  add_gadget_crd(f, "Webhook");
  const char* v1_rules =
      R"([{"apiGroups":["hooks.example.com"],"apiVersions":["v1"],"resources":["gadgets"],"operations":["CREATE"]}])";
  f.add_config("ValidatingWebhookConfiguration", "eq",
               "[" + hook("equivalent.hooks.test", f.service_config("/equivalent"), v1_rules) + "," +
                   hook("exact.hooks.test", f.service_config("/exact"), v1_rules, R"(,"matchPolicy":"Exact")") + "]");
  REQUIRE(f.api->send("POST", kGadgetsV2,
                      R"({"apiVersion":"hooks.example.com/v2","kind":"Gadget","metadata":{"name":"e1"},"spec":{"replicas":2}})")
              .status == 201);
  CHECK(f.hooks->seen("/exact").empty());
  auto seen = f.hooks->seen("/equivalent");
  REQUIRE(seen.size() == 1);
  const Value& q = seen[0].review.root()["request"];
  CHECK(str(q, "/kind/version") == "v1");
  CHECK(str(q, "/resource/version") == "v1");
  CHECK(str(q, "/requestKind/version") == "v2");
  CHECK(str(q, "/requestResource/version") == "v2");
  CHECK(str(q, "/object/apiVersion") == "hooks.example.com/v1");
  CHECK(json::get_int(q, "/object/spec/count") == 2);
}

TEST_CASE("conversion strategy None only changes apiVersion") {
  Fixture f;
  add_gadget_crd(f, "None");
  REQUIRE(f.api->send("POST", kGadgetsV1,
                      R"({"apiVersion":"hooks.example.com/v1","kind":"Gadget","metadata":{"name":"n1"},"spec":{"count":3}})")
              .status == 201);
  auto v2 = parse(f.api->send("GET", kGadgetsV2 + "/n1").body);
  CHECK(str(v2.root(), "/apiVersion") == "hooks.example.com/v2");
  CHECK(json::get_int(v2.root(), "/spec/count") == 3);
  CHECK(f.hooks->seen("/convert").empty());
}

TEST_CASE("kubectl prints a webhook denial and its warnings") {
  namespace fs = std::filesystem;
  const char* path = std::getenv("PATH");
  std::string kubectl;
  for (std::string_view dirs = path != nullptr ? path : ""; !dirs.empty();) {
    auto colon = dirs.find(':');
    fs::path candidate = fs::path(std::string(dirs.substr(0, colon))) / "kubectl";
    if (fs::exists(candidate)) {
      kubectl = candidate.string();
      break;
    }
    dirs = colon == std::string_view::npos ? std::string_view{} : dirs.substr(colon + 1);
  }
  if (kubectl.empty()) {
    return skip("kubectl not found on PATH");
  }
  Fixture f;
  fs::path dir = fs::temp_directory_path() / ("lcwebhook-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream kc(dir / "kubeconfig");
    kc << "apiVersion: v1\nkind: Config\nclusters:\n- name: lc\n  cluster:\n    server: " << f.cluster->url()
       << "\ncontexts:\n- name: lc\n  context:\n    cluster: lc\n    user: u\nusers:\n- name: u\n  user: {}\n"
          "current-context: lc\n";
    std::ofstream cfg(dir / "hooks.yaml");
    cfg << R"({"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"deny"},"webhooks":[)" +
               hook("deny.hooks.test", f.service_config("/deny"), kConfigMapCreate) + "]}\n";
    // `kubectl create configmap` sends protobuf, which the local cluster does not decode; from
    // a file kubectl sends JSON.
    for (const char* name : {"bad-cm", "good-cm"}) {
      std::ofstream cm(dir / (std::string(name) + ".yaml"));
      cm << "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " << name << "\ndata:\n  a: b\n";
    }
    std::ofstream m(dir / "mutate.yaml");
    m << R"({"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"name":"mutate"},"webhooks":[)" +
             hook("mutate.hooks.test", f.url_config("/mutate"), kConfigMapCreate) + "]}\n";
  }
  auto run = [&](const std::string& args) {
    // Its discovery cache in `dir`: in ~/.kube/cache every run's port would leave a folder behind.
    std::string cmd = kubectl + " --kubeconfig " + (dir / "kubeconfig").string() + " --cache-dir " +
                      (dir / "kubectl-cache").string() + " " + args + " 2>&1";
    std::string out;
    FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    char buf[512];
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    int rc = ::pclose(p);
    return std::make_pair(rc, out);
  };
  auto [rc1, out1] = run("apply -f " + (dir / "hooks.yaml").string() + " -f " + (dir / "mutate.yaml").string());
  INFO(out1);
  REQUIRE(rc1 == 0);
  auto [rc2, out2] = run("get validatingwebhookconfigurations");
  INFO(out2);
  CHECK(out2.find("deny") != std::string::npos);
  auto [rc3, out3] = run("create -f " + (dir / "bad-cm.yaml").string());
  INFO(out3);
  CHECK(rc3 != 0);
  CHECK(out3.find("admission webhook \"deny.hooks.test\" denied the request: name is forbidden") != std::string::npos);
  auto [rc4, out4] = run("create -f " + (dir / "good-cm.yaml").string());
  INFO(out4);
  CHECK(rc4 == 0);
  CHECK(out4.find("Warning: mutated by test") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("an admitted Job keeps the selector defaulted from its own uid") {
  Fixture f;
  f.add_config("ValidatingWebhookConfiguration", "all",
               "[" +
                   hook("record.hooks.test", f.service_config("/record"),
                        R"([{"apiGroups":["batch"],"apiVersions":["v1"],"resources":["jobs"],"operations":["CREATE"]}])") +
                   "]");
  auto r = f.api->send("POST", "/apis/batch/v1/namespaces/default/jobs",
                       R"({"metadata":{"generateName":"j-"},"spec":{"template":{"spec":{"restartPolicy":"Never",)"
                       R"("containers":[{"name":"c","image":"busybox"}]}}}})");
  REQUIRE(r.status == 201);
  auto job = parse(r.body);
  std::string uid = str(job.root(), "/metadata/uid");
  CHECK(str(job.root(), "/spec/selector/matchLabels/batch.kubernetes.io~1controller-uid") == uid);
  auto seen = f.hooks->seen("/record");
  REQUIRE(seen.size() == 1);
  // The name the validating webhook saw is the one stored.
  CHECK(str(seen[0].review.root(), "/request/name") == str(job.root(), "/metadata/name"));
}
