// Strategic merge patch with a merge-key lookup that carries context: a caller that knows the
// patched object's type (the local cluster's tables of built-in kinds) answers from it. The same
// patch semantics as apply_strategic_merge_patch(Document&, const Value&, MergeKeyLookup) in
// json.h, which is this function with a plain lookup.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/json/json.h"

namespace unitrain::json {

// The merge key of the list at `list_path` (indices as "*"): as MergeKeyLookup.
using MergeKeyFunction = std::function<std::optional<std::string>(std::string_view list_path)>;

Status apply_strategic_merge_patch(Document& target, const Value& patch, const MergeKeyFunction& merge_key_for);

}  // namespace unitrain::json
