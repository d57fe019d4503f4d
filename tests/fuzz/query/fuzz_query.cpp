// Query strings as clients send them (`labelSelector=..&limit=..&continue=..&resourceVersion=..`),
// then, after the first newline, a DeleteOptions body. They are decoded into list, watch and
// delete options and run against a small store of labelled pods, as the local cluster's API server
// does. Invariants: nothing crashes; a refused list or watch is a client error (4xx, or 504 for
// a resourceVersion from the future) with a message, never a 500; a list is a PodList whose
// pages, followed through their continue tokens, return each pod at most once and in key order.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "localcluster/builtin_resources.h"
#include "localcluster/http_message.h"
#include "localcluster/memory_store.h"
#include "localcluster/request_options.h"
#include "tests/fuzz/invariant.h"

namespace {

namespace json = unitrain::json;
namespace lc = unitrain::localcluster;
using unitrain::fuzz::require;

struct Cluster {
  std::unique_ptr<lc::Store> store;
  lc::ResourceInfo pods;

  Cluster() {
    auto s = lc::make_memory_store({});
    require(s.has_value());
    store = std::move(*s);
    for (const auto& info : lc::builtin_resources())
      if (info.group.empty() && info.resource == "pods") pods = info;
    for (int i = 0; i < 7; ++i) {
      auto pod = json::Document::parse(fmt::format(
          R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p{}","labels":{{"app":"a{}","tier":"{}"}}}},)"
          R"("spec":{{"nodeName":"n{}","containers":[{{"name":"c","image":"i"}}]}}}})",
          i, i % 3, i % 2 == 0 ? "web" : "db", i % 2));
      require(pod.has_value());
      require(store->create(pods, i < 5 ? "default" : "kube-system", std::move(*pod)).has_value());
    }
  }
};

const Cluster& cluster() {
  static const Cluster c;
  return c;
}

// A refusal of what the client asked: 4xx, or 504 for a resourceVersion from the future (as
// kube-apiserver answers it), never a 500.
void client_error(const lc::StatusError& e) {
  require((e.code >= 400 && e.code < 500) || e.code == 504);
  require(!e.message.empty());
}

void list_pages(const Cluster& c, std::string_view ns, lc::ListRequest req) {
  std::set<std::string> seen;
  std::string last;
  for (int page = 0; page < 10; ++page) {
    auto list = c.store->list(c.pods, ns, req);
    if (!list) {
      client_error(list.error());
      return;
    }
    auto d = json::Document::parse(*list);
    require(d.has_value());
    require(json::get_string(d->root(), "/kind") == std::string_view("PodList"));
    const json::Value* items = json::find(d->root(), "/items");
    require(items != nullptr && items->IsArray());
    for (const auto& item : items->GetArray()) {
      std::string key = json::string_at(item, "/metadata/namespace") + "/" + json::string_at(item, "/metadata/name");
      require(seen.insert(key).second);
      require(last < key);
      last = key;
    }
    std::string next = json::string_at(d->root(), "/metadata/continue");
    if (next.empty()) return;
    req.continue_token = next;
    req.resource_version.clear();
    req.resource_version_match.clear();
  }
}

}  // namespace


extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t newline = text.find('\n');
  const lc::Query q = lc::parse_query(text.substr(0, newline));
  const std::string_view body = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
  const Cluster& c = cluster();

  if (auto list = lc::list_request(q)) {
    list_pages(c, "default", *list);
    list_pages(c, "", *list);
  } else {
    client_error(list.error());
  }

  for (std::string_view name : {std::string_view(), std::string_view("p1")}) {
    auto request = lc::watch_request(q, name);
    if (!request) {
      client_error(request.error());
      continue;
    }
    auto watch = c.store->watch(c.pods, "default", *request);
    if (!watch) {
      client_error(watch.error());
      continue;
    }
    bool closed = false;
    for (const auto& ev : (*watch)->drain(closed)) {
      require(ev.object != nullptr);
      require(json::Document::parse(*ev.object).has_value());
    }
    (*watch)->stop();
  }
  // The server adds the timeout to now() for the watch's deadline.
  if (auto timeout = lc::watch_timeout(q); !timeout) client_error(timeout.error());
  else if (*timeout) (void)(std::chrono::steady_clock::now() + **timeout);
  (void)lc::include_object(q);
  auto del = lc::delete_request(q, body);
  if (!del) client_error(del.error());
  return 0;
}
