#include "frameworks/trainer/status_server.h"

#include <limits>
#include <vector>

#include <fmt/format.h>

#include "core/api/time.h"
#include "core/framework/json_members.h"
#include "core/kube/client.h"
#include "frameworks/trainer/trainjob_status.h"

namespace unitrain::frameworks::trainer {
namespace {

namespace jm = framework::json_members;

const kube::GroupVersionResource kTrainJobsResource{"trainer.kubeflow.org", "v1alpha1", "trainjobs"};
const kube::GroupVersionResource kTokenReviews{"authentication.k8s.io", "v1", "tokenreviews"};

framework::EndpointReply error_reply(int code, std::string_view reason, std::string_view message) {
  return {code, "application/json", status_error_body(code, reason, message)};
}

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = path.find('/', start);
    parts.push_back(path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return parts;
}

bool is_int32(const json::Value& v) { return v.IsInt(); }

}  // namespace

std::optional<StatusRoute> status_route(std::string_view path) {
  const auto p = split_path(path);
  if (p.size() != 9 || !p[0].empty() || p[1] != "apis" || p[2] != "trainer.kubeflow.org" || p[3] != "v1alpha1" ||
      p[4] != "namespaces" || p[5].empty() || p[6] != "trainjobs" || p[7].empty() || p[8] != "status") {
    return std::nullopt;
  }
  return StatusRoute{std::string(p[5]), std::string(p[7])};
}

std::string status_error_body(int code, std::string_view reason, std::string_view message) {
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  d.root().AddMember("kind", "Status", a);
  d.root().AddMember("apiVersion", "v1", a);
  d.root().AddMember("metadata", json::Value(rapidjson::kObjectType), a);
  d.root().AddMember("status", "Failure", a);
  d.root().AddMember("message", json::str(message, a), a);
  d.root().AddMember("reason", json::str(reason, a), a);
  d.root().AddMember("code", code, a);
  return d.dump();
}

Result<json::Document> parse_status_request(std::string_view body) {
  if (body.size() > kStatusBodyLimit) return fail(fmt::format("the body is over {} bytes", kStatusBodyLimit));
  auto parsed = json::Document::parse(body);
  if (!parsed) return fail(parsed.error());
  if (!parsed->root().IsObject()) return fail("the body is not a JSON object");
  json::Document out = json::Document::object();
  auto& a = out.alloc();
  const json::Value* in = jm::member(&parsed->root(), "trainerStatus");
  if (in == nullptr || in->IsNull()) return out;
  if (!in->IsObject()) return fail("trainerStatus is not an object");
  // Only the fields of upstream's type, each of its type (the rest is dropped, as Go's decoder
  // drops unknown fields).
  json::Value status(rapidjson::kObjectType);
  for (const char* field : {"progressPercentage", "estimatedRemainingSeconds"}) {
    const json::Value* v = jm::member(in, field);
    if (v == nullptr || v->IsNull()) continue;
    if (!is_int32(*v)) return fail(fmt::format("trainerStatus.{} is not a 32-bit integer", field));
    status.AddMember(json::str(field, a), json::clone(*v, a), a);
  }
  if (const json::Value* metrics = jm::member(in, "metrics"); metrics && !metrics->IsNull()) {
    if (!metrics->IsArray()) return fail("trainerStatus.metrics is not a list");
    json::Value list(rapidjson::kArrayType);
    for (const auto& m : metrics->GetArray()) {
      if (!m.IsObject()) return fail("trainerStatus.metrics[] is not an object");
      json::Value item(rapidjson::kObjectType);
      for (const char* field : {"name", "value"}) {
        const json::Value* v = jm::member(&m, field);
        if (v == nullptr || v->IsNull()) continue;
        if (!v->IsString()) return fail(fmt::format("trainerStatus.metrics[].{} is not a string", field));
        item.AddMember(json::str(field, a), json::clone(*v, a), a);
      }
      list.PushBack(std::move(item), a);
    }
    status.AddMember("metrics", std::move(list), a);
  }
  if (const json::Value* t = jm::member(in, "lastUpdatedTime"); t && !t->IsNull()) {
    if (!t->IsString() || !api::parse_time(json::view(*t))) return fail("trainerStatus.lastUpdatedTime is not an RFC 3339 time");
    status.AddMember("lastUpdatedTime", json::clone(*t, a), a);
  }
  out.root().AddMember("trainerStatus", std::move(status), a);
  return out;
}

bool token_review_allows(const json::Value& review, const StatusRoute& route) {
  if (!json::get_bool(review, "/status/authenticated").value_or(false)) return false;
  const std::string audience = status_token_audience(route.namespace_name, route.name);
  bool audience_granted = false;
  for (const auto& a : json::strings_at(review, "/status/audiences")) audience_granted = audience_granted || a == audience;
  if (!audience_granted) return false;
  // system:serviceaccount:<namespace>:<name>: the token's kubernetes.io namespace claim.
  constexpr std::string_view kPrefix = "system:serviceaccount:";
  const std::string user = json::string_at(review, "/status/user/username");
  if (user.rfind(kPrefix, 0) != 0) return false;
  const std::string_view rest = std::string_view(user).substr(kPrefix.size());
  const size_t colon = rest.find(':');
  return colon != std::string_view::npos && rest.substr(0, colon) == route.namespace_name;
}

framework::EndpointReply StatusServer::serve(const framework::EndpointRequest& request, kube::Client& client) const {
  const auto route = status_route(request.path);
  if (!route) return error_reply(404, "NotFound", "Not found");
  if (request.method != "POST") return error_reply(405, "MethodNotAllowed", "Method not allowed");

  constexpr std::string_view kBearer = "Bearer ";
  if (request.authorization.substr(0, kBearer.size()) != kBearer || request.authorization.size() == kBearer.size()) {
    return error_reply(403, "Forbidden", "Forbidden");
  }
  json::Document review = json::Document::object();
  {
    auto& a = review.alloc();
    review.root().AddMember("apiVersion", "authentication.k8s.io/v1", a);
    review.root().AddMember("kind", "TokenReview", a);
    json::Value spec(rapidjson::kObjectType);
    spec.AddMember("token", json::str(request.authorization.substr(kBearer.size()), a), a);
    json::Value audiences(rapidjson::kArrayType);
    audiences.PushBack(json::str(status_token_audience(route->namespace_name, route->name), a), a);
    spec.AddMember("audiences", std::move(audiences), a);
    review.root().AddMember("spec", std::move(spec), a);
  }
  auto reviewed = client.create(kTokenReviews, "", review.root());
  if (!reviewed) return error_reply(500, "InternalError", "Internal error");
  if (!token_review_allows(reviewed->root(), *route)) return error_reply(403, "Forbidden", "Forbidden");

  auto parsed = parse_status_request(request.body);
  if (!parsed) return error_reply(422, "Invalid", "Invalid payload");
  const json::Value* trainer_status = jm::member(&parsed->root(), "trainerStatus");
  if (trainer_status != nullptr) {
    json::Document apply = json::Document::object();
    auto& a = apply.alloc();
    apply.root().AddMember("apiVersion", "trainer.kubeflow.org/v1alpha1", a);
    apply.root().AddMember("kind", "TrainJob", a);
    json::Value meta(rapidjson::kObjectType);
    meta.AddMember("name", json::str(route->name, a), a);
    meta.AddMember("namespace", json::str(route->namespace_name, a), a);
    apply.root().AddMember("metadata", std::move(meta), a);
    json::Value status(rapidjson::kObjectType);
    status.AddMember("trainerStatus", json::clone(*trainer_status, a), a);
    apply.root().AddMember("status", std::move(status), a);
    kube::PatchOptions options;
    options.field_manager = std::string(kStatusFieldManager);
    options.force = true;
    auto applied = client.patch(kTrainJobsResource, route->namespace_name, route->name, kube::PatchType::Apply,
                                apply.dump(), options, "status");
    if (!applied) {
      if (applied.error().is(kube::ApiError::Reason::NotFound)) return error_reply(404, "NotFound", "Train job not found");
      if (applied.error().is(kube::ApiError::Reason::Invalid)) return error_reply(422, "Invalid", applied.error().message);
      return error_reply(500, "InternalError", "Internal error");
    }
  }
  return {200, "application/json", parsed->dump()};
}

}  // namespace unitrain::frameworks::trainer
