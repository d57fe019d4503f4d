#include "core/webhook/review.h"

#include <optional>
#include <vector>

#include <fmt/format.h>

#include "core/api/field_errors.h"

namespace unitrain::webhook {

namespace {

using api::FieldError;
using api::FieldPath;
using json::Value;

constexpr std::string_view kMalformedAdmission = "malformed AdmissionReview: ";
constexpr std::string_view kMalformedConversion = "malformed ConversionReview: ";

// The member, or null when missing or JSON null (what Go's decoder reads as unset).
const Value* member(const Value& obj, std::string_view key) {
  if (!obj.IsObject()) return nullptr;
  auto it = obj.FindMember(Value(rapidjson::StringRef(key.data(), static_cast<rapidjson::SizeType>(key.size()))));
  return it == obj.MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
}

std::string_view type_name(const Value& v) {
  if (v.IsObject()) return "object";
  if (v.IsArray()) return "array";
  if (v.IsString()) return "string";
  if (v.IsBool()) return "boolean";
  if (v.IsNumber()) return "number";
  return "null";
}

// A wrongly typed member, named by its JSON type rather than its (possibly large) value.
FieldError wrong_type(const FieldPath& p, const Value& v, std::string_view expected) {
  return FieldError::invalid(p, type_name(v), fmt::format("must be {}", expected));
}

// The string member `key` of `obj`; an error names it when it is missing, empty or not a string.
Result<std::string, FieldError> required_string(const Value& obj, std::string_view key, const FieldPath& p) {
  const Value* v = member(obj, key);
  if (v == nullptr) return fail(FieldError::required(p));
  if (!v->IsString()) return fail(wrong_type(p, *v, "a string"));
  if (v->GetStringLength() == 0) return fail(FieldError::required(p, "must not be empty"));
  return std::string(json::view(*v));
}

// The top level of a review: a JSON object of `kind` in `api_version`.
std::optional<std::string> envelope_problem(const Value& root, std::string_view api_version, std::string_view kind) {
  if (!root.IsObject()) return fmt::format("the body must be a JSON object, not {}", type_name(root));
  const Value* k = member(root, "kind");
  if (k == nullptr) return FieldError::required(FieldPath("kind")).to_string();
  if (!k->IsString() || json::view(*k) != kind)
    return FieldError::not_supported(FieldPath("kind"), api::FieldValue::of_json(*k), {std::string(kind)}).to_string();
  const Value* v = member(root, "apiVersion");
  if (v == nullptr) return FieldError::required(FieldPath("apiVersion")).to_string();
  if (!v->IsString() || json::view(*v) != api_version)
    return FieldError::not_supported(FieldPath("apiVersion"), api::FieldValue::of_json(*v), {std::string(api_version)}).to_string();
  return std::nullopt;
}

std::string gvk_text(const GroupVersionKind& k) { return fmt::format("{}, Kind={}", k.api_version(), k.kind); }
std::string gvr_text(const kube::GroupVersionResource& r) {
  return fmt::format("{}{}, Resource={}", r.group.empty() ? "" : r.group + "/", r.version, r.resource);
}

// request.kind / requestKind-shaped {group, version, kind} or {group, version, resource}.
std::optional<std::vector<std::string>> triple(const Value& v, std::string_view third) {
  if (!v.IsObject()) return std::nullopt;
  std::vector<std::string> out;
  for (std::string_view key : {std::string_view("group"), std::string_view("version"), third}) {
    const Value* s = member(v, key);
    if (s != nullptr && !s->IsString()) return std::nullopt;
    out.emplace_back(s != nullptr ? json::view(*s) : std::string_view());
  }
  return out;
}

std::optional<FieldError> target_problem(const Value& request, const AdmissionTarget& target) {
  const FieldPath kind_path = FieldPath("request").child("kind");
  const Value* kind = member(request, "kind");
  if (kind == nullptr) return FieldError::required(kind_path);
  auto k = triple(*kind, "kind");
  if (!k) return wrong_type(kind_path, *kind, "an object of group, version and kind strings");
  const GroupVersionKind got{(*k)[0], (*k)[1], (*k)[2]};
  if (!(got == target.kind))
    return FieldError::invalid(kind_path, gvk_text(got), fmt::format("this webhook admits {}", gvk_text(target.kind)));
  const FieldPath resource_path = FieldPath("request").child("resource");
  const Value* resource = member(request, "resource");
  if (resource == nullptr) return FieldError::required(resource_path);
  auto r = triple(*resource, "resource");
  if (!r) return wrong_type(resource_path, *resource, "an object of group, version and resource strings");
  const kube::GroupVersionResource got_resource{(*r)[0], (*r)[1], (*r)[2]};
  if (!(got_resource == target.resource))
    return FieldError::invalid(resource_path, gvr_text(got_resource), fmt::format("this webhook admits {}", gvr_text(target.resource)));
  if (const Value* sub = member(request, "subResource"); sub != nullptr && !(sub->IsString() && sub->GetStringLength() == 0))
    return FieldError::invalid(FieldPath("request").child("subResource"), api::FieldValue::of_json(*sub),
                               fmt::format("this webhook admits {} itself, not a subresource", target.resource.resource));
  return std::nullopt;
}

// request.<key> when the operation needs it: a JSON object of the target's kind.
std::optional<FieldError> object_problem(const Value& request, std::string_view key, Operation op,
                                         const AdmissionTarget& target, const Value*& out) {
  const FieldPath path = FieldPath("request").child(key);
  const Value* obj = member(request, key);
  if (obj == nullptr)
    return FieldError::required(path, fmt::format("a {} review carries the {}", to_string(op),
                                                  key == "object" ? "object to admit" : "object as it was"));
  if (!obj->IsObject()) return wrong_type(path, *obj, "an object");
  const std::string expected_version = target.kind.api_version();
  for (auto [key, expected] : {std::pair{std::string_view("apiVersion"), std::string_view(expected_version)},
                                std::pair{std::string_view("kind"), std::string_view(target.kind.kind)}}) {
    const Value* v = member(*obj, key);
    if (v == nullptr) return FieldError::required(path.child(key), fmt::format("must be {}", expected));
    if (!v->IsString() || json::view(*v) != expected)
      return FieldError::invalid(path.child(key), api::FieldValue::of_json(*v), fmt::format("must be {}", expected));
  }
  if (const Value* meta = member(*obj, "metadata"); meta != nullptr && !meta->IsObject())
    return wrong_type(path.child("metadata"), *meta, "an object");
  out = obj;
  return std::nullopt;
}

std::string review_reply(std::string_view api_version, std::string_view kind, std::string_view uid, const Value& response) {
  json::Document out = json::Document::object();
  auto& a = out.alloc();
  Value r(rapidjson::kObjectType);
  r.AddMember("uid", json::str(uid, a), a);
  if (response.IsObject())
    for (const auto& m : response.GetObject()) r.AddMember(Value(m.name, a), Value(m.value, a), a);
  out.root().AddMember("apiVersion", json::str(api_version, a), a);
  out.root().AddMember("kind", json::str(kind, a), a);
  out.root().AddMember("response", r, a);
  return out.dump();
}

// The part every review shares: JSON, the envelope of `kind` in `api_version`, a request object
// with a non-empty uid. Errors carry the uid once it is read and start with `malformed`.
struct Request {
  json::Document review;
  const Value* request = nullptr;
  std::string uid;
};
Result<Request, ReviewError> read_request(std::string_view body, std::string_view api_version, std::string_view kind,
                                          std::string_view malformed) {
  auto refuse = [&](const std::string& problem) -> Result<Request, ReviewError> {
    return fail(ReviewError{"", std::string(malformed) + problem});
  };
  auto parsed = json::Document::parse(body);
  if (!parsed) return refuse(parsed.error().message);
  Request out{std::move(*parsed), nullptr, {}};
  if (auto e = envelope_problem(out.review.root(), api_version, kind)) return refuse(*e);
  const Value* request = member(out.review.root(), "request");
  if (request == nullptr) return refuse(FieldError::required(FieldPath("request")).to_string());
  if (!request->IsObject()) return refuse(wrong_type(FieldPath("request"), *request, "an object").to_string());
  auto uid = required_string(*request, "uid", FieldPath("request").child("uid"));
  if (!uid) return refuse(uid.error().to_string());
  out.request = request;
  out.uid = std::move(*uid);
  return out;
}

}  // namespace

std::string_view to_string(Operation op) {
  switch (op) {
    case Operation::Create: return "CREATE";
    case Operation::Update: return "UPDATE";
    case Operation::Delete: return "DELETE";
    case Operation::Connect: return "CONNECT";
  }
  return "";
}

Result<AdmissionRequest, ReviewError> parse_admission_review(std::string_view body, const AdmissionTarget& target) {
  auto read = read_request(body, kAdmissionReviewApiVersion, "AdmissionReview", kMalformedAdmission);
  if (!read) return fail(std::move(read.error()));
  AdmissionRequest out;
  out.review = std::move(read->review);
  out.uid = std::move(read->uid);
  const Value* request = read->request;
  auto refuse = [&](const std::string& problem) -> Result<AdmissionRequest, ReviewError> {
    return fail(ReviewError{out.uid, std::string(kMalformedAdmission) + problem});
  };

  const FieldPath op_path = FieldPath("request").child("operation");
  auto op = required_string(*request, "operation", op_path);
  if (!op) return refuse(op.error().to_string());
  if (*op == "CREATE") out.operation = Operation::Create;
  else if (*op == "UPDATE") out.operation = Operation::Update;
  else if (*op == "DELETE") out.operation = Operation::Delete;
  else if (*op == "CONNECT") out.operation = Operation::Connect;
  else return refuse(FieldError::not_supported(op_path, *op, {"CREATE", "UPDATE", "DELETE", "CONNECT"}).to_string());

  if (auto e = target_problem(*request, target)) return refuse(e->to_string());
  for (auto [key, into] : {std::pair{"name", &out.name}, std::pair{"namespace", &out.ns}}) {
    const Value* v = member(*request, key);
    if (v != nullptr && !v->IsString()) return refuse(wrong_type(FieldPath("request").child(key), *v, "a string").to_string());
    if (v != nullptr) *into = std::string(json::view(*v));
  }

  const bool needs_object = out.operation == Operation::Create || out.operation == Operation::Update ||
                            (!target.validating && out.operation == Operation::Connect);
  const bool needs_old = target.validating && (out.operation == Operation::Update || out.operation == Operation::Delete);
  // The defaulting webhook reads the stored job on update when the API server sends it (it always
  // does; the owner annotation is kept from it).
  const Value* old_given = member(*request, "oldObject");
  if (!needs_old && out.operation == Operation::Update && old_given != nullptr && !old_given->IsNull())
    if (auto e = object_problem(*request, "oldObject", out.operation, target, out.old_object)) return refuse(e->to_string());
  if (needs_object)
    if (auto e = object_problem(*request, "object", out.operation, target, out.object)) return refuse(e->to_string());
  if (needs_old)
    if (auto e = object_problem(*request, "oldObject", out.operation, target, out.old_object)) return refuse(e->to_string());
  return out;
}

std::string admission_review_reply(std::string_view uid, const Value& response) {
  return review_reply(kAdmissionReviewApiVersion, "AdmissionReview", uid, response);
}

std::string admission_review_refusal(std::string_view uid, std::string_view message) {
  json::Document response = json::Document::object();
  auto& a = response.alloc();
  Value status(rapidjson::kObjectType);
  status.AddMember("metadata", Value(rapidjson::kObjectType), a);
  status.AddMember("status", "Failure", a);
  status.AddMember("message", json::str(message, a), a);
  status.AddMember("reason", "BadRequest", a);
  status.AddMember("code", 400, a);
  response.root().AddMember("allowed", false, a);
  response.root().AddMember("status", status, a);
  return admission_review_reply(uid, response.root());
}

Result<ConversionRequest, ReviewError> parse_conversion_review(std::string_view body) {
  auto read = read_request(body, kConversionReviewApiVersion, "ConversionReview", kMalformedConversion);
  if (!read) return fail(std::move(read.error()));
  ConversionRequest out;
  out.review = std::move(read->review);
  out.uid = std::move(read->uid);
  const Value* request = read->request;
  auto refuse = [&](const std::string& problem) -> Result<ConversionRequest, ReviewError> {
    return fail(ReviewError{out.uid, std::string(kMalformedConversion) + problem});
  };

  const FieldPath desired_path = FieldPath("request").child("desiredAPIVersion");
  auto desired = required_string(*request, "desiredAPIVersion", desired_path);
  if (!desired) return refuse(desired.error().to_string());
  const auto slash = desired->find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == desired->size() || desired->find('/', slash + 1) != std::string::npos)
    return refuse(FieldError::invalid(desired_path, *desired, "must be <group>/<version>").to_string());
  out.desired_api_version = std::move(*desired);
  const FieldPath objects_path = FieldPath("request").child("objects");
  const Value* objects = member(*request, "objects");
  if (objects == nullptr) return refuse(FieldError::required(objects_path).to_string());
  if (!objects->IsArray()) return refuse(wrong_type(objects_path, *objects, "an array").to_string());
  out.objects = objects;
  return out;
}

std::string conversion_review_success(std::string_view uid, const Value& converted_objects) {
  json::Document response = json::Document::object();
  auto& a = response.alloc();
  response.root().AddMember("convertedObjects", Value(converted_objects, a), a);
  Value result(rapidjson::kObjectType);
  result.AddMember("status", "Success", a);
  response.root().AddMember("result", result, a);
  return review_reply(kConversionReviewApiVersion, "ConversionReview", uid, response.root());
}

std::string conversion_review_failure(std::string_view uid, std::string_view failure) {
  json::Document response = json::Document::object();
  auto& a = response.alloc();
  Value result(rapidjson::kObjectType);
  result.AddMember("status", "Failure", a);
  result.AddMember("message", json::str(failure, a), a);
  response.root().AddMember("result", result, a);
  return review_reply(kConversionReviewApiVersion, "ConversionReview", uid, response.root());
}

}  // namespace unitrain::webhook
