#include "core/kube/client.h"

#include "core/json/field_mask.h"

namespace unitrain::kube {

std::shared_ptr<const json::FieldMask> nothing_read() {
  static const auto fields = std::make_shared<const json::FieldMask>(json::FieldMask::parse("").value());
  return fields;
}

bool keeps_nothing(const json::FieldMask* fields) {
  return fields && !fields->root().others && fields->root().members.empty();
}

}  // namespace unitrain::kube
