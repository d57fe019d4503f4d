#include "core/kube/client.h"

#include <fmt/format.h>

#include "core/json/field_mask.h"

namespace unitrain::kube {

std::shared_ptr<const json::FieldMask> nothing_read() {
  static const auto fields = std::make_shared<const json::FieldMask>(json::FieldMask::nothing());
  return fields;
}

bool keeps_nothing(const json::FieldMask* fields) {
  return fields && fields->keeps_nothing();
}

std::optional<ApiError> unnamed_create(const GroupVersionResource& r, const json::Value& obj) {
  if (!json::get_string(obj, "/metadata/name").value_or("").empty()) return std::nullopt;
  ApiError e;
  e.reason = ApiError::Reason::BadRequest;
  e.message = fmt::format("create {}: the object has no metadata.name; a create that may be sent twice needs the "
                          "name chosen by the client",
                          r.group_resource());
  return e;
}

std::vector<CreateOutcome> Client::create_all(const GroupVersionResource& r, std::span<const json::Document> objects,
                                              const WriteOptions& opts) {
  std::vector<CreateOutcome> out;
  out.reserve(objects.size());
  for (const auto& obj : objects) {
    if (auto refused = unnamed_create(r, obj.root())) out.push_back(CreateOutcome{fail(std::move(*refused)), false});
    else out.push_back(CreateOutcome{create(r, json::get_string(obj.root(), "/metadata/namespace").value_or(""),
                                            obj.root(), opts),
                                     false});
  }
  return out;
}

}  // namespace unitrain::kube
