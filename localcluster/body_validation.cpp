#include "localcluster/body_validation.h"

#include <algorithm>
#include <array>

#include "localcluster/builtin_types.h"
#include "localcluster/schema.h"

namespace unitrain::localcluster {
namespace {

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

}  // namespace

StoreResult<FieldValidation> field_validation(const Query& q, std::string_view options_kind) {
  std::string v = query_value(q, "fieldValidation");
  if (v.empty() || v == "Warn") return FieldValidation::Warn;
  if (v == "Ignore") return FieldValidation::Ignore;
  if (v == "Strict") return FieldValidation::Strict;
  return fail(errors::status(422, "Invalid",
                             std::string(options_kind) + ".meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: " +
                                 quoted(v) + ": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""));
}

std::optional<StatusError> check_type_meta(const ResourceInfo& r, const json::Value& body, std::string_view name,
                                           bool custom) {
  if (!body.IsObject()) return std::nullopt;
  std::string api_version = json::string_at(body, "/apiVersion");
  std::string kind = json::string_at(body, "/kind");
  if (!kind.empty() && kind != r.kind) {
    if (custom) {
      ResourceInfo as_sent = r;
      as_sent.kind = kind;
      return errors::invalid(as_sent, name, {invalid_value_text("kind", quoted(kind), "must be " + r.kind)});
    }
    std::string version = api_version.empty() ? r.version : api_version.substr(api_version.find('/') + 1);
    std::string internal_group = r.group.empty() ? "core" : r.group.substr(0, r.group.find('.'));
    return errors::bad_request(kind + " in version " + quoted(version) + " cannot be handled as a " + r.kind +
                               ": converting (" + version + "." + kind + ") to (" + internal_group + "." + r.kind +
                               "): unknown conversion");
  }
  if (!api_version.empty() && api_version != r.api_version()) {
    return errors::bad_request("the API version in the data (" + api_version +
                               ") does not match the expected API version (" + r.api_version() + ")");
  }
  return std::nullopt;
}

std::vector<std::string> undeclared_fields(const json::Value& body, const json::Value& schema,
                                           const proto::Message* builtin_kind) {
  std::vector<std::string> out;
  if (!body.IsObject()) return out;
  if (builtin_kind != nullptr) return undeclared_message_fields(body, *builtin_kind);
  if (const json::Value* meta = json::find(body, "/metadata")) {
    static constexpr std::string_view kObjectMeta = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    if (const proto::Message* m = find_proto_message(kObjectMeta)) out = undeclared_message_fields(*meta, *m, "metadata");
  }
  if (schema.IsObject()) {
    std::vector<std::string> more = unknown_fields(body, schema);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

std::string decode_error_context(const ResourceInfo& r) {
  return r.kind + " in version " + quoted(r.version) + " cannot be handled as a " + r.kind + ": ";
}

std::optional<StatusError> enforce_field_validation(FieldValidation directive, const std::vector<std::string>& fields,
                                                    std::vector<std::string>& warnings, std::string_view context) {
  if (fields.empty() || directive == FieldValidation::Ignore) return std::nullopt;
  if (directive == FieldValidation::Warn) {
    for (const std::string& f : fields) warnings.push_back("unknown field " + quoted(f));
    return std::nullopt;
  }
  std::string msg = std::string(context) + "strict decoding error: ";
  for (size_t i = 0; i < fields.size(); ++i) msg += (i ? ", unknown field " : "unknown field ") + quoted(fields[i]);
  return errors::bad_request(msg);
}

}  // namespace unitrain::localcluster
