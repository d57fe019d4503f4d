// Admission fails closed: every review the webhooks cannot act on gets a refusal that names what
// is wrong (AdmissionReview: allowed false with a 400 BadRequest status; ConversionReview: a
// Failure result, or HTTP 400 when there is no request to answer), never an allowed: true.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/kube/config.h"
#include "core/webhook/handler.h"
#include "core/webhook/review.h"
#include "frameworks/mpi/conversion/conversion.h"
#include "frameworks/mpi/v2/register.h"
#include "frameworks/mxnet/register.h"
#include "frameworks/pytorch/register.h"

using namespace unitrain;

namespace {

json::Document parse_json(std::string_view text) {
  auto d = json::Document::parse(text);
  REQUIRE(d);
  return std::move(*d);
}

struct Hooks {
  framework::Registry registry;
  std::vector<std::unique_ptr<framework::FrameworkPlugin>> owned;
  std::unique_ptr<webhook::Handler> handler;

  Hooks() {
    REQUIRE(frameworks::pytorch::register_pytorch(registry));
    REQUIRE(frameworks::mxnet::register_mxnet(registry));
    REQUIRE(frameworks::mpi::v2::register_mpi_v2(registry));
    REQUIRE(frameworks::mpi::conversion::register_mpi_conversion(registry));
    std::vector<const framework::FrameworkPlugin*> plugins;
    for (const char* name : {"pytorchjob", "mxjob", "mpijob-v2"}) {
      auto p = registry.instantiate(name, {});
      REQUIRE(p);
      plugins.push_back(p->get());
      owned.push_back(std::move(*p));
    }
    handler = std::make_unique<webhook::Handler>(plugins, registry);
  }
};

constexpr std::string_view kValidate = "/validate-kubeflow-org-v1-pytorchjob";
constexpr std::string_view kMutate = "/mutate-kubeflow-org-v1-pytorchjob";
constexpr std::string_view kPyTorchKind = R"({"group":"kubeflow.org","version":"v1","kind":"PyTorchJob"})";
constexpr std::string_view kPyTorchResource = R"({"group":"kubeflow.org","version":"v1","resource":"pytorchjobs"})";
constexpr std::string_view kJob =
    R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"job","namespace":"default"},)"
    R"("spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":{"spec":{"containers":[{"name":"pytorch","image":"x"}]}}}}}})";

// A review whose request members are `members` (a JSON object body without braces).
std::string review_with(std::string_view members) {
  return fmt::format(R"({{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{{}}}}})", members);
}

// request members for `operation` on PyTorchJob, with `extra` members appended.
std::string request(std::string_view operation, std::string_view extra) {
  return fmt::format(R"("uid":"u-7","kind":{},"resource":{},"operation":"{}"{}{})", kPyTorchKind, kPyTorchResource, operation,
                     extra.empty() ? "" : ",", extra);
}

struct Refusal {
  std::string uid;
  std::string message;
};

// The answer must be an HTTP 200 AdmissionReview refusing with 400 BadRequest.
Refusal refusal(const webhook::Reply& reply) {
  REQUIRE(reply.status == 200);
  auto doc = parse_json(reply.body);
  CHECK(json::get_string(doc.root(), "/apiVersion") == std::string_view("admission.k8s.io/v1"));
  CHECK(json::get_string(doc.root(), "/kind") == std::string_view("AdmissionReview"));
  CHECK(json::get_bool(doc.root(), "/response/allowed") == false);
  CHECK(json::get_int(doc.root(), "/response/status/code") == 400);
  CHECK(json::get_string(doc.root(), "/response/status/reason") == std::string_view("BadRequest"));
  CHECK(json::get_string(doc.root(), "/response/status/status") == std::string_view("Failure"));
  return {std::string(json::get_string(doc.root(), "/response/uid").value_or("?")),
          std::string(json::get_string(doc.root(), "/response/status/message").value_or(""))};
}

bool allowed(const webhook::Reply& reply) {
  REQUIRE(reply.status == 200);
  auto doc = parse_json(reply.body);
  return json::get_bool(doc.root(), "/response/allowed") == true;
}

}  // namespace

