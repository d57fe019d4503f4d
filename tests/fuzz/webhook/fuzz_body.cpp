#include "tests/fuzz/webhook/fuzz_body.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/framework/registry.h"
#include "core/webhook/handler.h"
#include "core/webhook/review.h"
#include "frameworks/mpi/conversion/conversion.h"
#include "frameworks/mpi/v1/register.h"
#include "frameworks/mpi/v2/register.h"
#include "frameworks/mxnet/register.h"
#include "frameworks/paddle/register.h"
#include "frameworks/pytorch/register.h"
#include "frameworks/tensorflow/register.h"
#include "frameworks/xgboost/register.h"

namespace unitrain::fuzz {

namespace {

void check(bool invariant) {
  if (!invariant) __builtin_trap();
}

// Every framework module, both MPIJob versions side by side, as the operator serves them.
struct Webhooks {
  framework::Registry registry;
  std::vector<std::unique_ptr<framework::FrameworkPlugin>> plugins;
  std::unique_ptr<webhook::Handler> handler;
  std::vector<std::string> paths;  // every endpoint, then /convert and a path nobody serves
  std::vector<webhook::AdmissionTarget> targets;  // per admission endpoint

  Webhooks() {
    for (auto reg : {&frameworks::tensorflow::register_tensorflow, &frameworks::pytorch::register_pytorch,
                     &frameworks::mxnet::register_mxnet, &frameworks::xgboost::register_xgboost,
                     &frameworks::paddle::register_paddle, &frameworks::mpi::v2::register_mpi_v2,
                     &frameworks::mpi::v1::register_mpi_v1})
      check(reg(registry).has_value());
    check(frameworks::mpi::conversion::register_mpi_conversion(registry).has_value());
    std::vector<const framework::FrameworkPlugin*> raw;
    for (const auto& r : registry.all()) {
      auto p = registry.instantiate(r.descriptor.name, {});
      check(p.has_value());
      raw.push_back(p->get());
      plugins.push_back(std::move(*p));
    }
    handler = std::make_unique<webhook::Handler>(raw, registry);
    for (const auto& e : handler->endpoints()) {
      paths.push_back(e.path);
      for (const auto* p : raw) {
        const auto& d = p->descriptor();
        if (d.resource() == e.resource)
          targets.push_back({{d.group, d.version, d.kind}, d.resource(), e.type == webhook::WebhookType::Validating});
      }
    }
    check(targets.size() == paths.size());
    paths.emplace_back(webhook::kConvertPath);
    paths.emplace_back("/nobody-serves-this");
  }
};

const Webhooks& webhooks() {
  static const Webhooks w;
  return w;
}

// A review kube-apiserver could send to `target` around `object` (raw text, maybe not JSON).
std::string review_around(const webhook::AdmissionTarget& target, std::string_view object, uint8_t selector) {
  const char* operation = (selector & 0x40) != 0 ? "UPDATE" : "CREATE";
  const std::string old = (selector & 0x40) != 0 ? std::string(object) : "null";
  return fmt::format(R"({{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"f",)"
                     R"("kind":{{"group":"{}","version":"{}","kind":"{}"}},)"
                     R"("resource":{{"group":"{}","version":"{}","resource":"{}"}},)"
                     R"("operation":"{}","object":{},"oldObject":{}}}}})",
                     target.kind.group, target.kind.version, target.kind.kind, target.resource.group,
                     target.resource.version, target.resource.resource, operation, object, old);
}

WebhookAnswer check_admission(const webhook::Reply& reply, std::string_view body, const webhook::AdmissionTarget& target) {
  check(reply.status == 200);
  auto doc = json::Document::parse(reply.body);
  check(doc.has_value());
  check(json::get_string(doc->root(), "/apiVersion") == webhook::kAdmissionReviewApiVersion);
  check(json::get_string(doc->root(), "/kind") == std::string_view("AdmissionReview"));
  auto allowed = json::get_bool(doc->root(), "/response/allowed");
  check(allowed.has_value());
  auto parsed = webhook::parse_admission_review(body, target);
  // Fails closed: nothing the parser refuses is ever allowed, and its refusal is a 400.
  if (!parsed) {
    check(!*allowed);
    check(json::get_int(doc->root(), "/response/status/code") == 400);
    check(json::get_string(doc->root(), "/response/status/message") == std::string_view(parsed.error().message));
    return WebhookAnswer::Refused;
  }
  check(json::get_string(doc->root(), "/response/uid") == std::string_view(parsed->uid));
  if (*allowed) return WebhookAnswer::Allowed;
  auto code = json::get_int(doc->root(), "/response/status/code");
  check(code == 422 || code == 400);
  return code == 422 ? WebhookAnswer::Denied : WebhookAnswer::Refused;
}

WebhookAnswer check_conversion(const webhook::Reply& reply, std::string_view body) {
  auto parsed = webhook::parse_conversion_review(body);
  if (reply.status == 400) {
    check(!parsed && parsed.error().uid.empty());
    return WebhookAnswer::ConversionBadRequest;
  }
  check(reply.status == 200);
  auto doc = json::Document::parse(reply.body);
  check(doc.has_value());
  check(json::get_string(doc->root(), "/kind") == std::string_view("ConversionReview"));
  const auto status = json::get_string(doc->root(), "/response/result/status");
  check(status == std::string_view("Success") || status == std::string_view("Failure"));
  if (status == std::string_view("Success")) {
    check(parsed.has_value());
    const json::Value* converted = json::find(doc->root(), "/response/convertedObjects");
    check(converted != nullptr && converted->IsArray() && converted->Size() == parsed->objects->Size());
    return WebhookAnswer::Converted;
  }
  return WebhookAnswer::ConversionFailed;
}

}  // namespace

WebhookAnswer webhook_one_input(const uint8_t* data, size_t size) {
  if (size == 0) return WebhookAnswer::None;
  const Webhooks& w = webhooks();
  const uint8_t selector = data[0];
  const size_t index = (selector & 0x3f) % w.paths.size();
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string& path = w.paths[index];
  const bool admission = index < w.targets.size();
  const std::string body = admission && (selector & 0x80) != 0 ? review_around(w.targets[index], rest, selector) : std::string(rest);
  const webhook::Reply reply = w.handler->handle(path, body);
  if (admission) return check_admission(reply, body, w.targets[index]);
  if (path == webhook::kConvertPath) return check_conversion(reply, body);
  check(reply.status == 404);
  return WebhookAnswer::NotFound;
}

}  // namespace unitrain::fuzz
