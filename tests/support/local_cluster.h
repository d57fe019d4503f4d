#pragma once
// What tests against an in-process local cluster share, whichever controllers they run: a client
// configuration for it, CRD installation from a file, the writes the API server counted, and the
// events a controller recorded (recording_sink.h).

#include <cstdint>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/base/result.h"
#include "core/json/json.h"
#include "core/kube/client.h"
#include "core/kube/config.h"
#include "localcluster/local_cluster.h"
#include "tests/support/recording_sink.h"

namespace unitrain::testing {

// A whole file's text (a manifest, a CRD); empty when it cannot be read.
inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A client configuration for `cluster`'s plain-HTTP API server, without a client-side rate limit.
inline kube::RestConfig rest_config_of(const localcluster::LocalCluster& cluster) {
  kube::RestConfig cfg;
  cfg.scheme = "http";
  cfg.host = "127.0.0.1";
  cfg.port = cluster.port();
  cfg.qps = -1;
  return cfg;
}

// Creates every CustomResourceDefinition of the YAML file `path`; the error names the file.
inline Status install_crds(kube::Client& client, const std::string& path) {
  auto docs = json::parse_yaml(read_text(path));
  if (!docs) return fail(fmt::format("{}: {}", path, docs.error().message));
  if (docs->empty()) return fail(fmt::format("{}: no document (missing or empty file)", path));
  for (const auto& d : *docs)
    if (auto created = client.create({"apiextensions.k8s.io", "v1", "customresourcedefinitions"}, "", d.root()); !created)
      return fail(fmt::format("{}: {}", path, created.error().message));
  return {};
}

// Writes the API server counted, by verb and resource, from its /metrics exposition.
struct WriteCounts {
  std::map<std::string, uint64_t> by_verb_resource;  // "POST pods", "PUT pytorchjobs/status", "POST pods (409)"
  uint64_t total(bool with_events) const {
    uint64_t n = 0;
    for (const auto& [k, v] : by_verb_resource)
      if (with_events || k.find("events") == std::string::npos) n += v;
    return n;
  }
  uint64_t get(const std::string& k) const {
    auto it = by_verb_resource.find(k);
    return it == by_verb_resource.end() ? 0 : it->second;
  }
  std::string describe() const {
    std::string out;
    for (const auto& [k, v] : by_verb_resource)
      if (v) out += fmt::format("{}={} ", k, v);
    return out;
  }
};

inline WriteCounts writes_since(const localcluster::LocalCluster& cluster, const WriteCounts& before = {}) {
  WriteCounts w;
  static const std::regex line(
      R"re(apiserver_request_total\{code="(\d+)",component="apiserver",group="[^"]*",resource="([^"]*)",subresource="([^"]*)",verb="(POST|PUT|PATCH|DELETE|APPLY|DELETECOLLECTION)",version="[^"]*"\} (\d+))re");
  std::istringstream in(cluster.metrics().render());
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    std::string key = fmt::format("{} {}{}{}", m[4].str(), m[2].str(), m[3].str().empty() ? "" : "/", m[3].str());
    if (m[1].str()[0] != '2') key += fmt::format(" ({})", m[1].str());  // a rejected write, e.g. 409
    w.by_verb_resource[key] += std::stoull(m[5].str());
  }
  for (const auto& [k, v] : before.by_verb_resource) w.by_verb_resource[k] -= v;
  return w;
}

}  // namespace unitrain::testing
