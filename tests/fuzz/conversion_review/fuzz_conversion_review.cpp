// ConversionReviews on the operator's /convert endpoint, which serves the MPIJob conversion with
// both MPI modules enabled. The first input byte: with bit 7 set the rest is the whole request
// body; otherwise the rest is the request's `objects` (any JSON) inside a well-formed review whose
// desiredAPIVersion bit 0 picks (v1 or v2beta1; bit 1: an apiVersion nobody converts to).
// Invariants: HTTP 400 exactly when there is no request to answer; otherwise a ConversionReview
// echoing the uid whose result is Success, with one converted object per object, each at the
// desired apiVersion, or Failure with a message.
#include <cstddef>
#include <cstdint>
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
#include "tests/fuzz/invariant.h"

namespace {

namespace json = unitrain::json;
namespace webhook = unitrain::webhook;
namespace framework = unitrain::framework;
namespace mpi = unitrain::frameworks::mpi;
using unitrain::fuzz::require;

struct Endpoint {
  framework::Registry registry;
  std::vector<std::unique_ptr<framework::FrameworkPlugin>> plugins;
  std::unique_ptr<webhook::Handler> handler;

  Endpoint() {
    require(mpi::v1::register_mpi_v1(registry).has_value());
    require(mpi::v2::register_mpi_v2(registry).has_value());
    require(mpi::conversion::register_mpi_conversion(registry).has_value());
    std::vector<const framework::FrameworkPlugin*> raw;
    for (const auto& r : registry.all()) {
      auto p = registry.instantiate(r.descriptor.name, {});
      require(p.has_value());
      raw.push_back(p->get());
      plugins.push_back(std::move(*p));
    }
    handler = std::make_unique<webhook::Handler>(raw, registry);
  }
};

const Endpoint& endpoint() {
  static const Endpoint e;
  return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string_view desired = (selector & 2) != 0   ? "kubeflow.org/v9"
                                   : (selector & 1) != 0 ? "kubeflow.org/v2beta1"
                                                         : "kubeflow.org/v1";
  const std::string body =
      (selector & 0x80) != 0
          ? std::string(rest)
          : fmt::format(R"({{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview",)"
                        R"("request":{{"uid":"fuzz-uid","desiredAPIVersion":"{}","objects":{}}}}})",
                        desired, rest);
  const webhook::Reply reply = endpoint().handler->handle(webhook::kConvertPath, body);
  auto parsed = webhook::parse_conversion_review(body);
  if (reply.status == 400) {
    require(!parsed && parsed.error().uid.empty());
    return 0;
  }
  require(reply.status == 200);
  auto answer = json::Document::parse(reply.body);
  require(answer.has_value());
  require(json::get_string(answer->root(), "/apiVersion") == webhook::kConversionReviewApiVersion);
  require(json::get_string(answer->root(), "/kind") == std::string_view("ConversionReview"));
  const auto uid = json::get_string(answer->root(), "/response/uid");
  require(uid.has_value() && !uid->empty());
  if (parsed) require(*uid == parsed->uid);
  const auto status = json::get_string(answer->root(), "/response/result/status");
  if (status == std::string_view("Failure")) {
    require(!json::string_at(answer->root(), "/response/result/message").empty());
    return 0;
  }
  require(status == std::string_view("Success"));
  require(parsed.has_value());
  const json::Value* converted = json::find(answer->root(), "/response/convertedObjects");
  require(converted != nullptr && converted->IsArray() && converted->Size() == parsed->objects->Size());
  for (const auto& object : converted->GetArray())
    require(json::get_string(object, "/apiVersion") == std::string_view(parsed->desired_api_version));
  return 0;
}
