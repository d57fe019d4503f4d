#include "localcluster/request_options.h"

#include <algorithm>
#include <limits>

namespace unitrain::localcluster {
namespace {

// The metav1 options kind errors name: `ListOptions.meta.k8s.io "" is invalid: ...`.
StatusError invalid_options(std::string_view kind, const std::vector<FieldError>& errs) {
  ResourceInfo options;
  options.group = "meta.k8s.io";
  options.kind = std::string(kind);
  return errors::invalid(options, "", errs);
}

std::string go_quote(std::string_view s) {
  return value_repr(json::Value(rapidjson::StringRef(s.data(), static_cast<rapidjson::SizeType>(s.size()))));
}

// strconv.ParseInt(s, 10, 64): an optional sign, then decimal digits only.
StoreResult<int64_t> parse_int64(std::string_view s) {
  const auto syntax = [&] {
    return fail(errors::bad_request("strconv.ParseInt: parsing " + go_quote(s) + ": invalid syntax"));
  };
  std::string_view digits = s;
  bool negative = false;
  if (!digits.empty() && (digits.front() == '+' || digits.front() == '-')) {
    negative = digits.front() == '-';
    digits.remove_prefix(1);
  }
  if (digits.empty()) return syntax();
  // Accumulate as a magnitude, which may be one above INT64_MAX for INT64_MIN.
  const uint64_t max_magnitude = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  uint64_t magnitude = 0;
  bool overflow = false;
  for (char c : digits) {
    if (c < '0' || c > '9') return syntax();
    const auto d = static_cast<uint64_t>(c - '0');
    if (magnitude > (max_magnitude - d) / 10) overflow = true;
    else magnitude = magnitude * 10 + d;
  }
  if (overflow) return fail(errors::bad_request("strconv.ParseInt: parsing " + go_quote(s) + ": value out of range"));
  if (negative) return magnitude == (uint64_t{1} << 63) ? std::numeric_limits<int64_t>::min()
                                                        : -static_cast<int64_t>(magnitude);
  return static_cast<int64_t>(magnitude);
}

// What the parameter codec makes of a boolean parameter: present and neither "0" nor "false"
// (any case) is true, "" and "maybe" included.
std::optional<bool> query_bool(const Query& q, std::string_view key) {
  auto it = q.find(key);
  if (it == q.end()) return std::nullopt;
  return query_flag(q, key);
}

}  // namespace

StoreResult<std::optional<int64_t>> query_int64(const Query& q, std::string_view key) {
  auto it = q.find(key);
  if (it == q.end()) return std::optional<int64_t>();
  auto v = parse_int64(it->second);
  if (!v) return fail(std::move(v).error());
  return std::optional<int64_t>(*v);
}

StoreResult<ListRequest> list_request(const Query& q) {
  ListRequest l;
  l.label_selector = query_value(q, "labelSelector");
  l.field_selector = query_value(q, "fieldSelector");
  auto limit = query_int64(q, "limit");
  if (!limit) return fail(std::move(limit).error());
  l.limit = limit->value_or(0);
  if (auto t = query_int64(q, "timeoutSeconds"); !t) return fail(std::move(t).error());
  l.continue_token = query_value(q, "continue");
  l.resource_version = query_value(q, "resourceVersion");
  l.resource_version_match = query_value(q, "resourceVersionMatch");
  std::vector<FieldError> errs;
  if (const auto& match = l.resource_version_match; !match.empty()) {
    if (l.resource_version.empty()) {
      errs.push_back(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"));
    }
    if (!l.continue_token.empty()) {
      errs.push_back(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"));
    }
    if (match != "Exact" && match != "NotOlderThan") {
      errs.push_back(not_supported("resourceVersionMatch", match, {"Exact", "NotOlderThan", ""}));
    }
    if (match == "Exact" && l.resource_version == "0") {
      errs.push_back(forbidden("resourceVersionMatch", "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
    }
  }
  if (q.contains("sendInitialEvents")) {
    errs.push_back(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
  }
  if (!errs.empty()) return fail(invalid_options("ListOptions", errs));
  return l;
}

StoreResult<WatchRequest> watch_request(const Query& q, std::string_view name) {
  WatchRequest wr;
  wr.label_selector = query_value(q, "labelSelector");
  wr.field_selector = query_value(q, "fieldSelector");
  if (!name.empty()) {
    std::string by_name = "metadata.name=" + std::string(name);
    wr.field_selector = wr.field_selector.empty() ? by_name : wr.field_selector + "," + by_name;
  }
  for (const char* key : {"limit", "timeoutSeconds"}) {
    if (auto v = query_int64(q, key); !v) return fail(std::move(v).error());
  }
  wr.resource_version = query_value(q, "resourceVersion");
  wr.allow_bookmarks = query_bool(q, "allowWatchBookmarks").value_or(false);
  const auto initial_events = query_bool(q, "sendInitialEvents");
  wr.send_initial_events = initial_events.value_or(false);
  const std::string match = query_value(q, "resourceVersionMatch");
  std::vector<FieldError> errs;
  if (initial_events && match != "NotOlderThan") {
    errs.push_back(forbidden("resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
  }
  if (!match.empty()) {
    if (!initial_events) {
      errs.push_back(forbidden("resourceVersionMatch",
                               "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"));
    }
    if (match != "NotOlderThan") errs.push_back(not_supported("resourceVersionMatch", match, {"NotOlderThan"}));
    if (!query_value(q, "continue").empty()) {
      errs.push_back(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"));
    }
  }
  if (!errs.empty()) return fail(invalid_options("ListOptions", errs));
  return wr;
}

StoreResult<std::optional<std::chrono::seconds>> watch_timeout(const Query& q) {
  auto t = query_int64(q, "timeoutSeconds");
  if (!t) return fail(std::move(t).error());
  if (!*t) return std::optional<std::chrono::seconds>();
  return std::optional<std::chrono::seconds>(std::chrono::seconds(std::clamp<int64_t>(**t, 0, kMaxWatchTimeout.count())));
}

StoreResult<bool> dry_run(const Query& q, std::string_view kind) {
  auto it = q.find("dryRun");
  if (it == q.end()) return false;
  if (it->second == "All") return true;
  return fail(invalid_options(kind, {not_supported("dryRun", it->second, {"All"})}));
}

StoreResult<void> check_field_validation(const Query& q, std::string_view kind) {
  auto v = query_value(q, "fieldValidation");
  if (v.empty() || v == "Ignore" || v == "Warn" || v == "Strict") return {};
  return fail(invalid_options(kind, {not_supported("fieldValidation", v, {"Ignore", "Warn", "Strict"})}));
}

StoreResult<DeleteRequest> delete_request(const Query& q, std::string_view body_text) {
  DeleteRequest d;
  if (auto p = query_value(q, "propagationPolicy"); !p.empty()) d.propagation_policy = p;
  auto grace = query_int64(q, "gracePeriodSeconds");
  if (!grace) return fail(std::move(grace).error());
  d.grace_period_seconds = *grace;
  if (auto o = query_bool(q, "orphanDependents"); o && !d.propagation_policy) {
    d.propagation_policy = *o ? "Orphan" : "Background";
  }
  auto dry = dry_run(q, "DeleteOptions");
  if (!dry) return fail(std::move(dry).error());
  d.dry_run = *dry;
  if (trim(body_text).empty()) return d;
  auto body = json::Document::parse(body_text);
  if (!body) return fail(errors::bad_request("DeleteOptions body: " + body.error().message));
  const auto& b = body->root();
  if (auto p = json::get_string(b, "/propagationPolicy")) d.propagation_policy = std::string(*p);
  if (auto g = json::get_int(b, "/gracePeriodSeconds")) d.grace_period_seconds = *g;
  if (auto u = json::get_string(b, "/preconditions/uid")) d.precondition_uid = std::string(*u);
  if (auto rv = json::get_string(b, "/preconditions/resourceVersion")) {
    d.precondition_resource_version = std::string(*rv);
  }
  if (auto o = json::get_bool(b, "/orphanDependents"); o && !d.propagation_policy) {
    d.propagation_policy = *o ? "Orphan" : "Background";
  }
  if (auto* dr = json::find(b, "/dryRun"); dr != nullptr && dr->IsArray()) {
    for (const auto& x : dr->GetArray()) {
      if (!x.IsString()) continue;
      if (std::string_view(x.GetString()) != "All") {
        return fail(invalid_options("DeleteOptions", {not_supported("dryRun", x.GetString(), {"All"})}));
      }
      d.dry_run = true;
    }
  }
  return d;
}

IncludeObject include_object(const Query& q) {
  auto v = query_value(q, "includeObject");
  if (v == "None") return IncludeObject::None;
  if (v == "Object") return IncludeObject::Object;
  return IncludeObject::Metadata;
}

}  // namespace unitrain::localcluster