TEST_CASE("malformed admission: a body that is no AdmissionReview is refused, naming the problem") {
  Hooks h;
  struct Case {
    std::string body, message;
  };
  const std::vector<Case> cases = {
      {"not json", "malformed AdmissionReview: invalid JSON at offset 1: Invalid value."},
      {"", "malformed AdmissionReview: invalid JSON at offset 0: The document is empty."},
      {"[1]", "malformed AdmissionReview: the body must be a JSON object, not array"},
      {R"({"apiVersion":"admission.k8s.io/v1"})", "malformed AdmissionReview: kind: Required value"},
      {R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{}})",
       R"(malformed AdmissionReview: kind: Unsupported value: "ConversionReview": supported values: "AdmissionReview")"},
      {R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}})",
       R"(malformed AdmissionReview: apiVersion: Unsupported value: "admission.k8s.io/v1beta1": supported values: "admission.k8s.io/v1")"},
      {R"({"kind":"AdmissionReview"})", "malformed AdmissionReview: apiVersion: Required value"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})", "malformed AdmissionReview: request: Required value"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null})",
       "malformed AdmissionReview: request: Required value"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":"x"})",
       R"(malformed AdmissionReview: request: Invalid value: "string": must be an object)"},
      {review_with(R"("operation":"CREATE")"), "malformed AdmissionReview: request.uid: Required value"},
      {review_with(R"("uid":"")"), "malformed AdmissionReview: request.uid: Required value: must not be empty"},
      {review_with(R"("uid":7)"), R"(malformed AdmissionReview: request.uid: Invalid value: "number": must be a string)"},
  };
  for (const auto& c : cases) {
    INFO(c.body);
    auto r = refusal(h.handler->handle(kValidate, c.body));
    CHECK(r.message == c.message);
    CHECK(r.uid.empty());
    CHECK(refusal(h.handler->handle(kMutate, c.body)).message == c.message);
  }
}

TEST_CASE("malformed admission: a request for another operation, kind or resource is refused with its uid") {
  Hooks h;
  struct Case {
    std::string members, message;
  };
  const std::string job(kJob);
  const std::vector<Case> cases = {
      {R"("uid":"u-7")", "malformed AdmissionReview: request.operation: Required value"},
      {R"("uid":"u-7","operation":"PATCH")",
       R"(malformed AdmissionReview: request.operation: Unsupported value: "PATCH": supported values: "CREATE", "UPDATE", "DELETE", "CONNECT")"},
      {R"("uid":"u-7","operation":"CREATE","object":)" + job, "malformed AdmissionReview: request.kind: Required value"},
      {fmt::format(R"("uid":"u-7","operation":"CREATE","kind":{{"group":"kubeflow.org","version":"v1","kind":"TFJob"}},)"
                   R"("resource":{},"object":{})", kPyTorchResource, job),
       R"(malformed AdmissionReview: request.kind: Invalid value: "kubeflow.org/v1, Kind=TFJob": this webhook admits kubeflow.org/v1, Kind=PyTorchJob)"},
      {fmt::format(R"("uid":"u-7","operation":"CREATE","kind":["x"],"resource":{},"object":{})", kPyTorchResource, job),
       R"(malformed AdmissionReview: request.kind: Invalid value: "array": must be an object of group, version and kind strings)"},
      {fmt::format(R"("uid":"u-7","operation":"CREATE","kind":{},"object":{})", kPyTorchKind, job),
       "malformed AdmissionReview: request.resource: Required value"},
      {fmt::format(R"("uid":"u-7","operation":"CREATE","kind":{},"resource":{{"group":"kubeflow.org","version":"v1",)"
                   R"("resource":"tfjobs"}},"object":{})", kPyTorchKind, job),
       R"(malformed AdmissionReview: request.resource: Invalid value: "kubeflow.org/v1, Resource=tfjobs": this webhook admits kubeflow.org/v1, Resource=pytorchjobs)"},
      {request("UPDATE", R"("subResource":"status","object":)" + job + R"(,"oldObject":)" + job),
       R"(malformed AdmissionReview: request.subResource: Invalid value: "status": this webhook admits pytorchjobs itself, not a subresource)"},
      {request("CREATE", R"("name":5,"object":)" + job), R"(malformed AdmissionReview: request.name: Invalid value: "number": must be a string)"},
  };
  for (const auto& c : cases) {
    INFO(c.members);
    auto r = refusal(h.handler->handle(kValidate, review_with(c.members)));
    CHECK(r.message == c.message);
    CHECK(r.uid == "u-7");
  }
}

