#include "localcluster/object_patch.h"

#include <string>

#include "core/json/strategic_merge.h"
#include "localcluster/builtin_types.h"

namespace unitrain::localcluster {

StoreResult<json::Document> decode_patch(PatchKind kind, std::string_view body, bool custom_resource) {
  if (kind == PatchKind::Strategic && custom_resource) {
    return fail(errors::unsupported_media_type(
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"));
  }
  if (kind == PatchKind::Apply) {
    auto docs = json::parse_yaml(body);
    if (!docs) return fail(errors::bad_request("error decoding YAML: " + docs.error().message));
    if (docs->size() != 1 || !(*docs)[0].root().IsObject()) {
      return fail(errors::bad_request("apply patches must contain exactly one object"));
    }
    return std::move((*docs)[0]);
  }
  auto parsed = json::Document::parse(body);
  if (!parsed) return fail(errors::bad_request("error decoding patch: " + parsed.error().message));
  return std::move(*parsed);
}

StoreResult<void> apply_patch(const ResourceInfo& r, std::string_view name, PatchKind kind, const json::Value& patch,
                              json::Document& target, bool custom_resource) {
  switch (kind) {
    case PatchKind::Merge:
      if (!patch.IsObject()) return fail(errors::bad_request("a merge patch must be a JSON object"));
      json::apply_merge_patch(target, patch);
      return {};
    case PatchKind::JSON: {
      if (!patch.IsArray()) return fail(errors::bad_request("a JSON patch must be a JSON array of operations"));
      auto st = json::apply_json_patch(target, patch);
      if (!st) return fail(errors::invalid(r, name, {FieldError{"FieldValueInvalid", "", st.error().message}}));
      return {};
    }
    case PatchKind::Strategic:
    case PatchKind::Apply: {
      if (!patch.IsObject()) return fail(errors::bad_request("a strategic merge patch must be a JSON object"));
      if (custom_resource) {
        json::apply_merge_patch(target, patch);
        return {};
      }
      // Built-in kinds merge lists by their Go tags (the protobuf tables); a kind outside them by
      // the well-known keys.
      const proto::Message* kind = builtin_message(json::get_string(target.root(), "/apiVersion").value_or(""),
                                                   json::get_string(target.root(), "/kind").value_or(""));
      json::MergeKeyFunction merge_key = &json::kubernetes_merge_key;
      if (kind != nullptr) merge_key = [kind](std::string_view list_path) { return builtin_merge_key(*kind, list_path); };
      auto st = json::apply_strategic_merge_patch(target, patch, merge_key);
      if (!st) return fail(errors::bad_request(st.error().message));
      return {};
    }
  }
  return {};
}

}  // namespace unitrain::localcluster
