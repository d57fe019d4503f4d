// The skeleton of an object a framework wants for a job besides its pods (a Service, ConfigMap,
// Secret, Role, launcher Job): the core adds the owner reference, the framework the rest.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json/json.h"

namespace unitrain::framework {

using Labels = std::vector<std::pair<std::string, std::string>>;

// {"name": v, ...} in the given order.
json::Value labels_json(const Labels& labels, json::Allocator& a);

// {apiVersion, kind, metadata: {name, namespace (omitted when empty), labels (omitted when none)}}.
json::Document child_object(std::string_view api_version, std::string_view kind, std::string_view name,
                            std::string_view ns, const Labels& labels);

}  // namespace unitrain::framework