TEST_CASE("malformed admission: a review without the object it needs is refused, never allowed") {
  Hooks h;
  const std::string job(kJob);
  struct Case {
    std::string_view path;
    std::string members, message;
  };
  const std::vector<Case> cases = {
      // The review that used to be allowed: CREATE with no object at all.
      {kValidate, request("CREATE", ""),
       "malformed AdmissionReview: request.object: Required value: a CREATE review carries the object to admit"},
      {kMutate, request("CREATE", ""),
       "malformed AdmissionReview: request.object: Required value: a CREATE review carries the object to admit"},
      {kValidate, request("CREATE", R"("object":null)"),
       "malformed AdmissionReview: request.object: Required value: a CREATE review carries the object to admit"},
      {kValidate, request("CREATE", R"("object":"job")"),
       R"(malformed AdmissionReview: request.object: Invalid value: "string": must be an object)"},
      {kValidate, request("CREATE", R"("object":{"apiVersion":"kubeflow.org/v1","kind":"TFJob"})"),
       R"(malformed AdmissionReview: request.object.kind: Invalid value: "TFJob": must be PyTorchJob)"},
      {kValidate, request("CREATE", R"("object":{"kind":"PyTorchJob"})"),
       "malformed AdmissionReview: request.object.apiVersion: Required value: must be kubeflow.org/v1"},
      {kValidate, request("CREATE", R"("object":{"apiVersion":"kubeflow.org/v2","kind":"PyTorchJob"})"),
       R"(malformed AdmissionReview: request.object.apiVersion: Invalid value: "kubeflow.org/v2": must be kubeflow.org/v1)"},
      {kValidate, request("CREATE", R"("object":{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":[]})"),
       R"(malformed AdmissionReview: request.object.metadata: Invalid value: "array": must be an object)"},
      {kValidate, request("UPDATE", R"("object":)" + job),
       "malformed AdmissionReview: request.oldObject: Required value: a UPDATE review carries the object as it was"},
      {kValidate, request("UPDATE", R"("oldObject":)" + job),
       "malformed AdmissionReview: request.object: Required value: a UPDATE review carries the object to admit"},
      {kValidate, request("DELETE", ""),
       "malformed AdmissionReview: request.oldObject: Required value: a DELETE review carries the object as it was"},
      {kValidate, request("DELETE", R"("oldObject":{"apiVersion":"kubeflow.org/v1","kind":"MPIJob"})"),
       R"(malformed AdmissionReview: request.oldObject.kind: Invalid value: "MPIJob": must be PyTorchJob)"},
  };
  for (const auto& c : cases) {
    INFO(c.path << " " << c.members);
    auto r = refusal(h.handler->handle(c.path, review_with(c.members)));
    CHECK(r.message == c.message);
    CHECK(r.uid == "u-7");
  }
}

TEST_CASE("admission: DELETE and CONNECT are answered as controller-runtime answers them") {
  Hooks h;
  const std::string job(kJob);
  // Validating: DELETE reads the object being deleted and validates nothing; CONNECT reads nothing.
  CHECK(allowed(h.handler->handle(kValidate, review_with(request("DELETE", R"("oldObject":)" + job)))));
  CHECK(allowed(h.handler->handle(kValidate, review_with(request("CONNECT", "")))));
  // An invalid job can still be deleted.
  const std::string invalid = R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"job"},"spec":{}})";
  CHECK(allowed(h.handler->handle(kValidate, review_with(request("DELETE", R"("oldObject":)" + invalid)))));
  // Defaulting: nothing to default on DELETE, and no patch.
  auto deleted = h.handler->handle(kMutate, review_with(request("DELETE", "")));
  CHECK(allowed(deleted));
  CHECK(deleted.body.find("patch") == std::string::npos);
  // UPDATE needs only the new object to default.
  CHECK(allowed(h.handler->handle(kMutate, review_with(request("UPDATE", R"("object":)" + job)))));
  // A deprecated kind's DELETE carries its warning.
  const std::string mx = R"({"apiVersion":"kubeflow.org/v1","kind":"MXJob","metadata":{"name":"m"}})";
  auto mx_delete = h.handler->handle(
      "/validate-kubeflow-org-v1-mxjob",
      review_with(R"("uid":"u-8","kind":{"group":"kubeflow.org","version":"v1","kind":"MXJob"},)"
                  R"("resource":{"group":"kubeflow.org","version":"v1","resource":"mxjobs"},"operation":"DELETE","oldObject":)" + mx));
  auto doc = parse_json(mx_delete.body);
  CHECK(json::get_bool(doc.root(), "/response/allowed") == true);
  CHECK(json::get_string(doc.root(), "/response/warnings/0").value_or("").find("MXJob is deprecated") != std::string_view::npos);
}

