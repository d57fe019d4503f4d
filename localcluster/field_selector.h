// Field selectors (`metadata.name=x,status.phase!=Running`) and the fields each resource supports,
// as kube-apiserver defines them per type.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"
#include "localcluster/store.h"

namespace unitrain::localcluster {

struct FieldRequirement {
  std::string field;
  bool equals = true;  // `=` / `==` versus `!=`
  std::string value;
  std::string pointer;  // JSON Pointer of the field in the object, set by `bind`
};

class FieldSelector {
 public:
  FieldSelector() = default;  // matches everything
  // Terms separated by ',', each `field=value`, `field==value` or `field!=value`; `\,`, `\=`
  // and `\\` escape inside values.
  static Result<FieldSelector> parse(std::string_view text);
  // Resolves each field against what `r` supports; the error is kube-apiserver's
  // `field label not supported: <field>`.
  Status bind(const ResourceInfo& r);
  // An unset field compares as "" (as the API server's field sets do).
  bool matches(const json::Value& object) const;
  bool empty() const { return requirements_.empty(); }
  const std::vector<FieldRequirement>& requirements() const { return requirements_; }

 private:
  std::vector<FieldRequirement> requirements_;
};

// The JSON Pointer for `field` of resource `r`, or nullopt when the resource does not support
// selecting on it. Every resource supports metadata.name and metadata.namespace.
std::optional<std::string> field_selector_pointer(const ResourceInfo& r, std::string_view field);

}  // namespace unitrain::localcluster
