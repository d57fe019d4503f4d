// Lists in the memory store: label and field selectors, paging with limit and continue tokens,
// and the resourceVersion semantics of a list (NotOlderThan, Exact, too large).
#include <algorithm>

#include "localcluster/continue_token.h"
#include "localcluster/memory_store_impl.h"
#include "localcluster/object_meta.h"

namespace unitrain::localcluster {
namespace {

using json::Document;
using json::Value;

}  // namespace

StoreResult<void> MemoryStore::parse_selectors(const ResourceInfo& r, const std::string& label_text,
                                                 const std::string& field_text, api::LabelSelector& labels,
                                                 FieldSelector& fields) {
  if (!label_text.empty()) {
    auto ls = api::LabelSelector::parse(label_text);
    if (!ls) return fail(errors::bad_request("unable to parse requirement: " + ls.error().message));
    labels = std::move(*ls);
  }
  if (!field_text.empty()) {
    auto fs = FieldSelector::parse(field_text);
    if (!fs) return fail(errors::bad_request(fs.error().message));
    auto st = fs->bind(r);
    if (!st) return fail(errors::bad_request(st.error().message));
    fields = std::move(*fs);
  }
  return {};
}

StoreResult<std::string> MemoryStore::list_locked(const ResourceInfo& r, std::string_view ns_in,
                                                  const ListRequest& req,
                                                  std::vector<std::pair<std::string, std::string>>* targets) const {
  const Served* s = lookup(r);
  if (s == nullptr) return fail(errors::resource_not_found());
  const Table& t = state_->tables.at(s->storage_key);
  std::string ns = s->info.namespaced ? std::string(ns_in) : std::string();
  api::LabelSelector labels;
  FieldSelector fields;
  auto sel = parse_selectors(s->info, req.label_selector, req.field_selector, labels, fields);
  if (!sel) return fail(std::move(sel).error());

  uint64_t list_rv = state_->rv;
  std::string start_after;
  if (!req.continue_token.empty()) {
    if (!req.resource_version.empty() && req.resource_version != "0") {
      return fail(errors::bad_request("specifying resource version is not allowed when using continue"));
    }
    auto token = decode_continue_token(req.continue_token);
    if (!token) return fail(errors::bad_request("invalid continue token: " + token.error().message));
    if (token->resource_version > 0) {
      const auto rv = static_cast<uint64_t>(token->resource_version);
      if (rv > state_->rv) return fail(errors::too_large_resource_version(rv, state_->rv));
      // The watch window stands for etcd's history: a token from before it (or from before a
      // restart) is expired, as after an etcd compaction.
      if (rv < t.watch.evicted_rv) {
        return fail(errors::continue_expired(encode_continue_token({-1, token->start_after})));
      }
      // Pages after the first report the first page's resourceVersion. Objects changed since
      // then are shown as they are now (the store keeps no history beyond the watch window).
      list_rv = rv;
    }
    start_after = std::move(token->start_after);
  } else if (!req.resource_version.empty() && req.resource_version != "0") {
    auto rv = parse_resource_version(req.resource_version);
    if (!rv) return fail(errors::bad_request("invalid resource version: " + req.resource_version));
    if (req.resource_version_match == "Exact") {
      if (*rv > state_->rv) return fail(errors::too_large_resource_version(*rv, state_->rv));
      // The current state is the state at `rv` when nothing in this resource changed since.
      if (t.last_change_rv > *rv) return fail(errors::expired("The resourceVersion for the provided list is too old."));
      list_rv = *rv;
    } else if (*rv > state_->rv) {
      return fail(errors::too_large_resource_version(*rv, state_->rv));
    }
  }

  auto [begin, end] = range(s->info, t, ns);
  if (!start_after.empty()) {
    Iter after = t.objects.upper_bound(start_after);
    if (after == t.objects.end() || (end != t.objects.end() && after->first >= end->first)) {
      begin = end;
    } else if (begin != end && after->first > begin->first) {
      begin = after;
    }
  }
  const bool filtered = !labels.empty() || !fields.empty();
  // Select first, then build the output in one exactly-sized buffer: a 10k-pod list is ~9 MB
  // and growing strings by doubling costs more than the copying itself.
  std::vector<TextPtr> selected;
  if (req.limit > 0) selected.reserve(std::min(static_cast<size_t>(req.limit), t.objects.size()));
  std::string last_key;
  Iter it = begin;
  bool more = false;
  for (; it != end; ++it) {
    const StoredObject& o = it->second;
    if (filtered) {
      const Value& root = o.doc->root();
      if (!labels.empty() && !labels.matches(member_or_null(member_or_null(root, "metadata"), "labels"))) continue;
      if (!fields.empty() && !fields.matches(root)) continue;
    }
    if (req.limit > 0 && static_cast<int64_t>(selected.size()) == req.limit) {
      more = true;
      break;
    }
    if (targets != nullptr) {
      targets->emplace_back(json::string_at(o.doc->root(), "/metadata/namespace"), json::string_at(o.doc->root(), "/metadata/name"));
    }
    selected.push_back(text_of(*s, o));
    last_key = it->first;
  }
  std::string head = "{\"kind\":\"" + s->info.list_kind + "\",\"apiVersion\":\"" + s->info.api_version() +
                     "\",\"metadata\":{\"resourceVersion\":\"" + std::to_string(list_rv) + "\"";
  if (more) {
    head += ",\"continue\":\"" + encode_continue_token({static_cast<int64_t>(list_rv), last_key}) + "\"";
    if (!filtered) {
      int64_t remaining = std::distance(it, end);
      head += ",\"remainingItemCount\":" + std::to_string(remaining);
    }
  }
  head += "},\"items\":[";
  size_t total = head.size() + 2 + selected.size();
  for (const TextPtr& t : selected) total += t->size();
  std::string out;
  out.reserve(total);
  out += head;
  for (size_t i = 0; i < selected.size(); ++i) {
    if (i > 0) out += ',';
    out += *selected[i];
  }
  out += "]}";
  return out;
}

}  // namespace unitrain::localcluster