TEST_CASE("malformed conversion: no request to answer is an HTTP 400, a bad request a Failure naming the field") {
  Hooks h;
  for (const auto& [body, message] : std::vector<std::pair<std::string, std::string>>{
           {"not json", "malformed ConversionReview: invalid JSON at offset 1: Invalid value."},
           {"{}", "malformed ConversionReview: kind: Required value"},
           {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})",
            R"(malformed ConversionReview: kind: Unsupported value: "AdmissionReview": supported values: "ConversionReview")"},
           {R"({"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"ConversionReview","request":{"uid":"c"}})",
            R"(malformed ConversionReview: apiVersion: Unsupported value: "apiextensions.k8s.io/v1beta1": supported values: "apiextensions.k8s.io/v1")"},
           {R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"})", "malformed ConversionReview: request: Required value"},
           {R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"objects":[]}})",
            "malformed ConversionReview: request.uid: Required value"},
       }) {
    INFO(body);
    auto reply = h.handler->handle(webhook::kConvertPath, body);
    CHECK(reply.status == 400);
    CHECK(reply.body == message + "\n");
  }
  auto failure = [&](std::string_view request_members) {
    auto reply = h.handler->handle(
        webhook::kConvertPath,
        fmt::format(R"({{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{{"uid":"c-9",{}}}}})",
                    request_members));
    REQUIRE(reply.status == 200);
    auto doc = parse_json(reply.body);
    CHECK(json::get_string(doc.root(), "/response/uid") == std::string_view("c-9"));
    CHECK(json::get_string(doc.root(), "/response/result/status") == std::string_view("Failure"));
    CHECK(json::find(doc.root(), "/response/convertedObjects") == nullptr);
    return std::string(json::get_string(doc.root(), "/response/result/message").value_or(""));
  };
  CHECK(failure(R"("objects":[])") == "malformed ConversionReview: request.desiredAPIVersion: Required value");
  CHECK(failure(R"("desiredAPIVersion":"v1","objects":[])") ==
        R"(malformed ConversionReview: request.desiredAPIVersion: Invalid value: "v1": must be <group>/<version>)");
  CHECK(failure(R"("desiredAPIVersion":"kubeflow.org/v1")") == "malformed ConversionReview: request.objects: Required value");
  CHECK(failure(R"("desiredAPIVersion":"kubeflow.org/v1","objects":{})") ==
        R"(malformed ConversionReview: request.objects: Invalid value: "object": must be an array)");
  CHECK(failure(R"("desiredAPIVersion":"kubeflow.org/v1","objects":[7])") == "request.objects[0]: must be an object");
  CHECK(failure(R"("desiredAPIVersion":"kubeflow.org/v1","objects":[{"apiVersion":"example.com/v1","kind":"MPIJob"}])") ==
        R"(request.objects[0].apiVersion: "example.com/v1" is not in group kubeflow.org of desiredAPIVersion kubeflow.org/v1)");
  CHECK(failure(R"("desiredAPIVersion":"kubeflow.org/v3","objects":[{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob"}])") ==
        "request.objects[0]: MPIJob: cannot convert to kubeflow.org/v3; served versions are kubeflow.org/v1 and kubeflow.org/v2beta1");
  // Nothing to convert is a success with no objects.
  auto empty = h.handler->handle(webhook::kConvertPath,
                                 R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"c-1",)"
                                 R"("desiredAPIVersion":"kubeflow.org/v1","objects":[]}})");
  CHECK(empty.body == R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"c-1",)"
                      R"("convertedObjects":[],"result":{"status":"Success"}}})");
}

TEST_CASE("review parsing: the pure functions give the request's parts") {
  const webhook::AdmissionTarget target{{"kubeflow.org", "v1", "PyTorchJob"}, {"kubeflow.org", "v1", "pytorchjobs"}, true};
  const std::string job(kJob);
  auto r = webhook::parse_admission_review(review_with(request("UPDATE", R"("name":"job","namespace":"default","object":)" + job +
                                                                             R"(,"oldObject":)" + job)),
                                           target);
  REQUIRE(r);
  CHECK(r->uid == "u-7");
  CHECK(r->operation == webhook::Operation::Update);
  CHECK(r->name == "job");
  CHECK(r->ns == "default");
  REQUIRE(r->object != nullptr);
  REQUIRE(r->old_object != nullptr);
  CHECK(json::get_string(*r->object, "/metadata/name") == std::string_view("job"));
  auto c = webhook::parse_conversion_review(
      R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"c","desiredAPIVersion":"kubeflow.org/v1","objects":[{}]}})");
  REQUIRE(c);
  CHECK(c->desired_api_version == "kubeflow.org/v1");
  CHECK(c->objects->Size() == 1);
  CHECK(webhook::admission_review_refusal("u", "why") ==
        R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":false,)"
        R"("status":{"metadata":{},"status":"Failure","message":"why","reason":"BadRequest","code":400}}})");
}
