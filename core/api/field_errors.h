// Field-path validation errors in the form Kubernetes prints them (k8s.io/apimachinery
// pkg/util/validation/field and the apiserver's Invalid status), so users, kubectl and tests
// see the same text an upstream operator or API server would produce:
//   spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0
//   PyTorchJob.kubeflow.org "job" is invalid: [spec.x: Required value, spec.y: Forbidden: ...]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"

namespace unitrain::api {

// A field path: child names join with '.', list indices and map keys go in brackets.
// FieldPath("spec").child("replicaSpecs").key("Worker").index(0) → spec.replicaSpecs[Worker][0]
class FieldPath {
 public:
  FieldPath() = default;
  explicit FieldPath(std::string_view root) : s_(root) {}
  FieldPath child(std::string_view name) const;
  FieldPath index(std::size_t i) const;
  FieldPath key(std::string_view k) const;
  const std::string& str() const { return s_; }
  bool empty() const { return s_.empty(); }
  friend bool operator==(const FieldPath&, const FieldPath&) = default;

 private:
  std::string s_;
};

// The offending value, printed the way field.Error prints Go values: strings quoted (Go %q),
// integers, floats and booleans bare, null as "null", anything else as compact JSON.
class FieldValue {
 public:
  FieldValue() = default;  // omitted: the error prints no value
  FieldValue(std::string_view s);  // NOLINT(google-explicit-constructor): values read naturally
  FieldValue(const std::string& s) : FieldValue(std::string_view(s)) {}  // NOLINT
  FieldValue(const char* s) : FieldValue(std::string_view(s)) {}         // NOLINT
  FieldValue(int64_t n);                                                  // NOLINT
  FieldValue(int n) : FieldValue(static_cast<int64_t>(n)) {}              // NOLINT
  FieldValue(bool b);                                                     // NOLINT
  FieldValue(double d);                                                   // NOLINT
  static FieldValue of_json(const json::Value& v);
  static FieldValue null();
  // A value already printed (text()), as it arrives from a framework module loaded at run time.
  static FieldValue rendered(std::string text);

  bool omitted() const { return omitted_; }
  const std::string& text() const { return text_; }  // already rendered
  friend bool operator==(const FieldValue&, const FieldValue&) = default;

 private:
  std::string text_;
  bool omitted_ = true;
};

enum class FieldErrorType { NotFound, Required, Duplicate, Invalid, NotSupported, Forbidden, TooLong, TooMany, Internal };

// "Invalid value", "Required value", "Unsupported value", ... (field.ErrorType.String()).
std::string_view to_string(FieldErrorType t);
// The metav1.CauseType: "FieldValueInvalid", "FieldValueRequired", ..., "InternalError".
std::string_view cause_type(FieldErrorType t);
// The type whose cause_type() is `cause`; nullopt for any other text.
std::optional<FieldErrorType> field_error_type_of_cause(std::string_view cause);

struct FieldError {
  FieldErrorType type = FieldErrorType::Invalid;
  std::string field;
  FieldValue value;
  std::string detail;

  static FieldError not_found(const FieldPath& p, FieldValue v);
  static FieldError required(const FieldPath& p, std::string detail = {});
  static FieldError duplicate(const FieldPath& p, FieldValue v);
  static FieldError invalid(const FieldPath& p, FieldValue v, std::string detail);
  static FieldError not_supported(const FieldPath& p, FieldValue v, const std::vector<std::string>& valid);
  static FieldError forbidden(const FieldPath& p, std::string detail);
  static FieldError too_long(const FieldPath& p, FieldValue v, int64_t max_length);
  static FieldError too_many(const FieldPath& p, int64_t actual, int64_t max_items);
  static FieldError internal(const FieldPath& p, std::string detail);

  // "<type>[: <value>][: <detail>]" (field.Error.ErrorBody; the StatusCause message).
  std::string body() const;
  // "<field>: <body>".
  std::string to_string() const;
  friend bool operator==(const FieldError&, const FieldError&) = default;
};

using FieldErrorList = std::vector<FieldError>;

// Like ErrorList.ToAggregate().Error(): duplicates (same text) dropped, one error bare, several
// as "[e1, e2]", none as "".
std::string aggregate(const FieldErrorList& errors);

// The apiserver's message for an Invalid status: `<Kind>.<group> "<name>" is invalid: <aggregate>`
// (no ".<group>" for the core group; no ": ..." without errors).
std::string invalid_message(std::string_view group, std::string_view kind, std::string_view name,
                            const FieldErrorList& errors);

// metav1.StatusCause objects: {"reason":"FieldValueInvalid","message":<body>,"field":<field>}.
json::Document causes_json(const FieldErrorList& errors);
// A whole metav1.Status for a 422 Invalid response (kind, apiVersion, metadata, status, message,
// reason, details{name, group, kind, causes}, code).
json::Document invalid_status(std::string_view group, std::string_view kind, std::string_view name,
                              const FieldErrorList& errors);

// Go's strconv.Quote for the UTF-8 strings we print: escapes quotes, backslashes and control bytes.
std::string go_quote(std::string_view s);

}  // namespace unitrain::api
