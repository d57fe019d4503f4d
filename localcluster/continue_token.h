// List continue tokens as kube-apiserver writes them: unpadded base64url of
// {"v":"meta.k8s.io/v1","rv":<list resourceVersion>,"start":"<last key returned>"}.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/result.h"

namespace unitrain::localcluster {

struct ContinueToken {
  // Of the first page; later pages report it too. Negative: continue at the current state, the
  // token a 410 for an expired token carries (kube-apiserver writes -1 there).
  int64_t resource_version = 0;
  std::string start_after;  // the store key of the last object returned
};

std::string encode_continue_token(const ContinueToken& token);
// Errors are kube-apiserver's storage.DecodeContinue messages ("continue key is not valid: ..."):
// a token that is not base64url JSON, of another version, with resourceVersion 0, an empty start
// key or a start key that path cleaning would change (a traversal attempt).
Result<ContinueToken> decode_continue_token(std::string_view token);

}  // namespace unitrain::localcluster
