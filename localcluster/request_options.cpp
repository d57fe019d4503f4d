#include "localcluster/request_options.h"

#include <algorithm>
#include <cstdlib>

namespace unitrain::localcluster {

ListRequest list_request(const Query& q) {
  ListRequest l;
  l.label_selector = query_value(q, "labelSelector");
  l.field_selector = query_value(q, "fieldSelector");
  auto limit = query_value(q, "limit");
  if (!limit.empty()) l.limit = std::strtoll(limit.c_str(), nullptr, 10);
  l.continue_token = query_value(q, "continue");
  l.resource_version = query_value(q, "resourceVersion");
  l.resource_version_match = query_value(q, "resourceVersionMatch");
  return l;
}

WatchRequest watch_request(const Query& q, std::string_view name) {
  WatchRequest wr;
  wr.label_selector = query_value(q, "labelSelector");
  wr.field_selector = query_value(q, "fieldSelector");
  if (!name.empty()) {
    std::string by_name = "metadata.name=" + std::string(name);
    wr.field_selector = wr.field_selector.empty() ? by_name : wr.field_selector + "," + by_name;
  }
  wr.resource_version = query_value(q, "resourceVersion");
  wr.allow_bookmarks = query_flag(q, "allowWatchBookmarks");
  wr.send_initial_events = query_flag(q, "sendInitialEvents");
  return wr;
}

std::optional<std::chrono::seconds> watch_timeout(const Query& q) {
  auto t = query_value(q, "timeoutSeconds");
  if (t.empty()) return std::nullopt;
  return std::chrono::seconds(std::max(0LL, std::strtoll(t.c_str(), nullptr, 10)));
}

bool dry_run(const Query& q) { return query_value(q, "dryRun") == "All"; }

StoreResult<DeleteRequest> delete_request(const Query& q, std::string_view body_text) {
  DeleteRequest d;
  if (auto p = query_value(q, "propagationPolicy"); !p.empty()) d.propagation_policy = p;
  if (auto g = query_value(q, "gracePeriodSeconds"); !g.empty()) {
    d.grace_period_seconds = std::strtoll(g.c_str(), nullptr, 10);
  }
  d.dry_run = dry_run(q);
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
      if (x.IsString() && std::string_view(x.GetString()) == "All") d.dry_run = true;
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
