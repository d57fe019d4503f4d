// Label selectors: the string form kubectl and the API server use ("a=b,c!=d,e in (f,g),!h"),
// the structured form of metav1.LabelSelector (matchLabels + matchExpressions), and matching.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"

namespace unitrain::api {

using Labels = std::map<std::string, std::string, std::less<>>;

struct Requirement {
  enum class Op { Equals, NotEquals, In, NotIn, Exists, DoesNotExist, GreaterThan, LessThan };
  std::string key;
  Op op = Op::Equals;
  std::vector<std::string> values;  // sorted, unique
  friend bool operator==(const Requirement&, const Requirement&) = default;
};

class LabelSelector {
 public:
  LabelSelector() = default;  // matches everything

  // The query-string form. Errors name the position and the token:
  // "label selector 'a in (b': position 8: expected ',' or ')'". Keys and values are checked against
  // the Kubernetes syntax (qualified names, 63-char values).
  static Result<LabelSelector> parse(std::string_view text);
  // metav1.LabelSelector JSON (matchLabels, matchExpressions with In/NotIn/Exists/DoesNotExist).
  // `field` prefixes error messages ("spec.selector.matchExpressions[0].operator: ...").
  static Result<LabelSelector> from_json(const json::Value& v, std::string_view field = "selector");
  static LabelSelector from_labels(const Labels& labels);  // equality on each pair
  // The metav1.LabelSelector JSON form (as metav1.ParseToLabelSelector builds it): '=' goes to
  // matchLabels, '!=' becomes NotIn; '>' and '<' have no JSON form and fail.
  Result<json::Document> to_json() const;

  bool matches(const Labels& labels) const;
  bool matches(const json::Value& labels_object) const;  // a metadata.labels JSON object (or null)
  bool empty() const { return requirements_.empty(); }
  // Canonical string form: requirements sorted by key, as labels.Selector.String() prints it.
  std::string to_string() const;
  const std::vector<Requirement>& requirements() const { return requirements_; }

  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;

 private:
  std::vector<Requirement> requirements_;
};

// Labels of an object's metadata.labels (missing or null → empty).
Labels labels_of(const json::Value& object);

// One requirement as the string form prints it: "a=b", "a!=b", "a in (x,y)", "a", "!a", "a>1".
std::string to_string(const Requirement& r);

// Kubernetes name syntax (k8s.io/apimachinery/pkg/util/validation). Each returns the reasons a
// value is invalid, worded as upstream words them; empty when valid.
std::vector<std::string> validate_qualified_name(std::string_view key);  // label/annotation keys
std::vector<std::string> validate_label_value(std::string_view value);
std::vector<std::string> validate_dns1123_subdomain(std::string_view s);
std::vector<std::string> validate_dns1123_label(std::string_view s);
std::vector<std::string> validate_dns1035_label(std::string_view s);

}  // namespace unitrain::api
