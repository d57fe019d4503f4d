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

std::vector<CreateRequest> create_requests(const GroupVersionResource& r, std::span<const json::Document> objects) {
  std::vector<CreateRequest> out;
  out.reserve(objects.size());
  for (const auto& obj : objects) out.push_back(CreateRequest{&r, &obj.root()});
  return out;
}

std::vector<CreateOutcome> Client::create_all(std::span<const CreateRequest> creates, const WriteOptions& opts) {
  std::vector<CreateOutcome> out;
  out.reserve(creates.size());
  for (const auto& c : creates) {
    if (auto refused = unnamed_create(*c.resource, *c.object)) out.push_back(CreateOutcome{fail(std::move(*refused)), false});
    else out.push_back(CreateOutcome{create(*c.resource, json::get_string(*c.object, "/metadata/namespace").value_or(""),
                                            *c.object, opts),
                                     false});
  }
  return out;
}

}  // namespace unitrain::kube
