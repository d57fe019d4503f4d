// List continue tokens as kube-apiserver writes them: unpadded base64url of
// {"v":"meta.k8s.io/v1","rv":<list resourceVersion>,"start":"<last key returned>"}.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/result.h"

namespace unitrain::localcluster {

struct ContinueToken {
  uint64_t resource_version = 0;  // of the first page; later pages report it too
  std::string start_after;        // the store key of the last object returned
};

std::string encode_continue_token(const ContinueToken& token);
// Errors name what is wrong (base64, JSON, a missing or mistyped field).
Result<ContinueToken> decode_continue_token(std::string_view token);

}  // namespace unitrain::localcluster
