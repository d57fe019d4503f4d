// Reading the reviews kube-apiserver posts to webhooks (admission.k8s.io/v1 AdmissionReview,
// apiextensions.k8s.io/v1 ConversionReview) and writing the answers, as pure functions of the
// request body, so that every malformed review has one answer and a fuzz target reaches them all.
//
// A review that cannot be acted on is answered the way controller-runtime, on which upstream's
// webhooks are built, answers it, which is also what kube-apiserver can report to the user:
// - AdmissionReview: HTTP 200 with an AdmissionReview whose response is allowed: false with a
//   400 BadRequest status naming the field at fault ("malformed AdmissionReview: request.object:
//   Required value: ..."), request.uid echoed when one could be read. kube-apiserver then refuses
//   the API request with `admission webhook "<name>" denied the request: <message>`; an HTTP
//   error would only surface as an opaque "failed calling webhook" call failure.
// - ConversionReview with no request to answer (not JSON, not a v1 ConversionReview, no
//   request or uid): HTTP 400, since a response must carry the request's uid. With a request,
//   HTTP 200 and result.status Failure with the message; kube-apiserver reports the conversion as
//   failed with it.
// Only v1 reviews are read: the webhook configurations and CRDs this operator writes register
// admissionReviewVersions / conversionReviewVersions [v1], so an API server never sends v1beta1.
#pragma once

#include <string>
#include <string_view>

#include "core/base/result.h"
#include "core/json/json.h"
#include "core/kube/client.h"

namespace unitrain::webhook {

inline constexpr std::string_view kAdmissionReviewApiVersion = "admission.k8s.io/v1";
inline constexpr std::string_view kConversionReviewApiVersion = "apiextensions.k8s.io/v1";

enum class Operation { Create, Update, Delete, Connect };
std::string_view to_string(Operation op);

struct GroupVersionKind {
  std::string group;  // "" for the core group
  std::string version;
  std::string kind;
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  friend bool operator==(const GroupVersionKind&, const GroupVersionKind&) = default;
};

// Why a review cannot be acted on, and the uid to answer (empty when none could be read).
struct ReviewError {
  std::string uid;
  std::string message;
};

// What one admission endpoint admits.
struct AdmissionTarget {
  GroupVersionKind kind;
  kube::GroupVersionResource resource;
  // Validating endpoints need the objects their checks read (DELETE: the object being deleted,
  // as oldObject); mutating ones only the object they patch, and nothing on DELETE.
  bool validating = true;
};

// One AdmissionRequest that is for `target` and carries what its operation needs.
struct AdmissionRequest {
  json::Document review;  // the whole review; `object` and `old_object` point into it
  std::string uid;
  Operation operation = Operation::Create;
  std::string name;
  std::string ns;
  const json::Value* object = nullptr;      // a JSON object of the target's kind, or null
  const json::Value* old_object = nullptr;  // likewise
};

// Checks, in order: JSON; a v1 AdmissionReview; request.uid; request.operation (CREATE, UPDATE,
// DELETE or CONNECT); request.kind and request.resource equal to the target's and no
// subResource; then the objects the operation needs (CREATE: object; UPDATE: object and, when
// validating, oldObject; DELETE, when validating: oldObject), each a JSON object whose
// apiVersion and kind are the target's and whose metadata, if present, is an object.
Result<AdmissionRequest, ReviewError> parse_admission_review(std::string_view body, const AdmissionTarget& target);

// The AdmissionReview that answers `uid` with `response` (an AdmissionResponse object without uid).
std::string admission_review_reply(std::string_view uid, const json::Value& response);
// allowed: false with a 400 BadRequest status carrying `message`.
std::string admission_review_refusal(std::string_view uid, std::string_view message);

struct ConversionRequest {
  json::Document review;  // `objects` points into it
  std::string uid;
  std::string desired_api_version;   // "group/version"
  const json::Value* objects = nullptr;  // a JSON array
};

// A v1 ConversionReview with request.uid, request.desiredAPIVersion ("group/version") and
// request.objects (an array). Errors without a uid mean there is no request to answer.
Result<ConversionRequest, ReviewError> parse_conversion_review(std::string_view body);

// The ConversionReview answering `uid`: the converted objects, or a Failure with `failure`.
std::string conversion_review_success(std::string_view uid, const json::Value& converted_objects);
std::string conversion_review_failure(std::string_view uid, std::string_view failure);

}  // namespace unitrain::webhook
