#include "core/kube/client.h"

#include "core/json/field_mask.h"

namespace unitrain::kube {

std::shared_ptr<const json::FieldMask> nothing_read() {
  static const auto fields = std::make_shared<const json::FieldMask>(json::FieldMask::nothing());
  return fields;
}

bool keeps_nothing(const json::FieldMask* fields) {
  return fields && fields->keeps_nothing();
}

}  // namespace unitrain::kube
